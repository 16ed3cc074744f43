"""JoinGroup: new, known and static members entering the join phase (seed 002 §2.1).

The rules are those of Kafka's ``GroupCoordinator.handleJoinGroup`` (2.4-3.x): a member id
is handed out with MEMBER_ID_REQUIRED (KIP-394) and the member comes back with it; a known
member's JoinGroup is parked until the join phase ends; a static member (KIP-345) that
restarts takes its instance's place under a new id, which is written to the log before it
is answered, and gets its assignment back without a rebalance; ``group.max.size`` keeps
the group from growing past its limit; KIP-814's ``skip_assignment`` tells a replaced
static leader it need not assign again.

A handler returns what it did as actions (``_results.py``); the rebalance it may start or
end is the :class:`Rebalancer`'s.
"""

from __future__ import annotations

import random
import uuid

import attrs
from kio.schema.errors import ErrorCode

from ._config import MAX_PROTOCOL_STRING, NEW_MEMBER_JOIN_TIMEOUT_MS
from ._events import MemberRemoved
from ._group import GroupMetadata, MemberMetadata, validate_current_member
from ._group_requests import (
    UNKNOWN_MEMBER_ID,
    JoinGroupRequest,
    JoinGroupResponse,
    Protocols,
)
from ._group_state import GroupState
from ._group_trace import trace_classic_owned, trace_join
from ._rebalance import Rebalancer, answer_parked, join_response, schedule_heartbeat
from ._results import (
    GroupAction,
    GroupReply,
    StaticMemberStored,
    append,
    store_group_error,
)

__all__ = ["JoinGroupHandler"]

_S = GroupState


