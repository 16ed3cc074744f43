"""GroupCoordinator: consumer group membership as a core (seed 002 §§1-3).

The coordinator runs the group management protocol in two phases (seed 002 §2): in the
join phase every member sends JoinGroup and the coordinator holds those requests until
all known members have (re)joined or the rebalance timeout passes, then answers them
all, the leader's answer alone carrying everyone's metadata; in the sync phase the
leader's SyncGroup brings the assignment, and each member's SyncGroup is answered with
its own part only. Heartbeats keep sessions alive and tell members a rebalance started;
a session that expires, a LeaveGroup, a new member or a changed member starts a new
rebalance (seed 002 §3).

It is sans-IO: requests come in with an id and the time, and the answers go out as
``GroupReply`` values, possibly later and possibly for other requests (the JoinGroup
that completes a rebalance answers every parked JoinGroup). Timers are deadlines the
shell reads from ``next_deadline()`` and fires with ``on_timer(now)``. Every request
gets exactly one reply. Time is in seconds, timeouts in milliseconds as Kafka names them.

The rules are those of Kafka's ``GroupCoordinator`` (2.4-3.x), including static
membership (KIP-345), MEMBER_ID_REQUIRED (KIP-394), the pending-sync timeout and
KIP-814's ``skip_assignment``.

What must survive the coordinator is written to its ``__consumer_offsets`` partition
before anyone is told (seed 000): the group on every new generation (the leader's
SyncGroup is answered, and the group becomes Stable, only once the assignment is
stored) and every committed offset. The core does not write itself: it queues
``CoordinatorWrite`` values the shell takes with ``take_writes()`` and appends, and the
shell reports each outcome with ``complete_write(write_id, error, now)``, which answers
the requests that waited for it. Groups are served only from partitions this broker
leads and has replayed (``begin_loading``, ``load_partition``, ``unload_partition``).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Iterable
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import TopicPartition
from minikafka.trace import emit, tracing

from ._consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment
from ._events import (
    MemberAssigned,
    MemberJoined,
    MemberRemoved,
    RebalanceCompleted,
    RebalanceStarted,
)
from ._group import (
    GroupMetadata,
    GroupSummary,
    ListedGroup,
    MemberMetadata,
    offset_commit_error,
    validate_current_member,
)
from ._group_metadata_manager import GroupMetadataManager, PartitionStatus, StoredRecord
from ._group_requests import (
    UNKNOWN_MEMBER_ID,
    CommittedOffset,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Protocols,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ._group_state import GroupState
from ._offsets_records import OffsetValue

__all__ = [
    "CoordinatorWrite",
    "GroupConfig",
    "GroupCoordinator",
    "GroupReply",
    "GroupResponse",
]

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a new member's JoinGroup may stay parked before the member is dropped
(Kafka's ``NewMemberJoinTimeoutMs``): its client may have given up and rejoined."""
MAX_PROTOCOL_STRING = 2**15 - 1
"""The longest string the protocol carries (int16 length): a member id must fit."""

GroupResponse: TypeAlias = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
)

_S = GroupState


@attrs.frozen
class GroupConfig:
    """The broker's group settings (Kafka's ``group.*`` configs)."""

    group_min_session_timeout_ms: int = attrs.field(default=6000, validator=attrs.validators.gt(0))
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = attrs.field(
        default=3000, validator=attrs.validators.ge(0)
    )
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = attrs.field(default=50, validator=attrs.validators.gt(0))
    offsets_retention_minutes: int = attrs.field(
        default=7 * 24 * 60, validator=attrs.validators.gt(0)
    )
    offsets_retention_check_interval_ms: int = attrs.field(
        default=600_000, validator=attrs.validators.gt(0)
    )
    offset_metadata_max_bytes: int = 4096


@attrs.frozen
class GroupReply:
    """Answer request ``request_id`` with ``response``."""

    request_id: int
    response: GroupResponse


@attrs.frozen
class CoordinatorWrite:
    """Append ``records`` to ``__consumer_offsets`` partition ``partition`` (acks=all),
    then report with ``complete_write(write_id, ...)``."""

    write_id: int
    partition: int
    records: tuple[StoredRecord, ...]


_WriteDone: TypeAlias = Callable[[ErrorCode, float, list["GroupReply"]], None]


