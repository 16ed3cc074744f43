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
KIP-814's ``skip_assignment``. Writing the group to ``__consumer_offsets`` before
answering the leader's SyncGroup is left to the offsets store, which comes later.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from ._group import (
    GroupMetadata,
    GroupSummary,
    ListedGroup,
    MemberMetadata,
    offset_commit_error,
    validate_current_member,
)
from ._group_requests import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ._group_state import GroupState

__all__ = ["GroupConfig", "GroupCoordinator", "GroupReply", "GroupResponse"]

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a new member's JoinGroup may stay parked before the member is dropped
(Kafka's ``NewMemberJoinTimeoutMs``): its client may have given up and rejoined."""

GroupResponse: TypeAlias = (
    JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse
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


@attrs.frozen
class GroupReply:
    """Answer request ``request_id`` with ``response``."""

    request_id: int
    response: GroupResponse


@attrs.define(eq=False)
class GroupCoordinator:
    config: GroupConfig = attrs.field(factory=GroupConfig)
    rng: random.Random = attrs.field(factory=random.Random)
    _groups: dict[str, GroupMetadata] = attrs.field(init=False, factory=dict)

    # --- reading -----------------------------------------------------------------------

    def group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

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
        return min(deadlines, default=None)

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
                self._remove_member_and_update_group(group, r.member_id, now, out)
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
        # Kafka's member id: the client id (a static member's instance id) and a UUID.
        prefix = r.client_id if r.group_instance_id is None else r.group_instance_id
        member_id = f"{prefix}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
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
        # Only the group's very first rebalance is stretched for latecomers.
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance(group, now, out)

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
        self._maybe_prepare_rebalance(group, now, out)

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
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._park_join(member, request_id, r, group, out)
        self._schedule_heartbeat(member, now)
        if group.state is _S.STABLE:
            # No rebalance when the group would choose the same protocol: the member keeps
            # its assignment under its new id (a restarted static member costs nothing).
            if group.protocol_name == group.select_protocol():
                member.awaiting_join = None
                self._answer_current_generation(
                    group, member, request_id, out, skip_assignment=True
                )
            else:
                self._maybe_prepare_rebalance(group, now, out)
        elif group.state is _S.COMPLETING_REBALANCE:
            # The leader may have assigned to the old id already: do it again.
            self._prepare_rebalance(group, now, out)
        # PreparingRebalance: the member now simply waits with the others.

    # --- the rebalance -----------------------------------------------------------------

    def _maybe_prepare_rebalance(
        self, group: GroupMetadata, now: float, out: list[GroupReply]
    ) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now, out)

    def _prepare_rebalance(self, group: GroupMetadata, now: float, out: list[GroupReply]) -> None:
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
        group.transition_to(_S.PREPARING_REBALANCE)
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
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout while sessions expire.
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
            return
        group.init_next_generation()
        if group.state is _S.EMPTY:
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

    # --- SyncGroup ---------------------------------------------------------------------

    def sync_group(
        self, request_id: int, request: SyncGroupRequest, now: float
    ) -> list[GroupReply]:
        out: list[GroupReply] = []
        r = request

        def answer(error: ErrorCode) -> list[GroupReply]:
            out.append(GroupReply(request_id, SyncGroupResponse(error)))
            return out

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
        if group.is_leader(member.member_id):
            # "The coordinator takes the leader's plan apart and sends each member only its
            # own partitions" (seed 002 §2.2); a member the leader left out gets nothing.
            plan = dict(r.assignments)
            for m in group.members.values():
                m.assignment = plan.get(m.member_id, b"")
            self._propagate_assignment(group, ErrorCode.none, now, out)
            group.transition_to(_S.STABLE)
        return out

    # --- Heartbeat ---------------------------------------------------------------------

    def heartbeat(self, request_id: int, request: HeartbeatRequest, now: float) -> list[GroupReply]:
        return [GroupReply(request_id, HeartbeatResponse(self._heartbeat(request, now)))]

    def _heartbeat(self, r: HeartbeatRequest, now: float) -> ErrorCode:
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
                    self._remove_member_and_update_group(group, current, now, out)
            elif group.is_pending_member(leaving.member_id):
                error = ErrorCode.none
                self._remove_member_and_update_group(group, leaving.member_id, now, out)
            else:
                error = validate_current_member(group, leaving.member_id, leaving.group_instance_id)
                if error is ErrorCode.none:
                    self._remove_member_and_update_group(group, leaving.member_id, now, out)
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
        self, group: GroupMetadata, member_id: str, now: float, out: list[GroupReply]
    ) -> None:
        """A member leaves, fails or is dropped: its parked requests are answered
        UNKNOWN_MEMBER_ID (so a live client rejoins) and the group rebalances."""
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
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now, out)
        elif group.state is _S.PREPARING_REBALANCE:
            self._try_complete_join(group, now, out)

    # --- OffsetCommit, deletion, unloading ---------------------------------------------

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

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups: only a group without members may go (Empty -> Dead)."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        if group.state is not _S.EMPTY:
            return ErrorCode.non_empty_group
        group.transition_to(_S.DEAD)
        del self._groups[group_id]
        return ErrorCode.none

    def unload_group(self, group_id: str) -> list[GroupReply]:
        """This broker is no longer the group's coordinator (its ``__consumer_offsets``
        partition moved): "whatever its state, the group becomes Dead" (seed 002 §1), and
        the parked requests are told NOT_COORDINATOR so their clients look it up again."""
        group = self._groups.pop(group_id, None)
        if group is None:
            return []
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

    # --- timers ------------------------------------------------------------------------

    def on_timer(self, now: float) -> list[GroupReply]:
        """Fire every timer due at ``now``, earliest first."""
        out: list[GroupReply] = []
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
                self._remove_member_and_update_group(group, member_id, now, out)

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
            group.remove(member_id)  # they have no parked request: they never synced
        self._prepare_rebalance(group, now, out)


def _deadlines(group: GroupMetadata) -> list[float]:
    found = [d for d in (group.join_deadline, group.sync_deadline) if d is not None]
    found.extend(group.pending_members.values())
    found.extend(d for m in group.members.values() if (d := m.session_deadline) is not None)
    return found
