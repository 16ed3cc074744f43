"""Changing a topic's configuration on a live broker, from real clients: IncrementalAlterConfigs
(KIP-339) and the legacy AlterConfigs (KIP-133), in KRaft mode.

What each test proves:

- a change is answered once durable and DescribeConfigs then shows it as the topic's
  DYNAMIC_TOPIC_CONFIG; DELETE falls back to the broker's default; APPEND and SUBTRACT
  edit a LIST key (``cleanup.policy``) starting from its default;
- the legacy AlterConfigs makes the request's set the whole set: a key it leaves out
  goes back to its default;
- ``validate_only`` checks and changes nothing;
- bad input gets Kafka's error and changes nothing: an unknown key or a bad value
  INVALID_CONFIG, APPEND to a non-list key INVALID_CONFIG, an unknown topic
  UNKNOWN_TOPIC_OR_PARTITION, a static broker key or a bad broker value
  INVALID_REQUEST; one bad entry refuses its whole resource;
- a broker's dynamic defaults (KIP-226), cluster-wide or its own, are what a topic
  without an override gets, with the source DescribeConfigs names; the broker's own
  beats the cluster's, deleting both brings the static value back, and a topic
  without an override enforces the new ``message.max.bytes`` at once;
- the new settings take effect without a restart: a produce larger than the new
  ``max.message.bytes`` is refused, and ``retention.ms`` lowered on a topic with old
  segments moves its log start offset at the next retention check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient  # type: ignore[import-untyped]
from aiokafka.admin.config_resource import (  # type: ignore[import-untyped]
    ConfigResource as AioConfigResource,
)
from aiokafka.admin.config_resource import ConfigResourceType as AioResourceType
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpResourceType
from kafka.admin import KafkaAdminClient

from minikafka.broker.testing import BrokerProcess
from minikafka.client import AdminClient as MiniAdmin
from minikafka.client import AlterConfigOp as MiniOp
from minikafka.client import AlterConfigOpType as MiniOpType
from minikafka.client import ConfigResource as MiniResource
from tests.compat._clients import AsyncioThread
from tests.compat._groups import unique_name
from tests.compat.test_confluent import (
    TIMEOUT,
    Outgoing,
    described,
    new_consumer,
    produce,
    result_of,
)

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND, SUBTRACT = AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT
DYNAMIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value


@pytest.fixture
def topic(request: pytest.FixtureRequest, broker: BrokerProcess) -> str:
    """A topic of this test alone, created with one override."""
    name = unique_name(request, "cfg-")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new = NewTopic(name, 1, 1, config={"retention.ms": "3600000"})
    assert result_of(admin.create_topics([new])) == {name: None}
    return name


@pytest.fixture
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def incremental(
    admin: AdminClient,
    topic: str,
    *entries: tuple[str, str | None, AlterConfigOpType],
    validate_only: bool = False,
    kind: ResourceType = ResourceType.TOPIC,
) -> object:
    """IncrementalAlterConfigs of one resource: None, or the error's name."""
    resource = ConfigResource(
        kind,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)
            for name, value, op in entries
        ],
    )
    futures = admin.incremental_alter_configs([resource], validate_only=validate_only)
    [(_, outcome)] = result_of(futures).items()
    return outcome


