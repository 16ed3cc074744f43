"""Lab 16's checks: deleting records (KIP-107's DeleteRecords), on real brokers.

One KRaft cluster of real processes for the whole module: a controller and brokers 1,
2 and 3, followers fetching with ``replica.fetch.wait.max.ms=2000`` (a follower hears of
its leader's new log start only on its next fetch answer, so an answer that did not wait
for it comes back long before it). Each check makes its own topic on replicas 1, 2, 3
(broker 1 leads) and writes :data:`RECORDS` records. confluent-kafka's AdminClient sends
DeleteRecords as ``kafka-delete-records.sh`` does; the per-partition errors and the
protocol's version range are read with raw requests.
"""

from __future__ import annotations

import datetime
import itertools
import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest
import trio
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.delete_records.v1.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from kio.schema.delete_records.v1.response import DeleteRecordsResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.net import NetworkClient, Node

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("MINIKAFKA_LAB_EXTEND"),
        reason="an extend lab: `python -m minikafka.labs run 16` checks your minikafka",
    ),
    pytest.mark.timeout(300),
]

LEADER, FOLLOWER_B, FOLLOWER_C = 1, 2, 3
RECORDS = 30
WAIT = 60.0
HOST = "127.0.0.1"
DELETE_RECORDS = 21
_topics = itertools.count()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.05)  # polling the cluster, inside the deadline


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    root = tmp_path_factory.mktemp("lab16")
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        root / "cluster",
        3,
        broker_ports=ports[:3],
        controller_port=ports[3],
        overrides={
            "replica.fetch.wait.max.ms": "2000",
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "5000",
        },
    )
    try:
        cluster.up()
        yield cluster
    finally:
        for node in cluster.node_ids:  # a stopped (SIGSTOP) node must wake to end
            pid = cluster.pid(node)
            if pid is not None:
                os.kill(pid, signal.SIGCONT)
        cluster.down()


def admin(cluster: ProcessCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})


def isr(cluster: ProcessCluster, topic: str) -> set[int]:
    found = admin(cluster).list_topics(topic, timeout=10).topics[topic]
    return set(found.partitions[0].isrs) if 0 in found.partitions else set()


def leader_of(cluster: ProcessCluster, topic: str) -> int:
    found = admin(cluster).list_topics(topic, timeout=10).topics[topic]
    return found.partitions[0].leader if 0 in found.partitions else -1


def new_topic(cluster: ProcessCluster) -> str:
    """A topic on 1, 2, 3 (broker 1 leads), in sync, with RECORDS records v0..v29."""
    name = f"trim{next(_topics)}"
    client = admin(cluster)  # held until the answer: a collected client cancels it
    created = client.create_topics(
        [NewTopic(name, 1, replica_assignment=[[LEADER, FOLLOWER_B, FOLLOWER_C]])]
    )
    created[name].result(timeout=WAIT)
    wait_for(lambda: len(isr(cluster, name)) == 3, f"{name} in sync")
    produce(cluster, name, [b"v%d" % i for i in range(RECORDS)])
    return name


def produce(cluster: ProcessCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0}
    )
    failed: list[object] = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            failed.append(error)

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(WAIT) == 0
    assert not failed, failed


def delete(
    cluster: ProcessCluster, topic: str, offset: int, timeout: float = 10.0
) -> int:
    """confluent-kafka's delete_records: the low watermark the leader answered."""
    tp = KafkaTopicPartition(topic, 0, offset)
    client = admin(cluster)  # held until the answer: a collected client cancels it
    futures = client.delete_records(
        [tp], operation_timeout=timeout, request_timeout=timeout + 10
    )
    [future] = futures.values()
    return int(future.result(timeout=timeout + 20).low_watermark)


def watermarks(cluster: ProcessCluster, topic: str) -> tuple[int, int]:
    """(earliest, latest) as ListOffsets answers them, from the partition's leader.

    Asked again while the client cannot reach the leader (just after a leader change
    its metadata may still name the dead one): an error is not an answer."""
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "lab16", "log_level": 0}
    )
    deadline = time.monotonic() + WAIT
    try:
        while True:
            try:
                low, high = consumer.get_watermark_offsets(
                    KafkaTopicPartition(topic, 0), timeout=WAIT / 4
                )
                return int(low), int(high)
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # polling the cluster, inside the deadline
    finally:
        consumer.close()


