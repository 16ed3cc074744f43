"""The member's side of KIP-848's consumer group protocol: Kafka's ``ConsumerMembershipManager``
and ``ConsumerHeartbeatRequestManager``, as one core.

With the consumer protocol the broker assigns: a member only heartbeats
(ConsumerGroupHeartbeat) and reconciles towards the assignment the answer carries. It
joins with member epoch 0 and every field; afterwards a heartbeat carries only what
changed (the subscription, the partitions it owns), as Kafka's client sends it. When an
answer brings a new assignment the member revokes what is no longer its own first (a
commit of their positions with auto-commit, then the application's ``on_revoke``), takes
the rest (``on_assign``), and acknowledges by heartbeating the partitions it now owns at
once. FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID means the group went on without it: its
partitions are *lost* (someone else may have them) and it joins again with epoch 0. It
leaves with epoch -1 (-2 for a static member, whose place is kept).

The states are Kafka's ``MemberState``; :data:`TRANSITIONS` is the table every move is
checked against. The core has the same face as the classic
:class:`~.ConsumerCoordinator` (``on_timer``, ``events``, ``commit``, ``leave``...), so
the consumer's shell drives either one.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition

from ._consumer_coordinator import MemberSettings
from ._pattern import INVALID_PATTERN_PREFIX
from ._requests import (
    ConsumerGroupHeartbeat,
    FindCoordinator,
    GroupRequest,
    MemberResult,
    OffsetCommit,
    OffsetFetch,
    RebalanceEvent,
)
from ._subscription import SubscriptionState

_COORDINATOR_GONE = frozenset(
    {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}
)
_FENCED = frozenset({ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id})
# Kafka's client gives up on these (its FATAL state) and tells the application.
FATAL_ERRORS = frozenset(
    {
        ErrorCode.unsupported_assignor,
        ErrorCode.group_max_size_reached,
        ErrorCode.unreleased_instance_id,
        ErrorCode.invalid_request,
        ErrorCode.group_authorization_failed,
        ErrorCode.unsupported_version,
        ErrorCode.invalid_regular_expression,
    }
)
LEAVE_EPOCH, LEAVE_STATIC_EPOCH = -1, -2


class ConsumerMemberState(enum.Enum):
    """Kafka's ``MemberState`` (the client's, for the consumer protocol)."""

    UNSUBSCRIBED = "unsubscribed"  # not in the group
    JOINING = "joining"  # heartbeat with epoch 0 sent or due
    RECONCILING = "reconciling"  # revoking/assigning towards a new target
    ACKNOWLEDGING = "acknowledging"  # reconciled; the heartbeat saying so is due
    STABLE = "stable"  # owns its target assignment
    FENCED = "fenced"  # the group fenced it: partitions lost, rejoin
    LEAVING = "leaving"  # the heartbeat with epoch -1 is due or in flight


S = ConsumerMemberState
TRANSITIONS: Mapping[ConsumerMemberState, frozenset[ConsumerMemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.JOINING, S.LEAVING}),
    S.JOINING: frozenset({S.RECONCILING, S.STABLE, S.FENCED, S.LEAVING, S.JOINING}),
    S.RECONCILING: frozenset({S.ACKNOWLEDGING, S.RECONCILING, S.FENCED, S.LEAVING}),
    S.ACKNOWLEDGING: frozenset({S.STABLE, S.RECONCILING, S.FENCED, S.LEAVING}),
    S.STABLE: frozenset({S.RECONCILING, S.FENCED, S.LEAVING, S.STABLE}),
    S.FENCED: frozenset({S.JOINING, S.LEAVING, S.UNSUBSCRIBED}),
    S.LEAVING: frozenset({S.UNSUBSCRIBED, S.JOINING}),
}
"""From each state, the states a member may move to (Kafka's ``MemberState``)."""


def _sorted(tps: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tps, key=lambda tp: (tp.topic, tp.partition)))


