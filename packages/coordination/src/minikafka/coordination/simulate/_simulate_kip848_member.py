"""A consumer-protocol member of the simulated group: the client's own
``ConsumerProtocolMember`` on virtual time (KIP-848).

The member's side of the consumer protocol is the core the real consumer runs with
``group.protocol=consumer`` (``..member._consumer_protocol_member``): it heartbeats
(ConsumerGroupHeartbeat), and when an answer brings a new target it revokes what is no
longer its own (``on_revoke``, at the application's next poll), takes the rest, and
acknowledges by heartbeating what it now owns. This module is only its shell in the
simulated world, as ``_simulate_consumer`` is for the classic member: it carries the
core's heartbeats to the real ``GroupCoordinator`` (as the broker's handler does, with
the topic's partition count and id), the answers back, plays the application's
``poll()`` loop (every ``processing_ms``), and writes what happened to the timeline.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ..group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ..group._coordinator import GroupCoordinator
from ..group._results import GroupResponse, GroupResult
from ..member import (
    ConsumerGroupHeartbeat,
    FindCoordinator,
    GroupRequest,
    OffsetCommit,
    OffsetFetch,
    RebalanceEvent,
    SubscriptionState,
)
from ..member._consumer_protocol_member import (
    ConsumerMemberState,
    ConsumerProtocolMember,
)
from ._simulate_consumer import CLIENT_HOST, COORDINATOR_NODE, MemberSettings
from ._simulate_values import (
    EntryKind,
    SimulationConfig,
    SimulationError,
    format_partitions,
)

__all__ = ["ProtocolWorld", "SimulatedMember"]

HEARTBEAT_VERSION = 1  # ConsumerGroupHeartbeat v1: the member names itself (KIP-1082)

MemberCall = Callable[[GroupCoordinator, int, float], GroupResult]


class ProtocolWorld(Protocol):
    """What a consumer-protocol member needs around it."""

    @property
    def now(self) -> float: ...

    def send(self, member: SimulatedMember, call: MemberCall) -> None: ...

    def at(self, when: float, action: Callable[[], None]) -> None: ...

    def record(
        self,
        member: SimulatedMember,
        kind: EntryKind,
        text: str,
        partitions: tuple[TopicPartition, ...] = (),
    ) -> None: ...

    def owned_changed(self, member: SimulatedMember) -> None: ...


def protocol_core(config: SimulationConfig, number: int) -> ConsumerProtocolMember:
    """A fresh ``ConsumerProtocolMember`` subscribed to the simulated topic; its member
    id is drawn from the seed, where the real client draws a random UUID."""
    settings = MemberSettings(
        partition_assignment_strategy=(config.assignor,),
        session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        max_poll_interval_ms=config.rebalance_timeout_ms,
    )
    subscriptions = SubscriptionState()
    subscriptions.subscribe([config.topic])
    member_id = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{config.seed}-{number}"))
    return ConsumerProtocolMember(
        settings,
        subscriptions,
        config.group_id,
        member_id=member_id,
        rebalance_timeout_ms=config.rebalance_timeout_ms,
        server_assignor=config.remote_assignor,
    )


@attrs.define(eq=False)
class SimulatedMember:
    """One consumer-protocol member: the core, the application's poll loop, and what it
    owns."""

    world: ProtocolWorld = attrs.field(repr=False)
    config: SimulationConfig
    number: int
    processing_ms: int  # how long it works on what one poll() returns
    core: ConsumerProtocolMember = attrs.field(init=False)
    stopped: bool = False  # left or crashed: it sends nothing and reads nothing
    crash_after_heartbeat: bool = False
    owned: frozenset[TopicPartition] = frozenset()
    last_heard: float = 0.0  # when the coordinator last got a request from it
    _wakeup: float | None = None

    @core.default
    def _core(self) -> ConsumerProtocolMember:
        return protocol_core(self.config, self.number)

    @property
    def client_id(self) -> str:
        return f"consumer-{self.number}"

    @property
    def member_id(self) -> str:
        return self.core.member_id

    @property
    def settled(self) -> bool:
        """Owns its target and has said so (Kafka's member state STABLE)."""
        return self.core.state is ConsumerMemberState.STABLE and not (
            self.core.events or self.crash_after_heartbeat
        )

    # --- what the script makes it do -------------------------------------------------

    def start(self) -> None:
        text = f"starts (processes a poll in {self.processing_ms} ms): FindCoordinator"
        self.world.record(self, EntryKind.STARTED, text)
        self._poll_loop()

    def leave(self) -> None:
        # KafkaConsumer.close(): on_revoke gives everything up, then the heartbeat with
        # member epoch -1.
        self._record_revoke(self.owned, "before leaving")
        requests = self.core.leave().messages
        self.core.subscriptions.set_assignment(())
        self._sync_owned()
        self.stopped = True
        for request in requests:
            self._send(request)
        self.world.record(self, EntryKind.LEFT, "ConsumerGroupHeartbeat: epoch -1")

    def crash(self) -> None:
        self.stopped = True
        self._set_owned(frozenset())
        self.world.record(
            self, EntryKind.CRASHED, "crashes after a heartbeat, no epoch -1"
        )

    # --- the application and the core's clock ----------------------------------------

    def _poll_loop(self) -> None:
        """The application's poll(): the rebalance callbacks run here, so a revoked
        partition goes only once on_revoke has run; then ``processing_ms`` of work."""
        if self.stopped:
            return
        now = self.world.now
        self.core.app_polled(now)
        events, self.core.events = self.core.events, []
        for event in events:
            self._callback(event)
        if events:
            self.core.events_done()
            self._sync_owned()
        self._drive()
        self.world.at(now + self.processing_ms / 1000, self._poll_loop)

    def _callback(self, event: RebalanceEvent) -> None:
        partitions = frozenset(event.partitions)
        if event.kind == "revoke":
            self._record_revoke(partitions, "in poll(): no longer in its target")
        elif event.kind == "lost":
            self._record_revoke(partitions, "lost: fenced")

    def _drive(self) -> None:
        """Send what the core wants sent now, and wake it when it next wants to."""
        if self.stopped:
            return
        now = self.world.now
        for request in self.core.on_timer(now).messages:
            self._send(request)
            if isinstance(request, ConsumerGroupHeartbeat) and (
                self.crash_after_heartbeat
            ):
                self.crash()
                return
        # What it took at reconciliation it fetches from now on.
        self._sync_owned()
        deadline = self.core.next_deadline()
        when = now + 1.0 if deadline is None else max(now, min(deadline, now + 1.0))
        if self._wakeup is None or when < self._wakeup:
            self._wakeup = when
            self.world.at(when, self._woken)

    def _woken(self) -> None:
        if self._wakeup is not None and self.world.now >= self._wakeup:
            self._wakeup = None
            self._drive()

    # --- requests ----------------------------------------------------------------------

    def _send(self, request: GroupRequest) -> None:
        if isinstance(request, FindCoordinator):
            self._round_trip(
                lambda: self.core.on_find_coordinator(0, COORDINATOR_NODE, self._now)
            )
        elif isinstance(request, OffsetFetch):
            nothing = {tp: (int(ErrorCode.none), -1) for tp in request.partitions}
            self._round_trip(lambda: self.core.on_offset_fetch(nothing, self._now))
        elif isinstance(request, ConsumerGroupHeartbeat):
            heartbeat = self._as_broker_reads_it(request)
            self.world.send(
                self,
                lambda c, rid, now: c.consumer_group_heartbeat(rid, heartbeat, now),
            )
        elif isinstance(request, OffsetCommit):
            raise SimulationError(f"{self.client_id} commits, but auto-commit is off")
        else:
            raise SimulationError(f"a consumer-protocol member sent {request}")

    def _as_broker_reads_it(
        self, request: ConsumerGroupHeartbeat
    ) -> ConsumerGroupHeartbeatRequest:
        """The request as the broker's handler hands it to the coordinator: with the
        cluster's topics, their ids and partition counts."""
        topic = self.config.topic
        return ConsumerGroupHeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rebalance_timeout_ms=(
                -1
                if request.rebalance_timeout_ms is None
                else request.rebalance_timeout_ms
            ),
            subscribed_topic_names=request.subscribed_topic_names,
            server_assignor=request.server_assignor,
            owned=None if request.owned is None else frozenset(request.owned),
            topics={topic: self.config.partitions},
            topic_ids={topic: uuid.uuid5(uuid.NAMESPACE_OID, topic)},
            metadata_version=0,
            client_id=self.client_id,
            client_host=CLIENT_HOST,
            version=HEARTBEAT_VERSION,
        )

    @property
    def _now(self) -> float:
        return self.world.now

    def _round_trip(self, answer: Callable[[], None]) -> None:
        trip = 2 * self.config.network_latency_ms / 1000

        def arrive() -> None:
            if not self.stopped:
                answer()
                self._drive()

        self.world.at(self._now + trip, arrive)

    # --- answers ---------------------------------------------------------------------

    def handle(self, response: GroupResponse) -> None:
        if self.stopped:
            return  # a crashed process reads nothing; a member that left is done
        if not isinstance(response, ConsumerGroupHeartbeatResponse):
            raise SimulationError(
                f"{self.client_id} never sends what {response} answers"
            )
        before = (self.core.state, self.core.member_epoch)
        assignment = response.assignment
        self.core.on_heartbeat_response(
            int(response.error),
            response.member_id,
            response.member_epoch,
            response.heartbeat_interval_ms,
            None if assignment is None else tuple(sorted(assignment)),
            self._now,
            response.error_message,
        )
        self._record_answer(response, before)
        self._sync_owned()
        self._drive()

    def _record_answer(
        self,
        response: ConsumerGroupHeartbeatResponse,
        before: tuple[ConsumerMemberState, int],
    ) -> None:
        error = response.error
        if error is not ErrorCode.none:
            text = f"ConsumerGroupHeartbeat: {error.name.upper()}"
            self.world.record(self, EntryKind.ERROR, text)
            return
        state, epoch = before
        if response.assignment is not None and set(response.assignment) != self.owned:
            target = tuple(sorted(response.assignment))
            text = (
                f"heartbeat: epoch {response.member_epoch}, "
                f"target {format_partitions(target)}"
            )
            self.world.record(self, EntryKind.SYNCED, text, target)
        elif epoch == 0 and response.member_epoch > 0:
            text = f"heartbeat: joined, epoch {response.member_epoch}"
            self.world.record(self, EntryKind.JOINED, text)
        elif (
            state is not self.core.state
            and self.core.state is ConsumerMemberState.STABLE
        ):
            text = f"heartbeat: stable at epoch {response.member_epoch}"
            self.world.record(self, EntryKind.JOINED, text)

    # --- what it owns ------------------------------------------------------------------

    def _record_revoke(self, partitions: frozenset[TopicPartition], why: str) -> None:
        if partitions:
            text = f"revokes {format_partitions(partitions)} {why}"
            self.world.record(self, EntryKind.REVOKED, text, tuple(sorted(partitions)))

    def _sync_owned(self) -> None:
        if not self.stopped:
            self._set_owned(frozenset(self.core.subscriptions.assignment))

    def _set_owned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions != self.owned:
            self.owned = partitions
            self.world.owned_changed(self)
