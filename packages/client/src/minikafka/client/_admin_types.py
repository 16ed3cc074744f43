"""What the admin clients take and answer: confluent-kafka's shapes (``NewTopic``,
``ConfigResource``, ``ClusterMetadata``, ``ConsumerGroupDescription``...), shared by
:class:`AsyncAdminClient` and the synchronous :class:`AdminClient` over it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.coordination import decode_assignment
from minikafka.net import Node

from ._message import KafkaError, TopicPartition

RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
RESOURCE_BROKER = 4


@attrs.frozen
class NewTopic:
    topic: str
    num_partitions: int = -1  # -1: the broker's num.partitions (KIP-464)
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    config: Mapping[str, str] = attrs.field(factory=dict)
    # Partition i on replica_assignment[i] (the first leads), instead of a count and a
    # factor (leave those -1): Kafka's manual assignment.
    replica_assignment: Sequence[Sequence[int]] = ()


@attrs.frozen
class NewPartitions:
    topic: str
    new_total_count: int


@attrs.frozen
class ConfigResource:
    restype: int
    name: str


@attrs.frozen
class ConfigEntry:
    name: str
    value: str | None
    is_read_only: bool
    is_default: bool
    is_sensitive: bool


@attrs.frozen
class PartitionMetadata:
    id: int
    leader: int
    replicas: tuple[int, ...]
    isrs: tuple[int, ...]
    error: KafkaError | None = None


@attrs.frozen
class TopicMetadata:
    topic: str
    partitions: dict[int, PartitionMetadata]
    error: KafkaError | None
    is_internal: bool = False


@attrs.frozen
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, Node]
    topics: dict[str, TopicMetadata]


@attrs.frozen
class MemberDescription:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


@attrs.frozen
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: Node | None = None


def error_or_none(code: int, message: str | None = None) -> KafkaError | None:
    return None if code == ErrorCode.none else KafkaError(code, message)


def member_partitions(data: bytes) -> tuple[TopicPartition, ...]:
    if not data:
        return ()
    try:
        return tuple(
            TopicPartition(tp.topic, tp.partition)
            for tp in decode_assignment(data).partitions
        )
    except ValueError:  # not the consumer protocol's
        return ()
