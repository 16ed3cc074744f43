"""``minikafka topics``: Kafka's ``kafka-topics.sh`` (TopicCommand) on minikafka's client.

- ``--create`` sends CreateTopics (v4: ``-1`` partitions or replication factor means the
  broker's ``num.partitions`` / ``default.replication.factor``, KIP-464) with the
  ``--config`` overrides; ``--if-not-exists`` ignores TOPIC_ALREADY_EXISTS.
- ``--list`` prints the names a Metadata request for every topic returns.
- ``--describe`` joins Metadata (leader, replicas, ISR of each partition) with
  DescribeConfigs, keeping, as TopicCommand does, only the entries that are not
  defaults (``config_source != DEFAULT_CONFIG``).
- ``--alter --partitions N`` sends CreatePartitions.
- ``--delete`` sends DeleteTopics; ``--if-exists`` ignores UNKNOWN_TOPIC_OR_PARTITION.

Admin requests go to the controller the metadata names (combined mode: the broker).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import TypeVar

import attrs
from kio.schema.create_partitions.v1.request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_partitions.v1.response import CreatePartitionsResponse
from kio.schema.create_topics.v4.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import DeleteTopicsResponse
from kio.schema.describe_configs.v3.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload
from rich.table import Table

from ._connection import Cluster, KafkaError, ToolError, check

R = TypeVar("R", bound=ResponsePayload)

TOPIC_RESOURCE = 2  # DescribeConfigs resource_type of a topic
DEFAULT_CONFIG = 5  # DescribeConfigs config_source of a value nobody set (KIP-226)
ADMIN_TIMEOUT = datetime.timedelta(seconds=30)
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


def create_topics_request(
    topic: str,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str] | None = None,
    *,
    validate_only: bool = False,
) -> CreateTopicsRequest:
    """CreateTopics v4 of one topic (-1: the broker's default partitions or factor)."""
    return CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(topic),
                num_partitions=i32(partitions),
                replication_factor=i16(replication_factor),
                assignments=(),
                configs=tuple(
                    CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                ),
            ),
        ),
        timeout=i32Timedelta.parse(ADMIN_TIMEOUT),
        validate_only=validate_only,
    )


async def create_topic(
    cluster: Cluster,
    topic: str,
    *,
    partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    if_not_exists: bool = False,
) -> bool:
    """Create ``topic``; False if it existed and ``if_not_exists`` said that is fine."""
    if not -1 <= replication_factor <= 2**15 - 1:
        raise ToolError(f"replication factor {replication_factor} is out of range")
    body = create_topics_request(topic, partitions, replication_factor, configs)
    (result,) = (await _to_controller(cluster, body, CreateTopicsResponse)).topics
    tolerated = ErrorCode.topic_already_exists if if_not_exists else None
    return _done(result.error_code, result.error_message, tolerated)


async def list_topics(cluster: Cluster, *, exclude_internal: bool = False) -> list[str]:
    response = await cluster.metadata(None)
    return sorted(str(t.name) for t in response.topics if not (exclude_internal and t.is_internal))


async def describe_topics(
    cluster: Cluster, topics: Sequence[str] | None = None, *, exclude_internal: bool = False
) -> list[TopicDescription]:
    """Each topic's partitions and non-default configs; KafkaError if one does not exist."""
    response = await cluster.metadata(None if topics is None else list(topics))
    found = []
    for t in response.topics:
        if t.error_code == ErrorCode.unknown_topic_or_partition:
            raise KafkaError(t.error_code, f"topic {t.name!r} does not exist")
        check(t.error_code, f"topic {t.name!r}")
        if exclude_internal and t.is_internal:
            continue
        found.append(t)
    if not found:
        return []
    configs = await _non_default_configs(cluster, [str(t.name) for t in found])
    return [
        TopicDescription(
            name=str(t.name),
            internal=t.is_internal,
            partitions=tuple(
                PartitionDescription(
                    partition=int(p.partition_index),
                    leader=int(p.leader_id),
                    replicas=tuple(int(r) for r in p.replica_nodes),
                    isr=tuple(int(r) for r in p.isr_nodes),
                    error=None if p.error_code == ErrorCode.none else p.error_code.name.upper(),
                )
                for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
            ),
            configs=configs.get(str(t.name), ()),
        )
        for t in sorted(found, key=lambda t: str(t.name))
    ]


async def _non_default_configs(
    cluster: Cluster, topics: Sequence[str]
) -> dict[str, tuple[tuple[str, str], ...]]:
    body = DescribeConfigsRequest(
        resources=tuple(
            DescribeConfigsResource(
                resource_type=i8(TOPIC_RESOURCE), resource_name=name, configuration_keys=None
            )
            for name in topics
        ),
        include_synonyms=False,
        include_documentation=False,
    )
    response = await cluster.request(cluster.controller(), body, DescribeConfigsResponse)
    configs = {}
    for result in response.results:
        check(result.error_code, result.error_message)
        configs[result.resource_name] = tuple(
            sorted(
                (c.name, c.value or "")
                for c in result.configs
                if int(c.config_source) != DEFAULT_CONFIG
            )
        )
    return configs


async def create_partitions(
    cluster: Cluster, topic: str, count: int, *, if_exists: bool = False
) -> bool:
    """Grow ``topic`` to ``count`` partitions; False if it is missing and ``if_exists``."""
    body = CreatePartitionsRequest(
        topics=(CreatePartitionsTopic(name=TopicName(topic), count=i32(count), assignments=None),),
        timeout=i32Timedelta.parse(ADMIN_TIMEOUT),
        validate_only=False,
    )
    (result,) = (await _to_controller(cluster, body, CreatePartitionsResponse)).results
    tolerated = ErrorCode.unknown_topic_or_partition if if_exists else None
    return _done(result.error_code, result.error_message, tolerated)


async def delete_topic(cluster: Cluster, topic: str, *, if_exists: bool = False) -> bool:
    """Delete ``topic``; False if it did not exist and ``if_exists`` said that is fine."""
    body = DeleteTopicsRequest(
        topic_names=(TopicName(topic),), timeout=i32Timedelta.parse(ADMIN_TIMEOUT)
    )
    (result,) = (await _to_controller(cluster, body, DeleteTopicsResponse)).responses
    tolerated = ErrorCode.unknown_topic_or_partition if if_exists else None
    return _done(result.error_code, f"topic {topic!r}", tolerated)


async def _to_controller(cluster: Cluster, body: RequestPayload, response_type: type[R]) -> R:
    """Send an admin request where Kafka's AdminClient sends it: to the controller."""
    await cluster.metadata([])  # learn where the controller is
    return await cluster.request(cluster.controller(), body, response_type)


def _done(code: ErrorCode, message: str | None, tolerated: ErrorCode | None) -> bool:
    """True on success; False on the one error the caller said is fine (``--if-exists``,
    ``--if-not-exists``); any other error raises KafkaError."""
    if tolerated is not None and code == tolerated:
        return False
    check(code, message)
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
            table.add_row(topic.name, "", "", "", "", "\n".join(summary), end_section=True)
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
