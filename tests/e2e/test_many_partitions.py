"""Thousands of partitions under a low RLIMIT_NOFILE.

Each partition's segment is three files. Before the log's descriptor pool, a broker held
all of them open: a few CreateTopics requests of a thousand partitions ran it out of
descriptors, it exited, and since the topics were committed to the metadata log every
restart died the same way. Here the broker runs with a hard limit of 512 open files
(so raising the soft limit to the hard one, as it does at start-up, cannot help), hosts
2,000 partitions (6,000 segment files), serves produce and fetch on partitions across
the range, holds at most its pool's share of descriptors, and starts again, after a
crash and after a clean shutdown, with more partitions in its metadata than it could
hold open at once.
"""

from __future__ import annotations

import functools
import os
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import FORK_SERVER_ENV, BrokerProcess

NOFILE = 512  # soft and hard: the broker cannot raise it
POOL = NOFILE // 2  # the LogManager's pool: half the soft limit (minikafka.log._files)
TOPICS = ("many-a", "many-b")
PARTITIONS = 1_000  # per topic, one CreateTopics each: 2,000 partitions, 6,000 files


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


@pytest.fixture
def limited_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BrokerProcess]:
    """A broker process started (and restarted) with RLIMIT_NOFILE = 512, soft and hard."""
    # BrokerProcess has no hook for the child's limits: give its Popen a preexec_fn
    # (and start it with Popen, not from a fork server, whose children it cannot reach).
    monkeypatch.delenv(FORK_SERVER_ENV, raising=False)
    monkeypatch.setattr(
        subprocess,
        "Popen",
        functools.partial(subprocess.Popen, preexec_fn=_limit_open_files),
    )
    process = BrokerProcess(tmp_path / "data")
    process.start(timeout=120)
    try:
        yield process
    finally:
        if process.process is not None:
            process.stop(timeout=120)


def _open_fds(broker: BrokerProcess) -> int:
    assert broker.process is not None
    return len(os.listdir(f"/proc/{broker.process.pid}/fd"))


def _alive(broker: BrokerProcess) -> bool:
    return broker.process is not None and broker.process.poll() is None


def _create_topics(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for topic in TOPICS:  # several requests: one may not exceed 10,000 metadata records
        futures = admin.create_topics(
            [NewTopic(topic, PARTITIONS, 1)], request_timeout=120, operation_timeout=120
        )
        futures[topic].result(timeout=180)


def _edge_partitions() -> list[tuple[str, int]]:
    return [(t, p) for t in TOPICS for p in (0, PARTITIONS // 2, PARTITIONS - 1)]


def _produce(broker: BrokerProcess, tag: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    errors: list[object] = []
    for topic, partition in _edge_partitions():
        producer.produce(
            topic,
            value=f"{tag}-{topic}-{partition}".encode(),
            partition=partition,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(60) == 0
    assert errors == []


def _consume(broker: BrokerProcess) -> dict[tuple[str, int], list[bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "many-partitions-check",
            "enable.auto.commit": False,
        }
    )
    wanted = _edge_partitions()
    consumer.assign([TopicPartition(t, p, 0) for t, p in wanted])
    got: dict[tuple[str, int], list[bytes]] = {tp: [] for tp in wanted}
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                if all(got.values()) and sum(map(len, got.values())) >= _expected_count(
                    got
                ):
                    break
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            topic, partition = message.topic(), message.partition()
            assert topic is not None
            assert partition is not None
            got[(topic, partition)].append(value)
    finally:
        consumer.close()
    return got


def _expected_count(got: dict[tuple[str, int], list[bytes]]) -> int:
    # Stop polling once every partition has as many records as the most filled one.
    return len(got) * max(len(v) for v in got.values())


@pytest.mark.timeout(900)
def test_thousands_of_partitions_under_a_low_open_files_limit(
    limited_broker: BrokerProcess,
) -> None:
    """2,000 partitions in a broker allowed 512 descriptors: it stays up, serves produce
    and fetch at both ends of the range, holds no more than its pool's share of
    descriptors, and restarts (after kill -9 and after SIGTERM) with them all."""
    broker = limited_broker
    _create_topics(broker)
    assert _alive(broker), broker.output[-20:]
    _produce(broker, "first")
    got = _consume(broker)
    assert all(
        values == [f"first-{t}-{p}".encode()] for (t, p), values in got.items()
    ), got
    # The pool's share, plus the sockets, the metadata log and the interpreter's files.
    assert _open_fds(broker) <= POOL + 100

    broker.kill()  # a crash: every log is recovered at start-up, within the limit
    broker.start(timeout=300)
    _produce(broker, "second")
    got = _consume(broker)
    for (t, p), values in got.items():
        assert values == [f"first-{t}-{p}".encode(), f"second-{t}-{p}".encode()]
    assert _open_fds(broker) <= POOL + 100

    assert broker.stop(timeout=180) == 0
    broker.start(timeout=300)  # and after a clean shutdown
    got = _consume(broker)
    assert all(len(values) == 2 for values in got.values()), got
    assert _alive(broker)
