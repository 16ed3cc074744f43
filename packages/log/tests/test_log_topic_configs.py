"""Every Kafka topic config is accepted with its type checked; KIP-354's max.compaction.lag.ms
is honoured by the cleaner."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common import ConfigError
from minikafka.log import LOG_CONFIG, NO_EFFECT, CompressionType, Log, LogConfig
from minikafka.log._cleaner import max_compaction_delay, should_clean
from minikafka.log.testing import ManualClock, keyed_batch

# Kafka 4.x's TopicConfig, less the two the controller and partition own
# (min.insync.replicas, unclean.leader.election.enable), with a valid non-default value.
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy": "compact,delete",
    "compression.type": "zstd",
    "compression.gzip.level": "9",
    "compression.lz4.level": "12",
    "compression.zstd.level": "-5",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "0",
    "flush.messages": "10",
    "flush.ms": "1000",
    "follower.replication.throttled.replicas": "0:1,1:2",
    "index.interval.bytes": "100",
    "leader.replication.throttled.replicas": "*",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "60000",
    "max.message.bytes": "2000000",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "86400000",
    "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.1",
    "min.compaction.lag.ms": "10",
    "preallocate": "true",
    "remote.log.copy.disable": "true",
    "remote.log.delete.on.disable": "true",
    "remote.storage.enable": "false",
    "retention.bytes": "1000000",
    "retention.ms": "-1",
    "segment.bytes": "1000000",
    "segment.index.bytes": "4096",
    "segment.jitter.ms": "100",
    "segment.ms": "100000",
}


def test_every_kafka_topic_config_is_a_log_key() -> None:
    """The table is complete: no documented topic config is missing (nor invented)."""
    keys = LOG_CONFIG.names()
    assert keys == set(KAFKA_TOPIC_CONFIGS)
    assert set(NO_EFFECT) <= keys


def test_every_kafka_topic_config_is_accepted_and_read() -> None:
    """A CreateTopics that works on Kafka works here: each value parses into its field."""
    config = LogConfig.from_properties(KAFKA_TOPIC_CONFIGS)
    assert config.max_compaction_lag_ms == 60_000
    assert config.target_compression is CompressionType.ZSTD
    assert config.compression_level == -5
    assert config.preallocate is True
    assert config.follower_replication_throttled_replicas == "0:1,1:2"
    assert (config.timestamp_before_max_ms, config.timestamp_after_max_ms) == (
        86400000,
        3600000,
    )


def test_the_keys_kafka_4_removed_are_unknown_and_the_future_is_bounded() -> None:
    """Kafka 4.0 removed three topic keys (a CreateTopics naming one is refused there,
    and so here) and refuses timestamps more than an hour ahead by default (KIP-937);
    the differential corpus compares both with Kafka 4.1."""
    removed = {
        "message.format.version",
        "message.downconversion.enable",
        "message.timestamp.difference.max.ms",
    }
    assert not removed & LOG_CONFIG.names()
    defaults = LogConfig()
    assert (defaults.timestamp_before_max_ms, defaults.timestamp_after_max_ms) == (
        2**63 - 1,
        3_600_000,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (
            "remote.storage.enable",
            "true",
        ),  # tiered storage does not exist: refused, not ignored
        ("compression.type", "brotli"),
        ("compression.gzip.level", "0"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("max.compaction.lag.ms", "0"),
        ("preallocate", "yes"),
        ("remote.log.copy.disable", "maybe"),
        ("leader.replication.throttled.replicas", "0-1"),
        ("local.retention.ms", "-3"),
        ("message.timestamp.before.max.ms", "-1"),
        ("log.message.timestamp.after.max.ms", "soon"),
    ],
)
def test_a_bad_value_names_its_key(key: str, value: str) -> None:
    """Types and ranges are Kafka's; the error names the key that was given."""
    with pytest.raises(ConfigError) as caught:
        LogConfig.from_properties({key: value})
    assert caught.value.key == key


def test_broker_level_keys_set_the_defaults() -> None:
    """compression.type and the KIP-390/KIP-937 keys have broker-level synonyms."""
    config = LogConfig.from_properties(
        {"compression.type": "gzip", "log.cleaner.max.compaction.lag.ms": "5"}
    )
    assert (config.target_compression, config.max_compaction_lag_ms) == (
        CompressionType.GZIP,
        5,
    )


# --- KIP-354 -----------------------------------------------------------------------------


def compacted_log(tmp_path: Path, clock: ManualClock, **config: object) -> Log:
    settings = LogConfig(
        cleanup_policy=frozenset({"compact"}),
        min_cleanable_dirty_ratio=0.99,  # the ratio alone never triggers here
        **config,  # type: ignore[arg-type]
    )
    log = Log.open(tmp_path / "t-0", settings, clock=clock)
    for i in range(4):
        log.append_as_leader(keyed_batch([(b"k", b"%d" % i)], clock.now_ms), 0)
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def test_a_dirty_log_older_than_max_compaction_lag_is_cleaned_whatever_its_ratio(
    tmp_path: Path,
) -> None:
    """KIP-354: once its oldest dirty record waited max.compaction.lag.ms, a log is due
    for cleaning even below min.cleanable.dirty.ratio; before that it is not."""
    clock = ManualClock()
    start = clock.now_ms
    log = compacted_log(tmp_path, clock, max_compaction_lag_ms=60_000)
    # The log was cleaned up to offset 2 before; 2 and 3 are dirty, ratio 0.5 < 0.99.
    assert not should_clean(log, 2, start + 60_000)
    assert max_compaction_delay(log, 2, start + 60_001) == 1
    assert should_clean(log, 2, start + 60_001)


def test_without_max_compaction_lag_the_ratio_decides(tmp_path: Path) -> None:
    """The default (Long.MAX_VALUE) changes nothing: a year later the ratio still rules."""
    clock = ManualClock()
    log = compacted_log(tmp_path, clock)
    assert not should_clean(log, 2, clock.now_ms + 365 * 24 * 3600 * 1000)


def test_a_compacted_topic_rolls_at_max_compaction_lag(tmp_path: Path) -> None:
    """The cleaner never touches the active segment, so a compacted topic rolls it by age at
    max.compaction.lag.ms when that is sooner than segment.ms (Kafka's maxSegmentMs)."""
    compacted = LogConfig(
        cleanup_policy=frozenset({"compact"}), max_compaction_lag_ms=1_000
    )
    deleting = LogConfig(max_compaction_lag_ms=1_000)
    assert compacted.max_segment_ms == 1_000
    assert deleting.max_segment_ms == deleting.segment_ms
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", compacted, clock=clock)
    log.append_as_leader(keyed_batch([(b"k", b"1")], clock.now_ms), 0)
    clock.advance(1_001)
    log.append_as_leader(keyed_batch([(b"k", b"2")], clock.now_ms), 0)
    assert [s.base_offset for s in log.segments] == [0, 1]
