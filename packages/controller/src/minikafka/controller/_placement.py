"""Replica placement: which brokers hold each partition of a new topic, and which one leads.

Seed 001 section 3; Kafka's ``kafka.admin.AdminUtils`` (``assignReplicasToBrokers`` and the
helpers beside it), which the ZooKeeper-mode controller path uses for CreateTopics and
CreatePartitions and which ``kafka-topics.sh`` shows.

- Without rack information (:func:`assign_replicas_to_brokers_rack_unaware`), leaders go
  round-robin over the sorted broker list from a start index, and the followers of each
  partition sit a little further along the list, at a distance that grows by one on every
  pass over the brokers. A failed broker's partitions then have their other replicas spread
  over many survivors instead of piling onto its neighbour.
- When every broker has a ``broker.rack`` (:func:`assign_replicas_to_brokers_rack_aware`),
  the same walk goes over a list that alternates racks (:func:`rack_alternated_broker_list`),
  and a follower is only taken from a rack that has no replica of the partition yet, until
  every rack has one.
- A manual assignment (``kafka-topics.sh --replica-assignment``, or explicit assignments in
  CreateTopics) is not computed but checked: :func:`parse_replica_assignment` and
  :func:`validate_manual_assignment`.

The start index and the initial shift are random in Kafka. Here they can be given, or drawn
from a ``random.Random`` the caller passes in, so every layout can be reproduced.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError

Assignment: TypeAlias = dict[int, tuple[int, ...]]
"""Partition id -> replica broker ids, the preferred leader first."""

_BROKER_ID = re.compile(r"[0-9]+")


@attrs.frozen
class BrokerMetadata:
    """A registered broker as placement sees it: its id and its ``broker.rack``, if set."""

    id: int
    rack: str | None = None


class PlacementError(ApiError):
    """A request placement refuses, with the Kafka error code the broker answers with."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


# --- the rack-unaware walk ---------------------------------------------------------------


def replica_index(
    first_replica_index: int,
    second_replica_shift: int,
    replica_index: int,
    n_brokers: int,
) -> int:
    """Position in the broker list of follower ``replica_index`` (0 is the first
    follower).

    ``first_replica_index`` is the leader's position, ``second_replica_shift`` the
    distance to the first follower minus one. Needs ``n_brokers >= 2``: with one broker
    there are no followers to place.
    """
    # The shift is in 1..n_brokers-1: never 0 and never a whole turn of the list, so the
    # result is never the leader's own position.
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    # Each next follower adds one to the shift, so followers take consecutive positions
    # after the first one; past the end of the list they wrap, skipping the leader.
    return (first_replica_index + shift) % n_brokers


def assign_replicas_to_brokers_rack_unaware(
    n_partitions: int,
    replication_factor: int,
    broker_ids: Sequence[int],
    *,
    start_index: int,
    replica_shift: int,
    start_partition_id: int = -1,
) -> Assignment:
    """Kafka's assignment without racks: round-robin leaders, shifted followers."""
    brokers = sorted(broker_ids)
    n = len(brokers)
    assignment: Assignment = {}
    for partition_id, first_replica_index, shift in leader_walk(
        n_partitions, n, start_index, replica_shift, start_partition_id
    ):
        followers = (
            brokers[replica_index(first_replica_index, shift, j, n)]
            for j in range(replication_factor - 1)
        )
        assignment[partition_id] = (brokers[first_replica_index], *followers)
    return assignment


def leader_walk(
    n_partitions: int,
    n_brokers: int,
    start_index: int,
    replica_shift: int,
    start_partition_id: int,
) -> Iterator[tuple[int, int, int]]:
    """For each new partition: its id, its leader's position in the broker list, and the
    shift of its followers (``nextReplicaShift``)."""
    next_replica_shift = replica_shift
    first_partition_id = max(0, start_partition_id)
    for partition_id in range(first_partition_id, first_partition_id + n_partitions):
        # A new pass over the broker list: move every follower one step further from its
        # leader, so this pass does not repeat the previous pass's leader/follower
        # pairs.
        if partition_id > 0 and partition_id % n_brokers == 0:
            next_replica_shift += 1
        yield partition_id, (partition_id + start_index) % n_brokers, next_replica_shift


