"""What the cluster tests share: the settings their clusters run with, and what they ask
a cluster, through confluent-kafka's AdminClient (librdkafka reads the brokers' Metadata
as any client does). Every wait has a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import attrs
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster

WAIT = 60.0
"""Seconds a test waits for the cluster to do something that takes a few (a fencing,
an election, a restart) on a loaded two-core machine."""

FAST = {
    # A killed broker is fenced, and its partitions get new leaders, within 3 s.
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
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
        [NewTopic(name, partitions, 3, config=dict(configs or {}))], operation_timeout=30
    )
    futures[name].result(timeout=WAIT)
    for p in range(partitions):
        wait_for(in_sync(cluster, name, p), f"{name}-{p} in sync")


def in_sync(cluster: ProcessCluster, topic: str, partition: int, size: int = 3) -> Condition:
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
