"""A consumer group's metadata in its coordinator: members, generation, leader (seed 002).

Kafka's ``GroupMetadata`` and ``MemberMetadata``: what the coordinator knows of a group
and of each member, and the bookkeeping rules that need no clock and send no answers
(adding and removing members, choosing the protocol, electing a leader, starting the
next generation). The membership manager (``_membership.py``, ``_rebalance.py``) decides
when these happen and answers the parked requests; the timers it runs are stored here as
plain deadlines so a group's whole state is in one place (``_timers.py`` keeps them in a
heap for the coordinator's ``next_deadline``).

A member "awaiting join" or "awaiting sync" holds the id of the request the coordinator
has not answered yet (Kafka keeps a callback instead).
"""

from __future__ import annotations

import collections
import types
from collections.abc import Collection, Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer

from ..assignors._consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)
from ._events import GroupStateChanged
from ._group_requests import UNKNOWN_MEMBER_ID, JoinGroupResponseMember, Protocols
from ._group_state import GROUP_TRANSITIONS, GroupState, check_group_transition

__all__ = [
    "GroupMetadata",
    "GroupSummary",
    "ListedGroup",
    "MemberMetadata",
    "MemberSummary",
    "offset_commit_error",
    "validate_current_member",
]

_NO_TRACER = NullTracer()


