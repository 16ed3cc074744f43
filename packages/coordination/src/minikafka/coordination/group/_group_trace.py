"""The trace events of a rebalance, built only when the coordinator's tracer keeps them.

Every helper takes the tracer the coordinator was given (tracing is injected, so
three coordinators in one process write three streams) and the core's ``now``, so a
simulation on virtual time leaves virtual timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.trace import Tracer

from ..assignors._consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)
from ._events import (
    MemberAssigned,
    MemberAssignmentChanged,
    MemberJoined,
    MemberRemoved,
    RebalanceCompleted,
)
from ._group import GroupMetadata, MemberMetadata
from ._group_requests import Protocols

__all__ = [
    "partition_count",
    "trace_assigned",
    "trace_classic_owned",
    "trace_completed",
    "trace_join",
    "trace_removed",
]


def partition_count(group: GroupMetadata, assignment: bytes) -> int:
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


def trace_join(
    tracer: Tracer,
    group: GroupMetadata,
    member_id: str,
    client_id: str,
    protocols: Protocols,
    now: float,
) -> None:
    """A JoinGroup accepted: called before it changes anything, so the group's
    generation and state are those it arrived in. What the member says it still owns
    (its first protocol's ``owned_partitions``) becomes its assignment in the trace."""
    if tracer.enabled:
        state = group.state.value
        event = MemberJoined(
            group.group_id, member_id, client_id, group.generation_id, state
        )
        tracer.emit(event, now)
        owned: tuple[str, ...] = ()
        if protocols and group.protocol_type in (None, CONSUMER_PROTOCOL_TYPE):
            try:
                claim = decode_subscription(protocols[0][1]).owned_partitions
            except ValueError:
                claim = ()
            owned = tuple(sorted(str(tp) for tp in claim))
        trace_classic_owned(tracer, group, member_id, client_id, owned, now)


def trace_classic_owned(
    tracer: Tracer,
    group: GroupMetadata,
    member_id: str,
    client_id: str,
    owned: tuple[str, ...],
    now: float,
) -> None:
    """A classic member's partitions as the coordinator last heard of them."""
    if tracer.enabled:
        event = MemberAssignmentChanged(
            group.group_id,
            "classic",
            member_id,
            client_id,
            group.generation_id,
            owned,
            (),
        )
        tracer.emit(event, now)


def assigned_names(group: GroupMetadata, assignment: bytes) -> tuple[str, ...]:
    """The ``topic-partition`` names of a consumer assignment (none if unreadable)."""
    if not assignment or group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return ()
    try:
        return tuple(sorted(str(tp) for tp in decode_assignment(assignment).partitions))
    except ValueError:
        return ()


def trace_assigned(
    tracer: Tracer, group: GroupMetadata, member: MemberMetadata, now: float
) -> None:
    if tracer.enabled:
        partitions = partition_count(group, member.assignment or b"")
        event = MemberAssigned(
            group.group_id,
            member.member_id,
            member.client_id,
            group.generation_id,
            partitions,
        )
        tracer.emit(event, now)
        names = assigned_names(group, member.assignment or b"")
        trace_classic_owned(
            tracer, group, member.member_id, member.client_id, names, now
        )


def trace_removed(
    tracer: Tracer,
    group: GroupMetadata,
    member: MemberMetadata,
    reason: str,
    now: float,
) -> None:
    if tracer.enabled:
        event = MemberRemoved(
            group.group_id, member.member_id, member.client_id, reason
        )
        tracer.emit(event, now)
        trace_classic_owned(tracer, group, member.member_id, member.client_id, (), now)


def trace_completed(
    tracer: Tracer, group: GroupMetadata, assignments: Mapping[str, bytes], now: float
) -> None:
    """The group became Stable: how long it stood still and what each member got."""
    if tracer.enabled:
        start = group.rebalance_start
        completed = RebalanceCompleted(
            group.group_id,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            len(group.members),
            0.0 if start is None else (now - start) * 1000,
            {m: partition_count(group, data) for m, data in assignments.items()},
        )
        tracer.emit(completed, now)
