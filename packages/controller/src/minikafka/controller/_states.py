"""The partition and replica state machines of the ZooKeeper-mode controller, as tables.

Seed 001 section 4: after a topic's assignment is written, the controller brings its
partitions and replicas to life through two state machines, Kafka's ``PartitionStateMachine``
and ``ReplicaStateMachine`` (core/src/main/scala/kafka/controller/, Kafka 2.8). Each state
names the states it may be entered from (``validPreviousStates``); a requested change from
any other state is refused, logged as an invalid transition, and leaves the state unchanged.

Here the tables are data (the book draws its diagrams from them) and the machines are pure:
they hold one state per partition or replica and apply the tables, while the side effects
Kafka attaches to some transitions (writing leader and ISR to ZooKeeper, sending
LeaderAndIsr and StopReplica) belong to the controller that drives them. The KRaft
controller has no such machines (a partition's state is its latest records) but the book
uses them to explain what its records replaced.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Generic, TypeAlias, TypeVar

import attrs

__all__ = [
    "PARTITION_TRANSITIONS",
    "PARTITION_TRANSITION_REASONS",
    "REPLICA_TRANSITIONS",
    "REPLICA_TRANSITION_REASONS",
    "PartitionAndReplica",
    "PartitionCreation",
    "PartitionState",
    "PartitionStateMachine",
    "ReplicaState",
    "ReplicaStateMachine",
    "StateChange",
    "StateChangeFailedError",
    "StateChangeResult",
    "TopicPartition",
    "new_leader_and_isr",
    "on_new_partition_creation",
]

TopicPartition: TypeAlias = tuple[str, int]
"""A partition: (topic, partition index)."""
PartitionAndReplica: TypeAlias = tuple[str, int, int]
"""One replica of a partition: (topic, partition index, broker id)."""

K = TypeVar("K")
S = TypeVar("S", bound=enum.Enum)


class PartitionState(enum.Enum):
    """A partition's state in the controller; the value is Kafka's name for it."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return PARTITION_TRANSITIONS[self]


class ReplicaState(enum.Enum):
    """A replica's state in the controller; the value is Kafka's name for it."""

    NEW_REPLICA = "NewReplica"
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT_REPLICA = "NonExistentReplica"

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return REPLICA_TRANSITIONS[self]


_P = PartitionState
_R = ReplicaState

PARTITION_TRANSITIONS: Mapping[PartitionState, frozenset[PartitionState]] = {
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
}
"""Target state -> the states it may be entered from (Kafka 2.8 ``validPreviousStates``)."""

REPLICA_TRANSITIONS: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW_REPLICA: frozenset({_R.NON_EXISTENT_REPLICA}),
    _R.ONLINE_REPLICA: frozenset(
        {
            _R.NEW_REPLICA,
            _R.ONLINE_REPLICA,
            _R.OFFLINE_REPLICA,
            _R.REPLICA_DELETION_INELIGIBLE,
        }
    ),
    _R.OFFLINE_REPLICA: frozenset(
        {
            _R.NEW_REPLICA,
            _R.ONLINE_REPLICA,
            _R.OFFLINE_REPLICA,
            _R.REPLICA_DELETION_INELIGIBLE,
        }
    ),
    _R.REPLICA_DELETION_STARTED: frozenset({_R.OFFLINE_REPLICA}),
    _R.REPLICA_DELETION_SUCCESSFUL: frozenset({_R.REPLICA_DELETION_STARTED}),
    _R.REPLICA_DELETION_INELIGIBLE: frozenset(
        {_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED}
    ),
    _R.NON_EXISTENT_REPLICA: frozenset({_R.REPLICA_DELETION_SUCCESSFUL}),
}
"""Target state -> the states it may be entered from (Kafka 2.8 ``validPreviousStates``)."""

PARTITION_TRANSITION_REASONS: Mapping[tuple[PartitionState, PartitionState], str] = {
    (_P.NON_EXISTENT, _P.NEW): "topic created",
    (_P.NEW, _P.ONLINE): "first leader",
    (_P.OFFLINE, _P.ONLINE): "leader elected",
    (_P.ONLINE, _P.ONLINE): "leader moved",  # reassignment, preferred leader, shutdown
    (_P.ONLINE, _P.OFFLINE): "leader failed",
    (_P.OFFLINE, _P.OFFLINE): "still no leader",
    (_P.NEW, _P.OFFLINE): "topic deleted",
    (_P.OFFLINE, _P.NON_EXISTENT): "topic deleted",
}
"""Why the controller makes each partition transition: one short label per edge."""

