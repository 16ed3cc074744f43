"""Failover with real processes and a real client: what replication promises when a
leader dies (seed 000; KIP-101, KIP-320, KIP-631).

An idempotent ``acks=all`` confluent-kafka producer, an idempotent kafka-python one,
minikafka's own (``minikafka.client``) and Kafka's Java client's (a JVM of
``tests/compat/java/JavaClient.java``) write numbered records to an RF 3 topic with
``min.insync.replicas=2`` (two partitions each) while the leader of one of their
partitions is SIGKILLed and restarted, five
times in KRaft mode and three times in ZooKeeper mode (where a killed broker leaves when
its ZooKeeper session expires, and the leader killed may be the controller too). The
guarantees checked:

- **acknowledged means durable**: every record the producer saw acknowledged is read
  back after all the kills;
- **no duplicates with idempotence**: each is read back exactly once, although the
  producer retried whatever the dead leader had not answered;
- **order per partition**: each partition's records are read back in the order they
  were produced;
- **the replicas agree**: once the cluster has stopped, every replica's batches are the
  same (offsets, epochs, CRCs) and ``minikafka dump-log --verify`` finds nothing wrong
  (the command run in the test's process).
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from kafka import KafkaProducer
from typer.testing import CliRunner

from minikafka.broker._cli import app
from minikafka.broker.testing import ProcessCluster, replica_batches
from minikafka.client import Producer as MinikafkaProducer
from tests.cluster._cluster import (
    MODES,
    WAIT,
    Condition,
    MakeCluster,
    create_topic,
    in_sync,
    known_state,
    state,
    wait_for,
)
from tests.compat._java import JavaNumberedProducer

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = [pytest.mark.timeout(300), pytest.mark.external]  # java, zookeeper

PARTITIONS = 8
CONFLUENT, KAFKA_PYTHON, MINIKAFKA, JAVA = (
    (0, 1),
    (2, 3),
    (4, 5),
    (6, 7),
)  # the partitions each writes
KILLS = {"kraft": 5, "zookeeper": 3}
"""Leader kills per mode: ZooKeeper mode's each wait out a ZooKeeper session and often a
controller election too, so three there keep the suite's time in bounds."""


class NumberedProducer:
    """confluent-kafka writing 0, 1, 2, ... to each of its partitions until stopped;
    keeps what was acknowledged, per partition, in acknowledgement order."""

    partitions = CONFLUENT

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: dict[int, list[int]] = {p: [] for p in self.partitions}
        self.errors: list[object] = []
        self.stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,  # acks=all, retries, in-order (KIP-98)
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": 0,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(error)
            return
        value = message.value()
        partition = message.partition()
        assert value is not None
        assert partition is not None
        self.acked[partition].append(int(value))

    def _run(self) -> None:
        number = 0
        while not self.stop.is_set():
            for partition in self.partitions:
                self.producer.produce(
                    self.topic,
                    str(number).encode(),
                    partition=partition,
                    on_delivery=self._report,
                )
            number += 1
            # About 1,000 records a second per partition: enough in flight at each kill.
            self.producer.poll(0.001)
        self.producer.flush(WAIT * 2)

    def count(self) -> int:
        return sum(len(v) for v in self.acked.values())


