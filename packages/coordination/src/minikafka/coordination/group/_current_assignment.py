"""One member's way to its target assignment (KIP-848): Kafka's ``CurrentAssignmentBuilder``.

The coordinator keeps, for every member of a consumer-protocol group, what it has given
the member (``assigned``), what it has asked the member to give back
(``pending_revocation``) and the member's epoch. On each of the member's heartbeats it
checks the epoch the member sent, then takes one step of :data:`MEMBER_TRANSITIONS`
towards the member's part of the target. A partition counts as the member's from the
moment it is assigned until the member reports it revoked; :func:`partition_owners`
builds that view for the whole group and refuses a partition with two owners, as
Kafka's ``ConsumerGroup`` does with its partition epochs.

Pure functions of values: each takes the member, the target, what the heartbeat says and
``now``, and returns a :class:`Reconciliation` with the member as it is afterwards (the
shell would write it as a CurrentMemberAssignment record) and the error for the
heartbeat's answer. ``_consumer_heartbeat.py`` runs it on each ConsumerGroupHeartbeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._member_state import (
    EpochRule,
    IllegalMemberTransitionError,
    MemberState,
    Step,
    member_transition,
)

__all__ = [
    "DEFAULT_REBALANCE_TIMEOUT_MS",
    "ConsumerGroupMember",
    "Reconciliation",
    "epoch_is_valid",
    "expire",
    "fence",
    "heartbeat",
    "new_member",
    "partition_owners",
    "reconcile",
]

DEFAULT_REBALANCE_TIMEOUT_MS = 300_000
"""What a Kafka consumer sends as its RebalanceTimeoutMs: ``max.poll.interval.ms``."""

_Partitions = frozenset[TopicPartition]


@attrs.frozen
class ConsumerGroupMember:
    """The reconciliation's part of Kafka's ``ConsumerGroupMember``.

    ``session_deadline`` and ``rebalance_deadline`` are times on the shell's clock: the
    session ends if no heartbeat comes before the first, and a member told to revoke is
    fenced if it has not acknowledged before the second.
    """

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: _Partitions = frozenset()
    pending_revocation: _Partitions = frozenset()
    rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS
    session_deadline: float | None = None
    rebalance_deadline: float | None = None

    @property
    def owned(self) -> _Partitions:
        """What the coordinator counts as this member's: assigned, or given back but
        not yet reported revoked."""
        return self.assigned | self.pending_revocation


@attrs.frozen
class Reconciliation:
    """One step's outcome: the member afterwards, the step, the heartbeat's error."""

    member: ConsumerGroupMember
    step: Step
    error: ErrorCode = ErrorCode.none


def new_member(
    member_id: str,
    now: float,
    session_timeout_ms: int,
    rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS,
) -> ConsumerGroupMember:
    """A member joining with epoch 0: stable, owning nothing, behind any target."""
    return ConsumerGroupMember(
        member_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_deadline=now + session_timeout_ms / 1000,
    )


def partition_owners(
    members: Iterable[ConsumerGroupMember],
) -> dict[TopicPartition, str]:
    """Every owned partition's member; raises if two members own one (Kafka's
    ``ConsumerGroup.addPartitionEpochs``: that would be a bug, never an input)."""
    owners: dict[TopicPartition, str] = {}
    for member in members:
        for tp in member.owned:
            other = owners.setdefault(tp, member.member_id)
            if other != member.member_id:
                raise IllegalMemberTransitionError(
                    f"{tp} owned by both {other} and {member.member_id}"
                )
    return owners


def reconcile(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: _Partitions,
    owned: _Partitions | None,
    owners: Mapping[TopicPartition, str],
    now: float,
) -> Reconciliation:
    """One step towards ``target`` (Kafka's ``CurrentAssignmentBuilder.build``).

    ``owned`` is what the heartbeat reports the member holds (None when it did not
    say); ``owners`` is :func:`partition_owners` of the group before this step.
    """
    state = member.state
    waiting = (state is MemberState.STABLE and member.member_epoch == target_epoch) or (
        state is MemberState.UNREVOKED_PARTITIONS
        and (owned is None or bool(owned & member.pending_revocation))
    )
    if waiting:
        member_transition(state, Step.HOLD)  # an edge that changes nothing
        return Reconciliation(member, Step.HOLD)
    # aside: a state a newer coordinator wrote: start over, or fence if holding any
    if state is MemberState.UNKNOWN and (owned is None or owned):
        return fence(member, ErrorCode.fenced_member_epoch)
    kept = member.assigned & target
    revoke = member.assigned - kept
    # A partition is free when nobody owns it, or when this member does only because
    # it is giving it back and has just said it no longer holds it.
    unreleased = {
        tp
        for tp in target - kept
        if owners.get(tp, member.member_id) != member.member_id
    }
    if revoke:
        return _take(member, Step.REVOKE, target_epoch, kept, revoke, now)
    step = Step.ASSIGN_UNRELEASED if unreleased else Step.RECONCILED
    return _take(member, step, target_epoch, target - unreleased, frozenset(), now)


def _take(
    member: ConsumerGroupMember,
    step: Step,
    target_epoch: int,
    assigned: _Partitions,
    pending_revocation: _Partitions,
    now: float,
) -> Reconciliation:
    edge = member_transition(member.state, step)
    epoch = {
        EpochRule.KEEP: member.member_epoch,
        EpochRule.NEXT: member.member_epoch + 1,
        EpochRule.TARGET: target_epoch,
        EpochRule.NONE: member.member_epoch,
    }[edge.epoch]
    # The rebalance timeout runs from the moment a member is asked to revoke, and is
    # started again if it is asked again at a new epoch.
    deadline = None
    if edge.to is MemberState.UNREVOKED_PARTITIONS:
        deadline = now + member.rebalance_timeout_ms / 1000
    updated = attrs.evolve(
        member,
        state=edge.to,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        assigned=frozenset(assigned),
        pending_revocation=frozenset(pending_revocation),
        rebalance_deadline=deadline,
    )
    return Reconciliation(updated, step)


def fence(member: ConsumerGroupMember, error: ErrorCode) -> Reconciliation:
    """The member is out: it owns nothing from now on and must rejoin with epoch 0."""
    edge = member_transition(member.state, Step.FENCE)
    gone = attrs.evolve(
        member,
        state=edge.to,
        assigned=frozenset(),
        pending_revocation=frozenset(),
        session_deadline=None,
        rebalance_deadline=None,
    )
    return Reconciliation(gone, Step.FENCE, error)


def epoch_is_valid(
    member: ConsumerGroupMember, received_epoch: int, owned: _Partitions | None
) -> bool:
    """Kafka's ``throwIfMemberEpochIsInvalid``: the epoch the member sent must be its
    epoch, or its previous one with nothing owned beyond what it is assigned now (the
    answer that moved it on was lost, and it is asking again)."""
    if received_epoch == member.member_epoch:
        return True
    return (
        received_epoch == member.previous_member_epoch
        and received_epoch < member.member_epoch
        and owned is not None
        and owned <= member.assigned
    )


def heartbeat(
    member: ConsumerGroupMember,
    *,
    received_epoch: int,
    owned: _Partitions | None,
    target_epoch: int,
    target: _Partitions,
    owners: Mapping[TopicPartition, str],
    now: float,
    session_timeout_ms: int,
) -> Reconciliation:
    """A known member's ConsumerGroupHeartbeat: check its epoch, take one step,
    restart its session (``group.consumer.session.timeout.ms``)."""
    if not epoch_is_valid(member, received_epoch, owned):
        return fence(member, ErrorCode.fenced_member_epoch)
    result = reconcile(
        member,
        target_epoch=target_epoch,
        target=target,
        owned=owned,
        owners=owners,
        now=now,
    )
    if result.step is Step.FENCE:
        return result
    session = now + session_timeout_ms / 1000
    return attrs.evolve(
        result, member=attrs.evolve(result.member, session_deadline=session)
    )


def expire(member: ConsumerGroupMember, now: float) -> Reconciliation | None:
    """Fence a member whose session or rebalance deadline has passed, else None."""
    deadlines = (member.session_deadline, member.rebalance_deadline)
    if any(d is not None and d <= now for d in deadlines):
        return fence(member, ErrorCode.none)
    return None
