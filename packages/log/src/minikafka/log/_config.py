"""A log's configuration: Kafka's topic-level keys, their broker-level defaults, validation.

Each setting has two names in Kafka: the topic-level key a topic overrides
(``segment.bytes``) and the broker-level key that sets the default for every topic
(``log.segment.bytes``): :data:`LOG_CONFIG` declares each topic config with the broker-level
names as its synonyms (Kafka's ``ServerTopicConfigSynonyms``); the few topic configs Kafka
gives no broker-level default have none. A bad value raises
:class:`~minikafka.common.ConfigError` naming the key that was given.

Every topic config Kafka 4.x documents (its ``TopicConfig``) is accepted with its type
checked, so a CreateTopics that works on Kafka works here, and the keys Kafka 4.0 removed
(``message.format.version``, ``message.downconversion.enable``,
``message.timestamp.difference.max.ms``) are unknown here as there. Most are honoured; the ones
that are stored and described but change nothing here are listed, with the reason, in
:data:`NO_EFFECT` (each key's ``no_effect``). A value that would promise something
minikafka cannot do (tiered storage) is refused instead of being silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from minikafka.common import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    Parser,
    Synonym,
    Validator,
    at_least,
    between,
    one_of,
)

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
    # KIP-937: how far a CreateTime timestamp may lie behind or ahead of the broker's
    # clock; Long.MAX_VALUE means unchecked. Kafka 4.0 refuses timestamps more than an
    # hour ahead by default (a clock far off, or a producer's bug).
    message_timestamp_before_max_ms: int = MAX_LONG
    message_timestamp_after_max_ms: int = 3600 * 1000
    # Stored and described, no effect here: see NO_EFFECT.
    segment_jitter_ms: int = 0
    preallocate: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
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
        """How old a CreateTime timestamp may be."""
        return self.message_timestamp_before_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        """How far in the future a CreateTime timestamp may be."""
        return self.message_timestamp_after_max_ms

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], defaults: LogConfig | None = None
    ) -> LogConfig:
        """Topic-level keys (``segment.bytes``) or broker-level ones (``log.segment.bytes``).

        The topic-level name wins over the broker-level one (and ``log.retention.ms`` over
        ``log.retention.hours``). Keys :data:`LOG_CONFIG` does not declare are left alone:
        the broker checks for unknown keys across every package's declarations.
        """
        return LOG_CONFIG.apply(defaults or cls(), props)


def _policy(key: str, raw: str) -> frozenset[str]:
    policies = frozenset(part.strip() for part in raw.split(",") if part.strip())
    if not policies or not policies <= {"delete", "compact"}:
        raise ConfigError(key, f"{raw!r} is not a list of 'delete' and 'compact'")
    return policies


def _remote_storage(key: str, raw: str) -> bool:
    if ConfigType.BOOLEAN.parse(key, raw):
        # Accepting it would be a lie: a topic whose owner believes old segments go to
        # remote storage would instead keep (and lose) everything on local disk.
        raise ConfigError(key, "tiered storage (KIP-405) does not exist in minikafka")
    return False


_THROTTLED_ENTRY = re.compile(r"\d+:\d+")


def _throttled_replicas(key: str, raw: str) -> str:
    # Kafka's ThrottledReplicaListValidator: empty, "*", or partition:broker pairs.
    entries = [part.strip() for part in raw.split(",") if part.strip()]
    if entries not in ([], ["*"]) and not all(
        _THROTTLED_ENTRY.fullmatch(e) for e in entries
    ):
        raise ConfigError(key, f"{raw!r} is not '*' or a list of partitionId:brokerId")
    return ",".join(entries)


_HOURS = 3600 * 1000
_MINUTES = 60 * 1000
_BOOL, _INT, _LONG = ConfigType.BOOLEAN, ConfigType.INT, ConfigType.LONG
_SAME = (Synonym(),)  # the broker-level default is spelled like the topic config
_NO_QUOTAS = "no replication quotas (KIP-73) yet, so replication is never throttled"
_TIERED_ONLY = (
    "applies only to tiered storage, which does not exist here "
    "(remote.storage.enable=true is refused)"
)


def _key(
    name: str,
    broker: str | tuple[Synonym, ...] | None,
    kind: ConfigType | Parser,
    field: str,
    validator: Validator | None = None,
    no_effect: str | None = None,
) -> ConfigKey:
    """A topic config and its broker-level synonyms (a name, or none for a topic-only key)."""
    synonyms = (Synonym(broker),) if isinstance(broker, str) else broker or ()
    return ConfigKey(
        name, kind, field, validator, synonyms=synonyms, no_effect=no_effect
    )


LOG_CONFIG = ConfigDef(
    (
        # Positions in a segment are 32-bit in the index, so a segment stays below 2 GiB.
        _key("segment.bytes", "log.segment.bytes", _INT, "segment_bytes", at_least(14)),
        _key(
            "segment.ms",
            (Synonym("log.roll.ms"), Synonym("log.roll.hours", _HOURS, _INT)),
            _LONG,
            "segment_ms",
            at_least(1),
        ),
        _key(
            "segment.index.bytes",
            "log.index.size.max.bytes",
            _LONG,
            "segment_index_bytes",
            at_least(8),
        ),
        _key(
            "index.interval.bytes",
            "log.index.interval.bytes",
            _LONG,
            "index_interval_bytes",
            at_least(0),
        ),
        # Kafka's precedence: .ms over .minutes over .hours; -1 keeps forever.
        _key(
            "retention.ms",
            (
                Synonym("log.retention.ms"),
                Synonym("log.retention.minutes", _MINUTES, _INT),
                Synonym("log.retention.hours", _HOURS, _INT),
            ),
            _LONG,
            "retention_ms",
            at_least(-1),
        ),
        _key(
            "retention.bytes",
            "log.retention.bytes",
            _LONG,
            "retention_bytes",
            at_least(-1),
        ),
        _key(
            "flush.messages",
            "log.flush.interval.messages",
            _LONG,
            "flush_messages",
            at_least(1),
        ),
        _key("flush.ms", "log.flush.interval.ms", _LONG, "flush_ms", at_least(0)),
        _key("cleanup.policy", "log.cleanup.policy", _policy, "cleanup_policy"),
        _key(
            "delete.retention.ms",
            "log.cleaner.delete.retention.ms",
            _LONG,
            "delete_retention_ms",
            at_least(0),
        ),
        _key(
            "min.compaction.lag.ms",
            "log.cleaner.min.compaction.lag.ms",
            _LONG,
            "min_compaction_lag_ms",
            at_least(0),
        ),
        _key(
            "min.cleanable.dirty.ratio",
            "log.cleaner.min.cleanable.ratio",
            ConfigType.DOUBLE,
            "min_cleanable_dirty_ratio",
            between(0.0, 1.0),
        ),
        _key(
            "max.message.bytes",
            "message.max.bytes",
            _INT,
            "max_message_bytes",
            at_least(0),
        ),
        _key(
            "message.timestamp.type",
            "log.message.timestamp.type",
            ConfigType.STRING,
            "message_timestamp_type",
            one_of("CreateTime", "LogAppendTime"),
        ),
        _key(
            "file.delete.delay.ms",
            "log.segment.delete.delay.ms",
            _LONG,
            "file_delete_delay_ms",
            at_least(0),
        ),
        _key(
            "max.compaction.lag.ms",
            "log.cleaner.max.compaction.lag.ms",
            _LONG,
            "max_compaction_lag_ms",
            at_least(1),
        ),
        _key(
            "compression.type",
            _SAME,
            ConfigType.STRING,
            "compression_type",
            one_of(*COMPRESSION_TYPES),
        ),
        _key(
            "compression.gzip.level",
            _SAME,
            _INT,
            "compression_gzip_level",
            between(1, 9, -1),
        ),
        _key(
            "compression.lz4.level",
            _SAME,
            _INT,
            "compression_lz4_level",
            between(1, 17),
        ),
        _key(
            "compression.zstd.level",
            _SAME,
            _INT,
            "compression_zstd_level",
            between(-131072, 22),
        ),
        _key(
            "message.timestamp.before.max.ms",
            "log.message.timestamp.before.max.ms",
            _LONG,
            "message_timestamp_before_max_ms",
            at_least(0),
        ),
        _key(
            "message.timestamp.after.max.ms",
            "log.message.timestamp.after.max.ms",
            _LONG,
            "message_timestamp_after_max_ms",
            at_least(0),
        ),
        # Accepted, stored and described, but they change nothing here; each says why, as
        # DescribeConfigs' documentation (KIP-569) tells an operator.
        _key(
            "segment.jitter.ms",
            "log.roll.jitter.ms",
            _LONG,
            "segment_jitter_ms",
            at_least(0),
            "segments roll at exactly segment.ms; jitter only spreads the rolls of many "
            "partitions created together, a load concern of large clusters",
        ),
        _key(
            "preallocate",
            "log.preallocate",
            _BOOL,
            "preallocate",
            no_effect="segment files grow as they are written; preallocation is a "
            "file-system tuning (Kafka's own default is false)",
        ),
        _key(
            "local.retention.ms",
            "log.local.retention.ms",
            _LONG,
            "local_retention_ms",
            at_least(-2),
            _TIERED_ONLY,
        ),
        _key(
            "local.retention.bytes",
            "log.local.retention.bytes",
            _LONG,
            "local_retention_bytes",
            at_least(-2),
            _TIERED_ONLY,
        ),
        # Topic configs without a broker-level default (Kafka has none for them either).
        _key(
            "remote.storage.enable",
            None,
            _remote_storage,
            "remote_storage_enable",
            no_effect="only false is accepted: tiered storage (KIP-405) does not exist",
        ),
        # Kafka 3.9's switches for a tiered topic's copies and its deletion (KIP-950).
        _key(
            "remote.log.copy.disable",
            None,
            _BOOL,
            "remote_log_copy_disable",
            no_effect=_TIERED_ONLY,
        ),
        _key(
            "remote.log.delete.on.disable",
            None,
            _BOOL,
            "remote_log_delete_on_disable",
            no_effect=_TIERED_ONLY,
        ),
        _key(
            "leader.replication.throttled.replicas",
            None,
            _throttled_replicas,
            "leader_replication_throttled_replicas",
            no_effect=_NO_QUOTAS,
        ),
        _key(
            "follower.replication.throttled.replicas",
            None,
            _throttled_replicas,
            "follower_replication_throttled_replicas",
            no_effect=_NO_QUOTAS,
        ),
    )
)
"""Every topic config: its name, its broker-level synonyms, type, field and validator.

