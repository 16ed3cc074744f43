"""A log's configuration: Kafka's topic-level keys, their broker-level defaults, validation.

Each setting has two names in Kafka: the topic-level key a topic overrides
(``segment.bytes``) and the broker-level key that sets the default for every topic
(``log.segment.bytes``). :data:`LOG_KEYS` is that table; :data:`TOPIC_ONLY_KEYS` holds the
few topic configs Kafka gives no broker-level default. A bad value raises
:class:`~minikafka.net.ConfigError` naming the key that was given.

Every topic config Kafka 3.x documents (its ``TopicConfig``) is accepted with its type
checked, so a CreateTopics that works on Kafka works here. Most are honoured; the ones
that are stored and described but change nothing here are listed, with the reason, in
:data:`NO_EFFECT`. A value that would promise something minikafka cannot do (tiered
storage) is refused instead of being silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs

from minikafka.net import ConfigError

from ._batch import CompressionType

MAX_LONG = 2**63 - 1  # Kafka's Long.MAX_VALUE: "never" for flush.messages and flush.ms
# compression.type's values (Kafka's BrokerCompressionType): a codec, or keep the producer's.
COMPRESSION_TYPES: Mapping[str, CompressionType | None] = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
    "producer": None,
}


@attrs.frozen
class LogConfig:
    """The settings one Log obeys; Kafka's defaults unless noted."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1: keep forever
    retention_bytes: int = -1  # -1: no size limit
    flush_messages: int = MAX_LONG
    flush_ms: int = MAX_LONG
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = "CreateTime"
    file_delete_delay_ms: int = 60_000
    # KIP-354: a compacted log whose oldest dirty record is older than this is cleaned
    # whatever its dirty ratio.
    max_compaction_lag_ms: int = MAX_LONG
    # What the leader stores (Kafka's LogValidator recompresses when it is not "producer").
    compression_type: str = "producer"
    compression_gzip_level: int = -1  # KIP-390; -1: zlib's default (6)
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    # KIP-937 (Kafka 3.6): how far a CreateTime timestamp may lie behind or ahead of the
    # broker's clock; Long.MAX_VALUE means unchecked. difference.max.ms is the older,
    # deprecated key both fall back to.
    message_timestamp_difference_max_ms: int = MAX_LONG
    message_timestamp_before_max_ms: int = MAX_LONG
    message_timestamp_after_max_ms: int = MAX_LONG
    # Stored and described, no effect here: see NO_EFFECT.
    segment_jitter_ms: int = 0
    preallocate: bool = False
    message_downconversion_enable: bool = True
    message_format_version: str = "3.0-IV1"
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_segment_ms(self) -> int:
        """When the active segment rolls by age: a compacted topic's at max.compaction.lag.ms
        at the latest (KIP-354), since the cleaner never touches the active segment."""
        if self.compact:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @property
    def target_compression(self) -> CompressionType | None:
        """The codec the leader stores batches in; None keeps the producer's."""
        return COMPRESSION_TYPES[self.compression_type]

    @property
    def compression_level(self) -> int | None:
        """KIP-390's level for the target codec; None for the codec's default."""
        levels = {
            CompressionType.GZIP: None
            if self.compression_gzip_level == -1
            else self.compression_gzip_level,
            CompressionType.LZ4: self.compression_lz4_level,
            CompressionType.ZSTD: self.compression_zstd_level,
        }
        target = self.target_compression
        return None if target is None else levels.get(target)

    @property
    def timestamp_before_max_ms(self) -> int:
        """How old a CreateTime timestamp may be; falls back to difference.max.ms as Kafka does."""
        if self.message_timestamp_before_max_ms != MAX_LONG:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        """How far in the future a CreateTime timestamp may be."""
        if self.message_timestamp_after_max_ms != MAX_LONG:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], defaults: LogConfig | None = None
    ) -> LogConfig:
        """Topic-level keys (``segment.bytes``) or broker-level ones (``log.segment.bytes``).

        Keys this table does not know are left alone: the broker checks for unknown keys
        across every layer's table.
        """
        values: dict[str, object] = {}
        for setting in LOG_KEYS:
            for key in (setting.broker_key, setting.topic_key):  # topic-level wins
                if key in props:
                    values[setting.field] = setting.parse(key, props[key].strip())
        for topic_setting in TOPIC_ONLY_KEYS:
            if topic_setting.topic_key in props:
                raw = props[topic_setting.topic_key].strip()
                values[topic_setting.field] = topic_setting.parse(topic_setting.topic_key, raw)
        return attrs.evolve(defaults or cls(), **values)  # type: ignore[arg-type]


