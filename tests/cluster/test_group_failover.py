"""A consumer group survives the death of its coordinator (seed 000's group coordinator
moves with the leadership of its ``__consumer_offsets`` partition).

Three confluent-kafka consumers in one group share a six-partition RF 3 topic holding
numbered records. Each processes a batch, then commits it synchronously. Once a third
is processed the consumers pause, the broker that is the group's coordinator is
SIGKILLed, and they go on: the partition of
``__consumer_offsets`` that holds the group gets a new leader, which loads the group's
committed offsets from its copy of the log and becomes the coordinator; the consumers
find it and rejoin. Guarantee checked: **every record is processed, and the only ones
processed twice are those of a batch whose commit did not succeed** (the consumer saw
the commit fail, so it is Kafka's documented at-least-once window, and nothing beyond
it); committed offsets survive the coordinator's death. In KRaft mode and in ZooKeeper
mode alike.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import MODES, WAIT, MakeCluster, create_topic, wait_for

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = pytest.mark.timeout(300)

PARTITIONS = 6
RECORDS = 6000
GROUP = "workers"


class Worker:
    """One consumer thread: what it processed, and which batches it could not commit."""

    def __init__(
        self,
        cluster: ProcessCluster,
        name: str,
        stop: threading.Event,
        hold: Callable[[], bool],
    ) -> None:
        self.processed: list[tuple[int, int]] = []  # (partition, offset)
        self.uncommitted: set[tuple[int, int]] = set()
        self.errors: list[str] = []
        self.stop = stop
        self.hold = hold
        """True while the test wants consumption paused (around the kill)."""
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": GROUP,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "log_level": 0,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.consumer.subscribe(["jobs"])
            while not self.stop.is_set():
                if self.hold():
                    self.stop.wait(0.05)  # the background thread keeps the membership
                    continue
                batch = [
                    m for m in self.consumer.consume(100, 0.2) if m.error() is None
                ]
                if not batch:
                    continue
                done = [(m.partition(), m.offset()) for m in batch]
                taken = [(p, o) for p, o in done if p is not None and o is not None]
                self.processed += taken
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException:
                    # The coordinator is gone, or a rebalance began: these may be
                    # processed again by whoever owns their partitions next.
                    self.uncommitted.update(taken)
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            self.consumer.close()


def coordinator(cluster: ProcessCluster) -> int:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    [described] = client.describe_consumer_groups([GROUP]).values()
    return int(described.result(timeout=WAIT).coordinator.id)


@pytest.mark.parametrize("mode", MODES)
def test_a_group_keeps_consuming_when_its_coordinator_dies(
    make_cluster: MakeCluster, mode: str
) -> None:
    cluster = make_cluster(mode=mode)
    create_topic(cluster, "jobs", PARTITIONS, {"min.insync.replicas": "2"})
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "log_level": 0,
        }
    )
    for n in range(RECORDS):
        producer.produce("jobs", b"%d" % n, partition=n % PARTITIONS)
    assert producer.flush(WAIT) == 0
    stop, resume = threading.Event(), threading.Event()
    workers: list[Worker] = []

    def hold() -> bool:
        # Pause once a third is processed, until the coordinator has been killed.
        return not resume.is_set() and processed() >= RECORDS // 3

    def processed() -> int:
        return len({r for w in workers for r in w.processed})

    workers += [Worker(cluster, f"worker-{i}", stop, hold) for i in range(3)]
    for w in workers:
        w.thread.start()
    try:
        wait_for(lambda: processed() >= RECORDS // 3, "a third processed")
        dead = coordinator(cluster)
        cluster.kill(dead)
        at_kill = processed()
        resume.set()
        wait_for(lambda: coordinator(cluster) not in (dead, -1), "a new coordinator")
        wait_for(
            lambda: processed() >= RECORDS,
            "every record processed",
            timeout=WAIT * 2,
        )
    finally:
        stop.set()
        for w in workers:
            w.thread.join(WAIT)
    assert not [e for w in workers for e in w.errors]
    assert at_kill < RECORDS  # the rest was consumed under the new coordinator
    counts = Counter(r for w in workers for r in w.processed)
    assert len(counts) == RECORDS
    uncommitted = set().union(*(w.uncommitted for w in workers))
    twice = {r for r, n in counts.items() if n > 1}
    # A batch processed twice must be one whose commit failed, or one taken over from a
    # partition whose last batch failed to commit (its offsets come after that batch).
    failed_from: dict[int, int] = {}
    for partition, offset in uncommitted:
        failed_from[partition] = min(failed_from.get(partition, offset), offset)
    beyond = {(p, o) for p, o in twice if p not in failed_from or o < failed_from[p]}
    assert not beyond, f"processed twice without a failed commit: {sorted(beyond)[:10]}"
