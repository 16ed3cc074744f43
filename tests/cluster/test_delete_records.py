"""Deleting records (KIP-107) on three ``minikafka broker`` processes, in both controller
modes, with confluent-kafka's AdminClient (as ``kafka-delete-records.sh`` sends it).

What the test proves, in each mode:

- DeleteRecords moves the partition's log start on the leader at once: ListOffsets'
  earliest is the offset, and a consumer that starts at 0 is reset to it;
- the answer waits for the low watermark: with an in-sync follower paused (SIGSTOP) a
  deletion cannot reach every in-sync replica and is answered REQUEST_TIMED_OUT when
  its operation timeout runs out; once the follower runs again, the same deletion is
  answered with the offset as the low watermark;
- once answered, every replica has moved its log start: the leader is killed at once,
  and the new leader's earliest offset is the deleted one, its records from there on.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import (
    MODES,
    WAIT,
    admin,
    create_on,
    read_from_zero,
    shared_cluster,
    state,
    wait_for,
    watermarks,
)

RECORDS = 30


@pytest.fixture(scope="module", params=MODES)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    with shared_cluster(
        tmp_path_factory.mktemp(f"delete-{request.param}"), mode=request.param
    ) as made:
        yield made


def produce(cluster: ProcessCluster, topic: str, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0}
    )
    failed: list[KafkaError] = []

    def delivered(error: KafkaError | None, _: object) -> None:
        if error is not None:
            failed.append(error)

    for i in range(count):
        producer.produce(topic, b"v%d" % i, partition=0, on_delivery=delivered)
    assert producer.flush(WAIT) == 0
    assert not failed, failed


def delete(cluster: ProcessCluster, topic: str, offset: int, timeout: float) -> int:
    """The low watermark the leader answered (KafkaException: the partition's error)."""
    client = admin(cluster)  # held until the answer: a collected client cancels it
    [future] = client.delete_records(
        [KafkaTopicPartition(topic, 0, offset)],
        operation_timeout=timeout,
        request_timeout=timeout + 10,
    ).values()
    return int(future.result(timeout=timeout + 20).low_watermark)


def test_deletion_reaches_every_in_sync_replica_before_it_is_answered(
    cluster: ProcessCluster,
) -> None:
    leader, paused, other = sorted(cluster.broker_ports)
    topic = "trimmed"
    create_on(cluster, topic, [leader, paused, other])
    produce(cluster, topic, RECORDS)

    # The leader moves its log start at once; a consumer at 0 is reset to it.
    assert delete(cluster, topic, 10, timeout=30) >= 10
    assert watermarks(cluster.bootstrap, topic) == (10, RECORDS)
    assert read_from_zero(cluster.bootstrap, topic, RECORDS - 10) == [
        b"v%d" % i for i in range(10, RECORDS)
    ]

    # A paused in-sync follower holds the low watermark back: the answer times out.
    cluster.signal(paused, signal.SIGSTOP)
    try:
        with pytest.raises(KafkaException) as refused:
            delete(cluster, topic, 20, timeout=1.5)
        assert refused.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT
    finally:
        cluster.signal(paused, signal.SIGCONT)
    assert delete(cluster, topic, 20, timeout=30) == 20

    # Answered means every in-sync replica has moved: the new leader starts at 20.
    cluster.kill(leader)
    try:
        wait_for(
            lambda: state(cluster, topic).leader in (paused, other), "a new leader"
        )
        assert watermarks(cluster.bootstrap, topic) == (20, RECORDS)
        assert read_from_zero(cluster.bootstrap, topic, RECORDS - 20) == [
            b"v%d" % i for i in range(20, RECORDS)
        ]
    finally:
        cluster.start(leader)
    wait_for(lambda: len(state(cluster, topic).isr) == 3, "the old leader back")
