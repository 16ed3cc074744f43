"""The consumer group state machine, as a table (seed 002 §1).

A group is always in one of five states. Kafka's ``GroupMetadata`` names, for each
state, the states it may be entered from (``validPreviousStates``) and refuses any other
move with an ``IllegalStateException``; here that table is data, with one short reason
per edge taken from seed 002, so the book draws the diagram from the table the
coordinator runs on. The seed's ``AwaitingSync`` is Kafka's ``CompletingRebalance``
(renamed in Kafka 1.1); the values are Kafka's names, as DescribeGroups and ListGroups
report them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "GROUP_TRANSITIONS",
    "GROUP_TRANSITION_REASONS",
    "GroupState",
    "IllegalGroupStateTransitionError",
    "check_group_transition",
]


class GroupState(enum.Enum):
    """A consumer group's state in its coordinator; the value is Kafka's name for it."""

    EMPTY = "Empty"
    """No active member; offsets may remain, so OffsetFetch is still answered."""
    PREPARING_REBALANCE = "PreparingRebalance"
    """Some members have (re)joined; waiting for the others or the rebalance timeout."""
    COMPLETING_REBALANCE = "CompletingRebalance"
    """Everyone joined; waiting for the leader's assignment in its SyncGroup."""
    STABLE = "Stable"
    """The leader's assignment was handed out; members consume and heartbeat."""
    DEAD = "Dead"
    """No members and no metadata: deleted, expired, or moved to another coordinator."""

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        return GROUP_TRANSITIONS[self]


_G = GroupState

GROUP_TRANSITIONS: Mapping[GroupState, frozenset[GroupState]] = {
    _G.EMPTY: frozenset({_G.PREPARING_REBALANCE}),
    _G.PREPARING_REBALANCE: frozenset({_G.EMPTY, _G.COMPLETING_REBALANCE, _G.STABLE}),
    _G.COMPLETING_REBALANCE: frozenset({_G.PREPARING_REBALANCE}),
    _G.STABLE: frozenset({_G.COMPLETING_REBALANCE}),
    _G.DEAD: frozenset(
        {_G.EMPTY, _G.PREPARING_REBALANCE, _G.COMPLETING_REBALANCE, _G.STABLE, _G.DEAD}
    ),
}
"""Target state -> the states it may be entered from
(``GroupMetadata.validPreviousStates``)."""

GROUP_TRANSITION_REASONS: Mapping[tuple[GroupState, GroupState], str] = {
    (_G.EMPTY, _G.PREPARING_REBALANCE): "member joins",
    (_G.PREPARING_REBALANCE, _G.EMPTY): "all members left",
    (
        _G.PREPARING_REBALANCE,
        _G.COMPLETING_REBALANCE,
    ): "all joined or rebalance timeout",
    (_G.COMPLETING_REBALANCE, _G.PREPARING_REBALANCE): "member joins, leaves or fails",
    (_G.COMPLETING_REBALANCE, _G.STABLE): "leader's assignment sent",
    (_G.STABLE, _G.PREPARING_REBALANCE): "member joins, leaves or fails",
    (_G.EMPTY, _G.DEAD): "offsets expired or group deleted",
    (_G.PREPARING_REBALANCE, _G.DEAD): "coordinator moved",
    (_G.COMPLETING_REBALANCE, _G.DEAD): "coordinator moved",
    (_G.STABLE, _G.DEAD): "coordinator moved",
    (_G.DEAD, _G.DEAD): "already dead",
}
"""Why a group makes each transition (seed 002 §1): one short label per edge."""


class IllegalGroupStateTransitionError(Exception):
    """A move the table does not allow (Kafka: ``IllegalStateException``)."""


def check_group_transition(current: GroupState, target: GroupState) -> GroupState:
    """Return ``target`` if a group in ``current`` may move there, else raise."""
    if current not in GROUP_TRANSITIONS[target]:
        allowed = ", ".join(sorted(s.value for s in GROUP_TRANSITIONS[target]))
        raise IllegalGroupStateTransitionError(
            f"a group must be in {allowed} before moving to {target.value}, not "
            f"{current.value}"
        )
    return target
