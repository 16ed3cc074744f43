"""The client side of the group protocol, as a simulated Kafka consumer plays it.

Kafka's ``ConsumerCoordinator`` reduced to what a rebalance needs (seed 002 §2, seed 000
"重平衡协议", KIP-429): JoinGroup with the ``consumer`` protocol type and one protocol,
the assignor's name with the encoded subscription (v4+: rejoin with the id
MEMBER_ID_REQUIRED hands out, KIP-394); as leader, decode every member's subscription,
run the assignor and send the encoded plan in the SyncGroup; a Heartbeat every
``heartbeat.interval.ms``. A Heartbeat answered REBALANCE_IN_PROGRESS only flags the
rejoin: the consumer rejoins in its next ``poll()``, once it has processed what the last
one returned, which is why members rejoin at different times. EAGER: a member revokes
everything before it rejoins. COOPERATIVE: it keeps what it owns, revokes what the new
assignment leaves out and, if that is anything, rejoins at once for the second round.

The consumer talks to the world (the network, the clock, the timeline) through the
``World`` port, which ``_simulate`` implements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ..assignors._assignor import NO_GENERATION, RebalanceProtocol, Subscription
from ..assignors._consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..assignors._cooperative_sticky import CooperativeStickyAssignor, cooperative_violations
from ..assignors._sticky import StickyAssignor
from ..group._coordinator import GroupCoordinator
from ..group._group_requests import (
    UNKNOWN_MEMBER_ID,
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
from ..group._results import GroupReply, GroupResponse
from ._simulate_values import EntryKind, SimulationConfig, SimulationError, format_partitions

__all__ = ["Call", "SimulatedConsumer", "World"]

# JoinGroup v5 (Kafka 2.3) is new enough for MEMBER_ID_REQUIRED; LeaveGroup v3 batches.
JOIN_GROUP_VERSION = 5
LEAVE_GROUP_VERSION = 3
CLIENT_HOST = "/127.0.0.1"

Call: TypeAlias = Callable[[GroupCoordinator, int, float], list[GroupReply]]
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


@attrs.define(eq=False)
class SimulatedConsumer:
    """One consumer's membership (Kafka's ``AbstractCoordinator`` state) and its moves."""

    world: World = attrs.field(repr=False)
    config: SimulationConfig
    number: int
    processing_ms: int  # how long it works on what one poll() returns
    member_id: str = UNKNOWN_MEMBER_ID
    generation: int = NO_GENERATION
    joining: bool = True  # a JoinGroup is on its way or parked
    rejoin_needed: bool = False  # a Heartbeat said so; it rejoins at its next poll()
    synced: bool = False  # it has its assignment for ``generation``
    stopped: bool = False  # left or crashed: it sends nothing and reads nothing
    crash_after_heartbeat: bool = False
    owned: frozenset[TopicPartition] = frozenset()
    last_assignment: tuple[TopicPartition, ...] = ()  # the eager sticky assignor's memory
    plan: tuple[tuple[str, bytes], ...] = ()  # as leader: the assignment it sent
    heartbeat_epoch: int = 0  # a new epoch cancels the heartbeats scheduled before it
    last_poll: float = 0.0
    last_heard: float = 0.0  # when the coordinator last got a request from it

    @property
    def client_id(self) -> str:
        return f"consumer-{self.number}"

    @property
    def protocol(self) -> RebalanceProtocol:
        return self.config.rebalance_protocol

    # --- what the script makes it do -------------------------------------------------

    def start(self) -> None:
        self.last_poll = self.world.now
        self._send_join()
        text = f"starts (processes a poll in {self.processing_ms} ms): JoinGroup"
        self.world.record(self, EntryKind.STARTED, text)

    def leave(self) -> None:
        # KafkaConsumer.close(): the rebalance listener gives everything up, then LeaveGroup.
        self._revoke(self.owned, "before leaving")
        self.stopped = True
        request = LeaveGroupRequest(
            self.config.group_id, (MemberIdentity(self.member_id),), LEAVE_GROUP_VERSION
        )
        self.world.send(self, lambda c, rid, now: c.leave_group(rid, request, now))

    def crash(self) -> None:
        self.stopped = True
        self._set_owned(frozenset())  # nobody consumes its partitions any more
        self.world.record(self, EntryKind.CRASHED, "crashes after a heartbeat, no LeaveGroup")

    # --- requests ----------------------------------------------------------------------

    def _subscription(self) -> Subscription:
        user_data: bytes | None = None
        assignor = self.config.partition_assignor
        if isinstance(assignor, StickyAssignor):
            user_data = assignor.subscription_user_data(self.last_assignment, self.generation)
        elif isinstance(assignor, CooperativeStickyAssignor):
            user_data = assignor.subscription_user_data(self.generation)
        # An eager member revoked everything before rejoining: it owns nothing here.
        return Subscription((self.config.topic,), user_data, sorted(self.owned), self.generation)

    def _send_join(self) -> None:
        self.joining, self.synced, self.rejoin_needed = True, False, False
        self.heartbeat_epoch += 1  # the heartbeat thread pauses while it joins
        c = self.config
        request = JoinGroupRequest(
            c.group_id, self.member_id, CONSUMER_PROTOCOL_TYPE,
            ((c.assignor, encode_subscription(self._subscription())),),
            c.session_timeout_ms, c.rebalance_timeout_ms, None, self.client_id,
            CLIENT_HOST, JOIN_GROUP_VERSION,
        )  # fmt: skip
        self.world.send(self, lambda c, rid, now: c.join_group(rid, request, now))

    def _send_sync(self) -> None:
        request = SyncGroupRequest(
            self.config.group_id, self.generation, self.member_id, None,
            CONSUMER_PROTOCOL_TYPE, self.config.assignor, self.plan,
        )  # fmt: skip
        self.world.send(self, lambda c, rid, now: c.sync_group(rid, request, now))

    def heartbeat(self, epoch: int) -> None:
        if self.stopped or epoch != self.heartbeat_epoch:
            return
        request = HeartbeatRequest(self.config.group_id, self.generation, self.member_id)
        self.world.send(self, lambda c, rid, now: c.heartbeat(rid, request, now))
        if self.crash_after_heartbeat:
            return self.crash()
        self._schedule_heartbeat()

    def _schedule_heartbeat(self) -> None:
        epoch = self.heartbeat_epoch
        when = self.world.now + self.config.heartbeat_interval_ms / 1000
        self.world.at(when, lambda: self.heartbeat(epoch))

    def _at_next_poll(self, action: Callable[[], None]) -> None:
        """Run ``action`` in the next poll(), when the consumer is done with the records
        the last one returned (KafkaConsumer rejoins from poll(), not from heartbeats)."""
        period = self.processing_ms / 1000
        polls = max(0, -((self.last_poll - self.world.now) // period))  # ceil, >= now
        self.world.at(self.last_poll + polls * period, action)

    # --- answers -----------------------------------------------------------------------

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
            raise SimulationError(f"{self.client_id} never sends what {response} answers")

    def _on_join(self, response: JoinGroupResponse) -> None:
        error = response.error_code
        if error is ErrorCode.member_id_required:
            self.member_id = response.member_id
            self._send_join()
            short = response.member_id[: len(self.client_id) + 9]
            text = f"MEMBER_ID_REQUIRED: JoinGroup again as {short}…"
            return self.world.record(self, EntryKind.MEMBER_ID_REQUIRED, text)
        if error is not ErrorCode.none:
            return self._rejoin_after_error("JoinGroup", error)
        self.member_id, self.generation = response.member_id, response.generation_id
        self.joining = False
        leader = response.leader == self.member_id
        self.plan = self._assign(response) if leader else ()
        self._send_sync()
        role = f"leader of {len(response.members)}, assigns" if leader else "follower"
        text = f"JoinGroup: generation {response.generation_id}, {role}"
        self.world.record(self, EntryKind.JOINED, text)

    def _assign(self, response: JoinGroupResponse) -> tuple[tuple[str, bytes], ...]:
        """The leader's part: everyone's subscription in, the assignor's plan out."""
        subscriptions = {
            m.member_id: attrs.evolve(
                decode_subscription(m.metadata), group_instance_id=m.group_instance_id
            )
            for m in response.members
        }
        cluster = {self.config.topic: self.config.partitions}
        plan = self.config.partition_assignor.assign(cluster, subscriptions)
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            # Kafka's leader refuses a cooperative plan that hands out an owned partition.
            violations = cooperative_violations(subscriptions, plan)
            if violations:
                raise SimulationError(f"the assignor gave out owned {violations}")
        return tuple((member, encode_assignment(plan[member])) for member in sorted(plan))

    def _on_sync(self, response: SyncGroupResponse) -> None:
        if response.error_code is not ErrorCode.none:
            return self._rejoin_after_error("SyncGroup", response.error_code)
        assigned = decode_assignment(response.assignment).partitions
        self.synced, self.last_assignment = True, assigned
        self.last_poll = self.world.now  # poll() returns records of the new assignment
        lost = self.owned - set(assigned)
        self._set_owned(frozenset(assigned))
        self._schedule_heartbeat()
        text = f"SyncGroup: {format_partitions(assigned)}"
        self.world.record(self, EntryKind.SYNCED, text, assigned)
        if self.plan:
            # The leader's SyncGroup was accepted: its plan is the generation's assignment.
            self.world.generation_assigned(self, self.plan)
            self.plan = ()
        if lost:
            # KIP-429: what it revokes was withheld from the new owner, who gets it in the
            # rebalance this rejoin starts (only a cooperative member gets here).
            self._revoke(lost, "not in the assignment: rejoins")
            self._send_join()

    def _on_heartbeat(self, response: HeartbeatResponse) -> None:
        error = response.error_code
        if error is ErrorCode.none or self.rejoin_needed or self.joining:
            return
        if error is not ErrorCode.rebalance_in_progress:
            return self._rejoin_after_error("Heartbeat", error)
        self.rejoin_needed = True
        text = "Heartbeat: REBALANCE_IN_PROGRESS"
        self.world.record(self, EntryKind.REBALANCE_IN_PROGRESS, text)
        self._at_next_poll(self._rejoin)

    def _on_leave(self, response: LeaveGroupResponse) -> None:
        errors = [response.error_code, *(m.error_code for m in response.members)]
        failed = ", ".join(e.name.upper() for e in errors if e is not ErrorCode.none)
        self.world.record(self, EntryKind.LEFT, f"LeaveGroup: {failed or 'left'}")

    def _rejoin(self) -> None:
        if self.stopped or self.joining:
            return
        if self.protocol is RebalanceProtocol.EAGER:
            # ConsumerCoordinator.onJoinPrepare: an eager member gives everything up first.
            self._revoke(self.owned, "in poll(), then JoinGroup (eager)")
        else:
            kept = format_partitions(self.owned)
            self.world.record(self, EntryKind.REJOINING, f"poll(): JoinGroup, keeps {kept}")
        self._send_join()

    def _rejoin_after_error(self, api: str, error: ErrorCode) -> None:
        if error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            # The group moved on without it: its partitions are lost, not revoked (they
            # may be someone else's already).
            self._set_owned(frozenset())
            self.generation = NO_GENERATION
            if error is ErrorCode.unknown_member_id:
                self.member_id = UNKNOWN_MEMBER_ID
        elif error is not ErrorCode.rebalance_in_progress:
            raise SimulationError(f"{self.client_id}: {api} failed with {error.name.upper()}")
        self.joining, self.rejoin_needed = False, True
        self.world.record(self, EntryKind.ERROR, f"{api}: {error.name.upper()}")
        self._at_next_poll(self._rejoin)

    # --- what it owns ------------------------------------------------------------------

    def _revoke(self, partitions: frozenset[TopicPartition], why: str) -> None:
        if not partitions:
            return
        self._set_owned(self.owned - partitions)
        text = f"revokes {format_partitions(partitions)} {why}"
        self.world.record(self, EntryKind.REVOKED, text, tuple(sorted(partitions)))

    def _set_owned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions != self.owned:
            self.owned = partitions
            self.world.owned_changed(self)
