"""What the cluster tests share: the settings their clusters run with, and what they ask
a cluster, through confluent-kafka's AdminClient (librdkafka reads the brokers' Metadata
as any client does). Every wait has a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import attrs
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster, free_ports

WAIT = 60.0
"""Seconds a test waits for the cluster to do something that takes a few (a fencing,
an election, a restart) on a loaded two-core machine."""

MODES = ("kraft", "zookeeper")
"""The two ways a cluster runs (issue 20): suites that must hold in both take them as a
parameter."""

FAST = {
    # A killed broker is fenced, and its partitions get new leaders, within 5 s: short
    # for the tests, long enough that a loaded two-core machine fences no live broker.
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "5000",
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
    # ZooKeeper mode's equivalent: a killed broker's session (and its registration, and
    # the controller role if it held it) ends within 6 s.
    "zookeeper.session.timeout.ms": "6000",
}

MakeCluster = Callable[..., ProcessCluster]


Condition = Callable[[], bool]


def wait_for(condition: Condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.1)  # polling the cluster's state, inside the deadline


@attrs.frozen
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def admin(cluster: ProcessCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})


def create_topic(
    cluster: ProcessCluster,
    name: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> None:
    """An RF 3 topic, once every partition has its whole ISR."""
    client = admin(cluster)  # held until the answer: a collected client cancels it
    futures = client.create_topics(
        [NewTopic(name, partitions, 3, config=dict(configs or {}))],
        operation_timeout=30,
    )
    futures[name].result(timeout=WAIT)
    for p in range(partitions):
        wait_for(in_sync(cluster, name, p), f"{name}-{p} in sync")


def in_sync(
    cluster: ProcessCluster, topic: str, partition: int, size: int = 3
) -> Condition:
    """The partition's ISR has ``size`` replicas."""
    return lambda: len(state(cluster, topic, partition).isr) == size


def state(cluster: ProcessCluster, topic: str, partition: int = 0) -> PartitionState:
    """What the brokers' Metadata says of ``topic``-``partition`` now (leader -1: none, or
    the answering broker does not know the partition yet). A request no broker answers
    is asked again, within :data:`WAIT`."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            metadata = admin(cluster).list_topics(topic, timeout=5)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or partition not in found.partitions:
        return PartitionState(-1, (), ())
    p = found.partitions[partition]
    return PartitionState(p.leader, tuple(p.replicas), tuple(p.isrs))


def read_values(cluster: ProcessCluster, topic: str) -> list[bytes]:
    """Partition 0 from its start to its high watermark, as the leader serves it."""

    def reader() -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "reader",
                # No group offsets: committing them on close would wait for a group
                # coordinator, which a cluster that lost brokers may not have.
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )

    consumer = reader()
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                tp = KafkaTopicPartition(topic, 0)
                end = consumer.get_watermark_offsets(tp, timeout=WAIT / 4)[1]
                break
            except KafkaException as exc:
                # Right after a leader change librdkafka may still hold metadata from a
                # broker that had not replayed it (Local: Unknown partition), and keep it
                # for minutes: ask again with a new client, as an application restarted
                # would, until the deadline.
                if time.monotonic() > deadline:
                    # Name what the brokers say now: readable from CI's output alone.
                    now = state(cluster, topic)
                    raise AssertionError(f"{exc}; {topic}-0 is now {now}") from exc
                consumer.close()
                time.sleep(0.2)  # polling, inside the deadline: do not spin
                consumer = reader()
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT
        while len(values) < end:
            assert time.monotonic() < deadline, f"read {len(values)} of {end}"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
        return values
    finally:
        consumer.close()


def known_state(
    cluster: ProcessCluster, topic: str, partition: int = 0
) -> PartitionState:
    """``state``, waiting until the answering broker knows the partition's leader (a
    broker that has not replayed the topic yet says -1)."""
    found: list[PartitionState] = []

    def known() -> bool:
        found[:] = [state(cluster, topic, partition)]
        return found[0].leader >= 0

    wait_for(known, f"a known leader of {topic}-{partition}")
    return found[0]


def create_on(
    cluster: ProcessCluster,
    topic: str,
    replicas: list[int],
    configs: Mapping[str, str] | None = None,
) -> None:
    """A one-partition topic on exactly ``replicas`` (the first leads), once in sync."""
    client = admin(cluster)
    new = NewTopic(
        topic,
        num_partitions=1,
        replica_assignment=[replicas],
        config=dict(configs or {}),
    )
    client.create_topics([new])[topic].result(timeout=WAIT)
    wait_for(in_sync(cluster, topic, 0, len(replicas)), f"{topic} in sync")


@contextmanager
def shared_cluster(
    root: Path,
    brokers: int = 3,
    *,
    mode: str = "kraft",
    racks: Mapping[int, str] | None = None,
) -> Iterator[ProcessCluster]:
    """A started cluster with :data:`FAST` settings for a module's tests to share (each
    uses topics of its own); killed at the end. ``mode`` ``zookeeper``: ZooKeeper mode
    (a ZooKeeper server, brokers 0..N-1 electing their controller through it)."""
    ports = free_ports(brokers + 1)
    cluster = ProcessCluster.create(
        root,
        brokers,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides=FAST,
        zookeeper=mode == "zookeeper",
        zookeeper_port=ports[0],
        racks=racks,
    )
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.kill_all()
