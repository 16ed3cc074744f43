"""The producer's configuration: Kafka's keys and defaults, refusals that name the key."""

from __future__ import annotations

import re

import pytest

from minikafka.client import ConfigError, ConsumerConfig, ProducerConfig
from minikafka.common import Acks
from minikafka.log import CompressionType

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}


def test_kafka_4_defaults() -> None:
    config = ProducerConfig.from_dict(BOOT)
    assert config.bootstrap_servers == (("127.0.0.1", 9092),)
    assert config.acks is Acks.ALL
    assert config.enable_idempotence
    assert config.linger_ms == 5  # KIP-1030
    assert (config.batch_size, config.buffer_memory, config.max_in_flight) == (
        16_384,
        33_554_432,
        5,
    )
    assert (config.request_timeout_ms, config.delivery_timeout_ms) == (30_000, 120_000)
    assert config.retries == 2**31 - 1
    assert config.retry_backoff_ms == 100


def test_values_as_a_properties_file_holds_them() -> None:
    config = ProducerConfig.from_dict(
        {
            **BOOT,
            "acks": "1",
            "enable.idempotence": "false",
            "linger.ms": "20",
            "compression.type": "zstd",
            "max.in.flight.requests.per.connection": "1",
        }
    )
    assert config.acks is Acks.LEADER
    assert not config.enable_idempotence
    assert config.linger_ms == 20
    assert config.compression_type is CompressionType.ZSTD
    assert config.max_in_flight == 1


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("linger.ms", -1),
        ("linger.ms", "soon"),
        ("batch.size", True),
        ("acks", "2"),
        ("compression.type", "brotli"),
        ("enable.idempotence", "yes"),
        ("bootstrap.servers", "localhost"),
        ("partitioner.class", "com.example.MyPartitioner"),
        ("on_delivery", "not a function"),
    ],
)
def test_a_bad_value_names_its_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: invalid value"):
        ProducerConfig.from_dict({**BOOT, key: value})


def test_the_partitioners_kip_794_deprecated_are_refused_with_their_replacement() -> (
    None
):
    with pytest.raises(
        ConfigError, match=r"leave partitioner.class empty: the built-in partitioner"
    ):
        ProducerConfig.from_dict(
            {
                **BOOT,
                "partitioner.class": "org.apache.kafka.clients.producer.DefaultPartitioner",
            }
        )
    with pytest.raises(ConfigError, match=r"set partitioner.ignore.keys=true$"):
        ProducerConfig.from_dict(
            {**BOOT, "partitioner.class": "UniformStickyPartitioner"}
        )


def test_unknown_and_missing_keys_are_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"^interceptor.classes: not a producer configuration key"
    ):
        ProducerConfig.from_dict({**BOOT, "interceptor.classes": "x.Y"})
    with pytest.raises(ConfigError, match=r"^bootstrap.servers: required"):
        ProducerConfig.from_dict({"linger.ms": 1})


def test_idempotence_yields_when_on_by_default_and_refuses_when_asked_for() -> None:
    # Kafka: an explicit enable.idempotence=true with acks=1 is a configuration error;
    # idempotence on only by default is turned off instead.
    assert not ProducerConfig.from_dict({**BOOT, "acks": 1}).enable_idempotence
    with pytest.raises(ConfigError, match=r"^acks: must be all"):
        ProducerConfig.from_dict({**BOOT, "acks": 1, "enable.idempotence": True})
    with pytest.raises(
        ConfigError, match=r"^max.in.flight.requests.per.connection: must be at most 5"
    ):
        ProducerConfig.from_dict(
            {
                **BOOT,
                "max.in.flight.requests.per.connection": 6,
                "enable.idempotence": "true",
            }
        )
    assert not ProducerConfig.from_dict(
        {**BOOT, "max.in.flight.requests.per.connection": 6}
    ).enable_idempotence


def test_delivery_timeout_must_cover_linger_and_one_request() -> None:
    with pytest.raises(ConfigError, match=r"^delivery.timeout.ms: must be at least"):
        ProducerConfig.from_dict(
            {**BOOT, "delivery.timeout.ms": 1_000, "request.timeout.ms": 2_000}
        )


def test_group_protocol_is_classic_by_default_and_consumer_on_request() -> None:
    base = {"bootstrap.servers": "localhost:9092", "group.id": "g"}
    assert ConsumerConfig.from_dict(base).group_protocol == "classic"
    chosen = ConsumerConfig.from_dict(
        {**base, "group.protocol": "CONSUMER", "group.remote.assignor": "range"}
    )
    assert chosen.group_protocol == "consumer"
    assert chosen.group_remote_assignor == "range"
    with pytest.raises(ConfigError, match=r"^group.protocol: invalid value"):
        ConsumerConfig.from_dict({**base, "group.protocol": "eager"})
