"""The rebalance: the join phase, the sync phase and what ends them (seed 002 §§2-3).

In the join phase every member sends JoinGroup and the coordinator holds those requests
until all known members have (re)joined or the rebalance timeout passes, then answers them
all, the leader's answer alone carrying everyone's metadata; in the sync phase the leader's
SyncGroup brings the assignment, which is written to ``__consumer_offsets`` and then handed
out, each member getting its own part only. A member that leaves, fails or is dropped
starts the next rebalance.

The :class:`Rebalancer` is the part of the membership manager both the request handlers
(``_join.py``, ``_membership.py``) and the timers use. Every method returns what it did as
actions (``_results.py``): the replies to the parked requests it answered and the writes
it wants; the group's state moves only through ``GroupMetadata.transition_to``, i.e.
through the table of ``_group_state.py``.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer

from ._config import GroupConfig
from ._events import RebalanceStarted
from ._group import GroupMetadata, MemberMetadata
from ._group_metadata_manager import GroupMetadataManager
from ._group_requests import UNKNOWN_MEMBER_ID, JoinGroupResponse, SyncGroupResponse
from ._group_state import GroupState
from ._group_trace import trace_assigned, trace_completed, trace_removed
from ._results import (
    AssignmentStored,
    GroupAction,
    GroupReply,
    Unanswered,
    append,
    store_group_error,
)

__all__ = ["Rebalancer", "join_response", "schedule_heartbeat"]

_S = GroupState


def schedule_heartbeat(member: MemberMetadata, now: float) -> None:
    """The member's session starts again: it must be heard from within its timeout."""
    member.heartbeat_deadline = now + member.session_timeout_ms / 1000


def join_response(
    group: GroupMetadata, member: MemberMetadata, skip_assignment: bool = False
) -> JoinGroupResponse:
    """The JoinGroup answer of the current generation; only the leader's carries the
    members' metadata (seed 002 §2.1)."""
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


