"""The consumer's side of the group protocol: Kafka's ``ConsumerCoordinator`` (seeds 000, 002).

The broker's group coordinator (the groups chapter) runs the group; this is what each
member does. It finds its coordinator (FindCoordinator), joins (JoinGroup, with one
subscription per assignor it supports; a new member is first told its member id,
KIP-394, and joins again with it), and waits. The coordinator picks one member as
leader and one assignor every member supports; the leader alone gets everyone's
subscriptions, runs the assignor on the cluster's partition counts and sends the plan
with its SyncGroup; every member's SyncGroup answer is its own assignment. Then it
heartbeats every ``heartbeat.interval.ms``; a heartbeat answered REBALANCE_IN_PROGRESS
means join again, one answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION means this member
was dropped (its session ran out): its partitions are *lost*, not revoked, since others
may already have them.

How partitions change hands depends on the rebalance protocol, the best that all the
configured assignors support (KIP-429):

- **eager**: before it joins, a member gives up every partition (``on_revoke``, and a
  commit of its positions with auto-commit), and after the rebalance it gets its new
  set (``on_assign``): nothing is consumed in between.
- **cooperative** (``cooperative-sticky``): a member keeps its partitions while it
  rejoins and reports them in its subscription; the leader's assignor takes a partition
  from its owner without giving it to anyone in the same rebalance. The owner revokes
  only what it lost and joins again at once; the second rebalance hands the partitions
  out.

Rebalance callbacks run on the application's thread, inside ``poll``, as in
confluent-kafka: the coordinator emits :class:`RebalanceEvent` values and waits for
:meth:`ConsumerCoordinator.events_done` before it sends the JoinGroup that must follow a
revocation. Commits (OffsetCommit) carry the generation and member id, so a member that
was dropped cannot commit over its successor. A newly assigned partition starts from the
group's committed offset (OffsetFetch), or by ``auto.offset.reset`` without one. A
member subscribed by pattern matches it against the cluster's topics itself and joins
again when what it matches changes (``_follow_pattern``).

A core: calls take ``now`` (seconds); answers go in, and the requests to send come back
as the messages of a :class:`~minikafka.common.CoreResult` (:meth:`on_timer` when
:meth:`next_deadline` comes, the SyncGroup that follows a JoinGroup from :meth:`on_join`,
a LeaveGroup from :meth:`leave`); a member writes no log.
It lives beside the broker's coordinator, the other half of the same protocol, so that
the group simulator (``python -m minikafka.coordination simulate``) runs both halves:
what it needs from the consumer around it comes through two ports, :class:`MemberSettings`
(the client's configuration) and :class:`ClusterView` (its metadata).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition

from ..assignors._assignor import (
    NO_GENERATION,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
)
from ..assignors._consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..assignors._cooperative_sticky import CooperativeStickyAssignor
from ..assignors._range import RangeAssignor
from ..assignors._round_robin import RoundRobinAssignor
from ..assignors._sticky import StickyAssignor
from ._requests import (
    FindCoordinator,
    GroupRequest,
    Heartbeat,
    JoinGroup,
    JoinMember,
    LeaveGroup,
    MemberResult,
    OffsetCommit,
    OffsetFetch,
    RebalanceEvent,
    SyncGroup,
)
from ._subscription import SubscriptionState

ASSIGNOR_TYPES: dict[str, type[PartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
_COORDINATOR_GONE = frozenset(
    {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}
)
_MEMBER_GONE = frozenset(
    {
        ErrorCode.unknown_member_id,
        ErrorCode.illegal_generation,
        ErrorCode.fenced_instance_id,
    }
)


class MemberSettings(Protocol):
    """The consumer configuration a member reads (Kafka's keys, in ``ConsumerConfig``)."""

    @property
    def partition_assignment_strategy(self) -> Sequence[str]: ...
    @property
    def group_instance_id(self) -> str | None: ...
    @property
    def session_timeout_ms(self) -> int: ...
    @property
    def heartbeat_interval_ms(self) -> int: ...
    @property
    def max_poll_interval_ms(self) -> int: ...
    @property
    def enable_auto_commit(self) -> bool: ...
    @property
    def auto_commit_interval_ms(self) -> int: ...
    @property
    def retry_backoff_ms(self) -> int: ...


class PartitionCount(Protocol):
    @property
    def leaders(self) -> tuple[int, ...]: ...  # one entry per partition


class ClusterView(Protocol):
    """What a member asks of the consumer's metadata: whether a node is known (the
    coordinator FindCoordinator named), as leader each subscribed topic's partitions
    (asking for a topic it did not track yet), and, subscribed by pattern, the
    cluster's topics (None until a Metadata answer listed them all)."""

    def node(self, node_id: int) -> object | None: ...
    def want(self, topic: str) -> bool: ...
    def partitions(self, topic: str) -> PartitionCount | None: ...
    def cluster_topics(self) -> Collection[str] | None: ...


class MemberState(enum.Enum):
    UNJOINED = "unjoined"  # no generation; joins when it can
    PREPARING = "preparing"  # revocation callbacks running before a join
    JOINING = "joining"  # JoinGroup in flight
    SYNCING = "syncing"  # SyncGroup in flight
    STABLE = "stable"  # a member of the current generation


_HEARTBEATING = frozenset({MemberState.STABLE, MemberState.PREPARING})
"""The states in which the member heartbeats (PREPARING: on_revoke not run yet)."""
_REBALANCING = frozenset({MemberState.JOINING, MemberState.SYNCING})
"""A JoinGroup or SyncGroup in flight: the member's commits fail (REBALANCE_IN_PROGRESS)."""


@attrs.define
class ConsumerCoordinator:
    config: MemberSettings
    subscriptions: SubscriptionState
    metadata: ClusterView
    group_id: str
    state: MemberState = MemberState.UNJOINED
    coordinator: int | None = None  # the coordinator's node id (in metadata.nodes)
    member_id: str = ""
    generation_id: int = NO_GENERATION
    protocol: str | None = None
    rejoin_needed: bool = True
    events: list[RebalanceEvent] = attrs.field(factory=list)
    # commit id -> error code
    commit_results: dict[int, int] = attrs.field(factory=dict)
    _waiting_for_events: bool = False
    _finding: bool = False
    _heartbeat_in_flight: bool = False
    _next_heartbeat: float = 0.0
    _fetching_offsets: bool = False
    _next_auto_commit: float = 0.0
    _commit_ids: int = 0
    _last_assignment: tuple[TopicPartition, ...] = ()
    _retry_at: float = 0.0
    _pending_commits: list[OffsetCommit] = attrs.field(factory=list)
    _revoking: tuple[TopicPartition, ...] = ()
    _last_app_poll: float | None = None
    _stalled: bool = False  # left after max.poll.interval.ms; back at the next poll
    _joined: frozenset[str] = frozenset()  # the subscription of the last JoinGroup

    @property
    def protocol_kind(self) -> RebalanceProtocol:
        """KIP-429: cooperative only if every configured assignor supports it."""
        assignors = [
            ASSIGNOR_TYPES[n]() for n in self.config.partition_assignment_strategy
        ]
        common = set.intersection(*(set(a.supported_protocols) for a in assignors))
        return max(common) if common else RebalanceProtocol.EAGER

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return tuple(
            sorted(
                self.subscriptions.assignment, key=lambda tp: (tp.topic, tp.partition)
            )
        )

    # --- the loop -----------------------------------------------------------------

    def on_timer(self, now: float) -> MemberResult:
        """What to send now: the timers that came due (heartbeat, auto-commit, the end of
        a backoff), and whatever the last answers made possible (a join, a fetch of
        committed offsets, the commits asked for since)."""
        out: list[GroupRequest] = []
        if now < self._retry_at:
            return CoreResult()
        self._retry_at = 0.0  # backed off long enough
        if self.coordinator is None:
            if not self._finding:
                self._finding = True
                out.append(FindCoordinator(self.group_id))
            return CoreResult(messages=tuple(out))
        if self._poll_timed_out(now):
            # max.poll.interval.ms without a poll: the application is stuck, and a member
            # that does not process must not hold partitions. Leave (Kafka's
            # maybeLeaveGroup); the partitions are lost; rejoin at the next poll.
            lost = self.owned
            leave = self.leave()
            self.subscriptions.set_assignment(())
            self._reset_member()
            self._stalled = True
            if lost:
                self._emit("lost", lost)
            return leave
        subscribed = self._follow_pattern() and self.subscriptions.subscribed
        changed = self._joined != self.subscriptions.subscription
        if self.state is MemberState.STABLE and subscribed and changed:
            self.request_rejoin()  # Kafka's rejoinNeededOrPending: it changed
        # A join waits for the callbacks (on_revoke) the application has not run yet,
        # and for the application itself after it let max.poll.interval.ms pass.
        joining = self.state is MemberState.UNJOINED and self.rejoin_needed
        joining = joining and not self._waiting_for_events and not self._stalled
        if joining and subscribed and not self.subscriptions.manual:
            join = self._prepare_join(now)
            if join is not None:
                out.append(join)
        heartbeat_due = now >= self._next_heartbeat and not self._heartbeat_in_flight
        # Until the application's poll has run on_revoke and the JoinGroup goes, the
        # member keeps its session (KIP-62: Java's heartbeat thread beats until
        # onJoinPrepare); the coordinator waits max.poll.interval.ms for its JoinGroup,
        # not session.timeout.ms, so a slow poll does not get it thrown out while it
        # still owns its partitions.
        if self._keeps_session() and heartbeat_due:
            self._heartbeat_in_flight = True
            self._next_heartbeat = now + self.config.heartbeat_interval_ms / 1000
            out.append(
                Heartbeat(
                    self.group_id,
                    self.generation_id,
                    self.member_id,
                    self.config.group_instance_id,
                )
            )
        if self.state is MemberState.STABLE or self.subscriptions.manual:
            # Committed offsets for partitions without a position; auto-commit.
            missing = self.subscriptions.needs_position()
            if missing and not self._fetching_offsets:
                self._fetching_offsets = True
                out.append(OffsetFetch(self.group_id, tuple(missing)))
            if self.config.enable_auto_commit and now >= self._next_auto_commit:
                self._next_auto_commit = (
                    now + self.config.auto_commit_interval_ms / 1000
                )
                self.commit(self.subscriptions.positions(), now)
        if self.state in _REBALANCING:
            # Kafka's ConsumerCoordinator.sendOffsetCommitRequest: no commit while the
            # member rejoins, failed at once with REBALANCE_IN_PROGRESS. Sent, it would
            # wait behind the JoinGroup on the coordinator's connection (answered in
            # order), and its request.timeout.ms would close that connection and the
            # JoinGroup, which may wait the whole rebalance timeout, with it.
            for commit in self._pending_commits:
                self.commit_results[commit.commit_id] = ErrorCode.rebalance_in_progress
            self._pending_commits.clear()
        out.extend(self._pending_commits)
        self._pending_commits.clear()
        return CoreResult(messages=tuple(out))

    def next_deadline(self) -> float | None:
        """When :meth:`on_timer` may have something new to send by itself: the end of a
        backoff, the next heartbeat, the next auto-commit. What only an answer or the
        application changes (a join, a fetch of offsets) comes with that call; the shell
        looks again at least every second all the same (``max.poll.interval.ms``)."""
        times: list[float] = []
        if self._retry_at > 0.0:
            times.append(self._retry_at)
        if self._keeps_session():
            times.append(self._next_heartbeat)
        if self.config.enable_auto_commit and (
            self.state is MemberState.STABLE or self.subscriptions.manual
        ):
            times.append(self._next_auto_commit)
        return min(times, default=None)

    def _prepare_join(self, now: float) -> JoinGroup | None:
        if (
            self.protocol_kind is RebalanceProtocol.EAGER
            and self.subscriptions.assignment
        ):
            # Eager: give everything up before joining: commit (with auto-commit), then
            # the application's on_revoke, which may commit too; the partitions go when
            # it returns (events_done).
            if self.config.enable_auto_commit:
                self.commit(self.subscriptions.positions(), now)
            self._revoking = self.owned
            self._emit("revoke", self._revoking)
            self.state = MemberState.PREPARING
            return None
        self.state = MemberState.JOINING
        self.rejoin_needed = False
        self._joined = self.subscriptions.subscription
        return JoinGroup(
            self.group_id,
            self.member_id,
            self.config.group_instance_id,
            self.config.session_timeout_ms,
            self.config.max_poll_interval_ms,
            tuple(
                (name, self._subscription_bytes(name))
                for name in self.config.partition_assignment_strategy
            ),
        )

    def _follow_pattern(self) -> bool:
        """Subscribed by pattern: match it against the cluster's topics (Kafka's
        ``updatePatternSubscription``, each time round, so a topic created or deleted
        changes the subscription); False until the metadata has listed them, as
        Kafka's consumer joins with fresh metadata only."""
        subscriptions = self.subscriptions
        topics = self.metadata.cluster_topics() if subscriptions.pattern else None
        if topics is not None and subscriptions.match_pattern(topics):
            for topic in subscriptions.subscription:
                self.metadata.want(topic)
        return subscriptions.pattern is None or subscriptions.pattern_matched

    def _subscription_bytes(self, name: str) -> bytes:
        assignor = ASSIGNOR_TYPES[name]()
        user_data: bytes | None = None
        if isinstance(assignor, StickyAssignor):
            user_data = assignor.subscription_user_data(
                self._last_assignment, self.generation_id
            )
        elif isinstance(assignor, CooperativeStickyAssignor):
            user_data = assignor.subscription_user_data(self.generation_id)
        owned = (
            self.owned if self.protocol_kind is RebalanceProtocol.COOPERATIVE else ()
        )
        topics = sorted(self.subscriptions.subscription)
        return encode_subscription(
            Subscription(topics, user_data, owned, self.generation_id)
        )

    def _emit(self, kind: str, partitions: Sequence[TopicPartition]) -> None:
        self.events.append(RebalanceEvent(kind, tuple(partitions)))
        self._waiting_for_events = True

    def events_done(self) -> None:
        """The application ran the callbacks of :attr:`events` (taken by the shell): the
        partitions revoked are let go now, after ``on_revoke`` could still commit them."""
        self._waiting_for_events = False
        self.subscriptions.remove(self._revoking)
        self._revoking = ()
        if self.state is MemberState.PREPARING:
            self.state = MemberState.UNJOINED

    def _keeps_session(self) -> bool:
        """Heartbeat now? In its generation, and until the JoinGroup goes: also while a
        rejoin waits for the application's poll (the callbacks of the last generation,
        or on_revoke, not run yet), as Java's heartbeat thread beats until the poll."""
        if self.state in _HEARTBEATING:
            return True
        return (
            self.state is MemberState.UNJOINED
            and self._waiting_for_events
            and self.generation_id != NO_GENERATION
        )

    def request_rejoin(self) -> None:
        self.rejoin_needed = True
        if self.state is MemberState.STABLE:
            self.state = MemberState.UNJOINED

    # --- answers ------------------------------------------------------------------

    def on_find_coordinator(self, error: int, node_id: int, now: float) -> None:
        self._finding = False
        if error == ErrorCode.none and self.metadata.node(node_id) is not None:
            self.coordinator = node_id
        else:
            self._backoff(now)

    def coordinator_unknown(self, now: float) -> None:
        """The coordinator moved or its connection failed: find it again."""
        self.coordinator = None
        self._finding = False
        self._heartbeat_in_flight = False
        self._fetching_offsets = False
        if self.state in (MemberState.JOINING, MemberState.SYNCING):
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True
        self._backoff(now)

    def on_join(
        self,
        error: int,
        generation_id: int,
        protocol: str | None,
        leader: str,
        member_id: str,
        members: Sequence[JoinMember],
        now: float,
    ) -> MemberResult:
        """JoinGroup answered; the SyncGroup to send, at once and to the same
        coordinator (the leader's carries the plan)."""
        if error == ErrorCode.member_id_required:  # KIP-394: join again with this id
            self.member_id, self.state, self.rejoin_needed = (
                member_id,
                MemberState.UNJOINED,
                True,
            )
            return CoreResult()
        if error != ErrorCode.none:
            self._join_failed(error, now)
            return CoreResult()
        self.member_id, self.generation_id, self.protocol = (
            member_id,
            generation_id,
            protocol,
        )
        assignments: tuple[tuple[str, bytes], ...] = ()
        if member_id == leader and protocol is not None:
            assignments = self._assign(protocol, members)
        self.state = MemberState.SYNCING
        sync = SyncGroup(
            self.group_id,
            generation_id,
            member_id,
            self.config.group_instance_id,
            assignments,
        )
        return CoreResult(messages=(sync,))

    def _assign(
        self, protocol: str, members: Sequence[JoinMember]
    ) -> tuple[tuple[str, bytes], ...]:
        subscriptions = {}
        for m in members:
            decoded = decode_subscription(m.metadata)
            subscriptions[m.member_id] = attrs.evolve(
                decoded, group_instance_id=m.group_instance_id
            )
        topics = {t for s in subscriptions.values() for t in s.topics}
        for topic in topics:
            self.metadata.want(topic)
        cluster = {
            t: len(info.leaders)
            for t in topics
            if (info := self.metadata.partitions(t))
        }
        plan = ASSIGNOR_TYPES[protocol]().assign(cluster, subscriptions)
        return tuple(
            (member, encode_assignment(a)) for member, a in sorted(plan.items())
        )

    def on_sync(self, error: int, assignment: bytes, now: float) -> None:
        if error != ErrorCode.none:
            self._join_failed(error, now)
            return
        new = tuple(decode_assignment(assignment).partitions)
        owned = set(self.subscriptions.assignment)
        self._last_assignment = new
        self.state = MemberState.STABLE
        self._next_heartbeat = now + self.config.heartbeat_interval_ms / 1000
        if self._next_auto_commit == 0.0:
            self._next_auto_commit = now + self.config.auto_commit_interval_ms / 1000
        revoked = sorted(owned - set(new), key=lambda tp: (tp.topic, tp.partition))
        added = [tp for tp in new if tp not in owned]
        if revoked:  # cooperative: give up what moved, then rejoin to hand it out
            self._revoking = tuple(revoked)
            self._emit("revoke", revoked)
            self.rejoin_needed = True
            self.state = MemberState.UNJOINED
        self.subscriptions.add(added)
        self._emit("assign", added)

    def _join_failed(self, error: int, now: float) -> None:
        self.state, self.rejoin_needed = MemberState.UNJOINED, True
        if error in _COORDINATOR_GONE:
            self.coordinator_unknown(now)
        elif error in _MEMBER_GONE:
            self._reset_member()
        elif error != ErrorCode.rebalance_in_progress:
            self._backoff(now)

    def on_heartbeat(self, error: int, now: float) -> None:
        self._heartbeat_in_flight = False
        if error == ErrorCode.none or self.state is not MemberState.STABLE:
            return
        if error == ErrorCode.rebalance_in_progress:
            self.request_rejoin()
        elif error in _MEMBER_GONE:
            self._lose_partitions()
        elif error in _COORDINATOR_GONE:
            self.coordinator_unknown(now)

    def _lose_partitions(self) -> None:
        """Dropped from the group: the partitions may be someone else's already."""
        lost = self.owned
        self.subscriptions.set_assignment(())
        self._reset_member()
        self.state, self.rejoin_needed = MemberState.UNJOINED, True
        if lost:
            self._emit("lost", lost)

    def _reset_member(self) -> None:
        self.generation_id = NO_GENERATION
        if self.config.group_instance_id is None:
            self.member_id = ""

    def on_offset_fetch(
        self, offsets: Mapping[TopicPartition, tuple[int, int]], now: float
    ) -> None:
        """Committed offsets: (error, offset) per partition; -1 means none committed."""
        self._fetching_offsets = False
        if not self.subscriptions.seek_to_committed(offsets):
            self._backoff(now)

    def commit(
        self, offsets: Mapping[TopicPartition, int], now: float
    ) -> OffsetCommit | None:
        """Commit ``offsets`` (the next offset to read, per partition): the request, sent
        with the next :meth:`on_timer` once the coordinator is known (held until then, so
        a commit made while the coordinator moves is not failed); returned for its
        ``commit_id``; its outcome lands in :attr:`commit_results`."""
        if not offsets:
            return None
        self._commit_ids += 1
        request = OffsetCommit(
            self.group_id,
            self.generation_id,
            self.member_id,
            self.config.group_instance_id,
            self.subscriptions.with_leader_epochs(offsets),
            self._commit_ids,
        )
        self._pending_commits.append(request)
        return request

    def on_commit(self, commit_id: int, errors: Iterable[int], now: float) -> None:
        first = next((e for e in errors if e != ErrorCode.none), ErrorCode.none)
        self.commit_results[commit_id] = int(first)
        if first in _MEMBER_GONE or first == ErrorCode.rebalance_in_progress:
            self.request_rejoin()
        elif first in _COORDINATOR_GONE:
            self.coordinator_unknown(now)

    def leave(self) -> MemberResult:
        """Leave the group: the LeaveGroup to send (none for a static member, whose
        session keeps its place, or for one that is not in the group)."""
        state, self.state = self.state, MemberState.UNJOINED
        self.rejoin_needed = False
        if self.config.group_instance_id is not None or not self.member_id:
            return CoreResult()
        if state is MemberState.UNJOINED and self.generation_id == NO_GENERATION:
            return CoreResult()
        request = LeaveGroup(self.group_id, self.member_id, None)
        self._reset_member()
        return CoreResult(messages=(request,))

    def app_polled(self, now: float) -> None:
        """The application called poll: it is alive (``max.poll.interval.ms``)."""
        self._last_app_poll = now
        if self._stalled:
            self._stalled = False
            self.rejoin_needed = True

    def _poll_timed_out(self, now: float) -> bool:
        if self._stalled or self._last_app_poll is None:
            return False
        if self.state not in (
            MemberState.STABLE,
            MemberState.SYNCING,
            MemberState.JOINING,
        ):
            return False
        return (now - self._last_app_poll) * 1000 > self.config.max_poll_interval_ms

    def _backoff(self, now: float) -> None:
        self._retry_at = now + self.config.retry_backoff_ms / 1000
