"""minikafka.client's Producer against the real broker, checked by a client nobody here
wrote (confluent-kafka/librdkafka reads everything back).

Guarantees under test: every record acknowledged is read back, once, in the order it
was produced within its partition, at the offset its delivery report gave; keys land
on the partitions librdkafka's murmur2 partitioner picks (and so the Java client's);
and an idempotent producer keeps those guarantees through a broker killed with SIGKILL
and restarted while it sends (acknowledged means durable, no duplicates).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import KafkaError as RdKafkaError
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess
from minikafka.client import (
    ConfigError,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    partition_for_key,
)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def read_back(bootstrap: str, topic: str, partitions: int, count: int) -> list[Any]:
    """Every record of ``topic`` from the beginning (until ``count`` or 60 s)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "read-back",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[Any] = []
    deadline = time.monotonic() + 60
    try:
        while len(records) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                assert error.code() == RdKafkaError._PARTITION_EOF
                continue
            records.append(message)
    finally:
        consumer.close()
    return records


def test_records_arrive_once_in_order_where_the_reports_say(
    broker: BrokerProcess,
) -> None:
    create_topic(broker.bootstrap, "p-order", 6)
    reports: list[tuple[KafkaError | None, Message]] = []
    with Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2}) as producer:
        for i in range(3_000):
            producer.produce(
                "p-order",
                f"v{i:05d}".encode(),
                key=f"key-{i % 40}".encode(),
                headers=[("n", str(i).encode())],
                on_delivery=lambda err, msg: reports.append((err, msg)),
            )
            if i % 500 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0
    assert len(reports) == 3_000
    assert all(err is None for err, _ in reports)
    read = read_back(broker.bootstrap, "p-order", 6, 3_000)
    assert len(read) == 3_000
    where = {(m.partition(), m.offset()): m.value() for m in read}
    assert len(where) == 3_000  # each offset once
    for _, report in reports:  # the report's offset is where the record is
        assert where[(report.partition(), report.offset())] == report.value()
    by_partition: dict[int, list[int]] = {}
    for m in sorted(read, key=lambda m: (m.partition(), m.offset())):
        by_partition.setdefault(m.partition(), []).append(int(m.value()[1:]))
    for values in by_partition.values():
        assert values == sorted(values)  # produced order within each partition
    assert read[0].headers() == [("n", read[0].value()[1:].lstrip(b"0") or b"0")]


def test_keys_land_where_librdkafkas_murmur2_partitioner_puts_them(
    broker: BrokerProcess,
) -> None:
    create_topic(broker.bootstrap, "p-keys", 12)
    keys = [f"user-{i}-{i * 7919 % 1000}".encode() for i in range(300)]
    theirs: dict[bytes | None, int | None] = {}
    rd = RdProducer(
        {"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"}
    )
    for key in keys:
        rd.produce(
            "p-keys",
            b"x",
            key=key,
            on_delivery=lambda e, m: theirs.update({m.key(): m.partition()}),
        )
    assert rd.flush(30) == 0
    ours: dict[bytes | None, int] = {}
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        for key in keys:
            producer.produce(
                "p-keys",
                b"y",
                key=key,
                on_delivery=lambda e, m: ours.update({m.key(): m.partition()}),
            )
        producer.flush(30)
    assert len(theirs) == 300
    assert ours == theirs
    assert {
        k: partition_for_key(k, 12) for k in keys
    } == theirs  # and the Java client's
    assert len(set(theirs.values())) == 12


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_is_read_back(broker: BrokerProcess, codec: str) -> None:
    topic = f"p-codec-{codec}"
    with Producer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": codec}
    ) as producer:
        for i in range(200):
            producer.produce(topic, f"{codec}-{i}".encode() * 5)
        assert producer.flush(30) == 0
    read = read_back(broker.bootstrap, topic, 1, 200)
    assert [m.value() for m in read] == [
        f"{codec}-{i}".encode() * 5 for i in range(200)
    ]


def test_acks_0_sends_without_offsets(broker: BrokerProcess) -> None:
    reports: list[tuple[KafkaError | None, int]] = []
    config = {"bootstrap.servers": broker.bootstrap, "acks": 0}
    with Producer(config) as producer:
        for i in range(50):
            producer.produce(
                "p-acks0",
                str(i),
                on_delivery=lambda e, m: reports.append((e, m.offset())),
            )
        producer.flush(30)
    assert reports == [(None, -1)] * 50  # written, never answered: no offset to report
    assert [m.value() for m in read_back(broker.bootstrap, "p-acks0", 1, 50)] == [
        str(i).encode() for i in range(50)
    ]


def test_the_readmes_example_runs_as_written(
    broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's producer example, against this broker instead of make run's."""
    text = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    start = text.index("```python\nfrom minikafka.client import Producer")
    code = text[start + len("```python\n") : text.index("```", start + 10)]
    assert "127.0.0.1:9092" in code
    exec(
        compile(code.replace("127.0.0.1:9092", broker.bootstrap), "README.md", "exec"),
        {},
    )
    lines = capsys.readouterr().out.split()
    assert len(lines) == 3
    partitions_offsets = [tuple(map(int, line.split("@"))) for line in lines]
    assert [o for _, o in partitions_offsets] == sorted(
        o for _, o in partitions_offsets
    )


def test_what_the_producer_refuses() -> None:
    with pytest.raises(ConfigError, match=r"^linger\.ms: invalid value"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "linger.ms": -1})


def test_a_missing_topic_fails_after_max_block_ms(tmp_path: Path) -> None:
    overrides = {"auto.create.topics.enable": "false"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap, "max.block.ms": 1_000}
        )
        start = time.monotonic()
        with pytest.raises(KafkaException) as caught:
            producer.produce("nowhere", b"x")
        assert caught.value.error.name() == "UNKNOWN_TOPIC_OR_PARTITION"
        assert time.monotonic() - start < 10
        producer.close()


def test_idempotent_producer_through_a_broker_killed_and_restarted(
    tmp_path: Path,
) -> None:
    """Acknowledged means durable, no duplicates, order per partition: a SIGKILL lands
    between appends and their answers, the producer retries into the restarted broker,
    and its sequence numbers let the broker drop what it already has."""
    with BrokerProcess(tmp_path / "data") as broker:
        create_topic(broker.bootstrap, "p-kill", 2)
        reports: list[tuple[KafkaError | None, Message]] = []
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "linger.ms": 1,
                "retry.backoff.ms": 50,
                "request.timeout.ms": 5_000,
            }
        )
        acknowledged = threading.Event()

        def report(err: KafkaError | None, msg: Message) -> None:
            reports.append((err, msg))
            if len(reports) >= 500:
                acknowledged.set()

        total = 4_000
        for i in range(total):
            producer.produce(
                "p-kill",
                f"{i:05d}".encode(),
                key=str(i % 2).encode(),
                on_delivery=report,
            )
            producer.poll(0)
            if i == 1_500:
                broker.kill()  # mid-stream: requests in flight, answers lost
                broker.start()
            if i % 100 == 0:
                time.sleep(0.005)  # a steady stream, not one burst
        assert producer.flush(90) == 0
        producer.close()
        assert len(reports) == total
        assert [e for e, _ in reports if e is not None] == []
        read = read_back(broker.bootstrap, "p-kill", 2, total)
        values = [int(m.value()) for m in read]
        assert sorted(values) == list(range(total))  # every one, none twice
        for partition in (0, 1):
            mine = [int(m.value()) for m in read if m.partition() == partition]
            assert mine == sorted(mine)