@attrs.frozen
class Setting:
    topic_key: str
    broker_key: str
    field: str
    parse: Callable[[str, str], object]


@attrs.frozen
class TopicOnlySetting:
    """A topic config with no broker-level default in Kafka."""

    topic_key: str
    field: str
    parse: Callable[[str, str], object]


def _long(minimum: int, maximum: int = MAX_LONG) -> Callable[[str, str], object]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(key, f"{raw!r} is not an integer") from None
        if not minimum <= value <= maximum:
            raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
        return value

    return parse


def _ratio(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(key, f"{raw!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(key, f"{value} is not between 0 and 1")
    return value


def _policy(key: str, raw: str) -> frozenset[str]:
    policies = frozenset(part.strip() for part in raw.split(",") if part.strip())
    if not policies or not policies <= {"delete", "compact"}:
        raise ConfigError(key, f"{raw!r} is not a list of 'delete' and 'compact'")
    return policies


def _timestamp_type(key: str, raw: str) -> str:
    if raw not in ("CreateTime", "LogAppendTime"):
        raise ConfigError(key, f"{raw!r} is neither CreateTime nor LogAppendTime")
    return raw


def _int(minimum: int, maximum: int, *also: int) -> Callable[[str, str], object]:
    """An int in [minimum, maximum] or one of ``also`` (KIP-390's -1 for "the default")."""
    bounded = _long(minimum, maximum)

    def parse(key: str, raw: str) -> int:
        if raw.lstrip("-").isdigit() and int(raw) in also:
            return int(raw)
        value = bounded(key, raw)
        assert isinstance(value, int)
        return value

    return parse


def _bool(key: str, raw: str) -> bool:
    if raw.lower() not in ("true", "false"):
        raise ConfigError(key, f"{raw!r} is neither true nor false")
    return raw.lower() == "true"


def _compression_type(key: str, raw: str) -> str:
    if raw not in COMPRESSION_TYPES:
        raise ConfigError(key, f"{raw!r} is not one of {', '.join(COMPRESSION_TYPES)}")
    return raw


def _format_version(key: str, raw: str) -> str:
    # An ApiVersion/MetadataVersion such as 0.10.2, 2.8 or 3.0-IV1.
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?(-IV\d+)?", raw):
        raise ConfigError(key, f"{raw!r} is not a message format version such as 3.0-IV1")
    return raw


def _remote_storage(key: str, raw: str) -> bool:
    if _bool(key, raw):
        # Accepting it would be a lie: a topic whose owner believes old segments go to
        # remote storage would instead keep (and lose) everything on local disk.
        raise ConfigError(key, "tiered storage (KIP-405) does not exist in minikafka")
    return False


_THROTTLED_ENTRY = re.compile(r"\d+:\d+")


def _throttled_replicas(key: str, raw: str) -> str:
    # Kafka's ThrottledReplicaListValidator: empty, "*", or partition:broker pairs.
    entries = [part.strip() for part in raw.split(",") if part.strip()]
    if entries not in ([], ["*"]) and not all(_THROTTLED_ENTRY.fullmatch(e) for e in entries):
        raise ConfigError(key, f"{raw!r} is not '*' or a list of partitionId:brokerId")
    return ",".join(entries)


LOG_KEYS: tuple[Setting, ...] = (
    # Positions in a segment are 32-bit in the index, so a segment stays below 2 GiB.
    Setting("segment.bytes", "log.segment.bytes", "segment_bytes", _long(14, 2**31 - 1)),
    Setting("segment.ms", "log.roll.ms", "segment_ms", _long(1)),
    Setting("segment.index.bytes", "log.index.size.max.bytes", "segment_index_bytes", _long(8)),
    Setting("index.interval.bytes", "log.index.interval.bytes", "index_interval_bytes", _long(0)),
    Setting("retention.ms", "log.retention.ms", "retention_ms", _long(-1)),
    Setting("retention.bytes", "log.retention.bytes", "retention_bytes", _long(-1)),
    Setting("flush.messages", "log.flush.interval.messages", "flush_messages", _long(1)),
    Setting("flush.ms", "log.flush.interval.ms", "flush_ms", _long(0)),
    Setting("cleanup.policy", "log.cleanup.policy", "cleanup_policy", _policy),
    Setting(
        "delete.retention.ms",
        "log.cleaner.delete.retention.ms",
        "delete_retention_ms",
        _long(0),
    ),
    Setting(
        "min.compaction.lag.ms",
        "log.cleaner.min.compaction.lag.ms",
        "min_compaction_lag_ms",
        _long(0),
    ),
    Setting(
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
        "min_cleanable_dirty_ratio",
        _ratio,
    ),
    Setting("max.message.bytes", "message.max.bytes", "max_message_bytes", _long(0)),
    Setting(
        "message.timestamp.type",
        "log.message.timestamp.type",
        "message_timestamp_type",
        _timestamp_type,
    ),
    Setting(
        "file.delete.delay.ms", "log.segment.delete.delay.ms", "file_delete_delay_ms", _long(0)
    ),
    Setting(
        "max.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "max_compaction_lag_ms",
        _long(1),
    ),
    Setting("compression.type", "compression.type", "compression_type", _compression_type),
    Setting(
        "compression.gzip.level", "compression.gzip.level", "compression_gzip_level", _int(1, 9, -1)
    ),
    Setting("compression.lz4.level", "compression.lz4.level", "compression_lz4_level", _int(1, 17)),
    Setting(
        "compression.zstd.level",
        "compression.zstd.level",
        "compression_zstd_level",
        _int(-131072, 22),
    ),
    Setting(
        "message.timestamp.difference.max.ms",
        "log.message.timestamp.difference.max.ms",
        "message_timestamp_difference_max_ms",
        _long(0),
    ),
    Setting(
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
        "message_timestamp_before_max_ms",
        _long(0),
    ),
    Setting(
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
        "message_timestamp_after_max_ms",
        _long(0),
    ),
    Setting("segment.jitter.ms", "log.roll.jitter.ms", "segment_jitter_ms", _long(0)),
    Setting("preallocate", "log.preallocate", "preallocate", _bool),
    Setting(
        "message.downconversion.enable",
        "log.message.downconversion.enable",
        "message_downconversion_enable",
        _bool,
    ),
    Setting(
        "message.format.version",
        "log.message.format.version",
        "message_format_version",
        _format_version,
    ),
    Setting("local.retention.ms", "log.local.retention.ms", "local_retention_ms", _long(-2)),
    Setting(
        "local.retention.bytes", "log.local.retention.bytes", "local_retention_bytes", _long(-2)
    ),
)
"""Every setting: topic-level key, broker-level key, field, parser."""

TOPIC_ONLY_KEYS: tuple[TopicOnlySetting, ...] = (
    TopicOnlySetting("remote.storage.enable", "remote_storage_enable", _remote_storage),
    TopicOnlySetting(
        "leader.replication.throttled.replicas",
        "leader_replication_throttled_replicas",
        _throttled_replicas,
    ),
    TopicOnlySetting(
        "follower.replication.throttled.replicas",
        "follower_replication_throttled_replicas",
        _throttled_replicas,
    ),
)
"""Topic configs without a broker-level default (Kafka has none for them either)."""

NO_EFFECT: Mapping[str, str] = {
    # The one table of topic configs minikafka accepts, stores and describes, but that
    # change nothing here, each with the reason an operator would want to know.
    "segment.jitter.ms": "segments roll at exactly segment.ms; jitter only spreads the rolls "
    "of many partitions created together, a load concern of large clusters",
    "preallocate": "segment files grow as they are written; preallocation is a file-system "
    "tuning (Kafka's own default is false)",
    "message.downconversion.enable": "only record format v2 is stored and served, so there is "
    "never an older format to convert to",
    "message.format.version": "deprecated since Kafka 3.0, where it is ignored as here: "
    "every batch is format v2",
    "local.retention.ms": "applies only to tiered storage, which does not exist here "
    "(remote.storage.enable=true is refused)",
    "local.retention.bytes": "applies only to tiered storage, which does not exist here "
    "(remote.storage.enable=true is refused)",
    "remote.storage.enable": "only false is accepted: tiered storage (KIP-405) does not exist",
    "leader.replication.throttled.replicas": "no replication quotas (KIP-73) yet, so "
    "replication is never throttled",
    "follower.replication.throttled.replicas": "no replication quotas (KIP-73) yet, so "
    "replication is never throttled",
}
"""Topic config -> why it is stored but has no effect in minikafka."""