@attrs.define(eq=False)
class JoinGroupHandler:
    rebalancer: Rebalancer
    rng: random.Random

    def join_group(
        self, request_id: int, r: JoinGroupRequest, now: float
    ) -> list[GroupAction]:
        out: list[GroupAction] = []

        def fail(error: ErrorCode, member_id: str = r.member_id) -> list[GroupAction]:
            out.append(
                GroupReply(request_id, JoinGroupResponse.error(error, member_id))
            )
            return out

        if not r.group_id:
            return fail(ErrorCode.invalid_group_id)
        metadata = self.rebalancer.metadata
        status = metadata.group_status(r.group_id)
        if status is not ErrorCode.none:
            return fail(status)
        config = self.rebalancer.config
        lowest, highest = (
            config.group_min_session_timeout_ms,
            config.group_max_session_timeout_ms,
        )
        if not lowest <= r.session_timeout_ms <= highest:
            return fail(ErrorCode.invalid_session_timeout)
        group = metadata.groups.get(r.group_id)
        if group is None:
            if r.member_id != UNKNOWN_MEMBER_ID:
                return fail(ErrorCode.unknown_member_id)
            group = metadata.groups[r.group_id] = GroupMetadata(r.group_id)
        if not self._accept_joining_member(group, r.member_id):
            if group.has(r.member_id) or group.is_pending_member(r.member_id):
                out += self.rebalancer.remove_member_and_update_group(
                    group, r.member_id, now, "group_max_size"
                )
            return fail(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID)
        if r.member_id == UNKNOWN_MEMBER_ID:
            out += self._new_member_join(group, request_id, r, now)
        else:
            out += self._current_member_join(group, request_id, r, now)
        return out + self.rebalancer.try_complete_join(group, now)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """``group.max.size``: existing members are kept, new ones only below the limit.
        While rebalancing, the members that rejoined count, so the last to rejoin are the
        ones left out when the limit was lowered."""
        limit = self.rebalancer.config.group_max_size
        if group.state in (_S.EMPTY, _S.DEAD):
            return True
        if group.state is _S.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or (
                group.num_awaiting_join() < limit
            )
        return group.has(member_id) or len(group.members) < limit

    def _new_member_join(
        self, group: GroupMetadata, request_id: int, r: JoinGroupRequest, now: float
    ) -> list[GroupAction]:
        def fail(
            error: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID
        ) -> list[GroupAction]:
            return [GroupReply(request_id, JoinGroupResponse.error(error, member_id))]

        if group.state is _S.DEAD:
            return fail(ErrorCode.coordinator_not_available)
        if not group.supports_protocols(
            r.protocol_type, [name for name, _ in r.protocols]
        ):
            return fail(ErrorCode.inconsistent_group_protocol)
        # Kafka's member id: the client id (a static member's instance id) and a UUID,
        # the prefix cut short so that the id still fits the protocol's int16 strings (a
        # 32,767-character client id made an answer that could not be encoded).
        prefix = r.client_id if r.group_instance_id is None else r.group_instance_id
        suffix = f"-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        member_id = prefix[: MAX_PROTOCOL_STRING - len(suffix)] + suffix
        if r.group_instance_id is not None:
            old_member_id = group.static_member_id(r.group_instance_id)
            if old_member_id is None:
                return self._add_member_and_rebalance(
                    group, member_id, request_id, r, now
                )
            return self._update_static_member_and_rebalance(
                group, old_member_id, member_id, request_id, r, now
            )
        if r.version >= 4:
            # KIP-394: the member must come back with this id, so a client that times out
            # and retries does not leave a defunct member behind at every attempt. Until
            # it does (or its session timeout passes) a rebalance waits for it.
            group.add_pending_member(member_id, now + r.session_timeout_ms / 1000)
            return fail(ErrorCode.member_id_required, member_id)
        return self._add_member_and_rebalance(group, member_id, request_id, r, now)

    def _current_member_join(
        self, group: GroupMetadata, request_id: int, r: JoinGroupRequest, now: float
    ) -> list[GroupAction]:
        def fail(error: ErrorCode) -> list[GroupAction]:
            return [GroupReply(request_id, JoinGroupResponse.error(error, r.member_id))]

        if group.state is _S.DEAD:
            return fail(ErrorCode.coordinator_not_available)
        if not group.supports_protocols(
            r.protocol_type, [name for name, _ in r.protocols]
        ):
            return fail(ErrorCode.inconsistent_group_protocol)
        if group.is_pending_member(r.member_id):
            if r.group_instance_id is not None:
                # Pending ids are only handed to dynamic members (Kafka throws here).
                return fail(ErrorCode.unknown_server_error)
            return self._add_member_and_rebalance(
                group, r.member_id, request_id, r, now
            )
        error = validate_current_member(group, r.member_id, r.group_instance_id)
        if error is not ErrorCode.none:
            return fail(error)
        member = group.members[r.member_id]
        trace_join(
            self.rebalancer.tracer,
            group,
            member.member_id,
            r.client_id,
            r.protocols,
            now,
        )
        if group.state is _S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, request_id, r, now)
        if group.state is _S.COMPLETING_REBALANCE:
            if member.matches(r.protocols):
                # It lost our JoinGroup answer: send the current generation again.
                return [GroupReply(request_id, join_response(group, member))]
            return self._update_member_and_rebalance(group, member, request_id, r, now)
        if group.state is _S.STABLE:
            # "the leader rejoining, or a member's metadata changing" start a rebalance
            # (seed 002 §1); a follower rejoining unchanged just gets the generation back.
            if group.is_leader(member.member_id) or not member.matches(r.protocols):
                return self._update_member_and_rebalance(
                    group, member, request_id, r, now
                )
            return [GroupReply(request_id, join_response(group, member))]
        return fail(ErrorCode.unknown_member_id)  # Empty: no members to be

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
    ) -> list[GroupAction]:
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
        trace_join(
            self.rebalancer.tracer, group, member_id, r.client_id, r.protocols, now
        )
        # Only the group's very first rebalance is stretched for latecomers.
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        return self.rebalancer.maybe_prepare_rebalance(
            group, now, "member_joined", member_id, r.client_id
        )

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
    ) -> list[GroupAction]:
        out = self._park_join(member, request_id, r, group)
        return out + self.rebalancer.maybe_prepare_rebalance(
            group, now, "member_rejoined", member.member_id, r.client_id
        )

    @staticmethod
    def _park_join(
        member: MemberMetadata,
        request_id: int,
        r: JoinGroupRequest,
        group: GroupMetadata,
    ) -> list[GroupAction]:
        out: list[GroupAction] = []
        if member.awaiting_join is not None:
            # Kafka drops the older callback; a core that answers every request once tells
            # the older one to rejoin.
            response = JoinGroupResponse.error(
                ErrorCode.rebalance_in_progress, member.member_id
            )
            out.append(GroupReply(member.awaiting_join, response))
        group.update_member(
            member, r.protocols, r.effective_rebalance_timeout_ms, r.session_timeout_ms
        )
        member.awaiting_join = request_id
        return out

    def _update_static_member_and_rebalance(
        self,
        group: GroupMetadata,
        old_member_id: str,
        new_member_id: str,
        request_id: int,
        r: JoinGroupRequest,
        now: float,
    ) -> list[GroupAction]:
        """A static member rejoined with no member id: it takes over its instance's
        member under a new id, and the old id is fenced (KIP-345)."""
        assert r.group_instance_id is not None
        instance_id = r.group_instance_id
        tracer = self.rebalancer.tracer
        member = group.members[old_member_id]
        out: list[GroupAction] = []
        if tracer.enabled:
            removed = MemberRemoved(
                group.group_id, old_member_id, member.client_id, "replaced"
            )
            tracer.emit(removed, now)
            trace_classic_owned(tracer, group, old_member_id, member.client_id, (), now)
            trace_join(tracer, group, new_member_id, r.client_id, r.protocols, now)
        out += answer_parked(member, ErrorCode.fenced_instance_id, old_member_id)
        old_leader = group.leader_id
        old_settings = (
            member.supported_protocols,
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
        )
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        cause = ("static_member_replaced", new_member_id, r.client_id)
        out += self._park_join(member, request_id, r, group)
        schedule_heartbeat(member, now)
        if group.state is _S.STABLE:
            # No rebalance when the group would choose the same protocol: the member keeps
            # its assignment under its new id (a restarted static member costs nothing).
            if group.protocol_name == group.select_protocol():
                member.awaiting_join = None
                stored = self._store_static_member(
                    group,
                    member,
                    old_member_id,
                    old_leader,
                    old_settings,
                    request_id,
                    r,
                    now,
                )
                return [*out, stored]
            return out + self.rebalancer.maybe_prepare_rebalance(group, now, *cause)
        if group.state is _S.COMPLETING_REBALANCE:
            # The leader may have assigned to the old id already: do it again.
            return out + self.rebalancer.prepare_rebalance(group, now, *cause)
        return out  # PreparingRebalance: the member now simply waits with the others.

    def _store_static_member(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        old_member_id: str,
        old_leader: str | None,
        old_settings: tuple[Protocols, int, int],
        request_id: int,
        r: JoinGroupRequest,
        now: float,
    ) -> GroupAction:
        """The replaced static member's new id is written with the group before it is
        answered (a new coordinator must know it), and undone if the write fails."""
        assert r.group_instance_id is not None
        response = join_response(group, member, skip_assignment=True)
        if r.version < 9:
            # Before KIP-814 a leader cannot be told to skip the assignment: it is told
            # the old leader's id instead, acts as a follower and syncs its assignment.
            response = attrs.evolve(
                response, leader=old_leader or "", members=(), skip_assignment=False
            )
        assignments = {m.member_id: m.assignment or b"" for m in group.members.values()}
        record = self.rebalancer.metadata.group_record(group, assignments, now)
        outcome = StaticMemberStored(
            group,
            member,
            r.group_instance_id,
            old_member_id,
            member.member_id,
            group.generation_id,
            old_settings,
            request_id,
            response,
        )
        return append([record], outcome)

    def static_member_stored(
        self, stored: StaticMemberStored, error: ErrorCode
    ) -> list[GroupAction]:
        """The new member id is in the log: answer; or it is not: undo the replacement."""
        if error is ErrorCode.none:
            return [GroupReply(stored.request_id, stored.response)]
        group = stored.group
        if (
            self.rebalancer.metadata.groups.get(group.group_id) is group
            and group.generation_id == stored.generation
            and group.static_member_id(stored.instance_id) == stored.new_member_id
        ):
            group.replace_static_member(
                stored.instance_id, stored.new_member_id, stored.old_member_id
            )
            group.update_member(stored.member, *stored.old_settings)
        failure = JoinGroupResponse.error(
            store_group_error(error), stored.new_member_id
        )
        return [GroupReply(stored.request_id, failure)]
