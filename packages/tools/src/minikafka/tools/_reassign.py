"""``minikafka reassign-partitions`` and ``minikafka leader-election``: Kafka's
kafka-reassign-partitions.sh and kafka-leader-election.sh, with their JSON files and
messages (KIP-455, KIP-460).

A reassignment is the controller's (seed 000): it adds the new replicas, which copy the
log from the leader as followers and join the ISR; then it makes the target list the
replica set, moves leadership off a removed replica, and the removed replicas stop and
delete their logs. ``--generate`` proposes target lists for topics over a broker list
(the same placement topic creation uses), ``--execute`` starts the moves and prints the
current assignment for rollback, ``--verify`` says which have finished, ``--cancel``
stops those in progress, which restores their original replicas.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from minikafka.client import AsyncAdminClient, ElectionType, KafkaError
from minikafka.common import TopicPartition
from minikafka.controller import (
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
)

from ._connection import ToolError, as_tool_error
from ._topics import describe_topics

Assignment = dict[tuple[str, int], tuple[int, ...]]
"""(topic, partition) -> replicas, in the order of Kafka's JSON files."""


# --- the JSON files ------------------------------------------------------------------------


def assignment_json(assignment: Mapping[tuple[str, int], Sequence[int]]) -> str:
    """Kafka's reassignment JSON (version 1), partitions in topic and partition order."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": list(replicas),
            "log_dirs": ["any"] * len(replicas),
        }
        for (topic, partition), replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def parse_assignment(text: str) -> Assignment:
    """A ``--reassignment-json-file``; ToolError naming what is wrong."""
    document = _json(text)
    entries = document.get("partitions")
    if not isinstance(entries, list) or not entries:
        raise ToolError('the reassignment JSON has no "partitions" list')
    assignment: Assignment = {}
    for entry in entries:
        try:
            key = (str(entry["topic"]), int(entry["partition"]))
            replicas = tuple(int(b) for b in entry["replicas"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ToolError(
                f"a partition entry is not topic/partition/replicas: {entry}"
            ) from exc
        if key in assignment:
            raise ToolError(f"partition {key[0]}-{key[1]} is listed twice")
        if not replicas or len(set(replicas)) != len(replicas):
            raise ToolError(
                f"partition {key[0]}-{key[1]}: replicas {list(replicas)} are not valid"
            )
        assignment[key] = replicas
    return assignment


def parse_topics_to_move(text: str) -> list[str]:
    """A ``--topics-to-move-json-file``: ``{"topics": [{"topic": "foo"}], "version": 1}``."""
    entries = _json(text).get("topics")
    if not isinstance(entries, list) or not entries:
        raise ToolError('the topics JSON has no "topics" list')
    try:
        return [str(entry["topic"]) for entry in entries]
    except (KeyError, TypeError) as exc:
        raise ToolError(f'a topic entry has no "topic": {entries}') from exc


def _json(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ToolError("the JSON file must hold an object")
    return document


# --- what the tool does ------------------------------------------------------------------------


async def current_assignment(
    cluster: AsyncAdminClient, topics: Iterable[str]
) -> Assignment:
    described = await describe_topics(cluster, sorted(set(topics)))
    return {(t.name, p.partition): p.replicas for t in described for p in t.partitions}


async def generate(
    cluster: AsyncAdminClient, topics: Sequence[str], brokers: Sequence[int]
) -> tuple[Assignment, Assignment]:
    """(current, proposed): each topic's partitions placed anew over ``brokers``, with
    its replication factor (Kafka's AdminUtils.assignReplicasToBrokers)."""
    current = await current_assignment(cluster, topics)
    proposed: Assignment = {}
    metadata = [BrokerMetadata(b) for b in sorted(set(brokers))]
    for topic in sorted(set(topics)):
        partitions = sorted(p for t, p in current if t == topic)
        factor = len(current[(topic, partitions[0])])
        try:
            placed = assign_replicas_to_brokers(len(partitions), factor, metadata)
        except PlacementError as exc:
            raise ToolError(f"topic {topic}: {exc}") from None
        for partition in partitions:
            proposed[(topic, partition)] = tuple(placed[partition])
    return current, proposed


async def execute(
    cluster: AsyncAdminClient,
    target: Mapping[tuple[str, int], Sequence[int] | None],
    *,
    allow_replication_factor_change: bool = True,
) -> None:
    """AlterPartitionReassignments to ``target`` (None: cancel), through the client's
    ``alter_partition_reassignments``; a ToolError naming each partition refused and
    why, as kafka-reassign-partitions.sh prints them.

    First, as Kafka's tool does (``verifyBrokerIds``), every broker the targets name
    must be among those DescribeCluster lists (the registered ones): otherwise nothing
    is sent, rather than the partitions naming only registered brokers moving and the
    others refused one by one."""
    named = {
        b for replicas in target.values() if replicas is not None for b in replicas
    }
    if named:
        described = await as_tool_error(cluster.describe_cluster())
        unknown = sorted(named - {node.node_id for node in described.nodes})
        if unknown:
            raise ToolError(f"Unknown broker id {unknown[0]}")
    wanted = {
        TopicPartition(topic, partition): replicas
        for (topic, partition), replicas in sorted(target.items())
    }
    answers = await as_tool_error(
        cluster.alter_partition_reassignments(
            wanted, allow_replication_factor_change=allow_replication_factor_change
        )
    )
    refused = [
        f"{tp.topic}-{tp.partition}: {error_message(error) or error.name()}"
        for tp, error in sorted(answers.items())
        if error is not None
    ]
    if refused:
        raise ToolError("Error reassigning partition(s):\n" + "\n".join(refused))


async def ongoing(cluster: AsyncAdminClient) -> dict[tuple[str, int], tuple[int, ...]]:
    """ListPartitionReassignments: the partitions moving now -> their target replicas."""
    moving = await as_tool_error(cluster.list_partition_reassignments())
    return {
        (tp.topic, tp.partition): tuple(
            b for b in r.replicas if b not in r.removing_replicas
        )
        for tp, r in moving.items()
    }


async def verify(cluster: AsyncAdminClient, target: Assignment) -> list[str]:
    """One line per partition, as kafka-reassign-partitions.sh --verify prints them."""
    moving = await ongoing(cluster)
    current = await current_assignment(cluster, {t for t, _ in target})
    lines = []
    for (topic, partition), replicas in sorted(target.items()):
        name = f"{topic}-{partition}"
        if (topic, partition) in moving:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif current.get((topic, partition)) == replicas:
            lines.append(f"Reassignment of partition {name} is complete.")
        else:
            now = list(current.get((topic, partition), ()))
            lines.append(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{now} rather than {list(replicas)}."
            )
    return lines


async def elect_leaders(
    cluster: AsyncAdminClient,
    partitions: Sequence[tuple[str, int]] | None,
    election_type: ElectionType = ElectionType.PREFERRED,
) -> tuple[list[str], list[str], list[str]]:
    """ElectLeaders (KIP-460) for ``partitions`` or all, through the client's
    ``elect_leaders``: (elected, already elected, failed with reasons), as partition
    names."""
    asked = None if partitions is None else [TopicPartition(*p) for p in partitions]
    results = await as_tool_error(cluster.elect_leaders(election_type, asked))
    elected, not_needed, failed = [], [], []
    for tp, error in results.items():
        name = str(tp)
        if error is None:
            elected.append(name)
        elif error.code() == ErrorCode.election_not_needed:
            not_needed.append(name)
        else:
            failed.append(f"{name}: {error.str()}")
    return sorted(elected), sorted(not_needed), sorted(failed)


def error_message(error: KafkaError) -> str | None:
    """The broker's message of a partition's error, None if it gave none (as the
    request's ``error_message`` was printed before)."""
    text = error.str()
    return None if text == error.name() else text
