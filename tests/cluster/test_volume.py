"""Replication of real volumes with real processes: followers that fetch many
responses' worth of data in a row (seed 000's replication sections; KIP-74, KIP-101).

A leader answers a follower's Fetch with at most ``replica.fetch.max.bytes`` of a
partition, cut wherever the limit falls, inside a record batch too; the follower keeps
the whole batches and fetches the partial one again from its start. A first batch larger
than the limit comes back whole (``min_one_message``), so a follower never gets stuck.
Nothing here moves a few records: every test moves tens or hundreds of MiB, so that every
response of a catching-up follower is full and most end inside a batch.

- **A follower restarted behind a burst catches up** (the reproduction of a follower
  that died on a response ending inside a batch): 20,000 records of 1,000 bytes are
  written with ``acks=1`` while one follower is dead; restarted, it rejoins the ISR
  within ``replica.lag.time.max.ms`` and some slack, no broker process exits, and every
  acknowledged record is read back from each of the three replicas as leader.
- **A follower catches up 100 MiB**: with ``replica.fetch.max.bytes`` at its default
  (1 MiB) and at 64 KiB, one cluster each, a follower is killed while 100 MiB of
  1,000-byte records (in batches of ~50 KB: both limits cut inside one) and 100 MiB of
  1 MB records (a batch each: cut by 1 MiB, larger than 64 KiB) are written to two
  topics; restarted, it rejoins both ISRs, and with the other two brokers stopped it
  leads both partitions and serves every acknowledged record, checksums equal.
- **Failover under sustained load**: an idempotent ``acks=all`` producer writes about
  4 MiB/s; after 6 s the leader is SIGKILLed, a follower takes over, and the old
  leader restarts, truncates, catches up (tens of MiB) and rejoins the ISR while the
  load goes on, for 4 s more after the rejoin (about 20 s in all). Every acknowledged
  record is read back exactly once and in order, and once the cluster has stopped the
  three replicas hold the same batches.

Values are seeded random bytes (incompressible; no compression), each checked by a
digest against what the producer saw acknowledged.
"""

from __future__ import annotations

import hashlib
import random
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Sequence

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import ProcessCluster, replica_batches
from tests.cluster._cluster import (
    WAIT,
    Condition,
    MakeCluster,
    create_on,
    state,
    wait_for,
)

# Clusters of real processes moving hundreds of MiB on a loaded two-core machine.
pytestmark = pytest.mark.timeout(300)

MiB = 1024 * 1024
LAG_MS = 30_000
"""``replica.lag.time.max.ms`` (Kafka's default, set explicitly): a restarted follower
that keeps up rejoins the ISR well within it."""
REJOIN = LAG_MS / 1000 + WAIT
"""Seconds a restarted follower has to rejoin the ISR: the lag time plus slack for a
loaded machine."""
READ = 120.0  # seconds a consumer has to read 100 MiB back from a Python broker
BIG = 1_000_000  # librdkafka's default batch.size: a 1 MB record is a batch of its own
MAX_MESSAGE = str(2 * BIG)  # max.message.bytes / message.max.bytes that accept it


def digest(value: bytes | None) -> bytes:
    assert value is not None
    return hashlib.blake2b(value, digest_size=8).digest()


def seeded_values(seed: str, count: int, size: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    for _ in range(count):
        yield rng.randbytes(size)


def running(cluster: ProcessCluster, nodes: Iterable[int]) -> Condition:
    """A condition that fails the test as soon as one of ``nodes`` has exited: a
    follower that dies on what its leader sent fails it at once, with its log's end."""

    def check() -> bool:
        for node in nodes:
            assert cluster.pid(node) is not None, (
                f"node {node}'s process exited (a broker stays up whatever its leader "
                f"sends it):\n{cluster.tail(node, 30)}"
            )
        return True

    return check


def rejoined(cluster: ProcessCluster, topics: Sequence[str]) -> Condition:
    """Every node runs (the controller too) and each of ``topics`` has all three brokers
    in its ISR."""
    alive = running(cluster, cluster.node_ids)
    return lambda: alive() and all(len(state(cluster, t).isr) == 3 for t in topics)


class Acknowledged:
    """A confluent-kafka producer that keeps, per topic, the offset and digest of every
    record acknowledged to it (partition 0)."""

    def __init__(self, cluster: ProcessCluster, **config: object) -> None:
        self.acked: dict[str, dict[int, bytes]] = {}
        self.errors: list[KafkaError] = []
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "compression.type": "none",  # the bytes moved are the bytes written
                "message.timeout.ms": 120_000,
                "log_level": 0,
                **config,
            }
        )

    def _report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(error)
            return
        topic, offset = message.topic(), message.offset()
        assert topic is not None
        assert offset is not None
        self.acked.setdefault(topic, {})[offset] = digest(message.value())

    def send(self, topic: str, values: Iterable[bytes]) -> None:
        """Every value to partition 0, as fast as librdkafka takes them (its queue
        paces the loop), then wait for every answer."""
        for value in values:
            while True:
                try:
                    self.producer.produce(
                        topic, value, partition=0, on_delivery=self._report
                    )
                    break
                except BufferError:
                    self.producer.poll(0.05)  # the queue is full: serve answers
            self.producer.poll(0)
        left = self.producer.flush(READ)
        assert left == 0, f"every record is answered within {READ:.0f}s: {left} are not"
        assert not self.errors, (
            f"every write to a cluster with a leader succeeds: {self.errors[:5]}"
        )

    def expected(self, topic: str) -> list[tuple[int, bytes]]:
        return sorted(self.acked.get(topic, {}).items())


