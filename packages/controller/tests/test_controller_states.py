"""Partition and replica state machines: the tables, the machines, topic creation (seed 001 §4)."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.controller._states import (
    PARTITION_TRANSITION_REASONS,
    PARTITION_TRANSITIONS,
    REPLICA_TRANSITION_REASONS,
    REPLICA_TRANSITIONS,
    PartitionAndReplica,
    PartitionState,
    PartitionStateMachine,
    ReplicaState,
    ReplicaStateMachine,
    StateChange,
    StateChangeFailedError,
    TopicPartition,
    new_leader_and_isr,
    on_new_partition_creation,
)

P = PartitionState
R = ReplicaState


def _edges(
    states: type[PartitionState] | type[ReplicaState], table: str
) -> set[tuple[Any, Any]]:
    """``From -> To`` lines in Kafka's state names, as (from, to) members of ``states``."""
    return {
        (states(before.strip()), states(after.strip()))
        for before, after in (line.split("->") for line in table.strip().splitlines())
    }


# Kafka 2.8's validPreviousStates, written out edge by edge in Kafka's names, independently
# of the module's table.
KAFKA_PARTITION_EDGES = _edges(
    P,
    """
    NonExistentPartition -> NewPartition
    NewPartition -> OnlinePartition
    OnlinePartition -> OnlinePartition
    OfflinePartition -> OnlinePartition
    NewPartition -> OfflinePartition
    OnlinePartition -> OfflinePartition
    OfflinePartition -> OfflinePartition
    OfflinePartition -> NonExistentPartition
    """,
)
KAFKA_REPLICA_EDGES = _edges(
    R,
    """
    NonExistentReplica -> NewReplica
    NewReplica -> OnlineReplica
    OnlineReplica -> OnlineReplica
    OfflineReplica -> OnlineReplica
    ReplicaDeletionIneligible -> OnlineReplica
    NewReplica -> OfflineReplica
    OnlineReplica -> OfflineReplica
    OfflineReplica -> OfflineReplica
    ReplicaDeletionIneligible -> OfflineReplica
    OfflineReplica -> ReplicaDeletionStarted
    ReplicaDeletionStarted -> ReplicaDeletionSuccessful
    OfflineReplica -> ReplicaDeletionIneligible
    ReplicaDeletionStarted -> ReplicaDeletionIneligible
    ReplicaDeletionSuccessful -> NonExistentReplica
    """,
)

TP: TopicPartition = ("t", 0)
REPLICA: PartitionAndReplica = ("t", 0, 1000)


def test_state_values_are_kafkas_names() -> None:
    assert [s.value for s in P] == [
        "NonExistentPartition",
        "NewPartition",
        "OnlinePartition",
        "OfflinePartition",
    ]
    assert [s.value for s in R] == [
        "NewReplica",
        "OnlineReplica",
        "OfflineReplica",
        "ReplicaDeletionStarted",
        "ReplicaDeletionSuccessful",
        "ReplicaDeletionIneligible",
        "NonExistentReplica",
    ]


def test_tables_cover_every_state_and_every_edge_has_a_reason() -> None:
    assert set(PARTITION_TRANSITIONS) == set(P)
    assert set(REPLICA_TRANSITIONS) == set(R)
    partition_edges = {
        (f, t) for t, sources in PARTITION_TRANSITIONS.items() for f in sources
    }
    replica_edges = {
        (f, t) for t, sources in REPLICA_TRANSITIONS.items() for f in sources
    }
    assert partition_edges == KAFKA_PARTITION_EDGES
    assert replica_edges == KAFKA_REPLICA_EDGES
    assert set(PARTITION_TRANSITION_REASONS) == partition_edges
    assert set(REPLICA_TRANSITION_REASONS) == replica_edges
    assert P.ONLINE.valid_previous_states == {P.NEW, P.ONLINE, P.OFFLINE}
    assert R.NON_EXISTENT_REPLICA.valid_previous_states == {
        R.REPLICA_DELETION_SUCCESSFUL
    }


def _put_partition(machine: PartitionStateMachine, state: PartitionState) -> None:
    """Walk TP from NON_EXISTENT to ``state`` along valid edges."""
    path = {
        P.NON_EXISTENT: [],
        P.NEW: [P.NEW],
        P.ONLINE: [P.NEW, P.ONLINE],
        P.OFFLINE: [P.NEW, P.OFFLINE],
    }[state]
    for step in path:
        assert machine.handle_state_changes([TP], step).invalid == ()
    assert machine.state(TP) is state


