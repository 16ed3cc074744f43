"""minikafka.client's Consumer against the real broker, beside confluent-kafka and
kafka-python consumers in the same groups, and against a broker nobody here wrote
(librdkafka's mock cluster).

Guarantees under test: every record produced is handed out once, in offset order per
partition, by exactly one member of a group; a group resumes from its committed
offsets; partitions move between members (eager and cooperative) with the callbacks
Kafka's clients run; and a mixed group of three different clients shares the work.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess
from minikafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

FAST_GROUP = {"session.timeout.ms": 6_000, "heartbeat.interval.ms": 500}


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 1}) as producer:
        for i in range(start, start + count):
            producer.produce(topic, f"{i:05d}".encode(), key=str(i % 7).encode())
        assert producer.flush(30) == 0


def drain(
    consumer: Consumer,
    count: int,
    seconds: float = 30,
    each: Callable[[], None] | None = None,
) -> list[Message]:
    """Poll until ``count`` records or ``seconds``; no error may come back."""
    got: list[Message] = []
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.2):
            assert message.error() is None, message.error()
            got.append(message)
        if each is not None:
            each()
    return got


def in_order_per_partition(messages: list[Message]) -> bool:
    by_partition: dict[int, list[int]] = {}
    for m in messages:
        by_partition.setdefault(m.partition(), []).append(m.offset())
    return all(offsets == sorted(offsets) for offsets in by_partition.values())


def test_assign_reads_from_the_beginning_and_seek_moves(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "c-assign", 2)
    produce(broker.bootstrap, "c-assign", 400)
    with Consumer({"bootstrap.servers": broker.bootstrap}) as consumer:
        consumer.assign(
            [TopicPartition("c-assign", p, OFFSET_BEGINNING) for p in (0, 1)]
        )
        got = drain(consumer, 400)
        assert sorted(m.value() or b"" for m in got) == [
            f"{i:05d}".encode() for i in range(400)
        ]
        assert in_order_per_partition(got)
        ends = consumer.position([TopicPartition("c-assign", p) for p in (0, 1)])
        assert sum(p.offset for p in ends) == 400
        consumer.seek(TopicPartition("c-assign", 0, 5))
        again = drain(consumer, ends[0].offset - 5)
        assert [m.offset() for m in again] == list(range(5, ends[0].offset))


def test_a_group_resumes_from_its_committed_offsets(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "c-commit", 3)
    produce(broker.bootstrap, "c-commit", 300)
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "c-commit-group",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **FAST_GROUP,
    }
    first = Consumer(config)
    first.subscribe(["c-commit"])
    got = drain(first, 300)
    assert len(got) == 300
    committed = first.commit(asynchronous=False)
    assert committed is not None
    assert sum(p.offset for p in committed) == 300
    first.close()
    produce(broker.bootstrap, "c-commit", 50, start=300)
    second = Consumer(config)
    second.subscribe(["c-commit"])
    rest = drain(second, 50)
    assert sorted(m.value() or b"" for m in rest) == [
        f"{i:05d}".encode() for i in range(300, 350)
    ]
    assert drain(second, 1, seconds=1) == []  # nothing before the commit again
    second.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_two_members_share_the_partitions_and_one_takes_over(
    broker: BrokerProcess, strategy: str
) -> None:
    topic = f"c-share-{strategy}"
    create_topic(broker.bootstrap, topic, 4)
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": f"g-{strategy}",
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": strategy,
        **FAST_GROUP,
    }
    events: list[tuple[str, str, int]] = []

    def callbacks(name: str) -> dict[str, Any]:
        return {
            "on_assign": lambda c, ps: events.append((name, "assign", len(ps))),
            "on_revoke": lambda c, ps: events.append((name, "revoke", len(ps))),
        }

    a, b = Consumer(config), Consumer(config)
    a.subscribe([topic], **callbacks("a"))
    b.subscribe([topic], **callbacks("b"))
    produce(broker.bootstrap, topic, 400)
    seen_a: list[Message] = []
    seen_b: list[Message] = []
    deadline = time.monotonic() + 60
    while len(seen_a) + len(seen_b) < 400 and time.monotonic() < deadline:
        seen_a += [m for m in a.consume(100, 0.1) if m.error() is None]
        seen_b += [m for m in b.consume(100, 0.1) if m.error() is None]
    assert len(seen_a) + len(seen_b) == 400
    # Each partition read by one member only, and both had a share once balanced.
    partitions_a = {m.partition() for m in seen_a}
    partitions_b = {m.partition() for m in seen_b}
    assert not partitions_a & partitions_b or strategy == "range"
    assert len(a.assignment()) == 2
    assert len(b.assignment()) == 2
    a.commit(asynchronous=False)
    b.commit(asynchronous=False)
    a.close()
    produce(broker.bootstrap, topic, 100, start=400)
    rest = drain(b, 100)
    assert sorted(m.value() or b"" for m in rest) == [
        f"{i:05d}".encode() for i in range(400, 500)
    ]
    assert len(b.assignment()) == 4  # it took a's partitions over
    b.close()
    assert ("b", "assign", 4 if strategy == "range" else 2) in events


def test_a_mixed_group_shares_the_work(broker: BrokerProcess) -> None:
    """minikafka, confluent-kafka and kafka-python consumers in one group, range (every
    client's common assignor): each record goes to exactly one of them."""
    from kafka import KafkaConsumer

    topic = "c-mixed"
    create_topic(broker.bootstrap, topic, 6)
    group = "c-mixed-group"
    ours = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            **FAST_GROUP,
        }
    )
    ours.subscribe([topic])
    rd = RdConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    rd.subscribe([topic])
    kp = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    try:
        values: dict[str, list[bytes]] = {
            "minikafka": [],
            "confluent": [],
            "kafka-python": [],
        }
        # Let all three join one generation before the records exist.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            len(ours.assignment()) == 2
            and len(rd.assignment()) == 2
            and len(kp.assignment()) == 2
        ):
            ours.consume(10, 0.1)
            rd.poll(0.1)
            kp.poll(100)
        assert len(ours.assignment()) == 2
        produce(broker.bootstrap, topic, 600)
        deadline = time.monotonic() + 60
        while sum(map(len, values.values())) < 600 and time.monotonic() < deadline:
            values["minikafka"] += [m.value() or b"" for m in ours.consume(100, 0.1)]
            # A batch from each client a round: one record a round from librdkafka's
            # took it 200 rounds of the others' 0.1 s waits (20 s and more).
            values["confluent"] += [
                m.value() or b"" for m in rd.consume(100, 0.1) if m.error() is None
            ]
            for records in kp.poll(100).values():
                values["kafka-python"] += [r.value for r in records]
        everything = sorted(v for vs in values.values() for v in vs)
        assert everything == [f"{i:05d}".encode() for i in range(600)]  # once each
        assert all(values.values())  # every client had its share
    finally:
        ours.close()
        rd.close()
        kp.close()


