"""A consumer of the simulated group: the client's own ``ConsumerCoordinator`` on virtual time.

The member's side of the group protocol is the core the real consumer runs
(``..member``, seed 002 §2, seed 000 "重平衡协议", KIP-429): it finds its coordinator,
joins with the assignor's subscription (a new member is handed its id first, KIP-394),
runs the assignor as leader, heartbeats, and revokes eagerly or cooperatively. This
module is only its shell in the simulated world, in place of the trio shell the client
runs it under: it carries the core's requests to the real ``GroupCoordinator`` and the
answers back (translating between the two halves' request values, as the network's
encodings do for real), plays the application's ``poll()`` loop (every
``processing_ms``, which is when the rebalance callbacks run and an eager member lets go
of its partitions), and writes what happened to the timeline.

The consumer talks to the world (the network, the clock, the timeline) through the
``World`` port, which ``_simulate`` implements. The coordinator is the only node
(FindCoordinator answers it), nothing is ever committed (``enable.auto.commit`` is off,
so OffsetFetch finds nothing), and the topic's partition count is known to all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ..assignors._consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment
from ..group._coordinator import GroupCoordinator
from ..group._group_requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..group._results import GroupResponse, GroupResult
from ..member import (
    ConsumerCoordinator,
    FindCoordinator,
    GroupRequest,
    Heartbeat,
    JoinGroup,
    JoinMember,
    LeaveGroup,
    MemberState,
    OffsetCommit,
    OffsetFetch,
    RebalanceEvent,
    SubscriptionState,
    SyncGroup,
)
from ._simulate_values import (
    EntryKind,
    SimulationConfig,
    SimulationError,
    format_partitions,
)

__all__ = ["Call", "SimulatedConsumer", "World"]

# JoinGroup v5 (Kafka 2.3) is new enough for MEMBER_ID_REQUIRED; LeaveGroup v3 batches.
JOIN_GROUP_VERSION = 5
LEAVE_GROUP_VERSION = 3
CLIENT_HOST = "/127.0.0.1"
COORDINATOR_NODE = 0  # the simulated cluster's one broker, which coordinates the group

Call: TypeAlias = Callable[[GroupCoordinator, int, float], GroupResult]
"""One request as the coordinator takes it: (coordinator, request id, now) -> replies."""


class World(Protocol):
    """What a consumer needs around it."""

    @property
    def now(self) -> float: ...

    def send(self, consumer: SimulatedConsumer, call: Call) -> None: ...

    def at(self, when: float, action: Callable[[], None]) -> None: ...

    def record(
        self,
        consumer: SimulatedConsumer,
        kind: EntryKind,
        text: str,
        partitions: tuple[TopicPartition, ...] = (),
    ) -> None: ...

    def owned_changed(self, consumer: SimulatedConsumer) -> None: ...

    def generation_assigned(
        self, leader: SimulatedConsumer, plan: tuple[tuple[str, bytes], ...]
    ) -> None: ...


@attrs.frozen
class MemberSettings:
    """The consumer configuration the member core reads (its ``MemberSettings`` port)."""

    partition_assignment_strategy: tuple[str, ...]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    group_instance_id: str | None = None
    # nothing to commit: the simulation reads no records
    enable_auto_commit: bool = False
    auto_commit_interval_ms: int = 5_000
    retry_backoff_ms: int = 100


@attrs.frozen
class _TopicPartitions:
    leaders: tuple[int, ...]


@attrs.frozen
class SimulatedCluster:
    """The member core's ``ClusterView``: one broker (the coordinator), one topic."""

    topic: str
    partition_count: int

    def node(self, node_id: int) -> object | None:
        return node_id if node_id == COORDINATOR_NODE else None

    def want(self, topic: str) -> bool:
        return False  # everything there is to know is known

    def cluster_topics(self) -> tuple[str, ...]:
        return (self.topic,)

    def partitions(self, topic: str) -> _TopicPartitions | None:
        if topic != self.topic:
            return None
        return _TopicPartitions((COORDINATOR_NODE,) * self.partition_count)


