"""DescribeProducers (KIP-664) from kafka-python's admin client, against a real broker.

What each test proves: after an idempotent producer (confluent-kafka's) wrote to a
partition, the leader describes it with the producer id and epoch the broker handed out
(InitProducerId), the sequence of its last record and its last batch's timestamp, with no
coordinator epoch and no open transaction; a partition nobody wrote to has no active
producer; a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kafka.errors as errors
import pytest
from confluent_kafka import Producer
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from minikafka.broker.testing import BrokerProcess
from tests.compat._groups import unique_name
from tests.compat.test_confluent import TIMEOUT


@pytest.fixture
def admin(broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        yield client
    finally:
        client.close()


@pytest.mark.compat("DescribeProducers", "kafka-python")
def test_the_leader_describes_the_idempotent_producer_that_wrote(
    request: pytest.FixtureRequest, broker: BrokerProcess, admin: KafkaAdminClient
) -> None:
    topic = unique_name(request, "dp-")
    admin.create_topics([NewTopic(topic, 2, 1)])
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True}
    )
    for i in range(5):
        producer.produce(topic, value=b"v%d" % i, partition=0, timestamp=1_000 + i)
    assert producer.flush(TIMEOUT) == 0
    written, idle = TopicPartition(topic, 0), TopicPartition(topic, 1)
    answer: dict[TopicPartition, Any] = admin.describe_producers([written, idle])
    [state] = answer[written].active_producers
    assert state.producer_id >= 0
    assert state.producer_epoch == 0
    assert state.last_sequence == 4  # five records, sequences 0-4
    assert state.last_timestamp == 1_004
    assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)
    assert answer[idle].active_producers == []
    # kafka-python refuses a partition its metadata lacks before asking; asked of the
    # broker itself, the broker answers UNKNOWN_TOPIC_OR_PARTITION.
    missing = TopicPartition(topic, 9)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.describe_producers([missing], broker_id=1)