def test_a_mixed_cooperative_group_moves_partitions_incrementally(
    broker: BrokerProcess,
) -> None:
    """KIP-429 across clients: a minikafka consumer and a confluent-kafka one, both with
    cooperative-sticky. The minikafka member alone first holds all four partitions; when
    librdkafka's joins, minikafka revokes only the two it gives up (never all four), and
    every record is read once by one of them."""
    topic = "c-coop"
    create_topic(broker.bootstrap, topic, 4)
    group = "c-coop-group"
    revoked: list[int] = []
    ours = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            **FAST_GROUP,
        }
    )
    ours.subscribe([topic], on_revoke=lambda c, ps: revoked.append(len(ps)))
    deadline = time.monotonic() + 60
    while len(ours.assignment()) < 4:
        assert time.monotonic() < deadline
        ours.consume(10, 0.1)
    rd = RdConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    rd.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while not (len(ours.assignment()) == 2 and len(rd.assignment()) == 2):
            assert time.monotonic() < deadline, (ours.assignment(), rd.assignment())
            ours.consume(10, 0.1)
            rd.poll(0.1)
        assert revoked == [2]  # incremental: two given up, two kept throughout
        produce(broker.bootstrap, topic, 400)
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 400 and time.monotonic() < deadline:
            values += [m.value() or b"" for m in ours.consume(100, 0.1)]
            # A batch from each a round, as above.
            values += [
                m.value() or b"" for m in rd.consume(100, 0.1) if m.error() is None
            ]
        assert sorted(values) == [f"{i:05d}".encode() for i in range(400)]
    finally:
        ours.close()
        rd.close()


