"""minikafka.client's AdminClient against the real broker, each answer checked with a
client nobody here wrote (confluent-kafka) or with the broker's own view."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient as RdAdminClient

from minikafka.broker.testing import BrokerProcess
from minikafka.client import (
    RESOURCE_TOPIC,
    AdminClient,
    ConfigError,
    ConfigResource,
    Consumer,
    KafkaException,
    NewPartitions,
    NewTopic,
    Producer,
)


def test_topics_are_created_grown_described_and_deleted(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    created = admin.create_topics(
        [NewTopic("a-orders", 3, 1, {"retention.ms": "60000"}), NewTopic("a-bad", 0, 1)]
    )
    assert created["a-orders"].result(30) is None
    with pytest.raises(KafkaException) as caught:
        created["a-bad"].result(30)
    assert caught.value.error.name() == "INVALID_PARTITIONS"
    again = admin.create_topics([NewTopic("a-orders", 3, 1)])["a-orders"]
    with pytest.raises(KafkaException) as caught:
        again.result(30)
    assert caught.value.error.name() == "TOPIC_ALREADY_EXISTS"
    # librdkafka sees what was made.
    theirs = RdAdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(
        timeout=30
    )
    assert len(theirs.topics["a-orders"].partitions) == 3
    assert (
        admin.create_partitions([NewPartitions("a-orders", 5)])["a-orders"].result(30)
        is None
    )
    deadline = time.monotonic() + 30
    while len(admin.list_topics("a-orders").topics["a-orders"].partitions) != 5:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    resource = ConfigResource(RESOURCE_TOPIC, "a-orders")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "60000"
    assert not configs["retention.ms"].is_default
    assert admin.delete_topics(["a-orders"])["a-orders"].result(30) is None
    deadline = time.monotonic() + 30
    while "a-orders" in admin.list_topics().topics:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_groups_are_listed_described_and_deleted(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("a-events", 2, 1)])["a-events"].result(30)
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        producer.produce("a-events", b"x")
        producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "a-group",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    consumer.subscribe(["a-events"])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 2:
        assert time.monotonic() < deadline
        consumer.consume(10, 0.1)
    assert "a-group" in admin.list_consumer_groups().result(30)
    described = admin.describe_consumer_groups(["a-group"])["a-group"].result(30)
    assert described.state == "Stable"
    assert described.protocol_type == "consumer"
    [member] = described.members
    assert sorted(tp.partition for tp in member.assignment) == [0, 1]
    with pytest.raises(KafkaException) as caught:  # a group with members stays
        admin.delete_consumer_groups(["a-group"])["a-group"].result(30)
    assert caught.value.error.name() == "NON_EMPTY_GROUP"
    consumer.commit(asynchronous=False)
    consumer.close()
    assert admin.delete_consumer_groups(["a-group"])["a-group"].result(30) is None


def test_the_admin_client_refuses_unknown_keys() -> None:
    with pytest.raises(ConfigError, match=r"^linger\.ms: not an admin client"):
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 1})
