"""A soak: two minutes of writes and reads on a KRaft cluster while its followers are
restarted again and again (seeded; about 2.5 minutes in all on a loaded two-core
machine, part of ``make test``).

One controller (node 0) and three brokers; a topic of four partitions, replication
factor 3 and ``min.insync.replicas=2``, every partition led by broker 1 and followed by
brokers 2 and 3. An idempotent ``acks=all`` confluent-kafka producer writes records of
10 bytes to 100 KB (log-uniform sizes, seeded) at about 30 a second, each value carrying
its sequence number; a consumer reads every partition from the start meanwhile. Every
few seconds (seeded) one follower is restarted, by SIGKILL and start and by a clean
restart in turn; the controller and the leader never are. The guarantees checked:

- **no node crashes**: no process of the cluster wrote a traceback or ended without
  being told to (:meth:`ProcessCluster.crashes`), before each restart and at the end;
- **a restarted follower rejoins the ISR**: before each restart, and at the end, every
  partition's ISR is whole again within twice ``replica.lag.time.max.ms``;
- **acknowledged means durable, exactly once, in order**: every record the producer
  saw acknowledged is read back once per partition, in the order acknowledged, byte
  for byte, and nothing else (no delivery failed);
- **a consumer reading during the restarts** saw the same records, once each, in order.

Replica fetches are limited to 256 KiB (``replica.fetch.max.bytes``): the leader's
answers to a catching-up follower end inside a record batch most of the time.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ClusterError, ProcessCluster
from tests.cluster._cluster import (
    WAIT,
    Condition,
    MakeCluster,
    admin,
    state,
    wait_for,
)

# The soak itself is two minutes; the cluster's start, the catch-ups and the read-back
# on a loaded two-core machine come on top.
pytestmark = pytest.mark.timeout(600)

SEED = 20_240_917
SOAK_SECONDS = 120.0
TOPIC = "soak"
PARTITIONS = 4
LEADER, FOLLOWERS = 1, (2, 3)
RATE = 30.0
"""Records a second the producer aims at: about 330 KB/s, 40 MB in the soak."""
MAX_IN_FLIGHT = 500
"""Records sent and not yet acknowledged before the producer waits for answers."""
LAG_MS = 10_000
ISR_DEADLINE = 2 * LAG_MS / 1000
"""Seconds a restarted follower has to be back in every ISR, once it is running: it
catches up, then its leader proposes it (AlterPartition) within the lag time."""
PAUSE = (2.0, 6.0)
"""Seconds (seeded, uniform) the cluster runs whole between two restarts."""
OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "replica.fetch.max.bytes": str(256 * 1024),
}


def record(seq: int, size: int) -> bytes:
    """Record ``seq``'s value: its number, then filler up to ``size`` bytes."""
    head = f"{seq}:".encode()
    return head + bytes([seq % 251]) * max(0, size - len(head))


def seq_of(value: bytes) -> int:
    return int(value.split(b":", 1)[0])


class SoakProducer:
    """An idempotent ``acks=all`` producer sending numbered records of seeded sizes to
    seeded partitions, paced at :data:`RATE`, until stopped; keeps what was
    acknowledged, per partition, in acknowledgement order."""

    def __init__(self, bootstrap: str) -> None:
        self.random = random.Random(SEED)
        self.sizes: dict[int, int] = {}
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self.sent = 0
        self.stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "message.timeout.ms": 300_000,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": 0,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def acknowledged(self) -> int:
        return sum(len(seqs) for seqs in self.acked.values())

    def _report(self, error: KafkaError | None, message: Message) -> None:
        value, partition = message.value(), message.partition()
        assert value is not None
        assert partition is not None
        if error is not None:
            self.errors.append(f"record {seq_of(value)}: {error}")
        else:
            self.acked[partition].append(seq_of(value))

    def _run(self) -> None:
        start = time.monotonic()
        while not self.stop.is_set():
            seq = self.sent
            size = round(10 ** self.random.uniform(1, 5))  # 10 B to 100 KB
            partition = self.random.randrange(PARTITIONS)
            self.sizes[seq] = size
            while self.sent - self.acknowledged() - len(self.errors) >= MAX_IN_FLIGHT:
                self.producer.poll(0.1)  # answers first: bounded in flight
            self.producer.produce(
                TOPIC, record(seq, size), partition=partition, on_delivery=self._report
            )
            self.sent += 1
            # Paced: the next send is due at start + sent / RATE.
            self.producer.poll(max(0.0, start + self.sent / RATE - time.monotonic()))
        self.producer.flush(WAIT * 4)


