"""Kafka reads the transaction files minikafka's log writes (KIP-98): a segment's
``.txnindex`` and a producer-state ``.snapshot``, each dumped by Kafka's
``kafka-dump-log`` (DumpLogSegments) into the same lines minikafka's dump prints."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from minikafka.log import Log, LogConfig
from minikafka.log._tool import dump
from minikafka.log.testing import ManualClock, keyed_batch, txn_batch
from reference.kafka import run_tool

pytestmark = pytest.mark.external


def _written(tmp_path: Path) -> Log:
    """Two transactions (one aborted while the other is open) and an idempotent
    producer, closed so that the producers' snapshot is written as of the log end."""
    log = Log.open(tmp_path / "txn-0", LogConfig(), clock=ManualClock())
    log.append_as_leader(txn_batch(7, 1, 0, count=2), leader_epoch=0)  # 0-1
    log.append_as_leader(txn_batch(8, 0, 0), leader_epoch=0)  # 2: stays open
    log.append_txn_marker(7, 1, False, coordinator_epoch=3, leader_epoch=0)  # 3
    log.append_as_leader(txn_batch(7, 1, 2, count=3), leader_epoch=0)  # 4-6
    log.append_txn_marker(7, 1, False, coordinator_epoch=3, leader_epoch=0)  # 7
    idempotent = keyed_batch(
        [(None, b"v")] * 4, producer_id=9, producer_epoch=2, base_sequence=10
    )
    log.append_as_leader(idempotent, leader_epoch=0)  # 8-11
    log.close()
    return log


def _lines(text: str) -> list[str]:
    return [
        line.strip() for line in text.splitlines() if not line.startswith("Dumping")
    ]


def test_kafka_dump_log_reads_minikafkas_txnindex_and_snapshot(tmp_path: Path) -> None:
    # Guarantee: Kafka's own reader accepts both files (no error, a valid snapshot CRC)
    # and prints, entry for entry, what minikafka's dump prints: the aborted
    # transactions with their last stable offsets, and each producer's epoch,
    # coordinator epoch, open transaction and last batch.
    log = _written(tmp_path)
    files = [log.dir / f"{0:020d}.txnindex", log.dir / f"{12:020d}.snapshot"]
    run = run_tool("kafka-dump-log", "--files", ",".join(map(str, files))).check()
    ours = io.StringIO()
    for path in files:
        assert dump(path, ours) == 0
    assert run.stderr.strip() == ""
    assert _lines(run.stdout) == _lines(ours.getvalue())
    assert len(_lines(ours.getvalue())) == 2 + 3  # two aborts, three producers