Every topic config Kafka 4.x documents; a topic sets the names (``segment.bytes``), the
broker's ``server.properties`` the synonyms (``log.segment.bytes``)."""

NO_EFFECT: Mapping[str, str] = {
    key.name: key.no_effect for key in LOG_CONFIG if key.no_effect is not None
}
"""Topic config -> why it is stored but has no effect in minikafka."""

LOG_MANAGER_CONFIG = ConfigDef(
    (
        ConfigKey(
            "log.retention.check.interval.ms",
            _LONG,
            "retention_check_interval_ms",
            at_least(1),
            "How often retention looks for segments to delete.",
        ),
        ConfigKey(
            "log.flush.scheduler.interval.ms",
            _LONG,
            "flush_check_interval_ms",
            at_least(1),
            "How often the flusher looks for logs due a flush (flush.ms).",
        ),
        ConfigKey(
            "log.flush.offset.checkpoint.interval.ms",
            _LONG,
            "recovery_point_checkpoint_interval_ms",
            at_least(1),
            "How often the recovery points are checkpointed.",
        ),
        ConfigKey(
            "log.flush.start.offset.checkpoint.interval.ms",
            _LONG,
            "start_offset_checkpoint_interval_ms",
            at_least(1),
            "How often the log start offsets are checkpointed.",
        ),
        ConfigKey(
            "log.cleaner.backoff.ms",
            _LONG,
            "cleaner_backoff_ms",
            at_least(1),
            "How long the cleaner sleeps when no log needs cleaning.",
        ),
        ConfigKey(
            "log.cleaner.enable",
            _BOOL,
            "cleaner_enable",
            doc="Whether compaction runs.",
        ),
        ConfigKey(
            "num.recovery.threads.per.data.dir",
            _INT,
            None,
            at_least(1),
            "Not used: recovery runs in the one thread that opens the logs.",
        ),
    )
)
"""The LogManager's broker keys (its ``LogManagerSchedule``): how often each background
task runs (the ones on an interval), and whether the cleaner runs at all."""
