"""The trace of a consumer group member's current assignment (KIP-848).

Kafka logs each move of a member's current assignment (``GroupMetadataManager``: "new
assignment state"); here it is a ``group.member_assignment`` event, the same one classic
members get, so that a lab can put the two protocols side by side: who owned which
partition when, as the coordinator saw it.
"""

from __future__ import annotations

from minikafka.common import TopicPartition
from minikafka.trace import Tracer

from ._current_assignment import ConsumerGroupMember
from ._events import MemberAssignmentChanged

__all__ = ["trace_member"]


def _names(partitions: frozenset[TopicPartition]) -> tuple[str, ...]:
    return tuple(sorted(str(tp) for tp in partitions))


def trace_member(
    tracer: Tracer,
    group_id: str,
    member_id: str,
    client_id: str,
    before: ConsumerGroupMember | None,
    after: ConsumerGroupMember | None,
    now: float,
) -> None:
    """Emit the member's partitions if a heartbeat, a leave or a fence changed them
    (``before`` None: it just joined; ``after`` None: it is gone and owns nothing)."""
    if not tracer.enabled:
        return
    old = None if before is None else (before.assigned, before.pending_revocation)
    new = None if after is None else (after.assigned, after.pending_revocation)
    if old == new:
        return
    assigned, pending = new or (frozenset(), frozenset())
    event = MemberAssignmentChanged(
        group_id,
        "consumer",
        member_id,
        client_id,
        -1 if after is None else after.member_epoch,
        _names(assigned),
        _names(pending),
    )
    tracer.emit(event, now)
