"""``dump`` prints a ``.txnindex`` and a ``.snapshot`` the way Kafka's
``kafka-dump-log.sh`` (DumpLogSegments) prints them."""

from __future__ import annotations

import io
from pathlib import Path

from minikafka.log import Log, LogConfig
from minikafka.log._tool import dump
from minikafka.log.testing import ManualClock, keyed_batch, txn_batch


def test_dump_prints_each_aborted_transaction_as_kafka_does(tmp_path: Path) -> None:
    # Guarantee: one Kafka-formatted line per .txnindex entry, and --index on a
    # partition prints the segment's .txnindex beside its other indexes.
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=ManualClock())
    log.append_as_leader(txn_batch(7, 0, 0, count=2), leader_epoch=0)
    log.append_txn_marker(7, 0, False, 0, leader_epoch=0)
    log.close()
    out = io.StringIO()
    path = log.dir / f"{0:020d}.txnindex"
    assert dump(path, out) == 0
    line = "version: 0 producerId: 7 firstOffset: 0 lastOffset: 2 lastStableOffset: 3"
    assert out.getvalue().splitlines() == [f"Dumping {path}", line]
    whole = io.StringIO()
    assert dump(log.dir, whole, index=True) == 0
    assert line in whole.getvalue().splitlines()


def test_dump_prints_each_producer_of_a_snapshot_as_kafka_does(tmp_path: Path) -> None:
    # Guarantee: one Kafka-formatted line per producer, its last batch included when
    # it has one; a corrupt snapshot is reported with status 1.
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=clock)
    idempotent = keyed_batch(
        [(None, b"v")] * 3, producer_id=4, producer_epoch=1, base_sequence=5
    )
    log.append_as_leader(idempotent, leader_epoch=0)  # 0-2
    log.append_as_leader(txn_batch(9, 2, 0), leader_epoch=0)  # 3: open
    log.close()
    path = log.dir / f"{4:020d}.snapshot"
    out = io.StringIO()
    assert dump(path, out) == 0
    ts = clock()
    assert out.getvalue().splitlines() == [
        f"Dumping {path}",
        f"producerId: 4 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {ts} firstSequence: 5 lastSequence: 7 "
        f"lastOffset: 2 offsetDelta: 2 timestamp: {ts}",
        f"producerId: 9 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong[3] lastTimestamp: {ts} firstSequence: 0 lastSequence: 0 "
        f"lastOffset: 3 offsetDelta: 0 timestamp: {ts}",
    ]
    path.write_bytes(path.read_bytes()[:-1])
    assert dump(path, io.StringIO()) == 1