@attrs.define(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: Protocols
    # Set by the leader's SyncGroup; None until this member was part of an assignment.
    assignment: bytes | None = None
    awaiting_join: int | None = None  # the id of the JoinGroup not answered yet
    awaiting_sync: int | None = None  # the id of the SyncGroup not answered yet
    heartbeat_deadline: float = 0.0  # when the session expires without a heartbeat
    # A member added by this rebalance; it is dropped if its JoinGroup is not answered in
    # time (Kafka's ``isNew`` and ``NewMemberJoinTimeoutMs``).
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def protocols(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.supported_protocols)

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols with the same metadata, in the same order."""
        return self.supported_protocols == protocols

    def vote(self, candidates: Collection[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name in self.protocols:
            if name in candidates:
                return name
        raise ValueError(
            f"member {self.member_id} supports none of {sorted(candidates)}"
        )

    @property
    def session_deadline(self) -> float | None:
        """When the member is removed unless it heartbeats; None while a request of it is
        parked: "members that are awaiting a rebalance automatically satisfy expected
        heartbeats" (Kafka's ``hasSatisfiedHeartbeat``), except new members."""
        if self.is_new or not (self.is_awaiting_join or self.is_awaiting_sync):
            return self.heartbeat_deadline
        return None


@attrs.frozen
class MemberSummary:
    """One member in DescribeGroups; metadata and assignment only for a Stable group."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@attrs.frozen
class GroupSummary:
    """A group in DescribeGroups (Kafka's ``GroupSummary``); an unknown group is Dead."""

    state: GroupState
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...]


@attrs.frozen
class ListedGroup:
    """A group in ListGroups."""

    group_id: str
    protocol_type: str
    state: GroupState


@attrs.define(eq=False)
class GroupMetadata:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    _members: dict[str, MemberMetadata] = attrs.field(init=False, factory=dict)
    _static_members: dict[str, str] = attrs.field(init=False, factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, not joined yet: id -> expiry.
    _pending_members: dict[str, float] = attrs.field(init=False, factory=dict)
    # Members of this generation that have not sent SyncGroup yet.
    _pending_sync_members: set[str] = attrs.field(init=False, factory=set)
    # The coordinator's timers for this group (Kafka's DelayedJoin, InitialDelayedJoin and
    # DelayedSync operations).
    join_deadline: float | None = attrs.field(init=False, default=None)
    # Set while the join is an initial delay: how much longer it may still be extended.
    initial_delay_remaining_ms: int | None = attrs.field(init=False, default=None)
    new_member_added: bool = attrs.field(init=False, default=False)
    sync_deadline: float | None = attrs.field(init=False, default=None)
    # When the group entered its state (seconds, the coordinator's clock); the offsets of
    # an Empty group expire counting from here (KIP-211). None: not known (before a load).
    state_timestamp: float | None = attrs.field(init=False, default=None)
    # The leader's assignment is being written to __consumer_offsets (SyncGroup waits).
    assignment_write_pending: bool = attrs.field(init=False, default=False)
    # When the group last entered PreparingRebalance (seconds, the coordinator's clock),
    # for the duration the trace's rebalance_end reports.
    rebalance_start: float | None = attrs.field(init=False, default=None)

    # --- state -------------------------------------------------------------------------

    def transition_to(
        self, target: GroupState, now: float | None = None, tracer: Tracer = _NO_TRACER
    ) -> None:
        """Move along an edge of ``GROUP_TRANSITIONS`` (the only way a group's state
        changes), reporting the move to the coordinator's ``tracer``."""
        previous = self.state
        self.state = check_group_transition(previous, target)
        if now is not None:
            self.state_timestamp = now
        if tracer.enabled:
            event = GroupStateChanged(
                self.group_id,
                previous.value,
                target.value,
                self.generation_id,
                len(self._members),
            )
            tracer.emit(event, now)

    def can_rebalance(self) -> bool:
        return self.state in GROUP_TRANSITIONS[GroupState.PREPARING_REBALANCE]

    # --- members -----------------------------------------------------------------------

    @property
    def members(self) -> Mapping[str, MemberMetadata]:
        """The members in the order they were added (change them through add/remove)."""
        return types.MappingProxyType(self._members)

    def has(self, member_id: str) -> bool:
        return member_id in self._members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self._static_members.get(group_instance_id)

    @property
    def static_members(self) -> Mapping[str, str]:
        """Instance id -> the member id it currently has."""
        return types.MappingProxyType(self._static_members)

    def add(self, member: MemberMetadata) -> None:
        if not self._members:
            self.protocol_type = member.protocol_type
        assert self.protocol_type == member.protocol_type
        assert self.supports_protocols(member.protocol_type, member.protocols)
        # "The leader consumer is usually the first to join the group" (seed 002 §2).
        if self.leader_id is None:
            self.leader_id = member.member_id
        self._members[member.member_id] = member
        if member.group_instance_id is not None:
            self._static_members[member.group_instance_id] = member.member_id
        self._pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> MemberMetadata | None:
        """Forget a member (or a pending member id); the leadership passes to the oldest
        remaining member."""
        member = self._members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self._static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self._members), None)
        self._pending_members.pop(member_id, None)
        self.remove_pending_sync_member(member_id)
        return member

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> MemberMetadata:
        """Give a static member its new member id, keeping its assignment and leadership.
        The caller fences the old id's parked requests first."""
        member = self._members.pop(old_member_id)
        member.member_id = new_member_id
        self._members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self._static_members[group_instance_id] = new_member_id
        if old_member_id in self._pending_sync_members:
            self._pending_sync_members.discard(old_member_id)
            self._pending_sync_members.add(new_member_id)
        return member

    def update_member(
        self,
        member: MemberMetadata,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> None:
        member.supported_protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    # --- pending members ---------------------------------------------------------------

    def add_pending_member(self, member_id: str, deadline: float) -> None:
        self._pending_members[member_id] = deadline

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self._pending_members

    @property
    def pending_members(self) -> Mapping[str, float]:
        """Member ids handed out with MEMBER_ID_REQUIRED -> when they expire."""
        return types.MappingProxyType(self._pending_members)

    @property
    def pending_sync_members(self) -> frozenset[str]:
        return frozenset(self._pending_sync_members)

    def add_pending_sync_member(self, member_id: str) -> None:
        self._pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        self._pending_sync_members.discard(member_id)
        if not self._pending_sync_members:
            # Everyone synced: Kafka's DelayedSync completes and its timer goes.
            self.sync_deadline = None

    def clear_pending_sync_members(self) -> None:
        self._pending_sync_members.clear()
        self.sync_deadline = None

    # --- the join phase ----------------------------------------------------------------

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of any member: how long a rebalance waits."""
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    def num_awaiting_join(self) -> int:
        return sum(m.is_awaiting_join for m in self._members.values())

    def has_all_members_joined(self) -> bool:
        return (
            self.num_awaiting_join() == len(self._members) and not self._pending_members
        )

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self._members.values() if not m.is_awaiting_join]

    def candidate_protocols(self) -> set[str] | None:
        """The protocols every member supports; None when there are no members."""
        members = iter(self._members.values())
        first = next(members, None)
        if first is None:
            return None
        common = set(first.protocols)
        for member in members:
            common.intersection_update(member.protocols)
        return common

    def supports_protocols(
        self, protocol_type: str, protocols: Collection[str]
    ) -> bool:
        """Whether a member with these protocols may join: "if a member's protocols share
        none with the group's, it is refused" (seed 002 §2.1)."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type or not protocols:
            return False
        common = self.candidate_protocols()
        return common is None or any(p in common for p in protocols)

    def select_protocol(self) -> str:
        """Kafka's ``selectProtocol``: each member votes for its most preferred protocol
        among those all members support; the most votes win (ties: the first voted
        for)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(
                f"group {self.group_id} has no protocol all members support"
            )
        votes = collections.Counter(m.vote(candidates) for m in self._members.values())
        return max(votes, key=lambda p: votes[p])

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader did not rejoin, make the first member that did the leader.
        False when there is no leader or no member rejoined."""
        if self.leader_id is None:
            return False
        if self._members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self._members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def init_next_generation(
        self, now: float | None = None, tracer: Tracer = _NO_TRACER
    ) -> None:
        """A join phase ends: a new generation, to CompletingRebalance (or Empty)."""
        self.generation_id += 1
        if self._members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now, tracer)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now, tracer)
        self.clear_pending_sync_members()

    def subscribed_topics(self) -> frozenset[str] | None:
        """The topics the members of a ``consumer`` group subscribe to, read from their
        metadata for the chosen protocol (ConsumerProtocol's subscription); None when
        that cannot be known (no protocol chosen yet, another protocol type, metadata
        that does not parse), which OffsetDelete reads as "every topic" (Kafka's
        ``isSubscribedToTopic``)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self._members.values():
            try:
                topics |= set(
                    decode_subscription(member.metadata(self.protocol_name)).topics
                )
            except (ConsumerProtocolError, KeyError):
                return None
        return frozenset(topics)

    def current_member_metadata(self) -> tuple[JoinGroupResponseMember, ...]:
        """What the leader's JoinGroup response carries: every member's metadata for the
        chosen protocol (followers get an empty list, seed 002 §2.1)."""
        assert self.protocol_name is not None
        return tuple(
            JoinGroupResponseMember(
                m.member_id, m.group_instance_id, m.metadata(self.protocol_name)
            )
            for m in self._members.values()
        )

    # --- descriptions ------------------------------------------------------------------

    def summary(self) -> GroupSummary:
        protocol_type = self.protocol_type or ""
        if self.state is GroupState.STABLE:
            protocol = self.protocol_name or ""
            members = tuple(
                MemberSummary(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(protocol),
                    m.assignment or b"",
                )
                for m in self._members.values()
            )
            return GroupSummary(self.state, protocol_type, protocol, members)
        members = tuple(
            MemberSummary(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", b""
            )
            for m in self._members.values()
        )
        return GroupSummary(self.state, protocol_type, "", members)

    def overview(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type or "", self.state)


def validate_current_member(
    group: GroupMetadata, member_id: str, group_instance_id: str | None
) -> ErrorCode:
    """Kafka's ``validateCurrentMember``: a given instance id must belong to ``member_id``
    (else FENCED_INSTANCE_ID: a newer instance took it over), and the member must exist."""
    if group_instance_id is not None:
        current = group.static_member_id(group_instance_id)
        if current is None:
            return ErrorCode.unknown_member_id
        if current != member_id:
            return ErrorCode.fenced_instance_id
        return ErrorCode.none
    if not group.has(member_id):
        return ErrorCode.unknown_member_id
    return ErrorCode.none


def missing_group_error(api_version: int) -> ErrorCode:
    """A member's OffsetCommit to a group that does not exist: from v9 the group is
    named missing, an answer the new protocol's clients understand too (KIP-848); older
    clients keep the answer they were written against."""
    return (
        ErrorCode.group_id_not_found
        if api_version >= 9
        else ErrorCode.illegal_generation
    )


def offset_commit_error(
    group: GroupMetadata | None,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None = None,
    api_version: int = 8,
) -> ErrorCode:
    """May this OffsetCommit be written? (Kafka's ``validateOffsetCommit`` and the state
    rules of ``doCommitOffsets``.)

    A commit with generation -1, no member id and no instance id comes from a consumer
    that manages its own partitions ("simple" consumers): allowed while the group has no
    members (an unknown group is then created Empty by the coordinator). Any other
    commit must come from a current member of the current generation, and is refused
    with REBALANCE_IN_PROGRESS in CompletingRebalance: "committing offsets in
    AwaitingSync raises REBALANCE_IN_PROGRESS" (seed 002 §1), while PreparingRebalance
    still accepts it ("clients may even commit offsets", ibid.).
    """
    simple = (
        generation_id < 0
        and member_id == UNKNOWN_MEMBER_ID
        and group_instance_id is None
    )
    if group is None:
        return ErrorCode.none if generation_id < 0 else missing_group_error(api_version)
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if simple:
        # "When the group is non-empty, only members can commit offsets."
        empty = group.state is GroupState.EMPTY
        return ErrorCode.none if empty else ErrorCode.unknown_member_id
    error = validate_current_member(group, member_id, group_instance_id)
    if error is not ErrorCode.none:
        return error
    if generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    if group.state is GroupState.COMPLETING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none