def _put_replica(machine: ReplicaStateMachine, state: ReplicaState) -> None:
    """Walk REPLICA from NON_EXISTENT_REPLICA to ``state`` along valid edges."""
    to_offline = [R.NEW_REPLICA, R.OFFLINE_REPLICA]
    path = {
        R.NON_EXISTENT_REPLICA: [],
        R.NEW_REPLICA: [R.NEW_REPLICA],
        R.ONLINE_REPLICA: [R.NEW_REPLICA, R.ONLINE_REPLICA],
        R.OFFLINE_REPLICA: to_offline,
        R.REPLICA_DELETION_STARTED: [*to_offline, R.REPLICA_DELETION_STARTED],
        R.REPLICA_DELETION_SUCCESSFUL: [
            *to_offline,
            R.REPLICA_DELETION_STARTED,
            R.REPLICA_DELETION_SUCCESSFUL,
        ],
        R.REPLICA_DELETION_INELIGIBLE: [*to_offline, R.REPLICA_DELETION_INELIGIBLE],
    }[state]
    for step in path:
        assert machine.handle_state_changes([REPLICA], step).invalid == ()
    assert machine.state(REPLICA) is state


SWEEPS = [
    *(
        (PartitionStateMachine, _put_partition, TP, KAFKA_PARTITION_EDGES, s, t)
        for s in P
        for t in P
    ),
    *(
        (ReplicaStateMachine, _put_replica, REPLICA, KAFKA_REPLICA_EDGES, s, t)
        for s in R
        for t in R
    ),
]


@pytest.mark.parametrize(
    ("machine_class", "put", "key", "edges", "source", "target"), SWEEPS
)
def test_sweep(
    machine_class: Any, put: Any, key: Any, edges: set[Any], source: Any, target: Any
) -> None:
    """Every (source, target) pair of both machines: Kafka's edges move, the rest are refused."""
    machine = machine_class()
    put(machine, source)
    result = machine.handle_state_changes([key], target)
    change = StateChange(key, source, target)
    if (source, target) in edges:
        assert (result.changed, result.invalid) == ((change,), ())
        assert machine.state(key) is target
    else:
        assert (result.changed, result.invalid) == ((), (change,))
        assert machine.state(key) is source  # refused: nothing changes


def test_reaching_non_existent_forgets_the_key() -> None:
    partitions = PartitionStateMachine()
    _put_partition(partitions, P.OFFLINE)
    partitions.handle_state_changes([TP], P.NON_EXISTENT)
    assert partitions._states == {}
    replicas = ReplicaStateMachine()
    _put_replica(replicas, R.REPLICA_DELETION_SUCCESSFUL)
    replicas.handle_state_changes([REPLICA], R.NON_EXISTENT_REPLICA)
    assert replicas._states == {}


def test_mixed_batch_applies_the_valid_and_reports_the_invalid() -> None:
    machine = PartitionStateMachine()
    machine.handle_state_changes([("t", 0), ("t", 1)], P.NEW)
    machine.handle_state_changes([("t", 0)], P.ONLINE)
    # t-0 is online, t-1 is new, t-2 does not exist; a key named twice counts once.
    result = machine.handle_state_changes(
        [("t", 0), ("t", 1), ("t", 2), ("t", 1)], P.NEW
    )
    assert result.changed == (StateChange(("t", 2), P.NON_EXISTENT, P.NEW),)
    assert result.invalid == (
        StateChange(("t", 0), P.ONLINE, P.NEW),
        StateChange(("t", 1), P.NEW, P.NEW),
    )
    assert (machine.state(("t", 0)), machine.state(("t", 1))) == (P.ONLINE, P.NEW)

    result = machine.handle_state_changes([("t", 0), ("t", 3), ("t", 2)], P.OFFLINE)
    assert result.changed == (
        StateChange(("t", 0), P.ONLINE, P.OFFLINE),
        StateChange(("t", 2), P.NEW, P.OFFLINE),
    )
    assert result.invalid == (StateChange(("t", 3), P.NON_EXISTENT, P.OFFLINE),)
    assert machine.partitions_in_state(P.NEW) == [("t", 1)]
    assert machine.partitions_in_state(P.OFFLINE) == [("t", 0), ("t", 2)]
    assert machine.partitions_in_state(P.NON_EXISTENT) == []  # never stored


