"""minikafka.client's consumer through a leader SIGKILL on a cluster of real processes
(KIP-320): every record read once, in order, and the position checked against the new
leader before fetching goes on.

The records are written (acks=all, RF 3, min.insync.replicas=2) before the consumer
starts, so each is on every replica; the consumer reads half, the partition's leader
is killed, and it reads the rest from the new leader. The guarantee checked: **order
per partition, no record lost or read twice**, across a leader change, with the
consumer's position validated by OffsetsForLeaderEpoch (the new leader's log could have
diverged; here it has not, so the position stands).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from minikafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    Fetcher,
    FetcherResult,
    Message,
    Producer,
    TopicPartition,
)
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    create_topic,
    known_state,
    state,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)

RECORDS = 2_000


def test_a_consumer_reads_on_through_a_leader_kill(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated: list[dict[object, tuple[int, int, int]]] = []
    original = Fetcher.on_validation

    def on_validation(self: Fetcher, node: int, answers: Any) -> FetcherResult:
        validated.append(dict(answers))
        return original(self, node, answers)

    monkeypatch.setattr(Fetcher, "on_validation", on_validation)
    cluster = make_cluster()
    create_topic(cluster, "moving", 1, {"min.insync.replicas": "2"})
    # Small batches (about 70 records each): a 4 KiB fetch then carries a few hundred
    # records, so when half are read most of the rest is still to be fetched, and only
    # the new leader can answer. With the default 16 KiB the 2,000 records fill two
    # batches, which the consumer may hold whole before the kill, fetching nothing after.
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "linger.ms": 5,
        "batch.size": 1024,
    }
    with Producer(config) as producer:
        for i in range(RECORDS):
            producer.produce("moving", f"{i:05d}".encode())
        assert producer.flush(WAIT) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "max.poll.records": 100,
            "max.partition.fetch.bytes": 4096,  # many fetches, so the kill lands between
            "metadata.max.age.ms": 500,
        }
    )
    consumer.assign([TopicPartition("moving", 0, OFFSET_BEGINNING)])
    got: list[Message] = []
    deadline = time.monotonic() + WAIT
    while len(got) < RECORDS // 2:
        assert time.monotonic() < deadline
        got += [m for m in consumer.consume(100, 0.5) if m.error() is None]
    leader = known_state(cluster, "moving").leader
    cluster.kill(leader)
    wait_for(
        lambda: state(cluster, "moving").leader not in (leader, -1), "a new leader"
    )
    deadline = time.monotonic() + WAIT
    while len(got) < RECORDS:
        assert time.monotonic() < deadline, f"{len(got)} of {RECORDS}"
        for message in consumer.consume(100, 0.5):
            assert message.error() is None, message.error()
            got.append(message)
    consumer.close()
    assert [m.value() for m in got] == [f"{i:05d}".encode() for i in range(RECORDS)]
    assert [m.offset() for m in got] == list(range(RECORDS))
    # The new leader was asked where the position's epoch ends, and it had all of it.
    # A broker asked before the consumer's metadata caught up says it is not the leader
    # (NOT_LEADER_OR_FOLLOWER, or a leader-epoch error): the consumer asks again.
    answers = [answer for each in validated for answer in each.values()]
    assert {error for error, _, _ in answers} <= {0, 6, 74, 75}, answers
    answered = [end_offset for error, _, end_offset in answers if error == 0]
    assert answered, answers
    assert answered[-1] >= RECORDS // 2
    cluster.start(leader)
