"""A log's configuration: Kafka's topic-level keys, their broker-level defaults, validation.

Each setting has two names in Kafka: the topic-level key a topic overrides
(``segment.bytes``) and the broker-level key that sets the default for every topic
(``log.segment.bytes``). :data:`LOG_KEYS` is that table; a bad value raises
:class:`~minikafka.net.ConfigError` naming the key that was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from minikafka.net import ConfigError

MAX_LONG = 2**63 - 1  # Kafka's Long.MAX_VALUE: "never" for flush.messages and flush.ms


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

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

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
        return attrs.evolve(defaults or cls(), **values)  # type: ignore[arg-type]


@attrs.frozen
class Setting:
    topic_key: str
    broker_key: str
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
)
"""Every setting: topic-level key, broker-level key, field, parser."""