@attrs.define(eq=False)
class GroupCoordinator:
    config: GroupConfig = attrs.field(factory=GroupConfig)
    rng: random.Random = attrs.field(factory=random.Random)
    manager: GroupMetadataManager = attrs.field(init=False)
    _writes: list[CoordinatorWrite] = attrs.field(init=False, factory=list)
    _write_done: dict[int, _WriteDone] = attrs.field(init=False, factory=dict)
    _next_write_id: int = attrs.field(init=False, default=0)
    _next_offsets_expiry: float | None = attrs.field(init=False, default=None)

    @manager.default
    def _manager(self) -> GroupMetadataManager:
        return GroupMetadataManager(self.config.offsets_topic_num_partitions)

    @property
    def _groups(self) -> dict[str, GroupMetadata]:
        return self.manager.groups

    # --- reading -----------------------------------------------------------------------

    def group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def group_status(self, group_id: str) -> ErrorCode:
        """NONE when this coordinator serves ``group_id`` now; else NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS, the answer every group request gets."""
        return self.manager.group_status(group_id)

    @property
    def loading(self) -> bool:
        """A partition is being replayed (ListGroups answers LOAD_IN_PROGRESS)."""
        return PartitionStatus.LOADING in self.manager.partitions.values()

    def describe_group(self, group_id: str) -> GroupSummary:
        """DescribeGroups: an unknown group is reported Dead with no members."""
        group = self._groups.get(group_id)
        if group is None:
            return GroupSummary(GroupState.DEAD, "", "", ())
        return group.summary()

    def list_groups(self, states: Collection[GroupState] | None = None) -> list[ListedGroup]:
        """ListGroups, optionally only groups in ``states`` (v4's states filter)."""
        return [g.overview() for g in self._groups.values() if states is None or g.state in states]

    def next_deadline(self) -> float | None:
        deadlines = [d for group in self._groups.values() for d in _deadlines(group)]
        if self._next_offsets_expiry is not None:
            deadlines.append(self._next_offsets_expiry)
        return min(deadlines, default=None)

    # --- the log behind the cache --------------------------------------------------------

    def take_writes(self) -> list[CoordinatorWrite]:
        """The appends to perform, oldest first; each is then reported to complete_write."""
        writes, self._writes = self._writes, []
        return writes

    def complete_write(self, write_id: int, error: ErrorCode, now: float) -> list[GroupReply]:
        """The append ``write_id`` is committed (NONE) or failed with ``error``."""
        out: list[GroupReply] = []
        self._write_done.pop(write_id)(error, now, out)
        return out

    def _write(self, group_id: str, records: Iterable[StoredRecord], done: _WriteDone) -> None:
        self._next_write_id += 1
        partition = self.manager.partition_for(group_id)
        self._writes.append(CoordinatorWrite(self._next_write_id, partition, tuple(records)))
        self._write_done[self._next_write_id] = done

    def begin_loading(self, partition: int) -> None:
        """This broker became the leader of ``partition``: its groups answer
        COORDINATOR_LOAD_IN_PROGRESS until :meth:`load_partition`."""
        self.manager.begin_loading(partition)

    def load_partition(self, partition: int, records: Iterable[StoredRecord], now: float) -> int:
        """The partition's records from its start: rebuild its groups and offsets."""
        loaded = self.manager.load(partition, records, now)
        if self._next_offsets_expiry is None:
            self._next_offsets_expiry = now + self.config.offsets_retention_check_interval_ms / 1000
        return loaded

    def unload_partition(self, partition: int) -> list[GroupReply]:
        """This broker stopped leading ``partition``: its groups go Dead."""
        out: list[GroupReply] = []
        for group in self.manager.unload(partition):
            out.extend(_make_dead(group))
        return out

    # --- JoinGroup ---------------------------------------------------------------------

    def join_group(
        self, request_id: int, request: JoinGroupRequest, now: float
    ) -> list[GroupReply]:
        out: list[GroupReply] = []
        r = request

        def fail(error: ErrorCode, member_id: str = r.member_id) -> list[GroupReply]:
            out.append(GroupReply(request_id, JoinGroupResponse.error(error, member_id)))
            return out

        if not r.group_id:
            return fail(ErrorCode.invalid_group_id)
        status = self.group_status(r.group_id)
        if status is not ErrorCode.none:
            return fail(status)
        lowest, highest = (
            self.config.group_min_session_timeout_ms,
            self.config.group_max_session_timeout_ms,
        )
        if not lowest <= r.session_timeout_ms <= highest:
            return fail(ErrorCode.invalid_session_timeout)
        group = self._groups.get(r.group_id)
        if group is None:
            if r.member_id != UNKNOWN_MEMBER_ID:
                return fail(ErrorCode.unknown_member_id)
            group = self._groups[r.group_id] = GroupMetadata(r.group_id)
        if not self._accept_joining_member(group, r.member_id):
            if group.has(r.member_id) or group.is_pending_member(r.member_id):
                self._remove_member_and_update_group(group, r.member_id, now, out, "group_max_size")
            return fail(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID)
        if r.member_id == UNKNOWN_MEMBER_ID:
            self._new_member_join(group, request_id, r, now, out)
        else:
            self._current_member_join(group, request_id, r, now, out)
        self._try_complete_join(group, now, out)
        return out

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """``group.max.size``: existing members are kept, new ones only below the limit.
        While rebalancing, the members that rejoined count, so the last to rejoin are the
        ones left out when the limit was lowered."""
        limit = self.config.group_max_size
        if group.state in (_S.EMPTY, _S.DEAD):
            return True
        if group.state is _S.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or (
                group.num_awaiting_join() < limit
            )
        return group.has(member_id) or len(group.members) < limit

    def _new_member_join(
        self,
        group: GroupMetadata,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
        out: list[GroupReply],
    ) -> None:
        if group.state is _S.DEAD:
            out.append(
                GroupReply(request_id, JoinGroupResponse.error(ErrorCode.coordinator_not_available))
            )
            return
        if not group.supports_protocols(r.protocol_type, [name for name, _ in r.protocols]):
            out.append(
                GroupReply(
                    request_id, JoinGroupResponse.error(ErrorCode.inconsistent_group_protocol)
                )
            )
            return
        # Kafka's member id: the client id (a static member's instance id) and a UUID,
        # the prefix cut short so that the id still fits the protocol's int16 strings (a
        # 32,767-character client id made an answer that could not be encoded).
        prefix = r.client_id if r.group_instance_id is None else r.group_instance_id
        suffix = f"-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        member_id = prefix[: MAX_PROTOCOL_STRING - len(suffix)] + suffix
        if r.group_instance_id is not None:
            old_member_id = group.static_member_id(r.group_instance_id)
            if old_member_id is None:
                self._add_member_and_rebalance(group, member_id, request_id, r, now, out)
            else:
                self._update_static_member_and_rebalance(
                    group, r.group_instance_id, old_member_id, member_id, request_id, r, now, out
                )
        elif r.version >= 4:
            # KIP-394: the member must come back with this id, so a client that times out
            # and retries does not leave a defunct member behind at every attempt. Until
            # it does (or its session timeout passes) a rebalance waits for it.
            group.add_pending_member(member_id, now + r.session_timeout_ms / 1000)
            out.append(
                GroupReply(
                    request_id, JoinGroupResponse.error(ErrorCode.member_id_required, member_id)
                )
            )
        else:
            self._add_member_and_rebalance(group, member_id, request_id, r, now, out)

    def _current_member_join(
        self,
        group: GroupMetadata,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
        out: list[GroupReply],
    ) -> None:
        def fail(error: ErrorCode) -> None:
            out.append(GroupReply(request_id, JoinGroupResponse.error(error, r.member_id)))

        if group.state is _S.DEAD:
            return fail(ErrorCode.coordinator_not_available)
        if not group.supports_protocols(r.protocol_type, [name for name, _ in r.protocols]):
            return fail(ErrorCode.inconsistent_group_protocol)
        if group.is_pending_member(r.member_id):
            if r.group_instance_id is not None:
                # Pending ids are only handed to dynamic members (Kafka throws here).
                return fail(ErrorCode.unknown_server_error)
            return self._add_member_and_rebalance(group, r.member_id, request_id, r, now, out)
        error = validate_current_member(group, r.member_id, r.group_instance_id)
        if error is not ErrorCode.none:
            return fail(error)
        member = group.members[r.member_id]
        _trace_join(group, member.member_id, r.client_id, now)
        if group.state is _S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, request_id, r, now, out)
        if group.state is _S.COMPLETING_REBALANCE:
            if member.matches(r.protocols):
                # It lost our JoinGroup answer: send the current generation again.
                return self._answer_current_generation(group, member, request_id, out)
            return self._update_member_and_rebalance(group, member, request_id, r, now, out)
        if group.state is _S.STABLE:
            # "the leader rejoining, or a member's metadata changing" start a rebalance
            # (seed 002 §1); a follower rejoining unchanged just gets the generation back.
            if group.is_leader(member.member_id) or not member.matches(r.protocols):
                return self._update_member_and_rebalance(group, member, request_id, r, now, out)
            return self._answer_current_generation(group, member, request_id, out)
        return fail(ErrorCode.unknown_member_id)  # Empty: no members to be

    def _answer_current_generation(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request_id: int,
        out: list[GroupReply],
        *,
        skip_assignment: bool = False,
    ) -> None:
        out.append(GroupReply(request_id, self._join_response(group, member, skip_assignment)))

    def _join_response(
        self, group: GroupMetadata, member: MemberMetadata, skip_assignment: bool = False
    ) -> JoinGroupResponse:
        leader = group.is_leader(member.member_id)
        return JoinGroupResponse(
            ErrorCode.none,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            group.current_member_metadata() if leader else (),
            skip_assignment and leader,
        )

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
        out: list[GroupReply],
    ) -> None:
        member = MemberMetadata(
            member_id,
            r.group_instance_id,
            r.client_id,
            r.client_host,
            r.effective_rebalance_timeout_ms,
            r.session_timeout_ms,
            r.protocol_type,
            r.protocols,
            awaiting_join=request_id,
            heartbeat_deadline=now + NEW_MEMBER_JOIN_TIMEOUT_MS / 1000,
            is_new=True,
        )
        _trace_join(group, member_id, r.client_id, now)
        # Only the group's very first rebalance is stretched for latecomers.
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance(group, now, out, "member_joined", member_id, r.client_id)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
        out: list[GroupReply],
    ) -> None:
        self._park_join(member, request_id, r, group, out)
        self._maybe_prepare_rebalance(
            group, now, out, "member_rejoined", member.member_id, r.client_id
        )

    def _park_join(
        self,
        member: MemberMetadata,
        request_id: int,
        r: JoinGroupRequest,
        group: GroupMetadata,
        out: list[GroupReply],
    ) -> None:
        if member.awaiting_join is not None:
            # Kafka drops the older callback; a core that answers every request once tells
            # the older one to rejoin.
            out.append(
                GroupReply(
                    member.awaiting_join,
                    JoinGroupResponse.error(ErrorCode.rebalance_in_progress, member.member_id),
                )
            )
        group.update_member(
            member, r.protocols, r.effective_rebalance_timeout_ms, r.session_timeout_ms
        )
        member.awaiting_join = request_id

    def _update_static_member_and_rebalance(
        self,
        group: GroupMetadata,
        instance_id: str,
        old_member_id: str,
        new_member_id: str,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
        out: list[GroupReply],
    ) -> None:
        """A static member rejoined with no member id: it takes over its instance's
        member under a new id, and the old id is fenced (KIP-345)."""
        member = group.members[old_member_id]
        if tracing():
            removed = MemberRemoved(group.group_id, old_member_id, member.client_id, "replaced")
            emit(removed, now)
            _trace_join(group, new_member_id, r.client_id, now)
        if member.awaiting_join is not None:
            out.append(
                GroupReply(
                    member.awaiting_join,
                    JoinGroupResponse.error(ErrorCode.fenced_instance_id, old_member_id),
                )
            )
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            out.append(
                GroupReply(member.awaiting_sync, SyncGroupResponse(ErrorCode.fenced_instance_id))
            )
            member.awaiting_sync = None
        old_leader = group.leader_id
        old_settings = (
            member.supported_protocols,
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
        )
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        cause = ("static_member_replaced", new_member_id, r.client_id)
        self._park_join(member, request_id, r, group, out)
        self._schedule_heartbeat(member, now)
        if group.state is _S.STABLE:
            # No rebalance when the group would choose the same protocol: the member keeps
            # its assignment under its new id (a restarted static member costs nothing).
            if group.protocol_name == group.select_protocol():
                member.awaiting_join = None
                self._store_static_member(
                    group,
                    member,
                    instance_id,
                    old_member_id,
                    old_leader,
                    old_settings,
                    request_id,
                    r,
                    now,
                )
            else:
                self._maybe_prepare_rebalance(group, now, out, *cause)
        elif group.state is _S.COMPLETING_REBALANCE:
            # The leader may have assigned to the old id already: do it again.
            self._prepare_rebalance(group, now, out, *cause)
        # PreparingRebalance: the member now simply waits with the others.

    def _store_static_member(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        instance_id: str,
        old_member_id: str,
        old_leader: str | None,
        old_settings: tuple[Protocols, int, int],
        request_id: int,
        r: JoinGroupRequest,
        now: float,
    ) -> None:
        """The replaced static member's new id is written with the group before it is
        answered (a new coordinator must know it), and undone if the write fails."""
        generation = group.generation_id
        new_member_id = member.member_id
        response = self._join_response(group, member, skip_assignment=True)
        if r.version < 9:
            # Before KIP-814 a leader cannot be told to skip the assignment: it is told
            # the old leader's id instead, acts as a follower and syncs its assignment.
            response = attrs.evolve(
                response, leader=old_leader or "", members=(), skip_assignment=False
            )
        assignments = {m.member_id: m.assignment or b"" for m in group.members.values()}

        def stored(error: ErrorCode, now: float, out: list[GroupReply]) -> None:
            if error is ErrorCode.none:
                out.append(GroupReply(request_id, response))
                return
            if (
                self._groups.get(group.group_id) is group
                and group.generation_id == generation
                and group.static_member_id(instance_id) == new_member_id
            ):
                group.replace_static_member(instance_id, new_member_id, old_member_id)
                group.update_member(member, *old_settings)
            failure = JoinGroupResponse.error(_store_group_error(error), new_member_id)
            out.append(GroupReply(request_id, failure))

        self._write(group.group_id, [self.manager.group_record(group, assignments, now)], stored)

    # --- the rebalance -----------------------------------------------------------------

    def _maybe_prepare_rebalance(
        self,
        group: GroupMetadata,
        now: float,
        out: list[GroupReply],
        reason: str,
        member_id: str | None = None,
        client_id: str | None = None,
    ) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now, out, reason, member_id, client_id)

    def _prepare_rebalance(
        self,
        group: GroupMetadata,
        now: float,
        out: list[GroupReply],
        reason: str,
        member_id: str | None = None,
        client_id: str | None = None,
    ) -> None:
        """Start a join phase; ``reason``, ``member_id`` and ``client_id`` say why, for
        the trace (the codes are listed on ``RebalanceStarted``)."""
        if group.state is _S.COMPLETING_REBALANCE:
            # Members waiting for an assignment that will not come: rejoin.
            for member in group.members.values():
                member.assignment = None
            self._propagate_assignment(group, ErrorCode.rebalance_in_progress, now, out)
        group.clear_pending_sync_members()
        delay = self.config.group_initial_rebalance_delay_ms
        if group.state is _S.EMPTY and delay > 0:
            # group.initial.rebalance.delay.ms: the first members of an empty group wait a
            # little for the others, so a group starting up does not rebalance per member.
            group.join_deadline = now + delay / 1000
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
        else:
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
            group.initial_delay_remaining_ms = None
        group.new_member_added = False
        left_generation = group.generation_id
        group.transition_to(_S.PREPARING_REBALANCE, now)
        group.rebalance_start = now
        if tracing():
            members = len(group.members)
            started = RebalanceStarted(
                group.group_id, left_generation, reason, member_id, client_id, members
            )
            emit(started, now)
        self._try_complete_join(group, now, out)

    def _try_complete_join(self, group: GroupMetadata, now: float, out: list[GroupReply]) -> None:
        # An initial delay always runs out; a rebalance ends early once all have joined.
        if (
            group.state is _S.PREPARING_REBALANCE
            and group.initial_delay_remaining_ms is None
            and group.has_all_members_joined()
        ):
            self._complete_join(group, now, out)

    def _complete_join(self, group: GroupMetadata, now: float, out: list[GroupReply]) -> None:
        group.join_deadline = None
        group.initial_delay_remaining_ms = None
        # Dynamic members that did not rejoin in time are out; static ones stay until their
        # session expires (a restarting static member keeps its place).
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                group.remove(member.member_id)
                _trace_removed(group, member, "join_timeout", now)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout while sessions expire.
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
            return
        group.init_next_generation(now)
        if group.state is _S.EMPTY:
            # Everyone left: the generation still moves on, and the log must say so.
            record = self.manager.group_record(group, {}, now)
            self._write(group.group_id, [record], _ignore_outcome)
            return
        for member in group.members.values():
            if member.awaiting_join is not None:
                out.append(GroupReply(member.awaiting_join, self._join_response(group, member)))
                member.awaiting_join = None
            self._schedule_heartbeat(member, now)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        group.sync_deadline = now + group.rebalance_timeout_ms / 1000

    def _propagate_assignment(
        self, group: GroupMetadata, error: ErrorCode, now: float, out: list[GroupReply]
    ) -> None:
        ok = error is ErrorCode.none
        for member in group.members.values():
            if member.awaiting_sync is None:
                continue
            response = SyncGroupResponse(
                error,
                (member.assignment or b"") if ok else b"",
                group.protocol_type if ok else None,
                group.protocol_name if ok else None,
            )
            out.append(GroupReply(member.awaiting_sync, response))
            member.awaiting_sync = None
            self._schedule_heartbeat(member, now)
            if ok:
                _trace_assigned(group, member, now)

    # --- SyncGroup ---------------------------------------------------------------------

    def sync_group(
        self, request_id: int, request: SyncGroupRequest, now: float
    ) -> list[GroupReply]:
        out: list[GroupReply] = []
        r = request

        def answer(error: ErrorCode) -> list[GroupReply]:
            out.append(GroupReply(request_id, SyncGroupResponse(error)))
            return out

        status = self.group_status(r.group_id)
        if status is not ErrorCode.none:
            return answer(status)
        group = self._groups.get(r.group_id)
        if group is None:
            return answer(ErrorCode.unknown_member_id)
        if group.state is _S.DEAD:
            return answer(ErrorCode.coordinator_not_available)
        error = validate_current_member(group, r.member_id, r.group_instance_id)
        if error is not ErrorCode.none:
            return answer(error)
        if r.generation_id != group.generation_id:
            return answer(ErrorCode.illegal_generation)
        if (r.protocol_type is not None and r.protocol_type != group.protocol_type) or (
            r.protocol_name is not None and r.protocol_name != group.protocol_name
        ):
            return answer(ErrorCode.inconsistent_group_protocol)
        if group.state is _S.PREPARING_REBALANCE:
            return answer(ErrorCode.rebalance_in_progress)
        member = group.members[r.member_id]
        if group.state is _S.STABLE:
            group.remove_pending_sync_member(member.member_id)
            self._schedule_heartbeat(member, now)
            _trace_assigned(group, member, now)
            out.append(
                GroupReply(
                    request_id,
                    SyncGroupResponse(
                        ErrorCode.none,
                        member.assignment or b"",
                        group.protocol_type,
                        group.protocol_name,
                    ),
                )
            )
            return out
        if group.state is not _S.COMPLETING_REBALANCE:
            return answer(ErrorCode.unknown_member_id)  # Empty
        if member.awaiting_sync is not None:
            out.append(
                GroupReply(member.awaiting_sync, SyncGroupResponse(ErrorCode.rebalance_in_progress))
            )
        member.awaiting_sync = request_id
        group.remove_pending_sync_member(member.member_id)
        if group.is_leader(member.member_id) and not group.assignment_write_pending:
            self._store_assignment(group, dict(r.assignments), now)
        return out

    def _store_assignment(self, group: GroupMetadata, plan: dict[str, bytes], now: float) -> None:
        """Write the group with the leader's plan, then hand the plan out: "the
        coordinator takes the leader's plan apart and sends each member only its own
        partitions" (seed 002 §2.2); a member the leader left out gets nothing. Until the
        record is committed the group stays CompletingRebalance and every SyncGroup waits,
        so no member consumes under an assignment a new coordinator would not know."""
        assignments = {m: plan.get(m, b"") for m in group.members}
        generation = group.generation_id
        group.assignment_write_pending = True

        def stored(error: ErrorCode, now: float, out: list[GroupReply]) -> None:
            group.assignment_write_pending = False
            if (
                self._groups.get(group.group_id) is not group
                or group.state is not _S.COMPLETING_REBALANCE
                or group.generation_id != generation
            ):
                return  # a rebalance or an unload overtook the write; they answered
            if error is not ErrorCode.none:
                for m in group.members.values():
                    m.assignment = None
                self._propagate_assignment(group, _store_group_error(error), now, out)
                self._maybe_prepare_rebalance(group, now, out, "write_failed")
                return
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self._propagate_assignment(group, ErrorCode.none, now, out)
            group.transition_to(_S.STABLE, now)
            if tracing():
                start = group.rebalance_start
                completed = RebalanceCompleted(
                    group.group_id,
                    group.generation_id,
                    group.protocol_name,
                    group.leader_id,
                    len(group.members),
                    0.0 if start is None else (now - start) * 1000,
                    {m: _partition_count(group, data) for m, data in assignments.items()},
                )
                emit(completed, now)

        self._write(group.group_id, [self.manager.group_record(group, assignments, now)], stored)

    # --- Heartbeat ---------------------------------------------------------------------

    def heartbeat(self, request_id: int, request: HeartbeatRequest, now: float) -> list[GroupReply]:
        return [GroupReply(request_id, HeartbeatResponse(self._heartbeat(request, now)))]

    def _heartbeat(self, r: HeartbeatRequest, now: float) -> ErrorCode:
        status = self.group_status(r.group_id)
        if status is not ErrorCode.none:
            return status
        group = self._groups.get(r.group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.state is _S.DEAD:
            return ErrorCode.coordinator_not_available
        error = validate_current_member(group, r.member_id, r.group_instance_id)
        if error is not ErrorCode.none:
            return error
        if r.generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if group.state is _S.EMPTY:
            return ErrorCode.unknown_member_id
        self._schedule_heartbeat(group.members[r.member_id], now)
        if group.state is _S.PREPARING_REBALANCE:
            # How a consuming member learns that it must rejoin.
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    @staticmethod
    def _schedule_heartbeat(member: MemberMetadata, now: float) -> None:
        member.heartbeat_deadline = now + member.session_timeout_ms / 1000

    # --- LeaveGroup --------------------------------------------------------------------

    def leave_group(
        self, request_id: int, request: LeaveGroupRequest, now: float
    ) -> list[GroupReply]:
        out: list[GroupReply] = []
        status = self.group_status(request.group_id)
        if status is not ErrorCode.none:
            return [GroupReply(request_id, LeaveGroupResponse(status))]
        group = self._groups.get(request.group_id)
        results: list[LeaveGroupMemberResponse] = []
        if group is not None and group.state is _S.DEAD:
            response = LeaveGroupResponse(ErrorCode.coordinator_not_available)
            return [GroupReply(request_id, response)]
        for leaving in request.members:
            if group is None:
                error = ErrorCode.unknown_member_id
            elif leaving.member_id == UNKNOWN_MEMBER_ID:
                # An administrative removal names the instance only.
                current = (
                    None
                    if leaving.group_instance_id is None
                    else group.static_member_id(leaving.group_instance_id)
                )
                error = ErrorCode.unknown_member_id if current is None else ErrorCode.none
                if current is not None:
                    self._remove_member_and_update_group(group, current, now, out, "left")
            elif group.is_pending_member(leaving.member_id):
                error = ErrorCode.none
                self._remove_member_and_update_group(group, leaving.member_id, now, out, "left")
            else:
                error = validate_current_member(group, leaving.member_id, leaving.group_instance_id)
                if error is ErrorCode.none:
                    self._remove_member_and_update_group(group, leaving.member_id, now, out, "left")
            results.append(
                LeaveGroupMemberResponse(leaving.member_id, leaving.group_instance_id, error)
            )
        if request.version < 3:
            # One member, and its error is the request's.
            top = results[0].error_code if results else ErrorCode.none
            response = LeaveGroupResponse(top)
        else:
            response = LeaveGroupResponse(ErrorCode.none, tuple(results))
        out.append(GroupReply(request_id, response))
        return out

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member_id: str, now: float, out: list[GroupReply], reason: str
    ) -> None:
        """A member leaves, fails or is dropped: its parked requests are answered
        UNKNOWN_MEMBER_ID (so a live client rejoins) and the group rebalances. ``reason``
        is the trace's ``MemberRemoved`` code (a pending member id is no member: only
        the rebalance it may start is traced)."""
        member = group.members.get(member_id)
        if member is not None:
            if member.awaiting_join is not None:
                out.append(
                    GroupReply(
                        member.awaiting_join, JoinGroupResponse.error(ErrorCode.unknown_member_id)
                    )
                )
                member.awaiting_join = None
            if member.awaiting_sync is not None:
                out.append(
                    GroupReply(member.awaiting_sync, SyncGroupResponse(ErrorCode.unknown_member_id))
                )
                member.awaiting_sync = None
        group.remove(member_id)
        client_id = None
        if member is not None:
            client_id = member.client_id
            _trace_removed(group, member, reason, now)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            cause = "member_left" if reason == "left" else reason
            self._maybe_prepare_rebalance(group, now, out, cause, member_id, client_id)
        elif group.state is _S.PREPARING_REBALANCE:
            self._try_complete_join(group, now, out)

    # --- OffsetCommit and OffsetFetch ----------------------------------------------------

    def commit_offsets(
        self, request_id: int, request: OffsetCommitRequest, now: float
    ) -> list[GroupReply]:
        """OffsetCommit: checked against the group's state (``offset_commit_error``),
        written to ``__consumer_offsets``, and answered (and cached) once committed."""
        r = request
        out: list[GroupReply] = []

        def answer(errors: dict[TopicPartition, ErrorCode]) -> None:
            response = OffsetCommitResponse(tuple((tp, errors[tp]) for tp, _ in r.offsets))
            out.append(GroupReply(request_id, response))

        error = self.group_status(r.group_id)
        if error is ErrorCode.none:
            error = self.validate_offset_commit(
                r.group_id, r.member_id, r.generation_id, now, r.group_instance_id
            )
        if error is not ErrorCode.none:
            answer({tp: error for tp, _ in r.offsets})
            return out
        errors: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        stamp = int(now * 1000)
        expire = stamp + r.retention_time_ms if r.retention_time_ms >= 0 else None
        for tp, committed in r.offsets:
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = ErrorCode.offset_metadata_too_large
                continue
            accepted[tp] = OffsetValue(
                committed.offset, committed.metadata, stamp, committed.leader_epoch, expire
            )
        if not accepted:
            answer(errors)
            return out

        def written(error: ErrorCode, now: float, out: list[GroupReply]) -> None:
            code = _commit_error(error)
            if code is ErrorCode.none:
                group = self._groups.get(r.group_id)
                if group is None and self.group_status(r.group_id) is ErrorCode.none:
                    # Deleted while the write was in flight: the log has the offsets now.
                    group = self._groups[r.group_id] = GroupMetadata(r.group_id)
                if group is not None:
                    group.offsets.update(accepted)
            errors.update(dict.fromkeys(accepted, code))
            response = OffsetCommitResponse(tuple((tp, errors[tp]) for tp, _ in r.offsets))
            out.append(GroupReply(request_id, response))

        self._write(r.group_id, self.manager.offset_records(r.group_id, accepted.items()), written)
        return out

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> OffsetFetchResponse:
        """OffsetFetch: the committed offset of each partition (None where there is none),
        or of every partition the group committed when ``partitions`` is None."""
        status = self.group_status(group_id)
        if status is not ErrorCode.none:
            return OffsetFetchResponse(status)
        group = self._groups.get(group_id)
        committed = {} if group is None else group.offsets
        wanted = sorted(committed) if partitions is None else list(partitions)
        return OffsetFetchResponse(
            ErrorCode.none,
            tuple(
                (tp, None if v is None else CommittedOffset(v.offset, v.leader_epoch, v.metadata))
                for tp in wanted
                for v in [committed.get(tp)]
            ),
        )

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        now: float,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        """Whether an OffsetCommit may be written (``offset_commit_error``). A simple
        consumer's commit to an unknown group creates it, Empty; a member's accepted
        commit counts as a heartbeat."""
        group = self._groups.get(group_id)
        error = offset_commit_error(group, member_id, generation_id, group_instance_id)
        if error is not ErrorCode.none:
            return error
        if group is None:
            self._groups[group_id] = GroupMetadata(group_id)
        elif group.has(member_id):
            self._schedule_heartbeat(group.members[member_id], now)
        return ErrorCode.none

    # --- deletion, retention, unloading -------------------------------------------------

    def delete_group(self, group_id: str, now: float) -> ErrorCode:
        """DeleteGroups: only a group without members may go (Empty -> Dead); tombstones
        for its offsets and for the group let compaction remove it from the log too."""
        status = self.group_status(group_id)
        if status is not ErrorCode.none:
            return status
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        if group.state is not _S.EMPTY:
            return ErrorCode.non_empty_group
        group.transition_to(_S.DEAD, now)
        del self._groups[group_id]
        self._write(group_id, self.manager.tombstones(group), _ignore_outcome)
        return ErrorCode.none

    def _expire_offsets(self, now: float) -> None:
        """``offsets.retention.minutes``: drop expired offsets and write their tombstones;
        an Empty group left with no offsets is deleted too, with its own tombstone
        (Kafka's cleanupGroupMetadata), so groups nobody uses do not pile up."""
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            expired = self.manager.expired_offsets(group, now, retention_ms)
            records = self.manager.offset_records(group.group_id, [(tp, None) for tp in expired])
            for tp in expired:
                del group.offsets[tp]
            if (
                group.state is _S.EMPTY
                and not group.offsets
                and not group.pending_members
                and not group.assignment_write_pending
            ):
                group.transition_to(_S.DEAD, now)
                del self._groups[group.group_id]
                records.extend(self.manager.tombstones(group))
            if records:
                self._write(group.group_id, records, _ignore_outcome)
        self._next_offsets_expiry = now + self.config.offsets_retention_check_interval_ms / 1000

    def unload_group(self, group_id: str) -> list[GroupReply]:
        """This broker is no longer the group's coordinator (its ``__consumer_offsets``
        partition moved): "whatever its state, the group becomes Dead" (seed 002 §1)."""
        group = self._groups.pop(group_id, None)
        return [] if group is None else _make_dead(group)

    # --- timers ------------------------------------------------------------------------

    def on_timer(self, now: float) -> list[GroupReply]:
        """Fire every timer due at ``now``, earliest first."""
        out: list[GroupReply] = []
        if self._next_offsets_expiry is not None and self._next_offsets_expiry <= now:
            self._expire_offsets(now)
        while True:
            due = self._earliest_due(now)
            if due is None:
                return out
            kind, group, member_id = due
            if kind == "join":
                self._on_join_deadline(group, now, out)
            elif kind == "sync":
                self._on_sync_deadline(group, now, out)
            else:
                # A pending member id that never came back, or a member whose session
                # expired: "the coordinator may need a whole session.timeout to notice a
                # crashed member" (seed 002 §3.2).
                member = group.members.get(member_id)
                if member is None:
                    reason = "pending_member_expired"
                elif member.is_new:
                    reason = "new_member_join_timeout"
                else:
                    reason = "session_timeout"
                self._remove_member_and_update_group(group, member_id, now, out, reason)

    def _earliest_due(self, now: float) -> tuple[str, GroupMetadata, str] | None:
        best: tuple[float, str, GroupMetadata, str] | None = None
        for group in self._groups.values():
            timers: list[tuple[float | None, str, str]] = [
                (group.join_deadline, "join", ""),
                (group.sync_deadline, "sync", ""),
                *((d, "pending", m) for m, d in group.pending_members.items()),
                *((m.session_deadline, "session", m.member_id) for m in group.members.values()),
            ]
            for deadline, kind, member_id in timers:
                if (
                    deadline is not None
                    and deadline <= now
                    and (best is None or deadline < best[0])
                ):
                    best = (deadline, kind, group, member_id)
        return None if best is None else best[1:]

    def _on_join_deadline(self, group: GroupMetadata, now: float, out: list[GroupReply]) -> None:
        remaining = group.initial_delay_remaining_ms
        if (
            remaining is not None
            and group.new_member_added
            and remaining > 0
            and group.join_deadline is not None
        ):
            # A member arrived during the initial delay: wait once more from the end of
            # this delay, but no longer in all than the rebalance timeout.
            delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            group.new_member_added = False
            group.initial_delay_remaining_ms = remaining - delay
            group.join_deadline += delay / 1000
            if group.join_deadline > now:
                return
        self._complete_join(group, now, out)

    def _on_sync_deadline(self, group: GroupMetadata, now: float, out: list[GroupReply]) -> None:
        """Members that never sent SyncGroup within the rebalance timeout are dropped and
        the group rebalances without them (Kafka 3.1's pending-sync timeout)."""
        group.sync_deadline = None
        missing = group.pending_sync_members
        if not missing or group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return
        for member_id in missing:
            member = group.remove(member_id)  # they have no parked request: they never synced
            if member is not None:
                _trace_removed(group, member, "sync_timeout", now)
        self._prepare_rebalance(group, now, out, "sync_timeout")