# --- the rack-aware walk -----------------------------------------------------------------


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Broker ids ordered so that consecutive brokers are on different racks where
    possible.

    Racks in name order, each rack's brokers in id order; then one broker from each rack
    in turn, skipping racks that have run out. Racks ``a: 1, 2`` and ``b: 3`` give ``1,
    3, 2``.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    depth = max((len(column) for column in columns), default=0)
    return [column[i] for i in range(depth) for column in columns if i < len(column)]


def assign_replicas_to_brokers_rack_aware(
    n_partitions: int,
    replication_factor: int,
    broker_racks: Mapping[int, str],
    *,
    start_index: int,
    replica_shift: int,
    start_partition_id: int = -1,
) -> Assignment:
    """Kafka's assignment with racks: the rack-unaware walk over a rack-alternated list."""
    arranged = rack_alternated_broker_list(broker_racks)
    return {
        partition_id: _rack_aware_replicas(
            arranged, broker_racks, first_replica_index, shift, replication_factor
        )
        for partition_id, first_replica_index, shift in leader_walk(
            n_partitions, len(arranged), start_index, replica_shift, start_partition_id
        )
    }


def _rack_aware_replicas(
    arranged: Sequence[int],
    broker_racks: Mapping[int, str],
    first_replica_index: int,
    next_replica_shift: int,
    replication_factor: int,
) -> tuple[int, ...]:
    """One partition's replicas: the leader, then followers that cover racks first."""
    n = len(arranged)
    num_racks = len(set(broker_racks.values()))
    leader = arranged[first_replica_index]
    replicas = [leader]
    racks_with_replicas = {broker_racks[leader]}
    k = 0
    while len(replicas) < replication_factor:
        # The shift moves in whole turns of the racks, so the candidate sequence keeps
        # the rack pattern of the arranged list while landing on different brokers each
        # pass.
        broker = arranged[
            replica_index(first_replica_index, next_replica_shift * num_racks, k, n)
        ]
        k += 1
        rack = broker_racks[broker]
        # "Biased towards brokers on racks that do not have any replica assignment,
        # until every rack has a replica." A broker never holds two replicas: Kafka
        # would allow it only once every broker has one, which replication factor <=
        # brokers rules out.
        rack_ok = (
            rack not in racks_with_replicas or len(racks_with_replicas) == num_racks
        )
        if rack_ok and broker not in replicas:
            replicas.append(broker)
            racks_with_replicas.add(rack)
    return tuple(replicas)


# --- the entry point ---------------------------------------------------------------------


def draw_start_index_and_shift(
    n_brokers: int,
    start_index: int | None,
    replica_shift: int | None,
    rng: random.Random,
) -> tuple[int, int]:
    """The start index and initial replica shift: the given ones, the missing ones drawn."""
    for name, value in (("start index", start_index), ("replica shift", replica_shift)):
        if value is not None and not 0 <= value < n_brokers:
            raise ValueError(
                f"{name} {value} is out of range: it must be in [0, {n_brokers})"
            )
    # Kafka draws the start index first and the shift second; the same order here means one
    # seed always gives one layout.
    if start_index is None:
        start_index = rng.randrange(n_brokers)
    if replica_shift is None:
        replica_shift = rng.randrange(n_brokers)
    return start_index, replica_shift


