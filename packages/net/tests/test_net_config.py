from __future__ import annotations

import pytest

from minikafka.common import ConfigError
from minikafka.net import Listener, NetConfig, parse_listeners


def test_listeners_parse() -> None:
    assert parse_listeners("PLAINTEXT://127.0.0.1:9092,internal://[::1]:0") == (
        Listener("PLAINTEXT", "127.0.0.1", 9092),
        Listener("INTERNAL", "::1", 0),
    )
    assert parse_listeners("PLAINTEXT://:9092") == (
        Listener("PLAINTEXT", "0.0.0.0", 9092),
    )


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"listeners": "127.0.0.1:9092"}, "listeners"),
        ({"listeners": "PLAINTEXT://h:99999"}, "listeners"),
        ({"listeners": "A://h:1,A://h:2"}, "listeners"),
        ({"num.network.threads": "three"}, "num.network.threads"),
        ({"num.io.threads": "0"}, "num.io.threads"),
        ({"queued.max.requests": "-1"}, "queued.max.requests"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties(props)
    assert err.value.key == key
    assert str(err.value).startswith(key)


def test_from_properties_reads_kafka_names() -> None:
    config = NetConfig.from_properties(
        {
            "num.network.threads": "2",
            "connections.max.idle.ms": "1000",
            "other.key": "x",
        }
    )
    assert config.num_network_threads == 2
    assert config.connections_max_idle_ms == 1000
    assert config.num_io_threads == 8  # Kafka's default