def _partition_count(group: GroupMetadata, assignment: bytes) -> int:
    """How many partitions an assignment gives, for the trace: 0 for none at all (the
    leader left the member out), -1 when it is not a consumer assignment we can read."""
    if not assignment:
        return 0
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return -1
    try:
        return len(decode_assignment(assignment).partitions)
    except ValueError:
        return -1


def _trace_join(group: GroupMetadata, member_id: str, client_id: str, now: float) -> None:
    """A JoinGroup accepted: called before it changes anything, so the group's
    generation and state are those it arrived in."""
    if tracing():
        state = group.state.value
        emit(MemberJoined(group.group_id, member_id, client_id, group.generation_id, state), now)


def _trace_assigned(group: GroupMetadata, member: MemberMetadata, now: float) -> None:
    if tracing():
        partitions = _partition_count(group, member.assignment or b"")
        event = MemberAssigned(
            group.group_id, member.member_id, member.client_id, group.generation_id, partitions
        )
        emit(event, now)


def _trace_removed(group: GroupMetadata, member: MemberMetadata, reason: str, now: float) -> None:
    if tracing():
        emit(MemberRemoved(group.group_id, member.member_id, member.client_id, reason), now)


def _make_dead(group: GroupMetadata) -> list[GroupReply]:
    """An unloaded group goes Dead; its parked requests are told NOT_COORDINATOR so
    their clients look the coordinator up again."""
    out: list[GroupReply] = []
    for member in group.members.values():
        if member.awaiting_join is not None:
            out.append(
                GroupReply(
                    member.awaiting_join,
                    JoinGroupResponse.error(ErrorCode.not_coordinator, member.member_id),
                )
            )
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            out.append(
                GroupReply(member.awaiting_sync, SyncGroupResponse(ErrorCode.not_coordinator))
            )
            member.awaiting_sync = None
    group.join_deadline = group.sync_deadline = None
    group.transition_to(_S.DEAD)
    return out


def _ignore_outcome(error: ErrorCode, now: float, out: list[GroupReply]) -> None:
    """Writes nobody waits for (an emptied group, tombstones): Kafka logs a failure and
    goes on; the next write or the next load puts the log and the cache back in step."""


def _store_group_error(error: ErrorCode) -> ErrorCode:
    """What a member is told when its group could not be stored (Kafka's storeGroup)."""
    if error in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
        ErrorCode.request_timed_out,
    ):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.unknown_server_error
    return error


def _commit_error(error: ErrorCode) -> ErrorCode:
    """The same mapping for an OffsetCommit, whose too-large case has its own code."""
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.invalid_commit_offset_size
    return _store_group_error(error)


def _deadlines(group: GroupMetadata) -> list[float]:
    found = [d for d in (group.join_deadline, group.sync_deadline) if d is not None]
    found.extend(group.pending_members.values())
    found.extend(d for m in group.members.values() if (d := m.session_deadline) is not None)
    return found