class KafkaPythonProducer(NumberedProducer):
    """The same with kafka-python's idempotent producer (``enable_idempotence``)."""

    partitions = KAFKA_PYTHON

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked = {p: [] for p in self.partitions}
        self.errors = []
        self.stop = threading.Event()
        self.python = KafkaProducer(
            bootstrap_servers=bootstrap,
            enable_idempotence=True,  # acks=all, retries, in order
            linger_ms=5,
            delivery_timeout_ms=120_000,
            metadata_max_age_ms=1000,
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        number = 0
        while not self.stop.is_set():
            for partition in self.partitions:
                future = self.python.send(
                    self.topic, str(number).encode(), partition=partition
                )
                future.add_callback(self._acked, partition, number)
                future.add_errback(self.errors.append)
            number += 1
            if number % 100 == 0:
                # bounded in flight, about as fast as the other
                self.python.flush(WAIT * 2)
        self.python.flush(WAIT * 2)
        self.python.close(WAIT)

    def _acked(self, partition: int, number: int, _metadata: object) -> None:
        self.acked[partition].append(number)


class OwnProducer(NumberedProducer):
    """The same with minikafka.client's producer, idempotent by default; its API is
    confluent-kafka's, so the loop and the reports are the parent's."""

    partitions = MINIKAFKA

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked = {p: [] for p in self.partitions}
        self.errors = []
        self.stop = threading.Event()
        self.producer = MinikafkaProducer(  # type: ignore[assignment]
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 5,
                "delivery.timeout.ms": 120_000,
                "metadata.max.age.ms": 1000,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        super()._run()
        self.producer.close()


def read_all(bootstrap: str, topic: str) -> dict[int, list[int]]:
    """Every record of every partition, from the start to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(
                KafkaTopicPartition(topic, p), timeout=WAIT
            )[1]
            for p in range(PARTITIONS)
        }
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        read: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + WAIT
        while any(len(read[p]) < ends[p] for p in read):
            assert time.monotonic() < deadline, f"read {read.keys()} short of {ends}"
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, value = message.partition(), message.value()
            assert partition is not None
            assert value is not None
            read[partition].append(int(value))
        return read
    finally:
        consumer.close()


def assert_replicas_agree(cluster: ProcessCluster, topic: str) -> None:
    """After a clean stop: every replica holds the same batches, and each verifies."""
    for p in range(PARTITIONS):
        dirs = [
            cluster.node_dir(b) / f"{topic}-{p}" for b in sorted(cluster.broker_ports)
        ]
        logs = [replica_batches(d) for d in dirs]
        assert logs[0], f"{topic}-{p} is empty"
        assert all(log == logs[0] for log in logs), f"{topic}-{p}: the replicas differ"
        for d in dirs:
            # The command itself, in this process: 24 processes importing the broker
            # cost a minute of CPU on the loaded two-core machine.
            verified = CliRunner().invoke(app, ["dump-log", "--verify", str(d)])
            assert verified.exit_code == 0, verified.output


Producers = list[NumberedProducer | JavaNumberedProducer]


def acknowledged(producers: Producers, counts: list[int]) -> Condition:
    return lambda: all(p.count() >= c for p, c in zip(producers, counts, strict=True))


def led_by_another(cluster: ProcessCluster, partition: int, old: int) -> Condition:
    return lambda: state(cluster, "numbers", partition).leader not in (old, -1)


@pytest.mark.parametrize("mode", MODES)
def test_acknowledged_records_survive_leader_kills(
    make_cluster: MakeCluster, mode: str
) -> None:
    cluster = make_cluster(mode=mode)
    create_topic(cluster, "numbers", PARTITIONS, {"min.insync.replicas": "2"})
    producers: Producers = [
        NumberedProducer(cluster.bootstrap, "numbers"),
        KafkaPythonProducer(cluster.bootstrap, "numbers"),
        OwnProducer(cluster.bootstrap, "numbers"),
        JavaNumberedProducer(cluster.bootstrap, "numbers", JAVA),
    ]
    for producer in producers:
        producer.thread.start()
    try:
        for kill in range(KILLS[mode]):
            wanted = [p.count() + 500 for p in producers]
            wait_for(
                acknowledged(producers, wanted), "records acknowledged by all four"
            )
            # In turn the leader of one producer's partition, then the next one's.
            partition = (CONFLUENT, KAFKA_PYTHON, MINIKAFKA, JAVA)[kill % 4][0]
            leader = known_state(cluster, "numbers", partition).leader
            cluster.kill(leader)
            wait_for(
                led_by_another(cluster, partition, leader), f"a leader after {leader}"
            )
            cluster.start(leader)
            for p in range(PARTITIONS):
                wait_for(
                    in_sync(cluster, "numbers", p),
                    f"{leader} back in numbers-{p}'s ISR",
                )
    finally:
        for producer in producers:
            producer.stop.set()
        for producer in producers:
            producer.thread.join(WAIT * 2)
    read = read_all(cluster.bootstrap, "numbers")
    for producer in producers:
        assert not producer.errors, producer.errors
        for p in producer.partitions:
            acked, values = producer.acked[p], read[p]
            assert len(values) == len(set(values)), f"numbers-{p}: duplicates"
            assert values == sorted(values), f"numbers-{p}: out of order"
            assert not set(acked) - set(values), (
                f"numbers-{p}: acknowledged records lost"
            )
            assert acked == sorted(acked)
    cluster.down()
    assert_replicas_agree(cluster, "numbers")
