"""DeleteRecords (KIP-107) from every client that sends it, against one real broker:
confluent-kafka's AdminClient (librdkafka), kafka-python's and aiokafka's admin
clients, minikafka's own AdminClient and ``minikafka delete-records``.

What each test proves:

- each client deletes the records below an offset: its answer is the low watermark,
  ListOffsets' earliest is the offset after it, and a consumer that starts at offset 0
  is reset to it and reads exactly the records from there on;
- offset -1 deletes up to the high watermark, and a record written afterwards is read;
- Kafka's refusals, each changing nothing: an offset past the high watermark or below
  -1 is OFFSET_OUT_OF_RANGE, a compacted topic POLICY_VIOLATION, the internal
  ``__consumer_offsets`` INVALID_TOPIC_EXCEPTION, and an unknown partition
  UNKNOWN_TOPIC_OR_PARTITION (asked by minikafka's client: librdkafka refuses it
  itself, without asking);
- ``minikafka delete-records --offset-json-file`` prints what kafka-delete-records.sh
  prints, a line per partition, and refuses a file that lists a partition twice.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess
from minikafka.client import AsyncAdminClient, DeletedRecords
from minikafka.client import KafkaError as MinikafkaError
from minikafka.common import TopicPartition
from tests.cluster._cluster import read_from_zero, watermarks

RECORDS = 20
WAIT = 30.0
_topics = itertools.count()


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})


def new_topic(
    broker: BrokerProcess, admin: AdminClient, config: dict[str, str] | None = None
) -> str:
    """A one-partition topic holding RECORDS records v0..v19."""
    name = f"trim-{next(_topics)}"
    created = admin.create_topics([NewTopic(name, 1, 1, config=config or {})])
    created[name].result(timeout=WAIT)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    for i in range(RECORDS):
        producer.produce(name, b"v%d" % i, key=b"k%d" % i, partition=0)
    assert producer.flush(WAIT) == 0
    return name


def confluent_delete(
    admin: AdminClient, topic: str, offset: int, partition: int = 0
) -> int:
    [future] = admin.delete_records(
        [KafkaTopicPartition(topic, partition, offset)], operation_timeout=WAIT
    ).values()
    return int(future.result(timeout=WAIT).low_watermark)


@pytest.mark.compat("DeleteRecords", "confluent-kafka")
def test_confluent_kafka_deletes_below_an_offset_and_to_the_high_watermark(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = new_topic(broker, admin)
    assert confluent_delete(admin, topic, 8) == 8
    assert watermarks(broker.bootstrap, topic) == (8, RECORDS)
    assert read_from_zero(broker.bootstrap, topic, RECORDS - 8) == [
        b"v%d" % i for i in range(8, RECORDS)
    ]
    # Below the start: nothing moves back, and the answer is the start.
    assert confluent_delete(admin, topic, 3) == 8
    assert confluent_delete(admin, topic, -1) == RECORDS
    assert watermarks(broker.bootstrap, topic) == (RECORDS, RECORDS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    producer.produce(topic, b"after", partition=0)
    assert producer.flush(WAIT) == 0
    assert read_from_zero(broker.bootstrap, topic, 1) == [b"after"]


@pytest.mark.compat("DeleteRecords", "confluent-kafka")
def test_what_cannot_be_deleted_is_refused_and_changes_nothing(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = new_topic(broker, admin)
    compacted = new_topic(broker, admin, {"cleanup.policy": "compact"})
    refusals = [
        (topic, 0, RECORDS + 1, KafkaError.OFFSET_OUT_OF_RANGE),
        (topic, 0, -2, KafkaError.OFFSET_OUT_OF_RANGE),
        (compacted, 0, 1, KafkaError.POLICY_VIOLATION),
        ("__consumer_offsets", 0, 0, KafkaError.TOPIC_EXCEPTION),
    ]
    # The offsets topic exists once a group has used the broker.
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "probe", "log_level": 0}
    )
    consumer.subscribe([topic])
    consumer.poll(1.0)
    consumer.close()
    for name, partition, offset, error in refusals:
        with pytest.raises(KafkaException) as refused:
            confluent_delete(admin, name, offset, partition)
        assert refused.value.args[0].code() == error, (name, partition, offset)
    assert watermarks(broker.bootstrap, topic) == (0, RECORDS)
    assert watermarks(broker.bootstrap, compacted) == (0, RECORDS)


@pytest.mark.compat("DeleteRecords", "kafka-python")
def test_kafka_python_deletes_records(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    from kafka import TopicPartition as KafkaPythonPartition
    from kafka.admin import KafkaAdminClient

    topic = new_topic(broker, admin)
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        answer = client.delete_records({KafkaPythonPartition(topic, 0): 5})
    finally:
        client.close()
    [(tp, result)] = answer.items()
    assert (tp.topic, tp.partition) == (topic, 0)
    assert result["low_watermark"] == 5
    assert watermarks(broker.bootstrap, topic) == (5, RECORDS)


@pytest.mark.compat("DeleteRecords", "aiokafka")
def test_aiokafka_deletes_records(broker: BrokerProcess, admin: AdminClient) -> None:
    import asyncio

    from aiokafka import (  # type: ignore[import-untyped]
        TopicPartition as AioPartition,
    )
    from aiokafka.admin import (  # type: ignore[import-untyped]
        AIOKafkaAdminClient,
        RecordsToDelete,
    )

    topic = new_topic(broker, admin)

    async def delete() -> Any:
        client = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await client.start()
        try:
            return await client.delete_records(
                {AioPartition(topic, 0): RecordsToDelete(before_offset=7)}
            )
        finally:
            await client.close()

    assert asyncio.run(delete()) == {AioPartition(topic, 0): 7}
    assert watermarks(broker.bootstrap, topic) == (7, RECORDS)


def test_minikafka_admin_client_deletes_records(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = new_topic(broker, admin)

    async def delete() -> dict[TopicPartition, DeletedRecords | MinikafkaError]:
        async with AsyncAdminClient.open({"bootstrap.servers": broker.bootstrap}) as a:
            return await a.delete_records(
                {TopicPartition(topic, 0): 6, TopicPartition(topic, 3): 1}
            )

    answer = trio.run(delete)
    assert answer[TopicPartition(topic, 0)] == DeletedRecords(6)
    missing = answer[TopicPartition(topic, 3)]
    assert isinstance(missing, MinikafkaError)
    assert missing.name() == "UNKNOWN_TOPIC_OR_PARTITION"
    assert watermarks(broker.bootstrap, topic) == (6, RECORDS)


def test_delete_records_tool_prints_kafkas_lines(
    broker: BrokerProcess, admin: AdminClient, tmp_path: Path
) -> None:
    topic = new_topic(broker, admin)
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": topic, "partition": 0, "offset": 4},
                    {"topic": topic, "partition": 9, "offset": 1},
                ],
                "version": 1,
            }
        )
    )

    def tool(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *(sys.executable, "-m", "minikafka.tools", "delete-records"),
                *("--bootstrap-server", broker.bootstrap),
                *("--offset-json-file", str(path)),
            ],
            capture_output=True,
            text=True,
            timeout=WAIT * 2,
            check=False,
        )

    done = tool(offsets)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 4",
        f"partition: {topic}-9\terror: org.apache.kafka.common.errors."
        f"UnknownTopicOrPartitionException: partition {topic}-9 does not exist",
    ]
    assert watermarks(broker.bootstrap, topic) == (4, RECORDS)
    twice = tmp_path / "twice.json"
    entry = {"topic": topic, "partition": 0, "offset": 9}
    twice.write_text(json.dumps({"partitions": [entry, entry], "version": 1}))
    refused = tool(twice)
    assert refused.returncode == 1
    assert "Offset json file contains duplicate topic partitions" in refused.stderr
    assert watermarks(broker.bootstrap, topic) == (4, RECORDS)