def assign_replicas_to_brokers(
    n_partitions: int,
    replication_factor: int,
    brokers: Sequence[BrokerMetadata],
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> Assignment:
    """Place ``n_partitions`` partitions of ``replication_factor`` replicas on ``brokers``.

    Rack-aware when every broker has a rack, rack-unaware when none has. A start index or
    shift left as ``None`` is drawn from ``rng`` (a fresh, unseeded one by default).
    ``start_partition_id`` numbers the partitions from there, for adding partitions to a
    topic.
    """
    check_placement_request(n_partitions, replication_factor, brokers)
    start_index, replica_shift = draw_start_index_and_shift(
        len(brokers), start_index, replica_shift, rng or random.Random()
    )
    broker_racks = {b.id: b.rack for b in brokers if b.rack is not None}
    if not broker_racks:
        return assign_replicas_to_brokers_rack_unaware(
            n_partitions,
            replication_factor,
            [b.id for b in brokers],
            start_index=start_index,
            replica_shift=replica_shift,
            start_partition_id=start_partition_id,
        )
    return assign_replicas_to_brokers_rack_aware(
        n_partitions,
        replication_factor,
        broker_racks,
        start_index=start_index,
        replica_shift=replica_shift,
        start_partition_id=start_partition_id,
    )


def check_placement_request(
    n_partitions: int, replication_factor: int, brokers: Sequence[BrokerMetadata]
) -> None:
    """Refuse, before any partition is placed, a request placement would refuse.

    Costs one pass over the brokers whatever ``n_partitions`` is, so a caller can ask
    before it decides whether the placement is worth computing at all.
    """
    if n_partitions <= 0:
        raise PlacementError(
            ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
        )
    seen: set[int] = set()
    for broker in brokers:
        if broker.id in seen:
            raise PlacementError(
                ErrorCode.invalid_replica_assignment,
                f"Broker {broker.id} appears more than once in the broker list.",
            )
        seen.add(broker.id)
    if replication_factor <= 0:
        raise PlacementError(
            ErrorCode.invalid_replication_factor,
            "Replication factor must be larger than 0.",
        )
    if replication_factor > len(brokers):
        raise PlacementError(
            ErrorCode.invalid_replication_factor,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    # Kafka raises AdminOperationException here; on the wire that is the assignment's error.
    with_rack = sum(1 for b in brokers if b.rack is not None)
    if 0 < with_rack < len(brokers):
        raise PlacementError(
            ErrorCode.invalid_replica_assignment,
            "Not all brokers have rack information for replica rack aware assignment.",
        )


# --- manual assignments ------------------------------------------------------------------


def parse_replica_assignment(text: str) -> Assignment:
    """Read ``kafka-topics.sh --replica-assignment``: ``1000:1001,1001:1002``.

    Commas separate partitions (numbered from 0), colons separate the replicas of one
    partition, the preferred leader first. So ``1000,1000,1000`` is three partitions with one
    replica each, all on broker 1000.
    """
    assignment: Assignment = {}
    for partition_id, token in enumerate(text.split(",")):
        replicas: list[int] = []
        for part in token.split(":"):
            part = part.strip()
            if not _BROKER_ID.fullmatch(part):
                raise ValueError(
                    f"bad replica assignment for partition {partition_id}: {token.strip()!r} "
                    f"is not a list of broker ids separated by ':' ({part!r} is not a broker id)"
                )
            replicas.append(int(part))
        assignment[partition_id] = tuple(replicas)
    return assignment


def validate_manual_assignment(
    assignment: Mapping[int, Sequence[int]], live_brokers: Collection[int]
) -> None:
    """Refuse a manual assignment Kafka would refuse, with
    INVALID_REPLICA_ASSIGNMENT."""

    def refuse(message: str) -> PlacementError:
        return PlacementError(ErrorCode.invalid_replica_assignment, message)

    if not assignment:
        raise refuse("The manual assignment has no partitions.")
    if sorted(assignment) != list(range(len(assignment))):
        raise refuse(
            f"The manual assignment's partition ids must run 0..{len(assignment) - 1} "
            f"without gaps, but they are {sorted(assignment)}."
        )
    live = set(live_brokers)
    replication_factor = len(assignment[0])
    for partition_id in sorted(assignment):
        replicas = assignment[partition_id]
        if not replicas:
            raise refuse(
                f"The manual assignment gives partition {partition_id} no replicas."
            )
        for position, broker in enumerate(replicas):
            if broker in replicas[:position]:
                raise refuse(
                    f"The manual assignment puts broker {broker} in partition "
                    f"{partition_id}'s "
                    "replica list twice."
                )
            if broker not in live:
                raise refuse(
                    f"The manual assignment uses broker {broker} (partition "
                    f"{partition_id}), "
                    "which is not a registered broker."
                )
        # All partitions of a topic share one replication factor: partition 0's.
        if len(replicas) != replication_factor:
            raise refuse(
                f"The manual assignment gives partition {partition_id} {len(replicas)} "
                f"replica(s), but the partitions before it have {replication_factor}."
            )
