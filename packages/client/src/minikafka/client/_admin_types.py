"""What the admin clients take and answer: confluent-kafka's shapes (``NewTopic``,
``ConfigResource``, ``ClusterMetadata``, ``ConsumerGroupDescription``...), shared by
:class:`AsyncAdminClient` and the synchronous :class:`AdminClient` over it; a config
change is Kafka's ``AlterConfigOp`` (KIP-339)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition as TopicPartitionKey
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


class ConfigSource(enum.IntEnum):
    """Where a config's value comes from (KIP-226), DescribeConfigs' ids under the names
    of Kafka's ``ConfigEntry.ConfigSource``, which its kafka-configs.sh prints."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8

    @classmethod
    def of(cls, source: int) -> ConfigSource:
        """An id a newer broker may send that this enum lacks is UNKNOWN, as in Kafka."""
        try:
            return cls(source)
        except ValueError:
            return cls.UNKNOWN


@attrs.frozen
class ConfigSynonym:
    """One place that sets a config (DescribeConfigs with ``include_synonyms``): the
    topic's own key, the broker's key of the same setting, the default."""

    name: str
    value: str | None
    source: ConfigSource


@attrs.frozen
class ConfigEntry:
    name: str
    value: str | None
    is_read_only: bool
    is_default: bool
    is_sensitive: bool
    source: ConfigSource = ConfigSource.UNKNOWN
    # The one in force first; empty unless asked for (``include_synonyms=True``).
    synonyms: tuple[ConfigSynonym, ...] = ()


class AlterConfigOpType(enum.IntEnum):
    """IncrementalAlterConfigs' operations (KIP-339): SET a value, DELETE the override
    (back to the default), APPEND to or SUBTRACT from a LIST config's values."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@attrs.frozen
class AlterConfigOp:
    """One change of :meth:`AsyncAdminClient.incremental_alter_configs`: Kafka's
    ``AlterConfigOp(new ConfigEntry(name, value), opType)``; DELETE takes no value."""

    name: str
    value: str | None = None
    op_type: AlterConfigOpType = AlterConfigOpType.SET


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


# --- offsets, groups and the cluster (Kafka's Admin result types) ----------------------

EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # the high watermark (read_uncommitted) or the LSO
MAX_TIMESTAMP = -3  # the record with the largest timestamp (KIP-734, ListOffsets v7)


@attrs.frozen
class OffsetSpec:
    """What :meth:`AsyncAdminClient.list_offsets` asks of a partition: Kafka's
    ``OffsetSpec``, as the timestamp ListOffsets carries (negative: a special one)."""

    timestamp: int

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(EARLIEST_TIMESTAMP)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(LATEST_TIMESTAMP)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is at or after ``timestamp_ms``."""
        if timestamp_ms < 0:
            raise ValueError(f"a timestamp is ms since the epoch, not {timestamp_ms}")
        return cls(timestamp_ms)


@attrs.frozen
class ListOffsetsResultInfo:
    """A partition's answer to ListOffsets: the offset, the timestamp of its record
    (-1 for earliest/latest) and the leader epoch (None when the broker gave none)."""

    offset: int
    timestamp: int
    leader_epoch: int | None


@attrs.frozen
class DeletedRecords:
    """A partition's answer to DeleteRecords (KIP-107): its low watermark, the smallest
    log start offset among its replicas once the deletion reached them. Kafka's and
    confluent-kafka's ``DeletedRecords``."""

    low_watermark: int


@attrs.frozen
class OffsetAndMetadata:
    """A committed offset, as Kafka's ``OffsetAndMetadata``."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


@attrs.frozen
class ConsumerGroupListing:
    """One group of ListGroups: Kafka's ``ConsumerGroupListing``. ``state`` is the
    coordinator's name for it (Stable, Empty...), ``type`` "classic" or "consumer"
    (KIP-848); both are "" when the broker answered an older ListGroups."""

    group_id: str
    is_simple_consumer_group: bool
    state: str = ""
    type: str = ""


@attrs.frozen
class ClusterDescription:
    """DescribeCluster's answer: Kafka's ``DescribeClusterResult`` (nodes, controller,
    cluster id), each broker's rack beside it."""

    cluster_id: str
    controller: Node | None
    nodes: tuple[Node, ...]
    racks: Mapping[int, str | None] = attrs.field(factory=dict)


@attrs.frozen
class ReplicaInfo:
    """A replica in a log dir: its size in bytes, how far it lags (a future replica
    being moved between dirs), and whether it is that future replica."""

    size: int
    offset_lag: int
    is_future: bool


@attrs.frozen
class LogDirDescription:
    """One log dir of a broker: Kafka's ``LogDirDescription``; total and usable bytes
    are None when the broker did not say (DescribeLogDirs before v4, KIP-827)."""

    error: KafkaError | None
    replica_infos: Mapping[TopicPartitionKey, ReplicaInfo]
    total_bytes: int | None = None
    usable_bytes: int | None = None


@attrs.frozen
class PartitionReassignment:
    """A reassignment in progress (KIP-455): the replicas now, and which of them are
    being added and removed."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


class ElectionType(enum.IntEnum):
    """ElectLeaders' election type (KIP-460)."""

    PREFERRED = 0
    UNCLEAN = 1
