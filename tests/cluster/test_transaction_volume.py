"""Transactions with real volumes on three broker processes (KIP-98): the last stable
offset, the aborted-transaction index (``.txnindex``) and the markers over tens of MiB,
many segments, a follower that catches up on them and a leader that crashes.

Two confluent-kafka transactional producers, each in a thread of its own, write
:data:`TRANSACTIONS` transactions each to one partition, their transactions interleaved
in the log. A transaction holds records of every size from empty to 500 KB (seeded), and
a seeded third of them abort; about 25 MiB in all, to a topic whose segments roll at
1 MiB, so that transactions span segments and aborted ranges cross segment files. A
follower is SIGKILLed before the writes and restarted half-way: it copies records and
markers it has not seen and keeps its own last stable offset and aborted index.

What the test proves:

- each replica, as the leader (the other two stopped in turn), serves with
  ``read_committed`` exactly the committed records, each once, in each producer's
  order, never a record of an aborted transaction, payloads intact;
- with ``read_uncommitted`` the same replica serves every record written, aborted ones
  included (each producer flushed before it aborted, so they are all in the log);
- the last replica, SIGKILLed and restarted (recovery rebuilds its producer state and
  the aborted index of the segment it was writing), serves the same two reads.
"""

from __future__ import annotations

import random
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator

import attrs
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import WAIT, MakeCluster, create_on, state, wait_for

# A cluster of real processes moving tens of MiB a few times on a loaded two-core machine.
pytestmark = pytest.mark.timeout(420)

TOPIC = "txn-volume"
PRODUCERS = 2
TRANSACTIONS = 30
"""Transactions per producer."""
SIZES = (0, 1, 100, 1_000, 10_000, 100_000, 500_000)
"""Record sizes, every order of magnitude up to half of librdkafka's batch size."""
WEIGHTS = (4, 4, 8, 8, 6, 3, 1)
RECORDS_PER_TXN = (5, 40)
ABORT_SHARE = 1 / 3
SEGMENT = str(1024 * 1024)
READ = 180.0  # seconds a consumer has to read the partition back from a Python broker
HEAD = struct.Struct(">BHHI")
"""Each value starts with its producer, transaction, record number and payload length."""


@attrs.frozen
class Record:
    producer: int
    txn: int
    number: int
    size: int

    def value(self) -> bytes:
        payload = random.Random(f"{self.producer}-{self.txn}-{self.number}").randbytes(
            self.size
        )
        return HEAD.pack(self.producer, self.txn, self.number, self.size) + payload

    @classmethod
    def read(cls, value: bytes) -> Record:
        """The record a value holds; its payload must be the one written."""
        record = cls(*HEAD.unpack_from(value))
        assert value == record.value(), f"{record}'s payload is intact"
        return record


def transactions(producer: int) -> Iterator[tuple[list[Record], bool]]:
    """Each transaction of ``producer``: its records and whether it commits (seeded)."""
    rng = random.Random(f"txn-volume-{producer}")
    for txn in range(TRANSACTIONS):
        count = rng.randint(*RECORDS_PER_TXN)
        sizes = rng.choices(SIZES, WEIGHTS, k=count)
        yield (
            [Record(producer, txn, n, size) for n, size in enumerate(sizes)],
            rng.random() >= ABORT_SHARE,
        )