def _reader(cluster: ProcessCluster) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "volume-reader",
            "enable.auto.commit": False,  # no group offsets: assign only
            "log_level": 0,
        }
    )


def high_watermark(cluster: ProcessCluster, topic: str) -> int:
    """Partition 0's high watermark as its leader says now (-1: no answer yet; a fresh
    client each time, as librdkafka may keep stale metadata after a leader change)."""
    consumer = _reader(cluster)
    try:
        _low, high = consumer.get_watermark_offsets(
            KafkaTopicPartition(topic, 0), timeout=5
        )
        return high
    except KafkaException:
        return -1
    finally:
        consumer.close()


def read_digests(
    cluster: ProcessCluster, topic: str, count: int
) -> list[tuple[int, bytes]]:
    """Partition 0 from offset 0 to its high watermark, once that is ``count``: the
    offset and digest of each record."""
    end: list[int] = []

    def reached() -> bool:
        end[:] = [high_watermark(cluster, topic)]
        return end[0] >= count

    wait_for(reached, f"{topic}'s high watermark at {count}", WAIT)
    assert end[0] == count, (
        f"{topic} ends at {end[0]}, not at {count}: the log holds exactly the "
        "acknowledged records"
    )
    consumer = _reader(cluster)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + READ
        while len(got) < count:
            assert time.monotonic() < deadline, (
                f"a consumer reads {topic}'s {count} records within {READ:.0f}s: "
                f"read {len(got)}"
            )
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    offset = message.offset()
                    assert offset is not None
                    got.append((offset, digest(message.value())))
        return got
    finally:
        consumer.close()


def difference(
    got: Sequence[tuple[int, bytes]], want: Sequence[tuple[int, bytes]]
) -> str:
    """Where two (offset, digest) lists first differ, briefly (pytest's diff of 100,000
    items would take minutes)."""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return f"record {i}: read {g}, acknowledged {w}"
    return f"read {len(got)} records, acknowledged {len(want)}"


def assert_serves_acknowledged(
    cluster: ProcessCluster, topic: str, want: list[tuple[int, bytes]], leader: int
) -> None:
    got = read_digests(cluster, topic, len(want))
    same = got == want
    assert same, (
        f"broker {leader}, leading {topic}, serves every acknowledged record at its "
        f"offset, byte for byte: {difference(got, want)}"
    )


def led_by(cluster: ProcessCluster, topic: str, not_by: Iterable[int]) -> int:
    """Wait until a broker not in ``not_by`` leads ``topic``; that broker."""
    excluded = {-1, *not_by}
    found: list[int] = []

    def elected() -> bool:
        found[:] = [state(cluster, topic).leader]
        return found[0] not in excluded

    wait_for(elected, f"a leader of {topic} other than {sorted(excluded)}")
    return found[0]


def fenced(cluster: ProcessCluster, topics: Sequence[str], broker: int) -> Condition:
    return lambda: all(broker not in state(cluster, t).isr for t in topics)


# --- a follower restarted behind a burst -------------------------------------------------


