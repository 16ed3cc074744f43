"""LogConfig: Kafka's keys, broker-level defaults, errors that name the key."""

from __future__ import annotations

import pytest

from minikafka.common import ConfigError
from minikafka.log import LOG_CONFIG, LogConfig


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1073741824
    assert config.index_interval_bytes == 4096
    assert config.retention_ms == 604800000
    assert config.cleanup_policy == frozenset({"delete"})


def test_topic_keys_override_broker_keys() -> None:
    config = LogConfig.from_properties(
        {
            "log.segment.bytes": "5000",
            "segment.bytes": "7000",
            "log.cleanup.policy": "compact,delete",
        }
    )
    assert config.segment_bytes == 7000
    assert config.compact
    assert config.delete


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "ten"),
        ("log.segment.bytes", "3000000000"),
        ("retention.ms", "-2"),
        ("cleanup.policy", "shred"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("message.timestamp.type", "Whenever"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        LogConfig.from_properties({key: value})
    assert caught.value.key == key


def test_every_setting_has_a_field() -> None:
    fields = {f.name for f in LogConfig.__attrs_attrs__}
    assert {s.field for s in LOG_CONFIG} <= fields