@attrs.define(eq=False)
class Rebalancer:
    config: GroupConfig
    metadata: GroupMetadataManager
    tracer: Tracer = attrs.field(factory=NullTracer)

    # --- the join phase ---------------------------------------------------------------

    def maybe_prepare_rebalance(
        self,
        group: GroupMetadata,
        now: float,
        reason: str,
        member_id: str | None = None,
        client_id: str | None = None,
    ) -> list[GroupAction]:
        if group.can_rebalance():
            return self.prepare_rebalance(group, now, reason, member_id, client_id)
        return []

    def prepare_rebalance(
        self,
        group: GroupMetadata,
        now: float,
        reason: str,
        member_id: str | None = None,
        client_id: str | None = None,
    ) -> list[GroupAction]:
        """Start a join phase; ``reason``, ``member_id`` and ``client_id`` say why, for
        the trace (the codes are listed on ``RebalanceStarted``)."""
        out: list[GroupAction] = []
        if group.state is _S.COMPLETING_REBALANCE:
            # Members waiting for an assignment that will not come: rejoin.
            for member in group.members.values():
                member.assignment = None
            out += self.propagate_assignment(
                group, ErrorCode.rebalance_in_progress, now
            )
        group.clear_pending_sync_members()
        delay = self.config.group_initial_rebalance_delay_ms
        if group.state is _S.EMPTY and delay > 0:
            # group.initial.rebalance.delay.ms: the first members of an empty group wait a
            # little for the others, so a group starting up does not rebalance per member.
            group.join_deadline = now + delay / 1000
            group.initial_delay_remaining_ms = max(
                group.rebalance_timeout_ms - delay, 0
            )
        else:
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
            group.initial_delay_remaining_ms = None
        group.new_member_added = False
        left_generation = group.generation_id
        group.transition_to(_S.PREPARING_REBALANCE, now, self.tracer)
        group.rebalance_start = now
        if self.tracer.enabled:
            members = len(group.members)
            started = RebalanceStarted(
                group.group_id, left_generation, reason, member_id, client_id, members
            )
            self.tracer.emit(started, now)
        return out + self.try_complete_join(group, now)

    def try_complete_join(self, group: GroupMetadata, now: float) -> list[GroupAction]:
        # An initial delay always runs out; a rebalance ends early once all have joined.
        if (
            group.state is _S.PREPARING_REBALANCE
            and group.initial_delay_remaining_ms is None
            and group.has_all_members_joined()
        ):
            return self.complete_join(group, now)
        return []

    def complete_join(self, group: GroupMetadata, now: float) -> list[GroupAction]:
        group.join_deadline = None
        group.initial_delay_remaining_ms = None
        # Dynamic members that did not rejoin in time are out; static ones stay until
        # their session expires (a restarting static member keeps its place).
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                group.remove(member.member_id)
                trace_removed(self.tracer, group, member, "join_timeout", now)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout while sessions expire.
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
            return []
        group.init_next_generation(now, self.tracer)
        if group.state is _S.EMPTY:
            # Everyone left: the generation still moves on, and the log must say so.
            record = self.metadata.group_record(group, {}, now)
            return [append([record], Unanswered(group.group_id))]
        out: list[GroupAction] = []
        for member in group.members.values():
            if member.awaiting_join is not None:
                out.append(
                    GroupReply(member.awaiting_join, join_response(group, member))
                )
                member.awaiting_join = None
            schedule_heartbeat(member, now)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        group.sync_deadline = now + group.rebalance_timeout_ms / 1000
        return out

    def on_join_deadline(self, group: GroupMetadata, now: float) -> list[GroupAction]:
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
                return []
        return self.complete_join(group, now)

    # --- the sync phase ----------------------------------------------------------------

    def propagate_assignment(
        self, group: GroupMetadata, error: ErrorCode, now: float
    ) -> list[GroupAction]:
        out: list[GroupAction] = []
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
            schedule_heartbeat(member, now)
            if ok:
                trace_assigned(self.tracer, group, member, now)
        return out

    def store_assignment(
        self, group: GroupMetadata, plan: dict[str, bytes], now: float
    ) -> list[GroupAction]:
        """Write the group with the leader's plan, then hand the plan out: "the
        coordinator takes the leader's plan apart and sends each member only its own
        partitions" (seed 002 §2.2); a member the leader left out gets nothing. Until
        the record is committed the group stays CompletingRebalance and every SyncGroup
        waits, so no member consumes under an assignment a new coordinator would not
        know."""
        assignments = {m: plan.get(m, b"") for m in group.members}
        group.assignment_write_pending = True
        record = self.metadata.group_record(group, assignments, now)
        return [
            append([record], AssignmentStored(group, group.generation_id, assignments))
        ]

    def assignment_stored(
        self, stored: AssignmentStored, error: ErrorCode, now: float
    ) -> list[GroupAction]:
        """The leader's plan is in the log (or could not be written)."""
        group = stored.group
        group.assignment_write_pending = False
        if (
            self.metadata.groups.get(group.group_id) is not group
            or group.state is not _S.COMPLETING_REBALANCE
            or group.generation_id != stored.generation
        ):
            return []  # a rebalance or an unload overtook the write; they answered
        if error is not ErrorCode.none:
            for m in group.members.values():
                m.assignment = None
            out = self.propagate_assignment(group, store_group_error(error), now)
            return out + self.maybe_prepare_rebalance(group, now, "write_failed")
        for m in group.members.values():
            m.assignment = stored.assignments.get(m.member_id, b"")
        out = self.propagate_assignment(group, ErrorCode.none, now)
        group.transition_to(_S.STABLE, now, self.tracer)
        trace_completed(self.tracer, group, stored.assignments, now)
        return out

    def on_sync_deadline(self, group: GroupMetadata, now: float) -> list[GroupAction]:
        """Members that never sent SyncGroup within the rebalance timeout are dropped and
        the group rebalances without them (Kafka 3.1's pending-sync timeout)."""
        group.sync_deadline = None
        missing = group.pending_sync_members
        if not missing or group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return []
        for member_id in missing:
            # they have no parked request: they never synced
            member = group.remove(member_id)
            if member is not None:
                trace_removed(self.tracer, group, member, "sync_timeout", now)
        return self.prepare_rebalance(group, now, "sync_timeout")

    # --- members leaving ----------------------------------------------------------------

    def remove_member_and_update_group(
        self, group: GroupMetadata, member_id: str, now: float, reason: str
    ) -> list[GroupAction]:
        """A member leaves, fails or is dropped: its parked requests are answered
        UNKNOWN_MEMBER_ID (so a live client rejoins) and the group rebalances. ``reason``
        is the trace's ``MemberRemoved`` code (a pending member id is no member: only
        the rebalance it may start is traced)."""
        out: list[GroupAction] = []
        member = group.members.get(member_id)
        if member is not None:
            out += answer_parked(member, ErrorCode.unknown_member_id)
        group.remove(member_id)
        client_id = None
        if member is not None:
            client_id = member.client_id
            trace_removed(self.tracer, group, member, reason, now)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            cause = "member_left" if reason == "left" else reason
            out += self.maybe_prepare_rebalance(group, now, cause, member_id, client_id)
        elif group.state is _S.PREPARING_REBALANCE:
            out += self.try_complete_join(group, now)
        return out

    def make_dead(self, group: GroupMetadata) -> list[GroupAction]:
        """An unloaded group goes Dead; its parked requests are told NOT_COORDINATOR so
        their clients look the coordinator up again."""
        out: list[GroupAction] = []
        for member in group.members.values():
            out += answer_parked(member, ErrorCode.not_coordinator, member.member_id)
        group.join_deadline = group.sync_deadline = None
        group.transition_to(_S.DEAD, None, self.tracer)
        return out


def answer_parked(
    member: MemberMetadata, error: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID
) -> list[GroupAction]:
    """Answer the member's parked JoinGroup and SyncGroup, if any, with ``error`` (the
    JoinGroup response carrying ``member_id``), so its client stops waiting."""
    out: list[GroupAction] = []
    if member.awaiting_join is not None:
        out.append(
            GroupReply(member.awaiting_join, JoinGroupResponse.error(error, member_id))
        )
        member.awaiting_join = None
    if member.awaiting_sync is not None:
        out.append(GroupReply(member.awaiting_sync, SyncGroupResponse(error)))
        member.awaiting_sync = None
    return out