def test_replica_batch_reports_invalid_and_keeps_state() -> None:
    machine = ReplicaStateMachine()
    machine.handle_state_changes([("t", 0, 1), ("t", 0, 2)], R.NEW_REPLICA)
    machine.handle_state_changes([("t", 0, 1)], R.ONLINE_REPLICA)
    result = machine.handle_state_changes(
        [("t", 0, 1), ("t", 0, 2)], R.REPLICA_DELETION_STARTED
    )
    assert result.changed == ()
    assert [(c.key, c.from_state) for c in result.invalid] == [
        (("t", 0, 1), R.ONLINE_REPLICA),
        (("t", 0, 2), R.NEW_REPLICA),
    ]
    assert machine.replicas_in_state(R.ONLINE_REPLICA) == [("t", 0, 1)]
    assert machine.replicas_in_state(R.NEW_REPLICA) == [("t", 0, 2)]


def test_leader_is_the_first_live_replica_and_isr_the_live_ones() -> None:
    assert new_leader_and_isr([1002, 1000, 1001], {1000, 1001, 1002}) == (
        1002,
        (1002, 1000, 1001),
    )
    assert new_leader_and_isr([1002, 1000, 1001], {1000, 1001}) == (1000, (1000, 1001))
    assert new_leader_and_isr([1001], [1001, 1005]) == (1001, (1001,))
    with pytest.raises(
        StateChangeFailedError, match=r"no live replica.*\[1002, 1000\]"
    ):
        new_leader_and_isr([1002, 1000], {1001})


def test_topic_creation_walk() -> None:
    """onNewPartitionCreation: New, NewReplica, Online (leader and ISR chosen), OnlineReplica."""
    assignment = {("orders", 0): [1000, 1001], ("orders", 1): [1001, 1002]}
    psm, rsm = PartitionStateMachine(), ReplicaStateMachine()
    creation = on_new_partition_creation(
        list(assignment), assignment.__getitem__, psm, rsm, live_brokers={1001, 1002}
    )
    assert creation.steps == (
        "1. partitions -> NewPartition: orders-0, orders-1",
        "2. replicas -> NewReplica: orders-0@1000, orders-0@1001, orders-1@1001, orders-1@1002",
        "3. partitions -> OnlinePartition: orders-0, orders-1",
        "  orders-0: leader 1001, isr [1001]",
        "  orders-1: leader 1001, isr [1001, 1002]",
        "4. replicas -> OnlineReplica: orders-0@1000, orders-0@1001, orders-1@1001, orders-1@1002",
    )
    assert creation.leader_and_isr == {
        ("orders", 0): (1001, (1001,)),
        ("orders", 1): (1001, (1001, 1002)),
    }
    assert creation.failed == {}
    assert psm.partitions_in_state(P.ONLINE) == list(assignment)
    assert len(rsm.replicas_in_state(R.ONLINE_REPLICA)) == 4


def test_topic_creation_with_no_live_replica_leaves_the_partition_new() -> None:
    assignment = {("t", 0): [1000], ("t", 1): [1001]}
    psm, rsm = PartitionStateMachine(), ReplicaStateMachine()
    creation = on_new_partition_creation(
        list(assignment), assignment.__getitem__, psm, rsm, live_brokers={1001}
    )
    assert psm.state(("t", 0)) is P.NEW
    assert psm.state(("t", 1)) is P.ONLINE
    assert set(creation.failed) == {("t", 0)}
    assert "no live replica" in creation.failed[("t", 0)]
    assert any(
        line.startswith(
            "  t-0 stays NewPartition: no live replica: assigned replicas are [1000]"
        )
        for line in creation.steps
    )
    # As in Kafka, step 4 still moves every replica online.
    assert rsm.state(("t", 0, 1000)) is R.ONLINE_REPLICA


def test_topic_creation_of_an_existing_partition_is_reported() -> None:
    assignment = {("t", 0): [1000]}
    psm, rsm = PartitionStateMachine(), ReplicaStateMachine()
    on_new_partition_creation(list(assignment), assignment.__getitem__, psm, rsm)
    again = on_new_partition_creation(
        list(assignment), assignment.__getitem__, psm, rsm
    )
    assert "  invalid transition of t-0: OnlinePartition -> NewPartition" in again.steps
    assert (
        "  invalid transition of t-0@1000: OnlineReplica -> NewReplica" in again.steps
    )
    assert again.leader_and_isr == {}
    assert psm.state(("t", 0)) is P.ONLINE
