"""The consumer group state table (seed 002 §1): Kafka's edges, reasons, and a full sweep."""

from __future__ import annotations

import itertools

import pytest

from minikafka.coordination.group._group import GroupMetadata
from minikafka.coordination.group._group_state import (
    GROUP_TRANSITION_REASONS,
    GROUP_TRANSITIONS,
    GroupState,
    IllegalGroupStateTransitionError,
    check_group_transition,
)

G = GroupState

# Kafka's GroupMetadata.validPreviousStates, written out edge by edge (from, to),
# independently of the module's table.
KAFKA_GROUP_EDGES = {
    (G.PREPARING_REBALANCE, G.EMPTY),
    (G.EMPTY, G.PREPARING_REBALANCE),
    (G.STABLE, G.PREPARING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.PREPARING_REBALANCE),
    (G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.STABLE),
    *((s, G.DEAD) for s in G),
}


def test_state_values_are_kafkas_names() -> None:
    assert [s.value for s in G] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


def test_table_is_kafkas() -> None:
    edges = {
        (before, after)
        for after, befores in GROUP_TRANSITIONS.items()
        for before in befores
    }
    assert edges == KAFKA_GROUP_EDGES
    assert set(GROUP_TRANSITIONS) == set(G)


def test_every_edge_has_one_reason_and_no_reason_lacks_an_edge() -> None:
    assert set(GROUP_TRANSITION_REASONS) == KAFKA_GROUP_EDGES
    assert all(reason.strip() for reason in GROUP_TRANSITION_REASONS.values())


def test_valid_previous_states_property() -> None:
    for state in G:
        assert state.valid_previous_states == GROUP_TRANSITIONS[state]


def test_the_seeds_lifecycle_is_a_path_in_the_table() -> None:
    # "Empty -> PreparingRebalance -> AwaitingSync -> Stable; when all members leave,
    # PreparingRebalance, then Empty, and Dead once the metadata expired" (seed 002 §1).
    path = [
        G.EMPTY,
        G.PREPARING_REBALANCE,
        G.COMPLETING_REBALANCE,
        G.STABLE,
        G.PREPARING_REBALANCE,
        G.EMPTY,
        G.DEAD,
    ]
    group = GroupMetadata("g")
    for before, after in itertools.pairwise(path):
        assert group.state is before
        group.transition_to(after)
    assert group.state is G.DEAD


@pytest.mark.parametrize(("before", "after"), list(itertools.product(G, G)))
def test_sweep_every_state_and_target(before: GroupState, after: GroupState) -> None:
    group = GroupMetadata("g", state=before)
    if (before, after) in KAFKA_GROUP_EDGES:
        assert check_group_transition(before, after) is after
        group.transition_to(after)
        assert group.state is after
    else:
        with pytest.raises(IllegalGroupStateTransitionError, match=after.value):
            check_group_transition(before, after)
        with pytest.raises(IllegalGroupStateTransitionError):
            group.transition_to(after)
        assert group.state is before  # a refused move leaves the group where it was


@pytest.mark.parametrize("state", list(G))
def test_can_rebalance_only_where_preparing_rebalance_may_be_entered(
    state: GroupState,
) -> None:
    assert GroupMetadata("g", state=state).can_rebalance() == (
        state in {G.EMPTY, G.STABLE, G.COMPLETING_REBALANCE}
    )


def test_table_feeds_a_diagram_generator() -> None:
    # What book/diagrams.state_diagram takes: state names and labelled (from, to) edges.
    states = [s.value for s in G]
    edges = [
        (a.value, b.value, why) for (a, b), why in GROUP_TRANSITION_REASONS.items()
    ]
    assert len(edges) == len(KAFKA_GROUP_EDGES) == 11
    assert {a for a, _, _ in edges} | {b for _, b, _ in edges} == set(states)
