"""A consumer-protocol member's reconciliation states, as one table (KIP-848).

Under KIP-848 there is no group-wide barrier: the coordinator computes a *target
assignment* for the whole group, and each member walks towards its own part of it on its
own heartbeats. Three numbers order the walk. The *group epoch* moves whenever the
membership or a subscription changes; the *target assignment epoch* is the group epoch
the current target was computed at; a member's *member epoch* says which target the
partitions it holds belong to. A member is reconciled when its member epoch equals the
target assignment epoch and it holds its whole target.

Kafka's ``CurrentAssignmentBuilder`` decides each step from the member's state and what
its heartbeat says, with two rules that keep a partition from ever having two owners:
partitions leave a member before any arrive (revocation first; the member keeps its
epoch until it acknowledges the revocation by no longer reporting them), and a partition
still held by another member, assigned or pending revocation, is not given out until
that member lets it go (it is *unreleased*).

Here the states and what each step does to them are one table, :data:`MEMBER_TRANSITIONS`:
for a state and a :class:`Step` (what one look at the member found), the state it moves
to and which epoch it then has. The values of :class:`MemberState` are Kafka's
``MemberState`` names, as ConsumerGroupDescribe would report them; ``FENCED`` is not one of
them: a fenced member is removed from the group and has to rejoin with epoch 0, and
the table writes that end as a state so it can be drawn.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

__all__ = [
    "MEMBER_TRANSITIONS",
    "EpochRule",
    "IllegalMemberTransitionError",
    "MemberState",
    "MemberTransition",
    "Step",
    "member_transition",
]


class MemberState(enum.Enum):
    """Where a member is on its way to its target (Kafka's ``MemberState``)."""

    STABLE = "stable"
    """At the target epoch, holding its whole target; or waiting for a newer target."""
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    """Told to give partitions up; keeps its epoch until it reports they are gone."""
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    """At the target epoch, but part of its target is still held by another member."""
    UNKNOWN = "unknown"
    """A state this coordinator does not know (written by a newer one)."""
    FENCED = "fenced"
    """Removed from the group; it must drop every partition and rejoin (not Kafka's)."""


class Step(enum.Enum):
    """What one look at a member found: the event the table moves on."""

    HOLD = "hold"
    """Nothing to do: the target has not moved, or a revoked partition is still held."""
    REVOKE = "revoke"
    """The target takes partitions away: they are to be revoked first."""
    ASSIGN_UNRELEASED = "assign_unreleased"
    """Nothing to revoke; some of the target is still held elsewhere."""
    RECONCILED = "reconciled"
    """Nothing to revoke and nothing held elsewhere: the member has its whole target."""
    FENCE = "fence"
    """A stale or future member epoch, a session or rebalance timeout, or an unknown
    state with partitions: the member is out."""


class EpochRule(enum.Enum):
    """Which member epoch a transition leaves the member at."""

    KEEP = "keep"
    """The epoch it had: partitions are going away, none arriving yet."""
    NEXT = "next"
    """One past it: the revocation was acknowledged (Kafka: ``memberEpoch + 1``)."""
    TARGET = "target"
    """The target assignment epoch."""
    NONE = "none"
    """No epoch: the member is gone."""


@attrs.frozen
class MemberTransition:
    """One edge: the state it leads to, the epoch it leaves, and why it is taken."""

    to: MemberState
    epoch: EpochRule
    why: str


_S = MemberState
_T = MemberTransition

MEMBER_TRANSITIONS: Mapping[MemberState, Mapping[Step, MemberTransition]] = {
    _S.STABLE: {
        Step.HOLD: _T(_S.STABLE, EpochRule.KEEP, "no newer target"),
        Step.REVOKE: _T(_S.UNREVOKED_PARTITIONS, EpochRule.KEEP, "revoke first"),
        Step.ASSIGN_UNRELEASED: _T(
            _S.UNRELEASED_PARTITIONS, EpochRule.TARGET, "some still held elsewhere"
        ),
        Step.RECONCILED: _T(_S.STABLE, EpochRule.TARGET, "whole target held"),
        Step.FENCE: _T(_S.FENCED, EpochRule.NONE, "fenced"),
    },
    _S.UNREVOKED_PARTITIONS: {
        Step.HOLD: _T(_S.UNREVOKED_PARTITIONS, EpochRule.KEEP, "still holds revoked"),
        Step.REVOKE: _T(
            _S.UNREVOKED_PARTITIONS, EpochRule.NEXT, "acked; new target revokes more"
        ),
        Step.ASSIGN_UNRELEASED: _T(
            _S.UNRELEASED_PARTITIONS, EpochRule.TARGET, "acked; some held elsewhere"
        ),
        Step.RECONCILED: _T(_S.STABLE, EpochRule.TARGET, "acked; whole target held"),
        Step.FENCE: _T(_S.FENCED, EpochRule.NONE, "fenced or rebalance timeout"),
    },
    _S.UNRELEASED_PARTITIONS: {
        Step.REVOKE: _T(_S.UNREVOKED_PARTITIONS, EpochRule.KEEP, "new target revokes"),
        Step.ASSIGN_UNRELEASED: _T(
            _S.UNRELEASED_PARTITIONS, EpochRule.TARGET, "still held elsewhere"
        ),
        Step.RECONCILED: _T(_S.STABLE, EpochRule.TARGET, "released; target held"),
        Step.FENCE: _T(_S.FENCED, EpochRule.NONE, "fenced"),
    },
    _S.UNKNOWN: {
        Step.REVOKE: _T(_S.UNREVOKED_PARTITIONS, EpochRule.TARGET, "rejoined empty"),
        Step.ASSIGN_UNRELEASED: _T(
            _S.UNRELEASED_PARTITIONS, EpochRule.TARGET, "rejoined empty"
        ),
        Step.RECONCILED: _T(_S.STABLE, EpochRule.TARGET, "rejoined empty"),
        Step.FENCE: _T(_S.FENCED, EpochRule.NONE, "unknown state, partitions held"),
    },
    _S.FENCED: {},
}
"""State -> step -> the edge taken (Kafka's ``CurrentAssignmentBuilder.build``).

A step missing from a state's row cannot happen there: a member waiting for unreleased
partitions is always reconsidered (no HOLD), and a fenced member takes no step at all."""


class IllegalMemberTransitionError(Exception):
    """A step the table has no edge for (Kafka: ``IllegalStateException``)."""


def member_transition(state: MemberState, step: Step) -> MemberTransition:
    """The edge ``step`` takes from ``state``, or raise."""
    edge = MEMBER_TRANSITIONS[state].get(step)
    if edge is None:
        raise IllegalMemberTransitionError(
            f"a member in {state.value} cannot take the step {step.value}"
        )
    return edge
