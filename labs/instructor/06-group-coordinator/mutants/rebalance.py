"""Wrong on purpose: the end of the join phase and the sync phase, each function wrong
in one way.

Each is minikafka's ``Rebalancer.complete_join``, ``propagate_assignment`` or
``assignment_stored`` with one knob of :func:`join`, :func:`propagate` or
:func:`stored` turned; mutants.toml switches one function in at a time.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.coordination.group._group import GroupMetadata
from minikafka.coordination.group._group_requests import SyncGroupResponse
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.group._group_trace import (
    trace_assigned,
    trace_completed,
    trace_removed,
)
from minikafka.coordination.group._rebalance import (
    Rebalancer,
    join_response,
    schedule_heartbeat,
)
from minikafka.coordination.group._results import (
    AssignmentStored,
    GroupAction,
    GroupReply,
    Unanswered,
    append,
    store_group_error,
)

# --- join -----------------------------------------------------------------------------


def join(
    self: Rebalancer,
    group: GroupMetadata,
    now: float,
    *,
    clear_deadline: bool = True,
    remove_dynamic: bool = True,
    remove_static: bool = False,
    trace_removal: bool = True,
    wait_without_leader: bool = True,
    write_when_empty: bool = True,
    members_to_all: bool = False,
    restart_sessions: bool = True,
    not_new: bool = True,
    pending_sync: bool = True,
) -> list[GroupAction]:
    """minikafka's end of the join phase, unless a knob says otherwise."""
    if clear_deadline:
        group.join_deadline = None
    group.initial_delay_remaining_ms = None
    for member in group.not_yet_rejoined_members():
        if (remove_dynamic and not member.is_static) or (
            remove_static and member.is_static
        ):
            group.remove(member.member_id)
            if trace_removal:
                trace_removed(self.tracer, group, member, "join_timeout", now)
    elected = group.maybe_elect_new_joined_leader()
    if not elected and group.members and wait_without_leader:
        group.join_deadline = now + group.rebalance_timeout_ms / 1000
        return []
    group.init_next_generation(now, self.tracer)
    if group.state is GroupState.EMPTY:
        if not write_when_empty:
            return []
        record = self.metadata.group_record(group, {}, now)
        return [append([record], Unanswered(group.group_id))]
    out: list[GroupAction] = []
    for member in group.members.values():
        if member.awaiting_join is not None:
            response = join_response(group, member)
            if members_to_all:
                # Every member hears the members' subscriptions, as the leader does.
                response = attrs.evolve(
                    response, members=group.current_member_metadata()
                )
            out.append(GroupReply(member.awaiting_join, response))
            member.awaiting_join = None
        if restart_sessions:
            schedule_heartbeat(member, now)
        if not_new:
            member.is_new = False
        if pending_sync:
            group.add_pending_sync_member(member.member_id)
    if pending_sync:
        group.sync_deadline = now + group.rebalance_timeout_ms / 1000
    return out


