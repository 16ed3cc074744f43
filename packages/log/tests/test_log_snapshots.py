"""Producer-state snapshots in the Log (KIP-98, Kafka's ``.snapshot`` files): written at
each roll and at a clean close, read at opening so that only the batches after the
latest one are replayed, removed with truncation and retention."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from minikafka.log import (
    Log,
    LogConfig,
    OutOfOrderSequenceError,
    ProducerSnapshotEntry,
    ProducerStateLoaded,
    TransactionCoordinatorFencedError,
    read_snapshot,
)
from minikafka.log.testing import ManualClock, keyed_batch, txn_batch, value_batch
from minikafka.trace.testing import RecordingTracer

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)
PID, TXN = 3, 9


def open_log(
    dir: Path,
    *,
    clean: bool = True,
    high_watermark: int = 0,
    recovery_point: int = 0,
    tracer: RecordingTracer | None = None,
) -> Log:
    return Log.open(
        dir / "topic-0",
        CONFIG,
        had_clean_shutdown=clean,
        high_watermark=high_watermark,
        recovery_point=recovery_point,
        clock=ManualClock(),
        tracer=tracer,
    )


def idempotent(sequence: int, count: int = 1) -> bytearray:
    return keyed_batch(
        [(None, b"v" * 60)] * count,
        producer_id=PID,
        producer_epoch=0,
        base_sequence=sequence,
    )


def fill(log: Log, batches: int) -> int:
    """Append ``batches`` idempotent batches of PID (rolling now and then); returns the
    next sequence."""
    for sequence in range(batches):
        log.append_as_leader(idempotent(sequence), leader_epoch=0)
    return batches


def snapshots(log: Log) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in log.dir.glob("*.snapshot"))


def crash(log: Log) -> None:
    """An unclean shutdown: drop the descriptors, write nothing more."""
    for segment in log.segments:
        segment.close_handlers()


def test_a_roll_snapshots_the_producers_as_of_the_new_segment(tmp_path: Path) -> None:
    # Guarantee: each roll writes <base offset>.snapshot holding every producer's last
    # batch below that offset, in Kafka's format, with its open transaction.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(TXN, 1, 0, count=2), leader_epoch=0)  # 0-1, open
    fill(log, 20)
    assert len(log.segments) > 1
    base = log.segments[1].base_offset
    assert snapshots(log) == [s.base_offset for s in log.segments[1:]]
    entries = read_snapshot((log.dir / f"{base:020d}.snapshot").read_bytes())
    first = [h for s in log.segments[:1] for _, h in s.batches()]
    last = first[-1]
    assert entries == [
        ProducerSnapshotEntry(TXN, 1, 1, 1, 1, first[0].max_timestamp, -1, 0),
        ProducerSnapshotEntry(
            PID, 0, last.last_sequence, last.last_offset, 0, last.max_timestamp
        ),
    ]


def test_a_restart_after_a_clean_close_reads_no_batch(tmp_path: Path) -> None:
    # Guarantee: the close's snapshot is as of the log end, so opening replays nothing
    # (not one batch header), and the producers and open transactions are as they were:
    # the next sequence is accepted, the LSO is held by the open transaction, a marker
    # from an older coordinator epoch is still fenced.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(TXN, 1, 0), leader_epoch=0)
    log.append_txn_marker(TXN, 1, True, coordinator_epoch=4, leader_epoch=0)
    log.append_as_leader(txn_batch(TXN, 1, 1), leader_epoch=0)  # open from offset 2
    sequence = fill(log, 30)
    log.update_high_watermark(log.log_end_offset)
    lso, end = log.last_stable_offset, log.log_end_offset
    log.close()
    tracer = RecordingTracer()
    again = open_log(tmp_path, high_watermark=end, tracer=tracer)
    assert again.replayed_from == end
    assert again.replayed_batches == 0
    assert tracer.of_type(ProducerStateLoaded) == [
        ProducerStateLoaded("topic", 0, end, 0, end)
    ]
    assert again.last_stable_offset == lso == 2
    with pytest.raises(TransactionCoordinatorFencedError):
        again.append_txn_marker(TXN, 1, False, coordinator_epoch=3, leader_epoch=0)
    again.append_as_leader(idempotent(sequence), leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        again.append_as_leader(idempotent(sequence + 5), leader_epoch=0)


def test_a_restart_after_a_crash_replays_the_tail_after_the_last_roll(
    tmp_path: Path,
) -> None:
    # Guarantee: after an unclean shutdown the snapshot of the last roll is loaded and
    # only the batches of the segment after it are read; the state is the one a full
    # replay gives (the next sequence is accepted, a skipped one refused).
    log = open_log(tmp_path)
    sequence = fill(log, 30)
    active = log.active_segment
    tail = sum(1 for _ in active.batches())
    assert 0 < tail < 30
    log.flush()
    crash(log)
    again = open_log(tmp_path, clean=False, recovery_point=active.base_offset)
    assert again.replayed_from == active.base_offset
    assert again.replayed_batches == tail
    with pytest.raises(OutOfOrderSequenceError):
        again.append_as_leader(idempotent(sequence + 1), leader_epoch=0)
    again.append_as_leader(idempotent(sequence), leader_epoch=0)


def test_without_a_snapshot_the_replay_starts_at_the_log_start(tmp_path: Path) -> None:
    # Guarantee: with no snapshot on disk every batch from the log start is read.
    log = open_log(tmp_path)
    fill(log, 30)
    log.close()
    for path in log.dir.glob("*.snapshot"):
        path.unlink()
    again = open_log(tmp_path)
    assert again.replayed_from == 0
    assert again.replayed_batches == 30


def test_a_corrupt_snapshot_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Guarantee: a snapshot whose CRC does not match is deleted with a warning and the
    # one before it is used instead (Kafka's loadFromSnapshot).
    log = open_log(tmp_path)
    fill(log, 30)
    end = log.log_end_offset
    log.close()
    latest = log.dir / f"{end:020d}.snapshot"
    data = bytearray(latest.read_bytes())
    data[-1] ^= 0xFF
    latest.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        again = open_log(tmp_path)
    assert "corrupt producer snapshot" in caplog.text
    assert not latest.exists()
    assert again.replayed_from == again.segments[-1].base_offset < end


def test_truncation_drops_the_snapshots_above_it_and_reloads_from_below(
    tmp_path: Path,
) -> None:
    # Guarantee: truncating removes every snapshot past the target, and the producer
    # state is rebuilt from the latest snapshot at or below it.
    log = open_log(tmp_path)
    fill(log, 30)
    bases = [s.base_offset for s in log.segments]
    target = bases[-1] - 1
    log.truncate_to(target)
    assert snapshots(log) == [b for b in bases[1:] if b <= target]
    assert log.replayed_from == bases[-2]
    assert log.replayed_batches == target - bases[-2]
    log.append_as_leader(idempotent(target), leader_epoch=0)  # sequence == offset here


def test_retention_drops_the_snapshots_of_the_segments_it_deletes(
    tmp_path: Path,
) -> None:
    # Guarantee: when segments go, the snapshots below the new first segment go too.
    log = open_log(tmp_path)
    for _ in range(20):
        log.append_as_leader(value_batch(1, 60), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    second = log.segments[2].base_offset
    log.maybe_increment_log_start_offset(second)
    assert log.delete_old_segments() == 2
    assert min(snapshots(log)) == second


def test_a_file_not_named_after_an_offset_is_not_a_snapshot(tmp_path: Path) -> None:
    # Guarantee: a stray *.snapshot whose name is not a 20-digit offset is left alone
    # and does not stop the log from opening, truncating or deleting its snapshots.
    log = open_log(tmp_path)
    fill(log, 30)
    log.close()
    stray = log.dir / "notes.snapshot"
    stray.write_bytes(b"x")
    again = open_log(tmp_path)
    again.truncate_to(3)
    assert stray.exists()
    assert again.replayed_from == 0
