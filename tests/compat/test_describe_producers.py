"""DescribeProducers (KIP-664) from kafka-python's admin client, against a real broker.

What each test proves: after an idempotent producer (confluent-kafka's) wrote to a
partition, the leader describes it with the producer id and epoch the broker handed out
(InitProducerId), the sequence of its last record and its last batch's timestamp, with no
coordinator epoch and no open transaction; a partition nobody wrote to has no active
producer; a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION. A transactional
producer's open transaction is described with its first offset in the partition (what
``kafka-transactions find-hanging`` looks for), and once it commits with none, and the
coordinator epoch of the marker that ended it.
"""

from __future__ import annotations

import time
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


@pytest.mark.compat("DescribeProducers", "kafka-python")
def test_an_open_transaction_is_described_with_its_first_offset(
    request: pytest.FixtureRequest, broker: BrokerProcess, admin: KafkaAdminClient
) -> None:
    topic = unique_name(request, "dp-txn-")
    admin.create_topics([NewTopic(topic, 1, 1)])
    tp = TopicPartition(topic, 0)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):  # offsets 0-2, outside any transaction
        plain.produce(topic, value=b"plain %d" % i, partition=0)
    assert plain.flush(TIMEOUT) == 0
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": topic}
    )
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"in a transaction", partition=0)
    assert producer.flush(TIMEOUT) == 0

    def transactional() -> Any:
        """The producer with a producer id (the plain one has none)."""
        answer: dict[TopicPartition, Any] = admin.describe_producers([tp])
        [state] = answer[tp].active_producers
        return state

    state = transactional()
    assert state.current_transaction_start_offset == 3  # its first record's offset
    assert state.coordinator_epoch == -1  # no marker yet
    producer.commit_transaction(TIMEOUT)
    # The commit is answered once decided; its marker reaches the partition after.
    deadline = time.monotonic() + TIMEOUT
    while (state := transactional()).current_transaction_start_offset != -1:
        assert time.monotonic() < deadline, f"the commit marker is written: {state}"
        time.sleep(0.05)  # polling the leader, inside the deadline
    assert state.coordinator_epoch >= 0  # the coordinator's epoch the marker carried
