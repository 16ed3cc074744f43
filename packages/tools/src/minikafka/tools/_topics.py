"""``minikafka topics``: Kafka's ``kafka-topics.sh`` (TopicCommand) on minikafka's Admin client.

TopicCommand turns its flags into calls of Kafka's Admin client and prints the answers;
so does this, on :class:`minikafka.client.AsyncAdminClient` (which sends each request
where Kafka's Admin sends it: CreateTopics and its kin to the controller):

- ``--create`` is ``create_topics`` (CreateTopics v4: ``-1`` partitions or replication
  factor means the broker's ``num.partitions`` / ``default.replication.factor``, KIP-464)
  with the ``--config`` overrides; ``--if-not-exists`` ignores TOPIC_ALREADY_EXISTS.
- ``--list`` prints the names ``list_topics`` (Metadata for every topic) returns.
- ``--describe`` joins ``list_topics`` (leader, replicas, ISR of each partition) with
  ``describe_configs``, keeping, as TopicCommand does, only the entries that are not
  defaults.
- ``--alter --partitions N`` is ``create_partitions``.
- ``--delete`` is ``delete_topics``; ``--if-exists`` ignores UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode
from rich.table import Table

from minikafka.client import (
    RESOURCE_TOPIC,
    AsyncAdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from minikafka.client import KafkaError as ClientKafkaError

from ._connection import BrokerError, ToolError, raise_for

NO_LEADER = -1


@attrs.frozen
class PartitionDescription:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None


@attrs.frozen
class TopicDescription:
    name: str
    internal: bool
    partitions: tuple[PartitionDescription, ...]
    configs: tuple[tuple[str, str], ...]
    """The topic's non-default configs, sorted by name."""

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


def parse_config(item: str) -> tuple[str, str]:
    """A ``--config key=value`` argument."""
    key, eq, value = item.partition("=")
    if not eq or not key.strip():
        raise ToolError(f"invalid --config {item!r}: expected key=value")
    return key.strip(), value.strip()


def parse_replica_assignment(text: str) -> list[list[int]]:
    """``--replica-assignment 1:2,2:3,3:1``: partition 0 on brokers 1 and 2 (1 leads),
    partition 1 on 2 and 3, ... (kafka-topics.sh's format). Whether the brokers exist
    and the lists agree is the controller's to say."""
    try:
        return [[int(b) for b in part.split(":")] for part in text.split(",")]
    except ValueError:
        raise ToolError(
            f"invalid --replica-assignment {text!r}: expected broker ids as "
            "b1:b2,b3:b4 (partitions separated by commas, replicas by colons)"
        ) from None


async def create_topic(
    cluster: AsyncAdminClient,
    topic: str,
    *,
    partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    if_not_exists: bool = False,
    replica_assignment: Sequence[Sequence[int]] = (),
) -> bool:
    """Create ``topic``; False if it existed and ``if_not_exists`` said that is fine."""
    if not -1 <= replication_factor <= 2**15 - 1:
        raise ToolError(f"replication factor {replication_factor} is out of range")
    new = NewTopic(
        topic, partitions, replication_factor, dict(configs or {}), replica_assignment
    )
    results = await cluster.create_topics([new])
    tolerated = ErrorCode.topic_already_exists if if_not_exists else None
    return _done(results[topic], tolerated)


async def list_topics(
    cluster: AsyncAdminClient, *, exclude_internal: bool = False
) -> list[str]:
    metadata = await cluster.list_topics()
    return sorted(
        name
        for name, t in metadata.topics.items()
        if not (exclude_internal and t.is_internal)
    )


