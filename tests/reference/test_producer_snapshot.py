"""minikafka reads and writes Kafka's producer-state snapshots (``.snapshot``).

An idempotent confluent-kafka producer writes a little over a segment's worth to a
topic of the shared Kafka node, so the partition rolls and Kafka writes
``<offset>.snapshot`` with the producer's state as of the roll.

What it proves: minikafka's reader finds the one producer, with the id, epoch, last
sequence, last offset, offset delta and timestamp of its last batch before the roll
(read from Kafka's own segment), no transaction, and writes the same bytes Kafka wrote.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.log import iter_batches, read_snapshot, snapshot_bytes
from reference.kafka import KafkaNode

pytestmark = pytest.mark.external

TOPIC = "reference-snapshot"
SEGMENT_BYTES = 1024 * 1024  # Kafka 4's smallest segment.bytes
WAIT = 60.0


def test_minikafka_reads_and_writes_kafkas_producer_snapshot(
    kafka_reference: KafkaNode,
) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_reference.bootstrap})
    config = {"segment.bytes": str(SEGMENT_BYTES), "retention.ms": "-1"}
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=config)])[TOPIC].result(WAIT)
    producer = Producer(
        {
            "bootstrap.servers": kafka_reference.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "log_level": 0,
        }
    )
    partition = kafka_reference.log_dir / f"{TOPIC}-0"
    deadline = time.monotonic() + WAIT
    snapshots: list[Path] = []
    while not snapshots:
        assert time.monotonic() < deadline, "Kafka rolled no segment"
        for _ in range(300):  # 300 KB a round; a roll after about four
            producer.produce(TOPIC, b"x" * 1000, partition=0)
        assert producer.flush(WAIT) == 0
        snapshots = sorted(partition.glob("*.snapshot"))
    data = snapshots[0].read_bytes()
    rolled_at = int(snapshots[0].name.split(".")[0])
    # The last batch before the roll, from Kafka's first segment.
    [first_segment, *_] = sorted(partition.glob("*.log"))
    headers = [h for _, h in iter_batches(first_segment.read_bytes())]
    last = headers[-1]
    assert last.next_offset == rolled_at

    [entry] = read_snapshot(data)
    assert (entry.producer_id, entry.producer_epoch) == (
        last.producer_id,
        last.producer_epoch,
    )
    assert entry.last_sequence == last.last_sequence
    assert (entry.last_offset, entry.offset_delta) == (
        last.last_offset,
        last.last_offset_delta,
    )
    assert entry.timestamp == last.max_timestamp
    assert (entry.coordinator_epoch, entry.current_txn_first_offset) == (-1, -1)
    assert snapshot_bytes([entry]) == data