def member_core(config: SimulationConfig) -> ConsumerCoordinator:
    """A fresh ``ConsumerCoordinator`` subscribed to the simulated topic."""
    settings = MemberSettings(
        partition_assignment_strategy=(config.assignor,),
        session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        max_poll_interval_ms=config.rebalance_timeout_ms,
    )
    subscriptions = SubscriptionState()
    subscriptions.subscribe([config.topic])
    cluster = SimulatedCluster(config.topic, config.partitions)
    return ConsumerCoordinator(settings, subscriptions, cluster, config.group_id)


@attrs.define(eq=False)
class SimulatedConsumer:
    """One consumer: the member core, the application's poll loop, and what it owns."""

    world: World = attrs.field(repr=False)
    config: SimulationConfig
    number: int
    processing_ms: int  # how long it works on what one poll() returns
    core: ConsumerCoordinator = attrs.field(init=False)
    stopped: bool = False  # left or crashed: it sends nothing and reads nothing
    crash_after_heartbeat: bool = False
    owned: frozenset[TopicPartition] = frozenset()
    last_heard: float = 0.0  # when the coordinator last got a request from it
    _plan: tuple[tuple[str, bytes], ...] = ()  # as leader: the assignment it sent
    _wakeup: float | None = None  # the one pending wake-up of the core (None: none)

    @core.default
    def _core(self) -> ConsumerCoordinator:
        return member_core(self.config)

    @property
    def client_id(self) -> str:
        return f"consumer-{self.number}"

    @property
    def member_id(self) -> str:
        return self.core.member_id

    @property
    def generation(self) -> int:
        return self.core.generation_id

    @property
    def synced(self) -> bool:
        """In the generation with its assignment (fetching it; on_assign runs at the
        application's next poll)."""
        return self.core.state is MemberState.STABLE

    @property
    def rejoin_needed(self) -> bool:
        return self.core.rejoin_needed

    # --- what the script makes it do -------------------------------------------------

    def start(self) -> None:
        text = f"starts (processes a poll in {self.processing_ms} ms): FindCoordinator"
        self.world.record(self, EntryKind.STARTED, text)
        self._poll_loop()

    def leave(self) -> None:
        # KafkaConsumer.close(): the rebalance listener gives everything up, then LeaveGroup.
        self._record_revoke(self.owned, "before leaving")
        self.core.subscriptions.set_assignment(())
        self._sync_owned()
        requests = self.core.leave().messages
        self.stopped = True
        for request in requests:
            self._send(request)

    def crash(self) -> None:
        self.stopped = True
        self._set_owned(frozenset())  # nobody consumes its partitions any more
        self.world.record(
            self, EntryKind.CRASHED, "crashes after a heartbeat, no LeaveGroup"
        )

    # --- the application and the core's clock ----------------------------------------

    def _poll_loop(self) -> None:
        """The application's poll(): the member is alive, the rebalance callbacks run
        (an eager member's partitions go only once on_revoke has run), then the records
        are processed for ``processing_ms`` before the next poll."""
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
        """on_revoke and on_lost as the timeline shows them (on_assign needs no entry:
        the SyncGroup's already shows what came)."""
        partitions = frozenset(event.partitions)
        if event.kind == "revoke":
            if self.core.state is MemberState.PREPARING:
                why = "in poll(), then JoinGroup (eager)"
            else:
                why = "not in the assignment: rejoins"
            self._record_revoke(partitions, why)
        elif event.kind == "lost":
            self._record_revoke(partitions, "lost: dropped from the group")

    def _drive(self) -> None:
        """Send what the core wants sent now, and wake it when it next wants to."""
        if self.stopped:
            return
        now = self.world.now
        for request in self.core.on_timer(now).messages:
            self._send(request)
            if isinstance(request, Heartbeat) and self.crash_after_heartbeat:
                self.crash()
                return
        # As the consumer's shell does: at the core's deadline, and at least every second.
        deadline = self.core.next_deadline()
        when = now + 1.0 if deadline is None else max(now, min(deadline, now + 1.0))
        if self._wakeup is None or when < self._wakeup:
            self._wakeup = when
            self.world.at(when, self._woken)

    def _woken(self) -> None:
        if self._wakeup is not None and self.world.now >= self._wakeup:
            self._wakeup = None
            self._drive()

    # --- requests: the member core's values as the coordinator core's -----------------

    def _send(self, request: GroupRequest) -> None:
        if isinstance(request, FindCoordinator):
            # Any broker answers; the simulated cluster's one broker is the coordinator.
            self._round_trip(
                lambda: self.core.on_find_coordinator(0, COORDINATOR_NODE, self._now)
            )
        elif isinstance(request, OffsetFetch):
            # Nothing is ever committed here: every partition starts by auto.offset.reset.
            nothing = {tp: (int(ErrorCode.none), -1) for tp in request.partitions}
            self._round_trip(lambda: self.core.on_offset_fetch(nothing, self._now))
        elif isinstance(request, JoinGroup):
            self._send_join(request)
        elif isinstance(request, SyncGroup):
            self._send_sync(request)
        elif isinstance(request, Heartbeat):
            heartbeat = HeartbeatRequest(
                request.group_id, request.generation_id, request.member_id,
                request.group_instance_id,
            )  # fmt: skip
            self.world.send(self, lambda c, rid, now: c.heartbeat(rid, heartbeat, now))
        elif isinstance(request, LeaveGroup):
            identity = MemberIdentity(request.member_id, request.group_instance_id)
            leave = LeaveGroupRequest(
                request.group_id, (identity,), LEAVE_GROUP_VERSION
            )
            self.world.send(self, lambda c, rid, now: c.leave_group(rid, leave, now))
        elif isinstance(request, OffsetCommit):
            raise SimulationError(f"{self.client_id} commits, but auto-commit is off")

    @property
    def _now(self) -> float:
        return self.world.now

    def _round_trip(self, answer: Callable[[], None]) -> None:
        """A request answered by something other than the group coordinator core."""
        trip = 2 * self.config.network_latency_ms / 1000

        def arrive() -> None:
            if not self.stopped:
                answer()
                self._drive()

        self.world.at(self._now + trip, arrive)

    def _send_join(self, request: JoinGroup) -> None:
        # cooperative: it goes on consuming what it owns while it rejoins
        if self.owned:
            text = f"JoinGroup, keeps {format_partitions(self.owned)}"
            self.world.record(self, EntryKind.REJOINING, text)
        join = JoinGroupRequest(
            request.group_id, request.member_id, CONSUMER_PROTOCOL_TYPE, request.protocols,
            request.session_timeout_ms, request.rebalance_timeout_ms,
            request.group_instance_id, self.client_id, CLIENT_HOST, JOIN_GROUP_VERSION,
        )  # fmt: skip
        self.world.send(self, lambda c, rid, now: c.join_group(rid, join, now))

    def _send_sync(self, request: SyncGroup) -> None:
        self._plan = request.assignments
        sync = SyncGroupRequest(
            request.group_id, request.generation_id, request.member_id,
            request.group_instance_id, CONSUMER_PROTOCOL_TYPE, self.core.protocol,
            request.assignments,
        )  # fmt: skip
        self.world.send(self, lambda c, rid, now: c.sync_group(rid, sync, now))

    # --- answers ---------------------------------------------------------------------

    def handle(self, response: GroupResponse) -> None:
        if isinstance(response, LeaveGroupResponse):
            self._on_leave(response)
        elif self.stopped:
            return  # a crashed process reads nothing
        elif isinstance(response, JoinGroupResponse):
            self._on_join(response)
        elif isinstance(response, SyncGroupResponse):
            self._on_sync(response)
        elif isinstance(response, HeartbeatResponse):
            self._on_heartbeat(response)
        else:
            raise SimulationError(
                f"{self.client_id} never sends what {response} answers"
            )
        self._sync_owned()
        self._drive()

    def _on_join(self, response: JoinGroupResponse) -> None:
        members = [
            JoinMember(m.member_id, m.group_instance_id, m.metadata)
            for m in response.members
        ]
        syncs = self.core.on_join(
            int(response.error_code), response.generation_id, response.protocol_name,
            response.leader, response.member_id, members, self._now,
        ).messages  # fmt: skip
        error = response.error_code
        if error is ErrorCode.member_id_required:
            short = response.member_id[: len(self.client_id) + 9]
            text = f"MEMBER_ID_REQUIRED: JoinGroup again as {short}…"
            self.world.record(self, EntryKind.MEMBER_ID_REQUIRED, text)
        elif error is not ErrorCode.none:
            self._error("JoinGroup", error)
        else:
            leader = response.leader == response.member_id
            role = (
                f"leader of {len(response.members)}, assigns" if leader else "follower"
            )
            text = f"JoinGroup: generation {response.generation_id}, {role}"
            self.world.record(self, EntryKind.JOINED, text)
        for sync in syncs:
            assert isinstance(sync, SyncGroup)
            self._send_sync(sync)

    def _on_sync(self, response: SyncGroupResponse) -> None:
        self.core.on_sync(int(response.error_code), response.assignment, self._now)
        if response.error_code is not ErrorCode.none:
            self._plan = ()
            return self._error("SyncGroup", response.error_code)
        assigned = decode_assignment(response.assignment).partitions
        # What it fetches from now on: the new partitions join what it kept (a cooperative
        # member's revoked ones go when its application has run on_revoke).
        self._sync_owned()
        self.world.record(
            self,
            EntryKind.SYNCED,
            f"SyncGroup: {format_partitions(assigned)}",
            assigned,
        )
        if self._plan:
            # The leader's SyncGroup was accepted: its plan is the generation's assignment.
            self.world.generation_assigned(self, self._plan)
            self._plan = ()

    def _on_heartbeat(self, response: HeartbeatResponse) -> None:
        error = response.error_code
        stable = self.core.state is MemberState.STABLE
        self.core.on_heartbeat(int(error), self._now)
        if error is ErrorCode.none or not stable:
            return
        if error is ErrorCode.rebalance_in_progress:
            text = "Heartbeat: REBALANCE_IN_PROGRESS"
            self.world.record(self, EntryKind.REBALANCE_IN_PROGRESS, text)
        else:
            self._error("Heartbeat", error)

    def _on_leave(self, response: LeaveGroupResponse) -> None:
        errors = [response.error_code, *(m.error_code for m in response.members)]
        failed = ", ".join(e.name.upper() for e in errors if e is not ErrorCode.none)
        self.world.record(self, EntryKind.LEFT, f"LeaveGroup: {failed or 'left'}")

    def _error(self, api: str, error: ErrorCode) -> None:
        self.world.record(self, EntryKind.ERROR, f"{api}: {error.name.upper()}")

    # --- what it owns ------------------------------------------------------------------

    def _record_revoke(self, partitions: frozenset[TopicPartition], why: str) -> None:
        if partitions:
            text = f"revokes {format_partitions(partitions)} {why}"
            self.world.record(self, EntryKind.REVOKED, text, tuple(sorted(partitions)))

    def _sync_owned(self) -> None:
        """What it consumes is what its subscription state holds: the core adds a
        partition at the SyncGroup and lets one go after on_revoke (or at once, lost)."""
        if not self.stopped:
            self._set_owned(frozenset(self.core.subscriptions.assignment))

    def _set_owned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions != self.owned:
            self.owned = partitions
            self.world.owned_changed(self)