def values(admin: AdminClient, topic: str) -> dict[str, tuple[str, int]]:
    """Each key's value and source, as DescribeConfigs tells them."""
    return {
        name: (entry.value, entry.source)
        for name, entry in described(admin, topic).items()
    }


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
@pytest.mark.compat("DescribeConfigs", "confluent-kafka")
def test_incremental_alter_configs_set_delete_append_subtract(
    admin: AdminClient, topic: str
) -> None:
    assert incremental(admin, topic, ("retention.ms", "60000", SET)) is None
    assert values(admin, topic)["retention.ms"] == ("60000", DYNAMIC)
    # APPEND starts from the key's default ("delete"); SUBTRACT removes from the value.
    assert incremental(admin, topic, ("cleanup.policy", "compact", APPEND)) is None
    assert values(admin, topic)["cleanup.policy"] == ("delete,compact", DYNAMIC)
    assert incremental(admin, topic, ("cleanup.policy", "delete", SUBTRACT)) is None
    assert values(admin, topic)["cleanup.policy"] == ("compact", DYNAMIC)
    # DELETE removes the override: the broker's default is back, as a default.
    assert incremental(admin, topic, ("retention.ms", None, DELETE)) is None
    assert values(admin, topic)["retention.ms"] == ("604800000", DEFAULT)
    assert values(admin, topic)["cleanup.policy"] == ("compact", DYNAMIC)


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
def test_validate_only_checks_and_changes_nothing(
    admin: AdminClient, topic: str
) -> None:
    before = values(admin, topic)
    assert (
        incremental(admin, topic, ("retention.ms", "1", SET), validate_only=True)
        is None
    )
    assert (
        incremental(admin, topic, ("retention.ms", "soon", SET), validate_only=True)
        == "INVALID_CONFIG"
    )
    assert values(admin, topic) == before


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
def test_bad_changes_get_kafkas_errors_and_change_nothing(
    admin: AdminClient, topic: str
) -> None:
    before = values(admin, topic)
    refused = {
        "unknown key": incremental(admin, topic, ("no.such.key", "1", SET)),
        "bad value": incremental(admin, topic, ("retention.ms", "soon", SET)),
        "below its minimum": incremental(admin, topic, ("segment.bytes", "1", SET)),
        "append to a non-list": incremental(
            admin, topic, ("retention.ms", "5", APPEND)
        ),
        # One bad entry refuses the good one beside it.
        "one bad of two": incremental(
            admin,
            topic,
            ("retention.ms", "5", SET),
            ("max.message.bytes", "big", SET),
        ),
        "unknown topic": incremental(
            admin, topic + "-missing", ("retention.ms", "5", SET)
        ),
        "a static broker key": incremental(
            admin, "1", ("log.dirs", "/elsewhere", SET), kind=ResourceType.BROKER
        ),
        "a bad broker value": incremental(
            admin, "1", ("log.retention.ms", "soon", SET), kind=ResourceType.BROKER
        ),
    }
    assert refused == {
        "unknown key": "INVALID_CONFIG",
        "bad value": "INVALID_CONFIG",
        "below its minimum": "INVALID_CONFIG",
        "append to a non-list": "INVALID_CONFIG",
        "one bad of two": "INVALID_CONFIG",
        "unknown topic": "UNKNOWN_TOPIC_OR_PART",
        "a static broker key": "INVALID_REQUEST",
        "a bad broker value": "INVALID_REQUEST",
    }
    assert values(admin, topic) == before


@pytest.mark.compat("AlterConfigs", "confluent-kafka")
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_legacy_alter_configs_replaces_the_whole_set(
    admin: AdminClient, topic: str
) -> None:
    resource = ConfigResource(
        ResourceType.TOPIC, topic, set_config={"max.message.bytes": "200000"}
    )
    assert result_of(admin.alter_configs([resource])) == {resource: None}
    now = values(admin, topic)
    assert now["max.message.bytes"] == ("200000", DYNAMIC)
    assert now["retention.ms"] == ("604800000", DEFAULT)  # left out: deleted