def read_from_start(cluster: ProcessCluster, topic: str, count: int) -> list[bytes]:
    """``count`` values read by a consumer that starts at offset 0 and, told it is out of
    range, resets to the earliest offset (``auto.offset.reset=earliest``)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"lab16-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
    return values


def raw_delete(
    cluster: ProcessCluster, broker: int, offsets: dict[tuple[str, int], int]
) -> dict[tuple[str, int], tuple[ErrorCode, int]]:
    """DeleteRecords v1 sent to ``broker`` itself: (error, low watermark) per partition."""
    topics: dict[str, list[DeleteRecordsPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            DeleteRecordsPartition(partition_index=i32(partition), offset=i64(offset))
        )
    body = DeleteRecordsRequest(
        topics=tuple(
            DeleteRecordsTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
    )

    async def send() -> DeleteRecordsResponse:
        async with NetworkClient.open(client_id="lab16") as client:
            with trio.fail_after(WAIT):
                response = await client.send(Node(-1, HOST, cluster.port(broker)), body)
            assert isinstance(response, DeleteRecordsResponse)
            return response

    response = trio.run(send)
    return {
        (str(t.name), int(p.partition_index)): (p.error_code, int(p.low_watermark))
        for t in response.topics
        for p in t.partitions
    }


def advertised(cluster: ProcessCluster, broker: int) -> tuple[int, int] | None:
    async def ask() -> tuple[int, int] | None:
        async with NetworkClient.open(client_id="lab16") as client:
            with trio.fail_after(WAIT):
                versions = await client.api_versions(
                    Node(-1, HOST, cluster.port(broker))
                )
            return versions.get(DELETE_RECORDS)

    return trio.run(ask)


# --- stage 1: the leader deletes --------------------------------------------------------


def test_delete_records_is_advertised(cluster: ProcessCluster) -> None:
    for broker in (LEADER, FOLLOWER_B, FOLLOWER_C):
        assert advertised(cluster, broker) == (0, 2), f"broker {broker}"


def test_records_below_the_offset_are_gone(cluster: ProcessCluster) -> None:
    topic = new_topic(cluster)
    low = delete(cluster, topic, 10)
    assert low >= 10
    assert watermarks(cluster, topic) == (10, RECORDS)
    # A consumer at offset 0 is out of range now: it resets to the new start.
    values = read_from_start(cluster, topic, RECORDS - 10)
    assert values == [b"v%d" % i for i in range(10, RECORDS)]
    # Deleting below the start again changes nothing; the start never moves back.
    assert delete(cluster, topic, 4) >= 10
    assert watermarks(cluster, topic) == (10, RECORDS)


def test_offset_minus_one_deletes_up_to_the_high_watermark(
    cluster: ProcessCluster,
) -> None:
    topic = new_topic(cluster)
    assert delete(cluster, topic, -1) == RECORDS
    assert watermarks(cluster, topic) == (RECORDS, RECORDS)
    produce(cluster, topic, [b"after"])
    assert read_from_start(cluster, topic, 1) == [b"after"]


def test_what_cannot_be_deleted_is_refused(cluster: ProcessCluster) -> None:
    topic = new_topic(cluster)
    answers = raw_delete(
        cluster,
        LEADER,
        {(topic, 0): RECORDS + 5, (topic, 7): 1, ("no-such-topic", 0): 1},
    )
    assert answers[(topic, 0)][0] is ErrorCode.offset_out_of_range  # past the HW
    assert answers[(topic, 7)][0] is ErrorCode.unknown_topic_or_partition
    assert answers[("no-such-topic", 0)][0] is ErrorCode.unknown_topic_or_partition
    # Only the leader deletes: a follower sends the client to it.
    [(error, _)] = raw_delete(cluster, FOLLOWER_B, {(topic, 0): 5}).values()
    assert error is ErrorCode.not_leader_or_follower
    assert watermarks(cluster, topic) == (0, RECORDS)


# --- stage 2: the low watermark ----------------------------------------------------------


def test_the_answer_waits_for_every_in_sync_follower(cluster: ProcessCluster) -> None:
    """With follower 3 stopped (still in the ISR) no deletion can reach every in-sync
    replica: the request times out, partition error REQUEST_TIMED_OUT. Once 3 resumes,
    the same deletion is answered with a low watermark at the offset."""
    topic = new_topic(cluster)
    cluster.signal(FOLLOWER_C, signal.SIGSTOP)
    try:
        with pytest.raises(KafkaException) as refused:
            delete(cluster, topic, 12, timeout=1.5)
        assert refused.value.args[0].code() == ErrorCode.request_timed_out.value, (
            refused.value
        )
    finally:
        cluster.signal(FOLLOWER_C, signal.SIGCONT)
    assert delete(cluster, topic, 12) == 12


def test_deleted_records_stay_deleted_when_the_leader_dies(
    cluster: ProcessCluster,
) -> None:
    topic = new_topic(cluster)
    assert delete(cluster, topic, 20) == 20
    cluster.kill(LEADER)  # at once: the answer said every in-sync replica has moved
    try:
        wait_for(
            lambda: leader_of(cluster, topic) in (FOLLOWER_B, FOLLOWER_C), "a leader"
        )
        low, high = watermarks(cluster, topic)
        assert (low, high) == (20, RECORDS), f"broker {leader_of(cluster, topic)}"
        values = read_from_start(cluster, topic, RECORDS - 20)
        assert values == [b"v%d" % i for i in range(20, RECORDS)]
    finally:
        cluster.start(LEADER)
    wait_for(lambda: len(isr(cluster, topic)) == 3, "broker 1 back in the ISR")