class Writer:
    """One transactional producer writing its transactions in a thread."""

    def __init__(self, cluster: ProcessCluster, producer: int) -> None:
        self.number = producer
        self.committed: list[Record] = []
        self.aborted: list[Record] = []
        self.done_half = threading.Event()
        self.error: BaseException | None = None
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "transactional.id": f"volume-{producer}",
                "compression.type": "none",  # the bytes moved are the bytes written
                "linger.ms": 5,
                "log_level": 0,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.producer.init_transactions(WAIT)
            for txn, (records, commit) in enumerate(transactions(self.number)):
                self.producer.begin_transaction()
                for record in records:
                    self._produce(record.value())
                if commit:
                    self.producer.commit_transaction(WAIT)
                    self.committed.extend(records)
                else:
                    # Every record reaches the log before the abort: a
                    # read_uncommitted read then sees all of them.
                    assert self.producer.flush(WAIT) == 0
                    self.producer.abort_transaction(WAIT)
                    self.aborted.extend(records)
                if txn == TRANSACTIONS // 2:
                    self.done_half.set()
        except BaseException as exc:  # reported by the test's thread
            self.error = exc
            self.done_half.set()

    def _produce(self, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(TOPIC, value, partition=0)
                return
            except BufferError:
                self.producer.poll(0.05)  # the queue is full: serve answers


def read_all(cluster: ProcessCluster, isolation: str) -> list[Record]:
    """Partition 0 from offset 0 to its end (the LSO for read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "volume-reader",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    got: list[Record] = []
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + READ
        while True:
            assert time.monotonic() < deadline, (
                f"a {isolation} consumer reads the partition within {READ:.0f}s: "
                f"read {len(got)} records"
            )
            for message in consumer.consume(500, 0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return got
                    continue
                got.append(Record.read(message.value() or b""))
    finally:
        consumer.close()


def per_producer(records: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for record in records:
        out.setdefault(record.producer, []).append(record)
    return out


def check_reads(cluster: ProcessCluster, writers: list[Writer], leader: int) -> None:
    committed = read_all(cluster, "read_committed")
    assert per_producer(committed) == {w.number: w.committed for w in writers}, (
        f"broker {leader}, leading, serves with read_committed each committed record "
        "once, in its producer's order, and no aborted one"
    )
    everything = read_all(cluster, "read_uncommitted")
    written = [r for w in writers for r in (*w.committed, *w.aborted)]
    assert Counter(everything) == Counter(written), (
        f"broker {leader}, leading, serves with read_uncommitted every record written, "
        "aborted ones included, each once"
    )


def led_by(cluster: ProcessCluster, exclude: set[int]) -> int:
    found: list[int] = []

    def elected() -> bool:
        found[:] = [state(cluster, TOPIC).leader]
        return found[0] not in {-1, *exclude}

    wait_for(elected, f"a leader of {TOPIC} other than {sorted(exclude)}")
    return found[0]


def test_transactions_over_tens_of_mib_survive_catch_up_and_crash(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(
        **{
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
            "offsets.topic.replication.factor": "3",
        }
    )
    brokers = sorted(cluster.broker_ports)
    create_on(cluster, TOPIC, brokers, {"segment.bytes": SEGMENT})
    # __transaction_state (three replicas) is created while all three brokers run.
    warm = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": "warm",
            "log_level": 0,
        }
    )
    warm.init_transactions(WAIT)
    follower = brokers[2]
    cluster.kill(follower)
    wait_for(
        lambda: follower not in state(cluster, TOPIC).isr,
        f"broker {follower} out of the ISR",
    )

    writers = [Writer(cluster, p) for p in range(PRODUCERS)]
    for writer in writers:
        writer.thread.start()
    for writer in writers:
        assert writer.done_half.wait(READ), "half of the transactions within READ s"
    cluster.start(
        follower
    )  # it catches up on data and markers while the rest is written
    for writer in writers:
        writer.thread.join(READ)
        assert not writer.thread.is_alive(), "the transactions end within READ s"
        assert writer.error is None, f"producer {writer.number}: {writer.error!r}"
    assert all(w.committed and w.aborted for w in writers), (
        "each producer both committed and aborted transactions"
    )
    wait_for(
        lambda: len(state(cluster, TOPIC).isr) == 3,
        f"broker {follower}, restarted half-way, back in the ISR",
        READ,
    )

    # Each replica in turn leads, the others stopped (controlled shutdown).
    stopped: set[int] = set()
    leader = -1
    for _ in range(3):
        leader = led_by(cluster, stopped)
        check_reads(cluster, writers, leader)
        stopped.add(leader)
        if len(stopped) < 3:
            cluster.stop(leader)
    assert stopped == set(brokers), "each replica served the reads as leader"

    # The last one crashes; recovery rebuilds what it had not flushed.
    cluster.kill(leader)
    cluster.start(leader)
    assert led_by(cluster, set(brokers) - {leader}) == leader
    check_reads(cluster, writers, leader)