@attrs.define
class ConsumerProtocolMember:
    config: MemberSettings
    subscriptions: SubscriptionState
    group_id: str
    member_id: str  # KIP-1082: the client makes its own (a random UUID)
    rebalance_timeout_ms: int
    server_assignor: str | None = None  # group.remote.assignor
    state: ConsumerMemberState = ConsumerMemberState.UNSUBSCRIBED
    member_epoch: int = 0
    coordinator: int | None = None
    events: list[RebalanceEvent] = attrs.field(factory=list)
    commit_results: dict[int, int] = attrs.field(factory=dict)
    heartbeat_interval_ms: int | None = None  # the coordinator's, from each answer
    fatal: tuple[int, str | None] | None = (
        None  # error code, message: no more heartbeats
    )
    _target: tuple[TopicPartition, ...] | None = None  # to reconcile towards
    _sent: ConsumerGroupHeartbeat | None = None  # every field as last acknowledged
    _send_full: bool = True
    _finding: bool = False
    _heartbeat_in_flight: bool = False
    _next_heartbeat: float = 0.0
    _retry_at: float = 0.0
    _waiting_for_events: bool = False
    _revoking: tuple[TopicPartition, ...] = ()
    _fetching_offsets: bool = False
    _next_auto_commit: float = 0.0
    _commit_ids: int = 0
    _pending_commits: list[OffsetCommit] = attrs.field(factory=list)
    _last_app_poll: float | None = None
    _stalled: bool = False  # left after max.poll.interval.ms; back at the next poll

    @property
    def generation_id(self) -> int:
        """Offset commits carry the member epoch where the classic protocol has the
        generation (KIP-848)."""
        return self.member_epoch

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return _sorted(self.subscriptions.assignment)

    def _move(self, to: ConsumerMemberState) -> None:
        if to not in TRANSITIONS[self.state]:
            raise AssertionError(f"member state {self.state.name} -> {to.name}")
        self.state = to

    # --- the loop -----------------------------------------------------------------

    def on_timer(self, now: float) -> MemberResult:
        """What to send now: FindCoordinator, the heartbeat that is due (at once when
        joining or acknowledging), offset fetches for new partitions, commits."""
        if now < self._retry_at:
            return CoreResult()
        if self.coordinator is None:
            if self._finding:
                return CoreResult()
            self._finding = True
            return CoreResult(messages=(FindCoordinator(self.group_id),))
        if self._poll_timed_out(now):
            # max.poll.interval.ms without a poll: a member that does not process must
            # not hold partitions. Leave (epoch -1); they are lost; rejoin at the next
            # poll (Kafka's consumer does the same, through its STALE state).
            lost = self.owned
            leave = self.leave()
            self.subscriptions.set_assignment(())
            self._stalled = True
            if lost:
                self._emit("lost", lost)
            return leave
        out: list[GroupRequest] = []
        subscribed = self.subscriptions.subscribed and not self._stalled
        if (
            self.state is S.UNSUBSCRIBED
            and subscribed
            and not self.subscriptions.manual
        ):
            self._join()
        if self.state is S.FENCED and not self._waiting_for_events:
            self._join()  # the lost partitions are released: back with epoch 0
        if self.state is S.RECONCILING and not self._waiting_for_events:
            self._reconcile(now)
        if self._heartbeat_due(now):
            out.append(self._heartbeat(now))
        if self.state in (S.STABLE, S.ACKNOWLEDGING) and not self._waiting_for_events:
            missing = self.subscriptions.needs_position()
            if missing and not self._fetching_offsets:
                self._fetching_offsets = True
                out.append(OffsetFetch(self.group_id, tuple(missing)))
            if self.config.enable_auto_commit and now >= self._next_auto_commit:
                self._next_auto_commit = (
                    now + self.config.auto_commit_interval_ms / 1000
                )
                self.commit(self.subscriptions.positions(), now)
        out.extend(self._pending_commits)
        self._pending_commits.clear()
        return CoreResult(messages=tuple(out))

    def next_deadline(self) -> float | None:
        times = [t for t in (self._retry_at,) if t > 0.0]
        if self.state in (S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING):
            times.append(self._next_heartbeat)
        if self.config.enable_auto_commit and self.state is S.STABLE:
            times.append(self._next_auto_commit)
        return min(times, default=None)

    def _join(self) -> None:
        self._move(S.JOINING)
        self.member_epoch, self._send_full, self._next_heartbeat = 0, True, 0.0

    def _heartbeat_due(self, now: float) -> bool:
        if self._heartbeat_in_flight or self.fatal is not None:
            return False
        if self.state in (S.JOINING, S.ACKNOWLEDGING):
            return not self._waiting_for_events
        return self.state in (S.STABLE, S.RECONCILING) and now >= self._next_heartbeat

    def _heartbeat(self, now: float) -> ConsumerGroupHeartbeat:
        """Every field on a join or after an error; otherwise only what changed since
        the last heartbeat the coordinator answered (``ConsumerHeartbeatRequestManager``).
        A pattern goes as ``SubscribedTopicRegex``, the topic names alone as names."""
        pattern = self.subscriptions.pattern
        full = ConsumerGroupHeartbeat(
            self.group_id,
            self.member_id,
            self.member_epoch,
            self.config.group_instance_id,
            self.rebalance_timeout_ms,
            tuple(sorted(self.subscriptions.named)),
            self.server_assignor,
            self.owned,
            None if pattern is None else pattern.regex,
        )
        last = None if self._send_full else self._sent
        request = full
        if last is not None:
            request = attrs.evolve(
                full,
                instance_id=None,
                rebalance_timeout_ms=None,
                server_assignor=None,
                subscribed_topic_names=(
                    None
                    if full.subscribed_topic_names == last.subscribed_topic_names
                    else full.subscribed_topic_names
                ),
                owned=None if full.owned == last.owned else full.owned,
                subscribed_topic_regex=(
                    None
                    if full.subscribed_topic_regex == last.subscribed_topic_regex
                    else full.subscribed_topic_regex or ""  # "": no pattern now
                ),
            )
        self._sent, self._send_full = full, False
        self._heartbeat_in_flight = True
        self._next_heartbeat = now + (self.heartbeat_interval_ms or 3000) / 1000
        return request

    def _reconcile(self, now: float) -> None:
        """Towards the target: revoke what is no longer ours (commit first with
        auto-commit; ``on_revoke``), then take the new (``on_assign``); the heartbeat
        that acknowledges goes once the application ran both (:meth:`events_done`)."""
        assert self._target is not None
        target, self._target = set(self._target), None
        owned = set(self.subscriptions.assignment)
        revoked, added = _sorted(owned - target), _sorted(target - owned)
        if revoked:
            if self.config.enable_auto_commit:
                positions = self.subscriptions.positions()
                self.commit(
                    {tp: positions[tp] for tp in revoked if tp in positions}, now
                )
            self._revoking = revoked
            self._emit("revoke", revoked)
        self.subscriptions.add(added)
        self._emit("assign", added)

    def _emit(self, kind: str, partitions: Sequence[TopicPartition]) -> None:
        self.events.append(RebalanceEvent(kind, tuple(partitions)))
        self._waiting_for_events = True

    def events_done(self) -> None:
        """The application ran the callbacks: revoked partitions go now."""
        self._waiting_for_events = False
        self.subscriptions.remove(self._revoking)
        self._revoking = ()
        if self.state is S.RECONCILING and self._target is None:
            self._move(S.ACKNOWLEDGING)

    def request_rejoin(self) -> None:
        """The subscription changed: the next heartbeat carries it (a join when out)."""
        if self.state is S.STABLE:
            self._next_heartbeat = 0.0

    def app_polled(self, now: float) -> None:
        """The application polled: it is alive (``max.poll.interval.ms``)."""
        self._last_app_poll = now
        self._stalled = False

    def _poll_timed_out(self, now: float) -> bool:
        if self._stalled or self._last_app_poll is None or self.member_epoch <= 0:
            return False
        return (now - self._last_app_poll) * 1000 > self.config.max_poll_interval_ms

    # --- answers ------------------------------------------------------------------

    def on_find_coordinator(self, error: int, node_id: int, now: float) -> None:
        self._finding = False
        if error == ErrorCode.none and node_id >= 0:
            self.coordinator = node_id
        else:
            self._backoff(now)

    def coordinator_unknown(self, now: float) -> None:
        self.coordinator, self._finding = None, False
        self._heartbeat_in_flight = self._fetching_offsets = False
        self._send_full = True
        self._backoff(now)

    def on_heartbeat_response(
        self,
        error: int,
        member_id: str | None,
        member_epoch: int,
        heartbeat_interval_ms: int,
        assignment: tuple[TopicPartition, ...] | None,
        now: float,
        message: str | None = None,
    ) -> None:
        """A ConsumerGroupHeartbeat answered; ``assignment`` is None when unchanged; a
        fatal error stops the member (:attr:`fatal`, which the shell reports)."""
        self._heartbeat_in_flight = False
        if self.state in (S.LEAVING, S.UNSUBSCRIBED):
            return
        if error in _FENCED:
            self._fence()
        elif error in _COORDINATOR_GONE:
            self.coordinator_unknown(now)
        elif error == ErrorCode.invalid_regular_expression:
            self.fatal = (error, INVALID_PATTERN_PREFIX + (message or ""))
        elif error in FATAL_ERRORS:
            self.fatal = (error, message)
        elif error != ErrorCode.none:
            self._send_full = True  # after an error, every field again
            self._backoff(now)
        else:
            self.member_id = member_id or self.member_id
            self.member_epoch = member_epoch
            self.heartbeat_interval_ms = heartbeat_interval_ms
            self._next_heartbeat = now + heartbeat_interval_ms / 1000
            if self._next_auto_commit == 0.0:
                self._next_auto_commit = (
                    now + self.config.auto_commit_interval_ms / 1000
                )
            if assignment is not None and set(assignment) != set(self.owned):
                self._target = assignment
                self._move(S.RECONCILING)
            elif (
                self.state is not S.RECONCILING and assignment is not None
            ) or self.state is S.ACKNOWLEDGING:
                self._move(S.STABLE)

    def assignment_unresolved(self) -> None:
        """The last answer named a topic id the client's metadata does not know yet, and
        that part of the assignment was left out: the next heartbeat carries every
        field, so the coordinator sends the whole assignment again, by which time the
        metadata may name it (Kafka's client keeps such ids unresolved and retries).
        Without this, a member whose resolved part changed nothing would never ask."""
        self._send_full = True

    def _fence(self) -> None:
        """Fenced or forgotten: the partitions are lost, not revoked; rejoin with 0."""
        lost = self.owned
        self.subscriptions.set_assignment(())
        self._target, self._revoking = None, ()
        self.member_epoch, self._send_full = 0, True
        self._move(S.FENCED)
        if lost:
            self._emit("lost", lost)

    def on_offset_fetch(
        self, offsets: Mapping[TopicPartition, tuple[int, int]], now: float
    ) -> None:
        self._fetching_offsets = False
        if not self.subscriptions.seek_to_committed(offsets):
            self._backoff(now)

    def commit(
        self, offsets: Mapping[TopicPartition, int], now: float
    ) -> OffsetCommit | None:
        """An OffsetCommit with the member epoch; sent with the next :meth:`on_timer`."""
        if not offsets:
            return None
        self._commit_ids += 1
        request = OffsetCommit(
            self.group_id,
            self.member_epoch,
            self.member_id,
            self.config.group_instance_id,
            self.subscriptions.with_leader_epochs(offsets),
            self._commit_ids,
            member_epoch=True,
        )
        self._pending_commits.append(request)
        return request

    def on_commit(self, commit_id: int, errors: Iterable[int], now: float) -> None:
        first = next((e for e in errors if e != ErrorCode.none), ErrorCode.none)
        self.commit_results[commit_id] = int(first)
        if first in _COORDINATOR_GONE:
            self.coordinator_unknown(now)

    def leave(self) -> MemberResult:
        """The heartbeat that leaves: epoch -1, or -2 for a static member."""
        if self.state in (S.UNSUBSCRIBED, S.FENCED) or self.member_epoch <= 0:
            self.state = S.UNSUBSCRIBED
            return CoreResult()
        self._move(S.LEAVING)
        static = self.config.group_instance_id is not None
        request = ConsumerGroupHeartbeat(
            self.group_id,
            self.member_id,
            LEAVE_STATIC_EPOCH if static else LEAVE_EPOCH,
            self.config.group_instance_id,
        )
        self._move(S.UNSUBSCRIBED)
        self.member_epoch = 0
        return CoreResult(messages=(request,))

    def _backoff(self, now: float) -> None:
        self._retry_at = now + self.config.retry_backoff_ms / 1000
