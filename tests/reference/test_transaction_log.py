"""minikafka's ``__transaction_state`` records, ``.txnindex`` and transaction markers
against Kafka's own (KIP-98).

A transactional confluent-kafka producer commits one transaction and aborts the next on
the shared Kafka node; minikafka's readers then read what Kafka wrote for them: every
record of the transactional id out of Kafka's ``__transaction_state`` segments, and the
aborted-transaction index and the markers of the partition written.

What the first test proves: each key names the transactional id; the values follow Kafka's state
table (Empty on InitProducerId, Ongoing once a partition is added, PrepareCommit and
CompleteCommit, then Ongoing, PrepareAbort and CompleteAbort), with the producer id and
epoch InitProducerId gave, the partition written while the transaction is open and none
outside, a start time once a partition was added; and minikafka's writer, given what it
read, writes the same bytes Kafka wrote, in the value version Kafka chose. The others:
see their guarantees.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.common import TopicPartition
from minikafka.coordination.transaction import (
    TransactionState,
    TxnLogValue,
    TxnTransitMetadata,
    key_bytes,
    read_key,
    read_value,
    value_bytes,
)
from minikafka.log import (
    Log,
    LogConfig,
    TransactionIndex,
    end_txn_marker_batch,
    iter_decoded_batches,
    iter_records,
    read_end_txn_marker,
)
from reference.kafka import KafkaNode

pytestmark = pytest.mark.external

TXN_ID = "reference-txn-log"
TOPIC = "reference-txn-out"
WAIT = 60.0
S = TransactionState


def records_of(log_dir: Path, transactional_id: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record of ``transactional_id`` in Kafka's segments."""
    found = []
    for segment in sorted(log_dir.glob("__transaction_state-*/*.log")):
        for record in iter_records(segment.read_bytes()):
            if record.key is not None and read_key(record.key) == transactional_id:
                assert record.value is not None  # no tombstone: the id did not expire
                found.append((record.key, record.value))
    return found


def transit_of(value: TxnLogValue) -> TxnTransitMetadata:
    return TxnTransitMetadata(
        producer_id=value.producer_id,
        last_producer_id=value.previous_producer_id,
        producer_epoch=value.producer_epoch,
        last_producer_epoch=-1,
        txn_timeout_ms=value.txn_timeout_ms,
        state=value.state,
        topic_partitions=value.topic_partitions,
        txn_start_timestamp=value.txn_start_timestamp,
        txn_last_update_timestamp=value.txn_last_update_timestamp,
    )


EXPECTED = [
    S.EMPTY,
    S.ONGOING,
    S.PREPARE_COMMIT,
    S.COMPLETE_COMMIT,
    S.ONGOING,
    S.PREPARE_ABORT,
    S.COMPLETE_ABORT,
]


@pytest.fixture(scope="module")
def written(kafka_reference: KafkaNode) -> list[tuple[bytes, bytes]]:
    """One committed, then one aborted transaction of a record each, on the shared
    Kafka node; every record Kafka wrote for them to ``__transaction_state``."""
    admin = AdminClient({"bootstrap.servers": kafka_reference.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=WAIT)
    producer = Producer(
        {
            "bootstrap.servers": kafka_reference.bootstrap,
            "transactional.id": TXN_ID,
            "log_level": 0,
        }
    )
    producer.init_transactions(WAIT)
    for commit in (True, False):
        producer.begin_transaction()
        producer.produce(TOPIC, b"committed" if commit else b"aborted", partition=0)
        producer.flush(WAIT)
        if commit:
            producer.commit_transaction(WAIT)
        else:
            producer.abort_transaction(WAIT)
    # The markers' completion is written after the producer's call returns.
    deadline = time.monotonic() + WAIT
    while True:
        found = records_of(kafka_reference.log_dir, TXN_ID)
        if len(found) >= len(EXPECTED) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)  # polling Kafka's files, inside the deadline


def test_minikafka_reads_and_writes_kafkas_transaction_log_records(
    written: list[tuple[bytes, bytes]],
) -> None:
    # Guarantee: the module's first paragraph of proofs.
    values = [read_value(value) for _, value in written]
    assert [v.state for v in values] == EXPECTED
    assert {key for key, _ in written} == {key_bytes(TXN_ID)}
    assert len({(v.producer_id, v.producer_epoch) for v in values}) == 1
    out = frozenset({TopicPartition(TOPIC, 0)})
    for value in values:
        is_open = value.state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)
        assert value.topic_partitions == (out if is_open else frozenset()), value
        # The start is the first partition's addition; a completed transaction keeps it
        # (Kafka clears it at the next InitProducerId).
        assert (value.txn_start_timestamp > 0) == (value.state is not S.EMPTY), value
    for (_, raw), value in zip(written, values, strict=True):
        assert value_bytes(transit_of(value), value.version) == raw, value