async def describe_topics(
    cluster: AsyncAdminClient,
    topics: Sequence[str] | None = None,
    *,
    exclude_internal: bool = False,
) -> list[TopicDescription]:
    """Each topic's partitions and non-default configs; BrokerError if one does not exist."""
    metadata = await cluster.list_topics() if topics is None else None
    found = []
    for name in sorted(metadata.topics) if metadata else topics or ():
        # One topic at a time when named, so a missing one is reported by its name.
        t = (
            metadata.topics[name]
            if metadata
            else (await cluster.list_topics(name)).topics[name]
        )
        if (
            t.error is not None
            and t.error.code() == ErrorCode.unknown_topic_or_partition
        ):
            raise BrokerError(t.error.code(), f"topic {name!r} does not exist")
        raise_for(t.error, f"topic {name!r}")
        if not (exclude_internal and t.is_internal):
            found.append(t)
    if not found:
        return []
    configs = await _non_default_configs(cluster, [t.topic for t in found])
    return [
        TopicDescription(
            name=t.topic,
            internal=t.is_internal,
            partitions=tuple(
                PartitionDescription(
                    partition=p.id,
                    leader=p.leader,
                    replicas=p.replicas,
                    isr=p.isrs,
                    error=None if p.error is None else p.error.name(),
                )
                for p in sorted(t.partitions.values(), key=lambda p: p.id)
            ),
            configs=configs.get(t.topic, ()),
        )
        for t in sorted(found, key=lambda t: t.topic)
    ]


async def _non_default_configs(
    cluster: AsyncAdminClient, topics: Sequence[str]
) -> dict[str, tuple[tuple[str, str], ...]]:
    """What TopicCommand shows of a topic's configs: the entries somebody set."""
    resources = [ConfigResource(RESOURCE_TOPIC, name) for name in topics]
    described = await cluster.describe_configs(resources)
    configs = {}
    for resource, entries in described.items():
        if isinstance(entries, ClientKafkaError):
            raise_for(entries)
            continue
        configs[resource.name] = tuple(
            sorted(
                (e.name, e.value or "") for e in entries.values() if not e.is_default
            )
        )
    return configs


async def create_partitions(
    cluster: AsyncAdminClient, topic: str, count: int, *, if_exists: bool = False
) -> bool:
    """Grow ``topic`` to ``count`` partitions; False if it is missing and ``if_exists``."""
    results = await cluster.create_partitions([NewPartitions(topic, count)])
    tolerated = ErrorCode.unknown_topic_or_partition if if_exists else None
    return _done(results[topic], tolerated)


async def delete_topic(
    cluster: AsyncAdminClient, topic: str, *, if_exists: bool = False
) -> bool:
    """Delete ``topic``; False if it did not exist and ``if_exists`` said that is fine."""
    results = await cluster.delete_topics([topic])
    tolerated = ErrorCode.unknown_topic_or_partition if if_exists else None
    return _done(results[topic], tolerated, f"topic {topic!r}")


def _done(
    error: ClientKafkaError | None,
    tolerated: ErrorCode | None,
    message: str | None = None,
) -> bool:
    """True on success; False on the one error the caller said is fine (``--if-exists``,
    ``--if-not-exists``); any other error raises BrokerError."""
    if error is None:
        return True
    if tolerated is not None and error.code() == tolerated:
        return False
    raise_for(error, message)
    return True


def describe_table(topics: Sequence[TopicDescription]) -> Table:
    """One row per partition, as TopicCommand prints one line per partition.

    The topic's partition count, replication factor and configs (Kafka's summary line)
    sit in the first row of each topic.
    """
    table = Table("Topic", "Partition", "Leader", "Replicas", "ISR", "Configs")
    for topic in topics:
        summary = [f"PartitionCount: {len(topic.partitions)}"]
        summary.append(f"ReplicationFactor: {topic.replication_factor}")
        summary += [f"{k}={v}" for k, v in topic.configs]
        if not topic.partitions:
            table.add_row(
                topic.name, "", "", "", "", "\n".join(summary), end_section=True
            )
        for i, p in enumerate(topic.partitions):
            leader = "none" if p.leader == NO_LEADER else str(p.leader)
            if p.error is not None:
                leader += f" ({p.error})"
            table.add_row(
                topic.name,
                str(p.partition),
                leader,
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
                "\n".join(summary) if i == 0 else "",
                end_section=i == len(topic.partitions) - 1,
            )
    return table