REPLICA_TRANSITION_REASONS: Mapping[tuple[ReplicaState, ReplicaState], str] = {
    (_R.NON_EXISTENT_REPLICA, _R.NEW_REPLICA): "replica assigned",
    (_R.NEW_REPLICA, _R.ONLINE_REPLICA): "partition started",
    (_R.ONLINE_REPLICA, _R.ONLINE_REPLICA): "leader changed",
    (_R.OFFLINE_REPLICA, _R.ONLINE_REPLICA): "broker back",
    (_R.REPLICA_DELETION_INELIGIBLE, _R.ONLINE_REPLICA): "broker back",
    (_R.NEW_REPLICA, _R.OFFLINE_REPLICA): "broker failed",
    (_R.ONLINE_REPLICA, _R.OFFLINE_REPLICA): "broker failed",
    (_R.OFFLINE_REPLICA, _R.OFFLINE_REPLICA): "broker failed",
    (_R.REPLICA_DELETION_INELIGIBLE, _R.OFFLINE_REPLICA): "deletion retried",
    (_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED): "StopReplica delete",
    (_R.REPLICA_DELETION_STARTED, _R.REPLICA_DELETION_SUCCESSFUL): "replica deleted",
    (_R.REPLICA_DELETION_STARTED, _R.REPLICA_DELETION_INELIGIBLE): "deletion failed",
    (_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_INELIGIBLE): "broker down",
    (_R.REPLICA_DELETION_SUCCESSFUL, _R.NON_EXISTENT_REPLICA): "unassigned",
}
"""Why the controller makes each replica transition: one short label per edge."""


class StateChangeFailedError(Exception):
    """A state change that could not be made (Kafka: ``StateChangeFailedException``)."""


@attrs.frozen
class StateChange(Generic[K, S]):
    """One requested transition of one partition or replica."""

    key: K
    from_state: S
    to_state: S


@attrs.frozen
class StateChangeResult(Generic[K, S]):
    """What ``handle_state_changes`` did: the transitions made and the ones refused."""

    changed: tuple[StateChange[K, S], ...]
    invalid: tuple[StateChange[K, S], ...]


def _handle(
    states: dict[K, S],
    keys: Iterable[K],
    target: S,
    initial: S,
    table: Mapping[S, frozenset[S]],
) -> StateChangeResult[K, S]:
    # As in Kafka, every key is classified against its state before any change is
    # applied.
    requested = [
        StateChange(key, states.get(key, initial), target)
        for key in dict.fromkeys(keys)
    ]
    changed = tuple(c for c in requested if c.from_state in table[target])
    invalid = tuple(c for c in requested if c.from_state not in table[target])
    for change in changed:
        if target is initial:
            # Nothing to remember about a partition or replica that no longer exists.
            del states[change.key]
        else:
            states[change.key] = target
    return StateChangeResult(changed, invalid)


class _StateMachine(Generic[K, S]):
    """One state per key, moved along ``table``; a key never stored is in ``initial``."""

    def __init__(self, initial: S, table: Mapping[S, frozenset[S]]) -> None:
        self._initial = initial
        self._table = table
        self._states: dict[K, S] = {}

    def state(self, key: K) -> S:
        return self._states.get(key, self._initial)

    def initialize(self, key: K, state: S) -> None:
        """Set ``key``'s state without a transition: what a newly elected controller
        learns from ZooKeeper (Kafka's ``initializePartitionState``)."""
        if state is self._initial:
            self._states.pop(key, None)
        else:
            self._states[key] = state

    def illegal(self, keys: Iterable[K], target: S) -> list[StateChange[K, S]]:
        """The changes to ``target`` the table forbids, without making any."""
        allowed = self._table[target]
        return [
            StateChange(key, self.state(key), target)
            for key in keys
            if self.state(key) not in allowed
        ]

    def handle_state_changes(
        self, keys: Iterable[K], target: S
    ) -> StateChangeResult[K, S]:
        """Move each key to ``target`` where the table allows it; report the others
        (Kafka logs "Invalid state transition" for them and leaves their state alone)."""
        return _handle(self._states, keys, target, self._initial, self._table)

    def _in_state(self, state: S) -> list[K]:
        return [key for key, s in self._states.items() if s is state]


class PartitionStateMachine(_StateMachine[TopicPartition, PartitionState]):
    """The state of each partition; unknown partitions are ``NON_EXISTENT``."""

    def __init__(self) -> None:
        super().__init__(PartitionState.NON_EXISTENT, PARTITION_TRANSITIONS)

    def partitions_in_state(self, state: PartitionState) -> list[TopicPartition]:
        return self._in_state(state)


