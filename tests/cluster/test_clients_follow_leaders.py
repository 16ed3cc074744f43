"""Every client follows a leader move without losing a record (seed 000: a client learns
the new leader from Metadata after NOT_LEADER_OR_FOLLOWER, and retries there), in KRaft
mode and in ZooKeeper mode alike (what clients see must not depend on the mode).

kcat, kafka-python and aiokafka each write numbered records with ``acks=all`` to an RF 3
partition while its leader is stopped under controlled shutdown, which moves the
leadership to a follower, and started again. Guarantee checked: **every acknowledged
record is read back, in the order it was written** (kcat and aiokafka are idempotent
producers, so theirs are also read back exactly once; kafka-python's producer retries
without idempotence, so a retried record may be stored twice, which Kafka allows).
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Callable, Iterator

import pytest
from aiokafka import (  # type: ignore[import-untyped]
    AIOKafkaConsumer,
    AIOKafkaProducer,
)
from aiokafka import TopicPartition as AioTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import (
    MODES,
    WAIT,
    create_topic,
    in_sync,
    known_state,
    shared_cluster,
    state,
    wait_for,
)

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = pytest.mark.timeout(300)

Writer = Callable[[str, str, threading.Event, list[int]], None]
"""(bootstrap, topic, stop, acked): write 0, 1, 2, ... until ``stop``, appending each
acknowledged number to ``acked`` in acknowledgement order."""
Reader = Callable[[str, str], list[int]]


@pytest.fixture(scope="module", params=MODES)
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ProcessCluster]:
    """One cluster for the clients, in each mode (KRaft, ZooKeeper): each client has a
    topic of its own, and every guarantee must hold in both modes."""
    with shared_cluster(tmp_path_factory.mktemp("cluster"), mode=request.param) as made:
        yield made


def move_leader_while_writing(
    cluster: ProcessCluster, topic: str, write: Writer
) -> list[int]:
    """Run ``write`` in a thread; stop the partition's leader (controlled shutdown) once
    records are flowing, start it again, and stop writing once more have been acked."""
    create_topic(cluster, topic, 1, {"min.insync.replicas": "2"})
    acked: list[int] = []
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            write(cluster.bootstrap, topic, stop, acked)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(acked) >= 100 or bool(failure), "records flowing")
        leader = known_state(cluster, topic).leader
        cluster.stop(leader)  # SIGTERM: its leadership moves before it exits
        # The other brokers replay that move a moment apart from each other.
        wait_for(
            lambda: state(cluster, topic).leader not in (leader, -1), "another leader"
        )
        count = len(acked)
        wait_for(
            lambda: len(acked) >= count + 100 or bool(failure),
            "records to the new leader",
        )
        cluster.start(leader)
        wait_for(in_sync(cluster, topic, 0), f"{leader} back in the ISR")
        count = len(acked)
        wait_for(lambda: len(acked) >= count + 100 or bool(failure), "more records")
    finally:
        stop.set()
        thread.join(WAIT * 2)
    assert not failure, failure
    return acked


def assert_all_read_in_order(
    acked: list[int], read: list[int], *, exactly_once: bool
) -> None:
    assert acked == sorted(acked), "acknowledged out of order"
    assert not set(acked) - set(read), "acknowledged records lost"
    first_seen = list(dict.fromkeys(read))
    assert first_seen == sorted(first_seen), "read out of order"
    if exactly_once:
        assert len(read) == len(set(read)), "duplicates"


# --- kcat ----------------------------------------------------------------------------------


def kcat_write(
    bootstrap: str, topic: str, stop: threading.Event, acked: list[int]
) -> None:
    """kcat reports failures only: each line is counted as it is written, and kcat's exit
    status 0 with no "Delivery failed" says each one was acknowledged."""
    command = [
        "kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0",
        "-X", "enable.idempotence=true", "-X", "linger.ms=5",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    number = 0
    while not stop.is_set():
        process.stdin.write(b"%d\n" % number)
        process.stdin.flush()
        acked.append(number)
        number += 1
        stop.wait(0.002)  # about 500 lines a second, paced by the test's own event
    # closes stdin: kcat flushes, exits
    _, errors = process.communicate(timeout=WAIT * 2)
    assert process.returncode == 0, errors.decode()
    assert b"Delivery failed" not in errors, errors.decode()


def kcat_read(bootstrap: str, topic: str) -> list[int]:
    out = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
        ],
        capture_output=True,
        timeout=WAIT,
        check=True,
    )
    return [int(line) for line in out.stdout.split()]


@pytest.mark.external
def test_kcat_follows_a_leader_move(cluster: ProcessCluster) -> None:
    acked = move_leader_while_writing(cluster, "kcat-moves", kcat_write)
    assert_all_read_in_order(
        acked, kcat_read(cluster.bootstrap, "kcat-moves"), exactly_once=True
    )


# --- kafka-python --------------------------------------------------------------------------


def kafka_python_write(
    bootstrap: str, topic: str, stop: threading.Event, acked: list[int]
) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        retries=20,
        max_in_flight_requests_per_connection=1,  # retries keep the order
        linger_ms=5,
    )
    number = 0
    try:
        while not stop.is_set():
            future = producer.send(topic, str(number).encode(), partition=0)
            future.add_callback(lambda _meta, n=number: acked.append(n))
            number += 1
            if number % 50 == 0:
                producer.flush(WAIT)
    finally:
        producer.flush(WAIT)
        producer.close(WAIT)


def kafka_python_read(bootstrap: str, topic: str) -> list[int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = KafkaTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    read: list[int] = []
    try:
        while consumer.position(tp) < end:
            for records in consumer.poll(timeout_ms=500).values():
                read += [int(r.value) for r in records]
    finally:
        consumer.close()
    return read


def test_kafka_python_follows_a_leader_move(cluster: ProcessCluster) -> None:
    acked = move_leader_while_writing(cluster, "kafka-python-moves", kafka_python_write)
    read = kafka_python_read(cluster.bootstrap, "kafka-python-moves")
    assert_all_read_in_order(acked, read, exactly_once=False)


# --- aiokafka ------------------------------------------------------------------------------


def aiokafka_write(
    bootstrap: str, topic: str, stop: threading.Event, acked: list[int]
) -> None:
    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True
        )
        await producer.start()
        try:
            number = 0
            while not stop.is_set():
                await producer.send_and_wait(topic, str(number).encode(), partition=0)
                acked.append(number)
                number += 1
        finally:
            await producer.stop()

    asyncio.run(main())


def aiokafka_read(bootstrap: str, topic: str) -> list[int]:
    async def main() -> list[int]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            end = (await consumer.end_offsets([tp]))[tp]
            read: list[int] = []
            while await consumer.position(tp) < end:
                batches = await consumer.getmany(tp, timeout_ms=500)
                read += [int(r.value) for records in batches.values() for r in records]
            return read
        finally:
            await consumer.stop()

    return asyncio.run(main())


def test_aiokafka_follows_a_leader_move(cluster: ProcessCluster) -> None:
    acked = move_leader_while_writing(cluster, "aiokafka-moves", aiokafka_write)
    read = aiokafka_read(cluster.bootstrap, "aiokafka-moves")
    assert_all_read_in_order(acked, read, exactly_once=True)