@pytest.mark.compat("IncrementalAlterConfigs", "kafka-python")
@pytest.mark.compat("AlterConfigs", "kafka-python")
def test_kafka_python_alters_a_topics_configs_both_ways(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        # IncrementalAlterConfigs (what kafka-python picks when the broker offers it).
        resource = KpConfigResource(
            KpResourceType.TOPIC, topic, configs={"retention.ms": "120000"}
        )
        answer: Any = client.alter_configs([resource], incremental=True)
        assert answer == {"topic": {topic: "OK"}}
        assert values(admin, topic)["retention.ms"] == ("120000", DYNAMIC)
        # AlterConfigs, which kafka-python fills with the other overrides first.
        resource = KpConfigResource(
            KpResourceType.TOPIC, topic, configs={"segment.ms": "86400000"}
        )
        answer = client.alter_configs([resource], incremental=False)
        assert answer == {"topic": {topic: "OK"}}
    finally:
        client.close()
    now = values(admin, topic)
    assert now["segment.ms"] == ("86400000", DYNAMIC)
    assert now["retention.ms"] == ("120000", DYNAMIC)


@pytest.mark.compat("AlterConfigs", "aiokafka")
def test_aiokafka_alters_a_topics_configs(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    async def alter() -> list[Any]:
        client = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await client.start()
        try:
            resource = AioConfigResource(
                AioResourceType.TOPIC, topic, configs={"segment.ms": "86400000"}
            )
            answers: list[Any] = await client.alter_configs([resource])
            return answers
        finally:
            await client.close()

    with AsyncioThread() as loop:
        answers = loop.run(alter())
    # One AlterConfigs answer, one resource in it: no error.
    assert [r[0] for answer in answers for r in answer.resources] == [0]
    now = values(admin, topic)
    assert now["segment.ms"] == ("86400000", DYNAMIC)
    # The legacy API replaces the whole set: the topic's creation override is gone.
    assert now["retention.ms"] == ("604800000", DEFAULT)


# --- the change takes effect at once ---------------------------------------------------


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
def test_a_lower_max_message_bytes_refuses_the_next_large_record(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    produce(broker.bootstrap, topic, [Outgoing(value=b"x" * 5000)])
    assert incremental(admin, topic, ("max.message.bytes", "2000", SET)) is None
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    errors: list[KafkaError | None] = []
    producer.produce(
        topic, value=b"x" * 5000, on_delivery=lambda e, _: errors.append(e)
    )
    assert producer.flush(TIMEOUT) == 0
    assert [e and e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]


@pytest.fixture
def retention_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker that applies retention every 200 ms (Kafka checks every 5 minutes)."""
    overrides = {"log.retention.check.interval.ms": "200"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as process:
        yield process


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
def test_lowering_retention_ms_deletes_old_segments_at_the_next_check(
    retention_broker: BrokerProcess,
) -> None:
    bootstrap = retention_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    name = "cfg-retention"
    # Small segments, each rolled after ~10 records; a week's retention keeps them all.
    new = NewTopic(name, 1, 1, config={"segment.bytes": "1024"})
    assert result_of(admin.create_topics([new])) == {name: None}
    produce(bootstrap, name, [Outgoing(value=b"r" * 100)] * 50, **{"linger.ms": 0})
    assert low_watermark(bootstrap, name) == 0

    assert incremental(admin, name, ("retention.ms", "1", SET)) is None
    # Every record is older than 1 ms and below the high watermark: the next check
    # deletes every segment, the active one too once a new one is rolled (as Kafka's
    # retention does), and the log starts where it ends.
    deadline = time.monotonic() + TIMEOUT
    while (low := low_watermark(bootstrap, name)) != 50:
        assert time.monotonic() < deadline, f"the log still starts at {low}"
        time.sleep(0.2)  # the broker's retention check runs every 200 ms


def low_watermark(bootstrap: str, topic: str) -> int:
    consumer = new_consumer(bootstrap)
    try:
        low, _ = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT, cached=False
        )
    except KafkaException as exc:  # pragma: no cover - reported as the failure
        raise AssertionError(f"no watermarks for {topic}: {exc}") from exc
    finally:
        consumer.close()
    assert isinstance(low, int)
    return low


# --- a broker's dynamic defaults (KIP-226) ------------------------------------------------


@pytest.fixture
def own_admin(own_broker: BrokerProcess) -> AdminClient:
    """An admin of a broker of this test alone: its broker defaults change."""
    return AdminClient({"bootstrap.servers": own_broker.bootstrap})


def cluster_default(broker: BrokerProcess, changes: dict[str, str | None]) -> None:
    """Change the cluster-wide dynamic broker default (the resource ``""``, which none
    of the Python clients here can name: minikafka's own admin client does, as Java's
    Admin and kafka-configs --entity-default do): a value SETs the key, None DELETEs
    it."""
    client = MiniAdmin({"bootstrap.servers": broker.bootstrap})
    ops = [
        MiniOp(k, v) if v is not None else MiniOp(k, None, MiniOpType.DELETE)
        for k, v in changes.items()
    ]
    resource = MiniResource(ResourceType.BROKER.value, "")
    [future] = client.incremental_alter_configs({resource: ops}).values()
    assert future.result(timeout=TIMEOUT) is None


def broker_values(admin: AdminClient, name: str) -> dict[str, tuple[str, int]]:
    resource = ConfigResource(ResourceType.BROKER, name)
    [(_, configs)] = result_of(admin.describe_configs([resource])).items()
    assert isinstance(configs, dict)
    return {key: (entry.value, entry.source) for key, entry in configs.items()}


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
@pytest.mark.compat("DescribeConfigs", "confluent-kafka")
def test_broker_defaults_change_what_topics_without_overrides_get(
    own_broker: BrokerProcess, own_admin: AdminClient
) -> None:
    admin, topic = own_admin, "cfg-defaults"
    assert result_of(admin.create_topics([NewTopic(topic, 1, 1)])) == {topic: None}
    broker = ResourceType.BROKER
    cluster_wide = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    own = ConfigSource.DYNAMIC_BROKER_CONFIG.value

    cluster_default(own_broker, {"log.retention.ms": "5000"})
    assert values(admin, topic)["retention.ms"] == ("5000", cluster_wide)
    # The broker's own beats the cluster-wide default.
    assert (
        incremental(admin, "1", ("log.retention.ms", "7000", SET), kind=broker) is None
    )
    assert broker_values(admin, "1")["log.retention.ms"] == ("7000", own)
    assert values(admin, topic)["retention.ms"] == ("7000", own)
    assert (
        incremental(admin, "1", ("log.retention.ms", None, DELETE), kind=broker) is None
    )
    assert values(admin, topic)["retention.ms"] == ("5000", cluster_wide)
    cluster_default(own_broker, {"log.retention.ms": None})
    assert values(admin, topic)["retention.ms"] == ("604800000", DEFAULT)

    # A topic without an override enforces a lower cluster-wide message.max.bytes now.
    cluster_default(own_broker, {"message.max.bytes": "2000"})
    assert values(admin, topic)["max.message.bytes"] == ("2000", cluster_wide)
    producer = Producer({"bootstrap.servers": own_broker.bootstrap, "linger.ms": 0})
    errors: list[KafkaError | None] = []
    producer.produce(
        topic, value=b"x" * 5000, on_delivery=lambda e, _: errors.append(e)
    )
    assert producer.flush(TIMEOUT) == 0
    assert [e and e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]