class SoakConsumer:
    """Reads every partition from its start while the soak goes on."""

    def __init__(self, bootstrap: str) -> None:
        self.read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.stop = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "soak-reader",
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": 0,
            }
        )
        self.consumer.assign(
            [TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def count(self) -> int:
        return sum(len(values) for values in self.read.values())

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                message = self.consumer.poll(0.2)
                if message is None or message.error() is not None:
                    continue  # a broker restarting: librdkafka fetches again
                partition, value = message.partition(), message.value()
                assert partition is not None
                assert value is not None
                self.read[partition].append(value)
        finally:
            self.consumer.close()


def create_led_by_one(cluster: ProcessCluster) -> None:
    """The topic, every partition led by :data:`LEADER` (its preferred replica)."""
    assignment = [
        [LEADER, *(FOLLOWERS if p % 2 == 0 else FOLLOWERS[::-1])]
        for p in range(PARTITIONS)
    ]
    topic = NewTopic(
        TOPIC,
        num_partitions=PARTITIONS,
        replica_assignment=assignment,
        config={"min.insync.replicas": "2"},
    )
    client = admin(cluster)  # held until the answer: a collected client cancels it
    client.create_topics([topic])[TOPIC].result(timeout=WAIT)
    wait_for(isr_whole(cluster), f"every {TOPIC} partition with its whole ISR")


def isr_whole(cluster: ProcessCluster) -> Condition:
    return lambda: all(
        len(state(cluster, TOPIC, p).isr) == 3 for p in range(PARTITIONS)
    )


def producing(producer: SoakProducer) -> Condition:
    """More records acknowledged than now."""
    acked = producer.acknowledged()
    return lambda: producer.acknowledged() > acked


def assert_no_crash(cluster: ProcessCluster, when: str) -> None:
    crashes = cluster.crashes()
    assert not crashes, (
        f"no node dies of an exception or ends without being told to ({when}):\n"
        + "\n\n".join(str(c) for c in crashes)
    )


def read_everything(cluster: ProcessCluster) -> dict[int, list[bytes]]:
    """Every partition from its start to its high watermark, by a new consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "soak-checker",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=WAIT)[1]
            for p in range(PARTITIONS)
        }
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + WAIT * 2
        while any(len(read[p]) < ends[p] for p in read):
            got = {p: len(v) for p, v in read.items()}
            assert time.monotonic() < deadline, f"read {got} of {ends}"
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, value = message.partition(), message.value()
            assert partition is not None
            assert value is not None
            read[partition].append(value)
        return read
    finally:
        consumer.close()


def test_followers_restarted_for_two_minutes_lose_nothing_and_crash_nothing(
    make_cluster: MakeCluster,
) -> None:
    began = time.monotonic()
    cluster = make_cluster(brokers=3, **OVERRIDES)
    create_led_by_one(cluster)
    schedule = random.Random(SEED + 1)
    producer = SoakProducer(cluster.bootstrap)
    consumer = SoakConsumer(cluster.bootstrap)
    producer.thread.start()
    consumer.thread.start()
    try:
        restarts = soak(cluster, producer, schedule)
        producer.stop.set()
        producer.thread.join(WAIT * 5)
        soaked = time.monotonic() - began
        assert not producer.thread.is_alive(), "the producer flushes its last records"
        check(cluster, producer, consumer)
    finally:
        producer.stop.set()
        consumer.stop.set()
        producer.thread.join(WAIT * 5)
        consumer.thread.join(WAIT)
    print(
        f"soak: {len(restarts)} restarts ({', '.join(restarts)}), "
        f"{producer.acknowledged()} records ({sum(producer.sizes.values())} bytes) "
        f"acknowledged in {soaked:.0f}s, {time.monotonic() - began:.0f}s in all"
    )


def soak(
    cluster: ProcessCluster, producer: SoakProducer, schedule: random.Random
) -> list[str]:
    """Restart a follower every few seconds for :data:`SOAK_SECONDS`; what was done."""
    restarts: list[str] = []
    end = time.monotonic() + SOAK_SECONDS
    while True:
        # Paced (the cluster runs whole a while), not waiting for anything.
        time.sleep(min(schedule.uniform(*PAUSE), max(0.0, end - time.monotonic())))
        if time.monotonic() >= end:
            return restarts
        wait_for(
            producing(producer), "the producer's records acknowledged between restarts"
        )
        victim = schedule.choice(FOLLOWERS)
        how = "killed" if len(restarts) % 2 == 0 else "restarted"
        try:
            if how == "killed":
                cluster.kill(victim)
                cluster.start(victim)
            else:
                cluster.restart(victim)
        except ClusterError:
            # A node that died while it started: name the crash, if it was one.
            assert_no_crash(cluster, f"{how} broker {victim} after restarts {restarts}")
            raise
        restarts.append(f"{victim} {how}")
        wait_for(
            isr_whole(cluster),
            f"a restarted follower rejoins the ISR: broker {victim} back in every "
            f"partition's ISR after it was {how}",
            ISR_DEADLINE,
        )
        assert_no_crash(cluster, f"after restarts {restarts}")


def check(
    cluster: ProcessCluster, producer: SoakProducer, consumer: SoakConsumer
) -> None:
    assert_no_crash(cluster, "at the end of the soak")
    wait_for(
        isr_whole(cluster),
        "a restarted follower rejoins the ISR: every replica in its partition's ISR "
        "at the end",
        ISR_DEADLINE,
    )
    assert not producer.errors, (
        "an idempotent acks=all producer gets every record acknowledged while only "
        f"followers restart: {producer.errors[:10]}"
    )
    read = read_everything(cluster)
    for p in range(PARTITIONS):
        seqs = [seq_of(value) for value in read[p]]
        assert len(seqs) == len(set(seqs)), (
            f"{TOPIC}-{p}: exactly once: a record is read back twice"
        )
        assert seqs == producer.acked[p], (
            f"{TOPIC}-{p}: every acknowledged record is read back once, in the order "
            f"acknowledged, and nothing else ({len(seqs)} read, "
            f"{len(producer.acked[p])} acknowledged)"
        )
        changed = [
            s
            for s, value in zip(seqs, read[p], strict=True)
            if value != record(s, producer.sizes[s])
        ]
        assert not changed, (
            f"{TOPIC}-{p}: every record is read back byte for byte; changed: "
            f"{changed[:10]}"
        )
    total = sum(len(v) for v in read.values())
    wait_for(
        lambda: consumer.count() >= total,
        "the consumer reading during the soak catches up with every record",
    )
    for p in range(PARTITIONS):
        assert consumer.read[p] == read[p], (
            f"{TOPIC}-{p}: a consumer reading while followers restart sees every "
            "record once, in order"
        )