def test_against_librdkafkas_mock_cluster() -> None:
    """A broker nobody here wrote: produce and read back through librdkafka's mock."""
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("test-mock-cluster")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    holder = RdProducer(
        {
            "bootstrap.servers": "unused:1",
            "test.mock.num.brokers": 1,
            "debug": "mock",
            "logger": logger,
        }
    )
    deadline = time.monotonic() + 10
    address = None
    while address is None and time.monotonic() < deadline:
        holder.poll(0.1)
        found = [re.search(r"bootstrap\.servers=(\S+)", line) for line in lines]
        address = next((m.group(1) for m in found if m), None)
    assert address is not None, lines
    with Producer({"bootstrap.servers": address}) as producer:
        for i in range(100):
            producer.produce("mocked", f"m{i}".encode(), partition=0)
        assert producer.flush(30) == 0
    with Consumer({"bootstrap.servers": address}) as consumer:
        consumer.assign([TopicPartition("mocked", 0, OFFSET_BEGINNING)])
        got = drain(consumer, 100)
    assert [m.value() for m in got] == [f"m{i}".encode() for i in range(100)]
    holder.flush(1)


def test_subscribe_without_a_group_id_is_refused(broker: BrokerProcess) -> None:
    with Consumer({"bootstrap.servers": broker.bootstrap}) as consumer:
        with pytest.raises(KafkaException) as caught:
            consumer.subscribe(["anything"])
        assert caught.value.error.name() == "INVALID_GROUP_ID"


def test_keys_and_headers_come_back(tmp_path: Path, broker: BrokerProcess) -> None:
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        producer.produce(
            "c-headers", b"v", key=b"k", headers=[("h", b"1")], timestamp=1_700_000
        )
        producer.flush(30)
    with Consumer({"bootstrap.servers": broker.bootstrap}) as consumer:
        consumer.assign([TopicPartition("c-headers", 0, OFFSET_BEGINNING)])
        [message] = drain(consumer, 1)
    assert (message.key(), message.value(), message.headers()) == (
        b"k",
        b"v",
        [("h", b"1")],
    )
    assert message.timestamp() == (1, 1_700_000)


def test_a_static_member_comes_back_to_its_partitions_without_a_rebalance(
    broker: BrokerProcess,
) -> None:
    """KIP-345: a member with group.instance.id that closes sends no LeaveGroup, and a
    successor with the same id, back within session.timeout.ms, gets the same
    partitions while the other member notices nothing (no revocation)."""
    topic = "c-static"
    create_topic(broker.bootstrap, topic, 4)
    base = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "c-static-group",
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "range",
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 500,
    }
    revoked: list[str] = []
    a = Consumer({**base, "group.instance.id": "a"})
    b = Consumer({**base, "group.instance.id": "b"})
    a.subscribe([topic])
    b.subscribe([topic], on_revoke=lambda c, ps: revoked.append(f"b lost {len(ps)}"))
    deadline = time.monotonic() + 60
    while not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
        assert time.monotonic() < deadline, (a.assignment(), b.assignment())
        a.consume(10, 0.1)
        b.consume(10, 0.1)
    mine = sorted((p.topic, p.partition) for p in a.assignment())
    revoked.clear()
    a.close()
    again = Consumer({**base, "group.instance.id": "a"})
    again.subscribe([topic])
    deadline = time.monotonic() + 30
    while len(again.assignment()) < 2:
        assert time.monotonic() < deadline
        again.consume(10, 0.1)
        b.consume(10, 0.1)
    assert sorted((p.topic, p.partition) for p in again.assignment()) == mine
    for _ in range(10):  # a while longer: no rebalance reaches b
        b.consume(10, 0.1)
    assert revoked == []
    again.close()
    b.close()


def test_the_readmes_consumer_example_runs_as_written(
    broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    start = text.index("```python\nfrom minikafka.client import Consumer")
    code = text[start + len("```python\n") : text.index("```", start + 10)]
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        for i in range(3):
            producer.produce("greetings", f"hello {i}".encode(), key=b"k1")
        producer.flush(30)
    exec(
        compile(code.replace("127.0.0.1:9092", broker.bootstrap), "README.md", "exec"),
        {},
    )
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1:3] for line in lines] == [
        ["b'hello", f"{i}'"] for i in range(3)
    ]