def join_keeps_its_deadline(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """The join deadline stays set: the join phase ends again when it passes."""
    return join(self, group, now, clear_deadline=False)


def join_keeps_absent_dynamic_members(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Dynamic members that did not rejoin stay in the group."""
    return join(self, group, now, remove_dynamic=False)


def join_removes_absent_static_members(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Static members that did not rejoin are removed at once, not at their session's
    end."""
    return join(self, group, now, remove_static=True)


def join_removes_untraced(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Members removed for not rejoining are not traced."""
    return join(self, group, now, trace_removal=False)


def join_without_a_leader(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """When nobody rejoined but members remain, the next generation starts anyway."""
    return join(self, group, now, wait_without_leader=False)


def join_empty_writes_nothing(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """A group left empty moves to its next generation without writing it."""
    return join(self, group, now, write_when_empty=False)


def join_members_to_everyone(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Every member's JoinGroup answer carries the members, not only the leader's."""
    return join(self, group, now, members_to_all=True)


def join_keeps_old_sessions(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """The members' sessions are not restarted when their JoinGroup is answered."""
    return join(self, group, now, restart_sessions=False)


def join_members_stay_new(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Members stay marked new after the join phase."""
    return join(self, group, now, not_new=False)


def join_no_sync_deadline(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """Members are not waited for in the sync phase: one that never sends SyncGroup
    stays."""
    return join(self, group, now, pending_sync=False)


# --- sync: propagate_assignment --------------------------------------------------------


def propagate(
    self: Rebalancer,
    group: GroupMetadata,
    error: ErrorCode,
    now: float,
    *,
    leaders_part: bool = False,
    protocol: bool = True,
    restart_sessions: bool = True,
    trace: bool = True,
    forget: bool = True,
) -> list[GroupAction]:
    """minikafka's answers to the parked SyncGroups, unless a knob says otherwise."""
    out: list[GroupAction] = []
    ok = error is ErrorCode.none
    leader = group.members.get(group.leader_id or "")
    for member in group.members.values():
        if member.awaiting_sync is None:
            continue
        owner = leader if leaders_part and leader is not None else member
        response = SyncGroupResponse(
            error,
            (owner.assignment or b"") if ok else b"",
            group.protocol_type if ok and protocol else None,
            group.protocol_name if ok and protocol else None,
        )
        out.append(GroupReply(member.awaiting_sync, response))
        if forget:
            member.awaiting_sync = None
        if restart_sessions:
            schedule_heartbeat(member, now)
        if ok and trace:
            trace_assigned(self.tracer, group, member, now)
    return out


def propagate_the_leaders_part(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """Every member is given the leader's part of the plan, not its own."""
    return propagate(self, group, error, now, leaders_part=True)


def propagate_without_protocol(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """The answers leave out the group's protocol type and name."""
    return propagate(self, group, error, now, protocol=False)


def propagate_keeps_old_sessions(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """An answered member's session is not restarted."""
    return propagate(self, group, error, now, restart_sessions=False)


def propagate_untraced(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """A member's assignment is not traced."""
    return propagate(self, group, error, now, trace=False)


def propagate_remembers_answered(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """An answered SyncGroup stays parked (and is answered again later)."""
    return propagate(self, group, error, now, forget=False)


# --- sync: assignment_stored ------------------------------------------------------------


def stored(
    self: Rebalancer,
    done: AssignmentStored,
    error: ErrorCode,
    now: float,
    *,
    check_generation: bool = True,
    rebalance_on_failure: bool = True,
    map_error: bool = True,
    stable: bool = True,
    trace: bool = True,
) -> list[GroupAction]:
    """minikafka's handling of the written plan, unless a knob says otherwise."""
    group = done.group
    group.assignment_write_pending = False
    if (
        self.metadata.groups.get(group.group_id) is not group
        or group.state is not GroupState.COMPLETING_REBALANCE
        or (check_generation and group.generation_id != done.generation)
    ):
        return []
    if error is not ErrorCode.none:
        for m in group.members.values():
            m.assignment = None
        answer = store_group_error(error) if map_error else error
        out = self.propagate_assignment(group, answer, now)
        if rebalance_on_failure:
            out += self.maybe_prepare_rebalance(group, now, "write_failed")
        return out
    for m in group.members.values():
        m.assignment = done.assignments.get(m.member_id, b"")
    out = self.propagate_assignment(group, ErrorCode.none, now)
    if stable:
        group.transition_to(GroupState.STABLE, now, self.tracer)
    if trace:
        trace_completed(self.tracer, group, done.assignments, now)
    return out


def stored_any_generation(
    self: Rebalancer, done: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """A write that comes back after the group moved to another generation is used."""
    return stored(self, done, error, now, check_generation=False)


def stored_failure_no_rebalance(
    self: Rebalancer, done: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """A failed write answers the members but starts no new rebalance."""
    return stored(self, done, error, now, rebalance_on_failure=False)


def stored_failure_raw_error(
    self: Rebalancer, done: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """A failed write answers the log's own error, not the one a client expects."""
    return stored(self, done, error, now, map_error=False)


def stored_never_stable(
    self: Rebalancer, done: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """The members get their parts but the group stays CompletingRebalance."""
    return stored(self, done, error, now, stable=False)


def stored_untraced(
    self: Rebalancer, done: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """The completed rebalance is not traced."""
    return stored(self, done, error, now, trace=False)