def test_minikafka_reads_kafkas_aborted_transaction_index(
    kafka_reference: KafkaNode, written: list[tuple[bytes, bytes]], tmp_path: Path
) -> None:
    # Guarantee: after the committed then aborted transaction, Kafka's
    # .txnindex of the partition written holds one entry, the aborted transaction: its
    # producer, its first record's offset (after the first transaction's record and
    # commit marker, 0 and 1) and its abort marker's; minikafka's TransactionIndex reads
    # it and writes the same 34 bytes; a read_committed fetch of the whole partition
    # would be told of it, and one starting after its marker would not.
    deadline = time.monotonic() + WAIT
    partition = kafka_reference.log_dir / f"{TOPIC}-0"
    while not list(partition.glob("*.txnindex")) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling Kafka's files, inside the deadline
    [kafka_file] = partition.glob("*.txnindex")
    copy = tmp_path / kafka_file.name
    copy.write_bytes(kafka_file.read_bytes())
    index = TransactionIndex.open(copy, 0)
    try:
        [aborted] = index.entries()
        assert aborted.producer_id == read_value(written[-1][1]).producer_id
        assert (aborted.first_offset, aborted.last_offset) == (2, 3)
        assert aborted.last_stable_offset >= aborted.last_offset
        assert aborted.to_bytes() == copy.read_bytes()
        assert index.collect_aborted(0, 4).aborted == (aborted,)
        assert index.collect_aborted(4, 10).aborted == ()
    finally:
        index.close()


def test_minikafka_builds_kafkas_transaction_markers(
    kafka_reference: KafkaNode, written: list[tuple[bytes, bytes]]
) -> None:
    # Guarantee: the partition written holds, after the committed record (offset 0)
    # and the aborted one (2), Kafka's two markers at 1 and 3: COMMIT then ABORT, each a
    # transactional control batch of the producer; minikafka reads them, and builds the
    # same bytes from the same producer, epoch, coordinator epoch, time and offset.
    producer = read_value(written[-1][1])
    partition = kafka_reference.log_dir / f"{TOPIC}-0"
    deadline = time.monotonic() + WAIT
    while True:
        data = b"".join(p.read_bytes() for p in sorted(partition.glob("*.log")))
        markers = [
            (position, header, records)
            for position, header, records in iter_decoded_batches(data)
            if header.is_control
        ]
        if len(markers) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # polling Kafka's files, inside the deadline
    assert [(h.base_offset, h.is_transactional) for _, h, _ in markers] == [
        (1, True),
        (3, True),
    ]
    read = [read_end_txn_marker(records[0]) for _, _, records in markers]
    assert [m.commit for m in read] == [True, False]
    for (position, header, records), marker in zip(markers, read, strict=True):
        assert header.producer_id == producer.producer_id
        rebuilt = end_txn_marker_batch(
            marker,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            timestamp=records[0].timestamp,
            base_offset=header.base_offset,
            partition_leader_epoch=header.partition_leader_epoch,
        )
        assert data[position : position + header.size] == rebuilt


def test_minikafkas_log_writes_kafkas_txnindex_from_kafkas_batches(
    kafka_reference: KafkaNode, written: list[tuple[bytes, bytes]], tmp_path: Path
) -> None:
    # Guarantee: given the batches Kafka wrote (a committed then an aborted
    # transaction), minikafka's Log writes Kafka's .txnindex byte for byte, both as a
    # follower appending them and as recovery rebuilding it after an unclean shutdown
    # (Kafka's own index and snapshots removed from a copy of its partition).
    partition = kafka_reference.log_dir / f"{TOPIC}-0"
    deadline = time.monotonic() + WAIT
    while not list(partition.glob("*.txnindex")) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling Kafka's files, inside the deadline
    [kafka_file] = partition.glob("*.txnindex")
    theirs = kafka_file.read_bytes()
    data = b"".join(p.read_bytes() for p in sorted(partition.glob("*.log")))

    follower = Log.open(tmp_path / "follower" / f"{TOPIC}-0", LogConfig())
    try:
        follower.append_as_follower(data)
        assert (follower.dir / kafka_file.name).read_bytes() == theirs
    finally:
        follower.close()

    copy = tmp_path / "recovered" / partition.name
    shutil.copytree(partition, copy)
    for stale in (*copy.glob("*.txnindex"), *copy.glob("*.snapshot")):
        stale.unlink()
    recovered = Log.open(copy, LogConfig(), had_clean_shutdown=False)
    try:
        assert (copy / kafka_file.name).read_bytes() == theirs
    finally:
        recovered.close()
