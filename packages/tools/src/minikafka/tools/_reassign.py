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

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.alter_partition_reassignments.v0.response import (
    AlterPartitionReassignmentsResponse,
)
from kio.schema.elect_leaders.v1 import request as elect_v1
from kio.schema.elect_leaders.v1.response import ElectLeadersResponse
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.list_partition_reassignments.v0.response import (
    ListPartitionReassignmentsResponse,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from minikafka.client import AsyncAdminClient
from minikafka.controller import (
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
)

from ._connection import BrokerError, ToolError, check
from ._topics import describe_topics

TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
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
    cluster: AsyncAdminClient, target: Mapping[tuple[str, int], Sequence[int] | None]
) -> None:
    """AlterPartitionReassignments to ``target`` (None: cancel); BrokerError on the first
    partition refused."""
    topics: dict[str, list[alter_v0.ReassignablePartition]] = {}
    for (topic, partition), replicas in sorted(target.items()):
        topics.setdefault(topic, []).append(
            alter_v0.ReassignablePartition(
                partition_index=i32(partition),
                replicas=None
                if replicas is None
                else tuple(BrokerId(b) for b in replicas),
            )
        )
    body = alter_v0.AlterPartitionReassignmentsRequest(
        timeout=TIMEOUT,
        topics=tuple(
            alter_v0.ReassignableTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
    )
    response = await cluster.request(
        await cluster.controller(), body, AlterPartitionReassignmentsResponse
    )
    check(response.error_code, response.error_message)
    for t in response.responses:
        for p in t.partitions:
            if p.error_code is not ErrorCode.none:
                raise BrokerError(
                    p.error_code, f"{t.name}-{p.partition_index}: {p.error_message}"
                )


async def ongoing(cluster: AsyncAdminClient) -> dict[tuple[str, int], tuple[int, ...]]:
    """ListPartitionReassignments: the partitions moving now -> their target replicas."""
    response = await cluster.request(
        await cluster.controller(),
        list_v0.ListPartitionReassignmentsRequest(timeout=TIMEOUT, topics=None),
        ListPartitionReassignmentsResponse,
    )
    check(response.error_code, response.error_message)
    return {
        (str(t.name), int(p.partition_index)): tuple(
            int(b) for b in p.replicas if b not in p.removing_replicas
        )
        for t in response.topics
        for p in t.partitions
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


async def elect_preferred(
    cluster: AsyncAdminClient, partitions: Sequence[tuple[str, int]] | None
) -> tuple[list[str], list[str], list[str]]:
    """ElectLeaders (preferred) for ``partitions`` or all: (elected, already elected,
    failed with reasons), as partition names."""
    topics: dict[str, list[i32]] = {}
    for topic, partition in partitions or ():
        topics.setdefault(topic, []).append(i32(partition))
    body = elect_v1.ElectLeadersRequest(
        election_type=i8(0),
        topic_partitions=None
        if partitions is None
        else tuple(
            elect_v1.TopicPartitions(topic=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
        timeout=TIMEOUT,
    )
    response = await cluster.request(
        await cluster.controller(), body, ElectLeadersResponse
    )
    check(response.error_code)
    elected, not_needed, failed = [], [], []
    for t in response.replica_election_results:
        for p in t.partition_result:
            name = f"{t.topic}-{p.partition_id}"
            if p.error_code is ErrorCode.none:
                elected.append(name)
            elif p.error_code is ErrorCode.election_not_needed:
                not_needed.append(name)
            else:
                reason = p.error_message or p.error_code.name.upper()
                failed.append(f"{name}: {reason}")
    return sorted(elected), sorted(not_needed), sorted(failed)