def test_a_follower_restarted_behind_a_burst_catches_up(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(**{"replica.lag.time.max.ms": str(LAG_MS)})
    create_on(cluster, "burst", [1, 2, 3])
    cluster.kill(3)
    wait_for(fenced(cluster, ["burst"], 3), "broker 3 out of burst's ISR")
    producer = Acknowledged(cluster, acks=1, **{"linger.ms": 5})
    producer.send("burst", seeded_values("burst", 20_000, 1000))
    want = producer.expected("burst")
    assert [o for o, _ in want] == list(range(20_000)), (
        "with acks=1 and a live leader every record is acknowledged, at offsets 0..N-1"
    )

    cluster.start(3)
    wait_for(
        rejoined(cluster, ["burst"]),
        "broker 3, restarted 20 MB behind, back in burst's ISR with every broker "
        "running (a follower catches up across responses that end inside a batch)",
        REJOIN,
    )
    # Each replica in turn leads (the others stopped by controlled shutdown) and serves
    # every acknowledged record.
    stopped: list[int] = []
    for _ in range(3):
        leader = led_by(cluster, "burst", stopped)
        assert_serves_acknowledged(cluster, "burst", want, leader)
        stopped.append(leader)
        if len(stopped) < 3:
            cluster.stop(leader)
    assert sorted(stopped) == [1, 2, 3], (
        f"each of the three replicas served the records as leader once: {stopped}"
    )


# --- a follower catching up 100 MiB ------------------------------------------------------

SMALL = "records-1kB"
LARGE = "records-1MB"


@pytest.mark.parametrize(
    "fetch_max_bytes", [str(MiB), str(64 * 1024)], ids=["fetch-1MiB", "fetch-64KiB"]
)
def test_a_follower_catches_up_100_mib(
    make_cluster: MakeCluster, fetch_max_bytes: str
) -> None:
    cluster = make_cluster(
        **{
            "replica.fetch.max.bytes": fetch_max_bytes,
            "replica.lag.time.max.ms": str(LAG_MS),
        }
    )
    topics = [SMALL, LARGE]
    # Broker 3 follows both, each led by another broker.
    create_on(cluster, SMALL, [1, 2, 3])
    create_on(cluster, LARGE, [2, 1, 3], {"max.message.bytes": MAX_MESSAGE})
    cluster.kill(3)
    wait_for(fenced(cluster, topics, 3), "broker 3 out of both ISRs")

    started = time.monotonic()
    # acks=all: the leader and the live follower hold each record acknowledged.
    small = Acknowledged(cluster, **{"linger.ms": 5, "batch.size": 50_000})
    small.send(SMALL, seeded_values(SMALL, 100 * MiB // 1000, 1000))
    large = Acknowledged(cluster, **{"linger.ms": 5, "message.max.bytes": MAX_MESSAGE})
    large.send(LARGE, seeded_values(LARGE, 100, BIG))
    produced = time.monotonic()

    cluster.start(3)
    wait_for(
        rejoined(cluster, topics),
        f"broker 3, restarted 200 MiB behind, back in both ISRs with every broker "
        f"running (replica.fetch.max.bytes={fetch_max_bytes})",
        REJOIN,
    )
    caught_up = time.monotonic()
    print(
        f"produced 200 MiB in {produced - started:.1f}s; "
        f"broker 3 caught up in {caught_up - produced:.1f}s"
    )
    # Broker 3 alone: it leads both and serves what the others acknowledged, so its log
    # ends where the leaders' did, with the same records.
    for other in (1, 2):
        cluster.stop(other)
    for topic, producer in ((SMALL, small), (LARGE, large)):
        assert led_by(cluster, topic, [1, 2]) == 3, (
            f"with brokers 1 and 2 stopped, broker 3 (in the ISR) leads {topic}"
        )
        assert_serves_acknowledged(cluster, topic, producer.expected(topic), 3)


# --- failover under sustained load -------------------------------------------------------

RATE = 4 * MiB  # bytes a second
SEQ = struct.Struct(">q")


class PacedProducer:
    """An idempotent ``acks=all`` confluent-kafka producer writing numbered records of
    1-8 KB (seeded) at about :data:`RATE` until stopped; keeps the numbers acknowledged
    in acknowledgement order."""

    def __init__(self, cluster: ProcessCluster, topic: str) -> None:
        self.topic = topic
        self.acked: list[int] = []
        self.acked_bytes = 0
        self.errors: list[KafkaError] = []
        self.sent = 0
        self.stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "enable.idempotence": True,  # acks=all, retries, in order (KIP-98)
                "compression.type": "none",
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
        assert value is not None
        self.acked.append(SEQ.unpack_from(value)[0])
        self.acked_bytes += len(value)

    def _run(self) -> None:
        rng = random.Random("sustained")
        start = time.monotonic()
        written = 0
        while not self.stop.is_set():
            if written > RATE * (time.monotonic() - start):
                self.producer.poll(0.01)  # ahead of the rate: serve answers meanwhile
                continue
            value = SEQ.pack(self.sent) + rng.randbytes(rng.randrange(1000, 8000))
            try:
                self.producer.produce(
                    self.topic, value, partition=0, on_delivery=self._report
                )
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.sent += 1
            written += len(value)
            self.producer.poll(0)
        self.producer.flush(READ)


def read_numbers(
    cluster: ProcessCluster, topic: str, count: int
) -> list[tuple[int, int]]:
    """(offset, number) of each record of partition 0, once its high watermark is
    ``count``."""
    wait_for(
        lambda: high_watermark(cluster, topic) >= count,
        f"{topic}'s high watermark at {count}",
    )
    consumer = _reader(cluster)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + READ
        while len(got) < count:
            assert time.monotonic() < deadline, (
                f"a consumer reads {topic}'s {count} records within {READ:.0f}s: "
                f"read {len(got)}"
            )
            for message in consumer.consume(1000, 0.5):
                value, offset = message.value(), message.offset()
                if message.error() is None and value is not None and offset is not None:
                    got.append((offset, SEQ.unpack_from(value)[0]))
        return got
    finally:
        consumer.close()


def test_a_leader_killed_under_sustained_load_rejoins(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(**{"replica.lag.time.max.ms": str(LAG_MS)})
    create_on(cluster, "sustained", [1, 2, 3], {"min.insync.replicas": "2"})
    producer = PacedProducer(cluster, "sustained")
    started = time.monotonic()
    producer.thread.start()
    try:
        wait_for(
            lambda: producer.acked_bytes >= 6 * RATE,
            "6 s of records acknowledged before the kill",
        )
        leader = state(cluster, "sustained").leader
        assert leader in (1, 2, 3), f"sustained-0 has a leader: {leader}"
        cluster.kill(leader)
        killed = time.monotonic()
        led_by(cluster, "sustained", [leader])
        cluster.start(leader)
        wait_for(
            rejoined(cluster, ["sustained"]),
            f"broker {leader}, killed as leader under load, back in the ISR with every "
            "broker running",
            REJOIN,
        )
        back = time.monotonic()
        print(
            f"killed {leader} after {killed - started:.1f}s; back in the ISR "
            f"{back - killed:.1f}s later"
        )
        # The load goes on with the old leader back as a follower.
        after = producer.acked_bytes + 4 * RATE
        wait_for(
            lambda: producer.acked_bytes >= after,
            "4 s more of records acknowledged with all three replicas in the ISR",
        )
    finally:
        producer.stop.set()
        producer.thread.join(READ)
    assert not producer.thread.is_alive(), (
        f"the producer's records are all answered within {READ:.0f}s of the end"
    )
    assert not producer.errors, (
        f"an idempotent producer's writes all succeed across a failover: "
        f"{producer.errors[:5]}"
    )
    sent, acked = producer.sent, producer.acked
    print(f"{sent} records, {producer.acked_bytes / MiB:.0f} MiB acknowledged")
    assert acked == list(range(sent)), (
        "every record sent was acknowledged, in the order sent"
    )
    reading = time.monotonic()
    read = read_numbers(cluster, "sustained", sent)
    print(f"read back in {time.monotonic() - reading:.1f}s")
    numbers = [n for _, n in read]
    assert [o for o, _ in read] == list(range(len(read))), (
        "the partition's offsets run without gaps from 0 (no compaction, no aborts)"
    )
    assert len(numbers) == len(set(numbers)), (
        "no acknowledged record is read back twice (idempotence across the failover)"
    )
    assert numbers == sorted(numbers), "records are read back in the order produced"
    assert numbers == acked, (
        f"every acknowledged record is read back: {sent} sent, {len(numbers)} read"
    )
    stopping = time.monotonic()
    cluster.down()
    dirs = [cluster.node_dir(b) / "sustained-0" for b in (1, 2, 3)]
    logs = [replica_batches(d) for d in dirs]
    print(f"stopped and compared in {time.monotonic() - stopping:.1f}s")
    assert logs[0], "the leader's replica holds the records on disk"
    assert all(log == logs[0] for log in logs), (
        "once stopped, the three replicas hold the same batches (offsets, epochs, CRCs)"
    )
