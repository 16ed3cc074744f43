"""Real clients on the log you rebuilt: confluent-kafka through segments that roll.

A broker with tiny segments (``log.segment.bytes`` 8 KiB, an index entry every 512
bytes) takes records from a confluent-kafka producer until its partition has rolled
many times. A consumer reads them back from the start and from offsets in the middle of
old segments (each fetch a lookup in a sparse index and a scan), and the broker is
killed with SIGKILL and restarted (recovery, with no clean-shutdown marker): every
acknowledged record must be read back at its offset, and records produced after the
restart must continue the log. In a lab run the broker process runs your code (the
switch's environment reaches the processes a test starts).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import Consumer, NewTopic

from minikafka.broker.testing import BrokerProcess

TOPIC = "lab-log"
TIMEOUT = 30.0  # seconds, for each wait on the broker
OVERRIDES = {"log.segment.bytes": "8192", "log.index.interval.bytes": "512"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data", overrides=OVERRIDES) as process:
        yield process


def produce(bootstrap: str, values: list[bytes]) -> list[int]:
    """Produce ``values`` with ``acks=all``; the offset each one was acknowledged at."""
    offsets: dict[int, int] = {}
    errors: list[KafkaError | None] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 2048}
    )
    for index, value in enumerate(values):

        def on_delivery(
            error: KafkaError | None, message: Message, i: int = index
        ) -> None:
            offset = message.offset()
            if error is not None or offset is None:
                errors.append(error)
            else:
                offsets[i] = offset

        producer.produce(TOPIC, value=value, partition=0, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT) == 0, "records still undelivered after the deadline"
    assert errors == []
    return [offsets[i] for i in range(len(values))]


def read_from(bootstrap: str, offset: int, count: int) -> list[tuple[int, bytes]]:
    """``count`` records from ``offset`` on, as (offset, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "lab-log-assign-only",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    got: list[tuple[int, bytes]] = []
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, offset)])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < count:
            assert time.monotonic() < deadline, f"read {len(got)} of {count} records"
            for message in consumer.consume(num_messages=500, timeout=0.5):
                assert message.error() is None, message.error()
                at, value = message.offset(), message.value()
                assert at is not None
                assert isinstance(value, bytes)
                got.append((at, value))
    finally:
        consumer.close()
    return got[:count]


def test_records_cross_rolled_segments_and_a_kill(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(TIMEOUT)
    values = [b"%05d:" % i + b"x" * 100 for i in range(1500)]
    assert produce(broker.bootstrap, values) == list(range(1500))
    segments = sorted((broker.data_dir / f"{TOPIC}-0").glob("*.log"))
    assert len(segments) >= 10, segments  # ~165 KB in 8 KiB segments
    assert all(path.stat().st_size <= 8192 for path in segments)

    expected = list(enumerate(values))
    for start in (777, 1499):  # inside old segments: the index, then a scan
        assert read_from(broker.bootstrap, start, 1500 - start) == expected[start:]

    broker.kill()  # no flush, no clean-shutdown marker: the next start recovers
    broker.start()
    assert read_from(broker.bootstrap, 0, 1500) == expected
    more = [b"after:%04d" % i for i in range(100)]
    assert produce(broker.bootstrap, more) == list(range(1500, 1600))
    assert read_from(broker.bootstrap, 1450, 150) == expected[1450:] + list(
        enumerate(more, start=1500)
    )
