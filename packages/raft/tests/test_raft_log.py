"""MemoryLog, the simulator's disk: where an epoch ends, what a crash keeps, snapshots."""

from __future__ import annotations

import pytest

from minikafka.raft import Entry, EpochEnd, MemoryLog, Snapshot, SnapshotId


def log_of(*epochs: int) -> MemoryLog:
    """A log whose entry at offset i was written in epochs[i]."""
    log = MemoryLog()
    log.append([Entry(i, e, b"%d" % i) for i, e in enumerate(epochs)])
    return log


def test_end_offset_for_epoch_is_where_the_next_epoch_starts() -> None:
    log = log_of(1, 1, 3, 3, 3, 4)
    assert log.end_offset_for_epoch(1) == EpochEnd(1, 2)
    # Epoch 2 wrote nothing here: the largest epoch below it, and where that one ends.
    assert log.end_offset_for_epoch(2) == EpochEnd(1, 2)
    assert log.end_offset_for_epoch(3) == EpochEnd(3, 5)
    assert log.end_offset_for_epoch(4) == EpochEnd(4, 6)
    assert log.end_offset_for_epoch(9) == EpochEnd(4, 6)
    assert log.end_offset_for_epoch(0) == EpochEnd(0, 0)


def test_a_crash_keeps_what_was_flushed_and_nothing_else() -> None:
    log = log_of(1, 1)
    log.flush()
    log.append([Entry(2, 2, b"lost")])
    survivor = log.crash()
    assert survivor.end_offset == 2
    assert survivor.last_epoch == 1
    assert survivor.read(0, 10) == log.read(0, 2)


def test_appends_must_continue_the_log_with_epochs_that_never_go_down() -> None:
    log = log_of(2)
    with pytest.raises(ValueError, match="the log ends at 1"):
        log.append([Entry(5, 2, b"")])
    with pytest.raises(ValueError, match="epoch 1 after epoch 2"):
        log.append([Entry(1, 1, b"")])


def test_truncation_forgets_the_epochs_it_removes() -> None:
    log = log_of(1, 2, 2, 3)
    log.truncate_to(2)
    assert log.end_offset == 2
    assert log.last_epoch == 2
    assert log.end_offset_for_epoch(3) == EpochEnd(2, 2)


def test_a_snapshot_replaces_the_log_below_it_and_answers_for_its_epochs() -> None:
    log = log_of(1, 1, 2, 2, 3)
    log.flush()
    log.create_snapshot(Snapshot(SnapshotId(3, 2), b"state"))
    assert (log.start_offset, log.end_offset) == (3, 5)
    assert log.end_offset_for_epoch(2) == EpochEnd(2, 4)
    assert log.end_offset_for_epoch(1) == EpochEnd(-1, -1)  # below what it can tell
    with pytest.raises(ValueError, match="below the log start"):
        log.read(1, 1)
    crashed = log.crash()
    assert crashed.latest_snapshot() == Snapshot(SnapshotId(3, 2), b"state")
    assert crashed.start_offset == 3
    assert crashed.end_offset == 5


def test_a_snapshot_cannot_cover_what_was_not_flushed() -> None:
    log = log_of(1, 1)
    with pytest.raises(ValueError, match="outside the flushed log"):
        log.create_snapshot(Snapshot(SnapshotId(2, 1), b""))


def test_installing_a_fetched_snapshot_empties_the_log() -> None:
    log = log_of(1, 1, 1)
    log.install_snapshot(Snapshot(SnapshotId(10, 4), b"s"))
    assert (log.start_offset, log.end_offset, log.last_epoch) == (10, 10, 4)
    assert log.end_offset_for_epoch(4) == EpochEnd(4, 10)