class ReplicaStateMachine(_StateMachine[PartitionAndReplica, ReplicaState]):
    """The state of each replica; unknown replicas are ``NON_EXISTENT_REPLICA``."""

    def __init__(self) -> None:
        super().__init__(ReplicaState.NON_EXISTENT_REPLICA, REPLICA_TRANSITIONS)

    def replicas_in_state(self, state: ReplicaState) -> list[PartitionAndReplica]:
        return self._in_state(state)


def new_leader_and_isr(
    assignment: Sequence[int], live_brokers: Collection[int]
) -> tuple[int, tuple[int, ...]]:
    """Leader and ISR of a partition going from New to Online: "assign first live
    replica as the leader and all live replicas as the isr" (Kafka's
    PartitionStateMachine)."""
    live = tuple(broker for broker in assignment if broker in live_brokers)
    if not live:
        raise StateChangeFailedError(
            f"no live replica: assigned replicas are {list(assignment)}, "
            f"live brokers are {sorted(live_brokers)}"
        )
    return live[0], live


@attrs.frozen
class PartitionCreation:
    """What ``on_new_partition_creation`` did, step by step."""

    steps: tuple[str, ...]
    leader_and_isr: Mapping[TopicPartition, tuple[int, tuple[int, ...]]]
    failed: Mapping[
        TopicPartition, str
    ]  # partitions left in NEW: why they have no leader


def _name(key: TopicPartition | PartitionAndReplica) -> str:
    """``t-0`` for a partition (Kafka's TopicPartition.toString), ``t-0@1000`` for a replica."""
    if len(key) == 2:
        return f"{key[0]}-{key[1]}"
    return f"{key[0]}-{key[1]}@{key[2]}"


def _names(keys: Iterable[TopicPartition | PartitionAndReplica]) -> str:
    return ", ".join(map(_name, keys)) or "(none)"


def on_new_partition_creation(
    partitions: Sequence[TopicPartition],
    replicas_of: Callable[[TopicPartition], Sequence[int]],
    psm: PartitionStateMachine,
    rsm: ReplicaStateMachine,
    live_brokers: Collection[int] | None = None,
) -> PartitionCreation:
    """Kafka's ``KafkaController.onNewPartitionCreation`` in its four steps (seed 001
    §4.3).

    ``live_brokers`` defaults to every assigned broker. A partition none of whose
    replicas is live stays ``NEW`` (Kafka logs the failed state change and retries on
    the next broker change); its replicas still go online, as in Kafka.
    """
    replicas = [
        (topic, index, b)
        for topic, index in partitions
        for b in replicas_of((topic, index))
    ]
    steps: list[str] = []

    def log(
        step: str,
        result: StateChangeResult[TopicPartition, PartitionState]
        | StateChangeResult[PartitionAndReplica, ReplicaState],
    ) -> None:
        steps.append(f"{step}: {_names(c.key for c in result.changed)}")
        steps.extend(
            f"  invalid transition of {_name(c.key)}: {c.from_state.value} -> "
            f"{c.to_state.value}"
            for c in result.invalid
        )

    log(
        "1. partitions -> NewPartition",
        psm.handle_state_changes(partitions, PartitionState.NEW),
    )
    log(
        "2. replicas -> NewReplica",
        rsm.handle_state_changes(replicas, ReplicaState.NEW_REPLICA),
    )

    leaders: dict[TopicPartition, tuple[int, tuple[int, ...]]] = {}
    failed: dict[TopicPartition, str] = {}
    electable: list[TopicPartition] = []
    for partition in partitions:
        if psm.state(partition) is not PartitionState.NEW:
            continue  # step 1 refused it (it already existed) and said so
        assignment = replicas_of(partition)
        live = assignment if live_brokers is None else live_brokers
        try:
            leaders[partition] = new_leader_and_isr(assignment, live)
        except StateChangeFailedError as e:
            failed[partition] = str(e)
        else:
            electable.append(partition)
    online = psm.handle_state_changes(electable, PartitionState.ONLINE)
    log("3. partitions -> OnlinePartition", online)
    for partition, (leader, isr) in leaders.items():
        steps.append(f"  {_name(partition)}: leader {leader}, isr {list(isr)}")
    for partition, why in failed.items():
        steps.append(f"  {_name(partition)} stays NewPartition: {why}")

    log(
        "4. replicas -> OnlineReplica",
        rsm.handle_state_changes(replicas, ReplicaState.ONLINE_REPLICA),
    )
    return PartitionCreation(tuple(steps), leaders, failed)
