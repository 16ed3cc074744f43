"""The membership manager: join, sync, heartbeat, leave and the member timeouts (seed 002).

Kafka's ``GroupMetadataManager`` (the membership half of its newer coordinator) as a core:
each request handler takes the request's id, the request and ``now``, and returns actions
(``_results.py``): replies, possibly to other parked requests, and appends to
``__consumer_offsets`` with what to do once they are committed. JoinGroup is
``_join.py``'s, the rebalance both start and end is ``_rebalance.py``'s; this module
holds the other three requests and what the timers do when they fire: "the coordinator
may need a whole session.timeout to notice a crashed member" (seed 002 §3.2).
"""

from __future__ import annotations

import random

import attrs
from kio.schema.errors import ErrorCode

from ._group import GroupMetadata, validate_current_member
from ._group_requests import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ._group_state import GroupState
from ._group_trace import trace_assigned
from ._join import JoinGroupHandler
from ._rebalance import Rebalancer, schedule_heartbeat
from ._results import (
    AssignmentStored,
    GroupAction,
    GroupReply,
    StaticMemberStored,
)

__all__ = ["MembershipManager"]

_S = GroupState


@attrs.define(eq=False)
class MembershipManager:
    rebalancer: Rebalancer
    rng: random.Random
    _joins: JoinGroupHandler = attrs.field(init=False)

    @_joins.default
    def _join_handler(self) -> JoinGroupHandler:
        return JoinGroupHandler(self.rebalancer, self.rng)

    def _group(self, group_id: str) -> GroupMetadata | None:
        return self.rebalancer.metadata.groups.get(group_id)

    # --- the requests -------------------------------------------------------------------

    def join_group(
        self, request_id: int, request: JoinGroupRequest, now: float
    ) -> list[GroupAction]:
        return self._joins.join_group(request_id, request, now)

    def sync_group(
        self, request_id: int, request: SyncGroupRequest, now: float
    ) -> list[GroupAction]:
        r = request

        def answer(error: ErrorCode) -> list[GroupAction]:
            return [GroupReply(request_id, SyncGroupResponse(error))]

        status = self.rebalancer.metadata.group_status(r.group_id)
        if status is not ErrorCode.none:
            return answer(status)
        group = self._group(r.group_id)
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
            schedule_heartbeat(member, now)
            trace_assigned(self.rebalancer.tracer, group, member, now)
            response = SyncGroupResponse(
                ErrorCode.none,
                member.assignment or b"",
                group.protocol_type,
                group.protocol_name,
            )
            return [GroupReply(request_id, response)]
        if group.state is not _S.COMPLETING_REBALANCE:
            return answer(ErrorCode.unknown_member_id)  # Empty
        out: list[GroupAction] = []
        if member.awaiting_sync is not None:
            superseded = SyncGroupResponse(ErrorCode.rebalance_in_progress)
            out.append(GroupReply(member.awaiting_sync, superseded))
        member.awaiting_sync = request_id
        group.remove_pending_sync_member(member.member_id)
        if group.is_leader(member.member_id) and not group.assignment_write_pending:
            out += self.rebalancer.store_assignment(group, dict(r.assignments), now)
        return out

    def heartbeat(
        self, request_id: int, request: HeartbeatRequest, now: float
    ) -> list[GroupAction]:
        return [
            GroupReply(request_id, HeartbeatResponse(self._heartbeat(request, now)))
        ]

    def _heartbeat(self, r: HeartbeatRequest, now: float) -> ErrorCode:
        status = self.rebalancer.metadata.group_status(r.group_id)
        if status is not ErrorCode.none:
            return status
        group = self._group(r.group_id)
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
        schedule_heartbeat(group.members[r.member_id], now)
        if group.state is _S.PREPARING_REBALANCE:
            # How a consuming member learns that it must rejoin.
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def leave_group(
        self, request_id: int, request: LeaveGroupRequest, now: float
    ) -> list[GroupAction]:
        status = self.rebalancer.metadata.group_status(request.group_id)
        if status is not ErrorCode.none:
            return [GroupReply(request_id, LeaveGroupResponse(status))]
        group = self._group(request.group_id)
        if group is not None and group.state is _S.DEAD:
            response = LeaveGroupResponse(ErrorCode.coordinator_not_available)
            return [GroupReply(request_id, response)]
        out: list[GroupAction] = []
        results: list[LeaveGroupMemberResponse] = []
        remove = self.rebalancer.remove_member_and_update_group
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
                error = (
                    ErrorCode.unknown_member_id if current is None else ErrorCode.none
                )
                if current is not None:
                    out += remove(group, current, now, "left")
            elif group.is_pending_member(leaving.member_id):
                error = ErrorCode.none
                out += remove(group, leaving.member_id, now, "left")
            else:
                error = validate_current_member(
                    group, leaving.member_id, leaving.group_instance_id
                )
                if error is ErrorCode.none:
                    out += remove(group, leaving.member_id, now, "left")
            results.append(
                LeaveGroupMemberResponse(
                    leaving.member_id, leaving.group_instance_id, error
                )
            )
        if request.version < 3:
            # One member, and its error is the request's.
            top = results[0].error_code if results else ErrorCode.none
            response = LeaveGroupResponse(top)
        else:
            response = LeaveGroupResponse(ErrorCode.none, tuple(results))
        out.append(GroupReply(request_id, response))
        return out

    # --- writes reported ------------------------------------------------------------------

    def assignment_stored(
        self, stored: AssignmentStored, error: ErrorCode, now: float
    ) -> list[GroupAction]:
        return self.rebalancer.assignment_stored(stored, error, now)

    def static_member_stored(
        self, stored: StaticMemberStored, error: ErrorCode
    ) -> list[GroupAction]:
        return self._joins.static_member_stored(stored, error)

    # --- timers ----------------------------------------------------------------------------

    def on_join_deadline(self, group: GroupMetadata, now: float) -> list[GroupAction]:
        return self.rebalancer.on_join_deadline(group, now)

    def on_sync_deadline(self, group: GroupMetadata, now: float) -> list[GroupAction]:
        return self.rebalancer.on_sync_deadline(group, now)

    def on_member_expired(
        self, group: GroupMetadata, member_id: str, now: float
    ) -> list[GroupAction]:
        """A pending member id that never came back, or a member whose session expired:
        "the coordinator may need a whole session.timeout to notice a crashed member"
        (seed 002 §3.2)."""
        member = group.members.get(member_id)
        if member is None:
            reason = "pending_member_expired"
        elif member.is_new:
            reason = "new_member_join_timeout"
        else:
            reason = "session_timeout"
        return self.rebalancer.remove_member_and_update_group(
            group, member_id, now, reason
        )
