"""Compaction of a topic written by transactions, as Kafka's cleaner does it (KIP-98,
KIP-534): aborted records go, markers stay while their transaction has data and then
``delete.retention.ms`` more, the cleaned ``.txnindex`` and the producer state stay
right.

A ``TxnWriter`` keeps the history of what it wrote (which offsets each transaction holds,
how it ended); ``consume`` is a consumer's view of the log at either isolation level.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.log import (
    AbortedTxn,
    CompressionType,
    Log,
    LogConfig,
    LogSegment,
    TransactionIndex,
    clean,
)
from minikafka.log.testing import (
    ManualClock,
    TxnWriter,
    consume,
    latest_values,
    marker_batches,
    write_interleaved_txns,
    write_random_txns,
)

COMPACT = LogConfig(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=10_000,
    file_delete_delay_ms=0,
)


def txn_log(dir: Path, clock: ManualClock, config: LogConfig = COMPACT) -> TxnWriter:
    return TxnWriter(Log.open(dir / "t-0", config, clock=clock))


def test_cleaning_removes_aborted_records_and_keeps_the_latest_committed_values(
    tmp_path: Path,
) -> None:
    # Guarantee: after a pass no record of an aborted transaction is left in the
    # cleaned segments, an aborted record never hides the committed value of its key
    # (the offset map skips aborted batches), every key keeps its latest committed
    # value, and read_committed and read_uncommitted readers now read the same.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    before = latest_values(consume(log, committed=True))
    assert before == w.committed_latest()
    assert latest_values(consume(log, committed=False))[b"a"] == b"aborted-a"
    size = log.size

    result = clean(log, 0, clock())

    assert result is not None
    assert max(w.aborted_offsets()) < result.next_dirty_offset  # all were cleanable
    uncommitted = consume(log, committed=False)
    assert not {o for o, _, _ in uncommitted} & w.aborted_offsets()
    assert latest_values(consume(log, committed=True)) == before
    assert latest_values(uncommitted) == before
    assert consume(log, committed=True) == uncommitted
    assert log.size < size


def test_markers_stay_while_their_transaction_has_batches_then_delete_retention_ms(
    tmp_path: Path,
) -> None:
    # Guarantee (Kafka's two-pass rule): the pass that removes an aborted
    # transaction's records keeps its marker and its .txnindex entry; the next pass,
    # finding no batch of it, stamps the marker with a delete horizon (now +
    # delete.retention.ms) and drops the entry; a pass before the horizon keeps the
    # marker, the first at or after it removes it. Markers whose transaction still
    # has a batch (a producer's last batch is kept) stay whatever the time.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    aborts = {(t.producer_id, t.marker) for t in w.done if not t.committed}
    all_markers = {(t.producer_id, t.marker) for t in w.done}
    entries = txn_entries(log)
    assert {(e.producer_id, e.last_offset) for e in entries} == aborts

    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in marker_batches(log)} == all_markers
    assert all(h is None for _, _, h in marker_batches(log))
    assert txn_entries(log) == entries  # the removed records' transactions

    clean(log, 0, clock())
    horizon = clock() + COMPACT.delete_retention_ms
    stamped = {(p, o) for o, p, h in marker_batches(log) if h == horizon}
    # P4's abort stays unstamped: its emptied batch is its producer's last.
    assert stamped == aborts - {(4, w.done[-1].marker)}
    assert {(e.producer_id, e.last_offset) for e in txn_entries(log)} == {
        (4, w.done[-1].marker)
    }

    clock.advance(COMPACT.delete_retention_ms - 1)
    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in marker_batches(log)} == all_markers
    clock.advance(1)
    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in marker_batches(log)} == all_markers - stamped
    assert latest_values(consume(log, committed=True)) == w.committed_latest()


def test_a_commit_marker_outlives_its_compacted_records_by_a_pass_and_the_horizon(
    tmp_path: Path,
) -> None:
    # Guarantee: a committed transaction whose records are all superseded loses its
    # batch in the first pass but keeps its marker (the pass read a batch of it); the
    # second pass stamps the marker, and a pass after the horizon removes it.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    w.write([(b"k", b"in-txn")], producer_id=1)
    w.end(1, commit=True)
    w.write([(b"other", b"later")], producer_id=1)  # P1's last batch is this one
    w.end(1, commit=True)
    for i in range(14):
        w.write([(b"k", b"plain-%d" % i)])
    log = w.log
    first = w.done[0].marker

    clean(log, 0, clock())
    assert 0 not in {h.base_offset for _, _, h in log.batches()}  # its batch is gone
    assert (first, 1, None) in marker_batches(log)
    clean(log, 0, clock())
    assert (first, 1, clock() + COMPACT.delete_retention_ms) in marker_batches(log)
    clock.advance(COMPACT.delete_retention_ms)
    clean(log, 0, clock())
    assert first not in {o for o, _, _ in marker_batches(log)}
    assert w.done[1].marker in {o for o, _, _ in marker_batches(log)}


def txn_entries(log: Log) -> list[AbortedTxn]:
    return [e for s in log.segments if s.txn_index for e in s.txn_index.entries()]


def producers(log: Log) -> dict[int, tuple[int, int, int]]:
    """What the log keeps of each producer: epoch, last sequence, last data offset."""
    return {
        p: (e.producer_epoch, e.last_seq, e.last_data_offset)
        for p, e in log.producer_state.producers.items()
    }


def recovered(log: Log, clock: ManualClock) -> Log:
    """The log reopened after a crash with no producer snapshot: every segment is
    rescanned, its .txnindex and the producer state rebuilt from the batches."""
    hw = log.high_watermark
    for segment in log.segments:
        segment.close_handlers()
    for path in log.dir.glob("*.snapshot"):
        path.unlink()
    # No clean-shutdown marker: from recovery point 0, every segment is rescanned.
    return Log.open(log.dir, log.config, clock=clock, high_watermark=hw)


def test_recovery_after_cleaning_rebuilds_the_index_and_the_producer_state(
    tmp_path: Path,
) -> None:
    # Guarantee: a cleaned log rebuilt from its batches alone (crash, no snapshot)
    # names the same aborted transactions in its .txnindex (producer and marker),
    # reads the same at both isolation levels, has the same LSO, and remembers every
    # producer's epoch and last sequence, so each producer's next batch is accepted.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    state = producers(log)
    for _ in range(2):  # the second pass settles what the first left for it
        clean(log, 0, clock())
    entries = {(e.producer_id, e.last_offset) for e in txn_entries(log)}
    views = consume(log, committed=True), consume(log, committed=False)
    lso = log.last_stable_offset

    again = recovered(log, clock)

    assert {(e.producer_id, e.last_offset) for e in txn_entries(again)} == entries
    assert (consume(again, committed=True), consume(again, committed=False)) == views
    assert again.last_stable_offset == lso
    assert producers(again) == state
    w.log = again
    for producer_id in state:  # an out-of-sequence batch would raise
        w.write([(b"next", b"%d" % producer_id)], producer_id=producer_id)
        w.end(producer_id, commit=True)


def batches_of(log: Log) -> list[tuple[int, int, bool, bool, int]]:
    """(base offset, producer, control, transactional, record count) of every batch."""
    return [
        (h.base_offset, h.producer_id, h.is_control, h.is_transactional, h.record_count)
        for _, _, h in log.batches()
    ]


def markers_needed(log: Log) -> tuple[set[int], set[int]]:
    """The markers (with their record) left in the log, and those of them whose
    transaction still has a batch before them (empty ones count)."""
    present: set[int] = set()
    needed: set[int] = set()
    inside: dict[int, bool] = {}  # producer -> a batch of its transaction was seen
    for offset, producer_id, control, transactional, count in batches_of(log):
        if control and count:
            present.add(offset)
            if inside.pop(producer_id, False):
                needed.add(offset)
        elif transactional and not control:
            inside[producer_id] = True
    assert not inside, "a transaction's batch outlived its marker"
    return present, needed


@pytest.mark.parametrize("seed", range(16))
def test_cleaning_random_interleavings_keeps_what_kafka_keeps(seed: int) -> None:
    # Guarantee, on random histories, after every pass of a run that lets time pass
    # delete.retention.ms between passes: read_committed readers find every key's
    # latest committed value (a deleted key absent); no aborted record is left below
    # the cleaned offset, where read_uncommitted reads what read_committed reads;
    # every transactional batch left keeps its marker; a marker goes only once its
    # delete horizon has passed. Once the passes settle (groups of segments merge
    # over several passes, each freeing batches that kept a marker), the markers left are exactly
    # those whose transaction has a batch, the .txnindex names exactly the aborted
    # ones, and recovery rebuilds the same index, reads, LSO and producer state.
    rng = random.Random(seed)
    clock = ManualClock()
    with _tmp() as dir:
        w = txn_log(dir, clock)
        w.compression = rng.choice(list(CompressionType))
        write_random_txns(w, rng)
        log = w.log
        expected = w.committed_latest()
        lso = log.last_stable_offset
        state = producers(log)
        for _ in range(20):  # until a pass changes nothing
            state_before = batches_of(log), marker_batches(log)
            before = {o: h for o, _, h in state_before[1]}
            result = clean(log, 0, clock())
            assert result is not None
            assert latest_values(consume(log, committed=True)) == expected
            below = result.next_dirty_offset
            uncommitted = [r for r in consume(log, committed=False) if r[0] < below]
            assert not {o for o, _, _ in uncommitted} & w.aborted_offsets()
            committed = [r for r in consume(log, committed=True) if r[0] < below]
            assert committed == uncommitted
            gone = set(before) - {o for o, _, _ in marker_batches(log)}
            assert all((before[o] or clock() + 1) <= clock() for o in gone)
            markers_needed(log)  # raises if a batch outlived its marker
            assert log.last_stable_offset == lso
            clock.advance(COMPACT.delete_retention_ms)
            if (batches_of(log), marker_batches(log)) == state_before:
                break
        else:
            raise AssertionError("the passes never settled")
        present, needed = markers_needed(log)
        assert present == needed
        aborts = {t.marker for t in w.done if not t.committed}
        entries = {(e.producer_id, e.last_offset) for e in txn_entries(log)}
        assert entries == {
            (p, o) for o, p, _ in marker_batches(log) if o in needed and o in aborts
        }
        views = consume(log, committed=True), consume(log, committed=False)
        again = recovered(log, clock)
        assert {(e.producer_id, e.last_offset) for e in txn_entries(again)} == entries
        assert (consume(again, True), consume(again, False)) == views
        assert again.last_stable_offset == lso
        assert producers(again) == state
        again.close()


@contextlib.contextmanager
def _tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


class Crash(Exception):
    pass


@pytest.mark.parametrize(
    "step",
    ["cleaned written", "renamed to swap", "old segments deleted", "swap renamed live"],
)
def test_a_crash_at_any_step_of_a_transactional_pass_reads_the_same(
    tmp_path: Path, step: str
) -> None:
    # Guarantee: a pass that dies at any step of its swap leaves a log that, reopened
    # after the crash, reads the same committed values at both isolation levels' LSO
    # and high watermark, with no aborted record exposed to read_committed readers.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    committed = latest_values(consume(log, committed=True))
    hw = log.high_watermark

    def crash_at(name: str) -> None:
        if name == step:
            raise Crash(name)

    with pytest.raises(Crash):
        clean(log, 0, clock(), crash_hook=crash_at)
    for segment in log.segments:
        segment.close_handlers()
    again = Log.open(log.dir, log.config, clock=clock, high_watermark=hw)
    assert latest_values(consume(again, committed=True)) == committed
    assert again.last_stable_offset == hw
    assert clean(again, 0, clock()) is not None
    assert latest_values(consume(again, committed=False)) == committed


def test_a_txnindex_left_by_a_failed_pass_is_not_taken_into_the_next(
    tmp_path: Path,
) -> None:
    # Guarantee: a ``.txnindex.cleaned`` a failed pass could not remove (as it may
    # leave its ``.log.cleaned``) is discarded by the next pass, not appended to (its
    # entries out of order would fail every pass, and the partition be marked
    # uncleanable): the cleaned .txnindex holds only the aborted transactions whose
    # marker that pass keeps, and later passes lose no committed record.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    clean(log, 0, clock())
    for segment in log.segments:  # what a pass that died after writing would leave
        if segment.txn_index is not None:
            leftover = segment.txn_index.path.with_name(
                segment.txn_index.path.name + ".cleaned"
            )
            leftover.write_bytes(segment.txn_index.path.read_bytes())

    clean(log, 0, clock())

    assert {(e.producer_id, e.last_offset) for e in txn_entries(log)} == {
        (4, w.done[-1].marker)
    }
    clock.advance(COMPACT.delete_retention_ms)
    for _ in range(2):
        clean(log, 0, clock())
    assert latest_values(consume(log, committed=True)) == w.committed_latest()
    assert latest_values(consume(log, committed=False)) == w.committed_latest()


@pytest.mark.parametrize("failure", ["crash", "I/O error"])
@pytest.mark.parametrize("suffix", [".swap", ""])
def test_a_crash_between_a_cleaned_segments_file_renames_keeps_its_txnindex(
    tmp_path: Path, suffix: str, failure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guarantee: a crash (or an I/O error, which takes the dir offline until the
    # restart) after the cleaned segment's .log was renamed (to .swap, or live) but
    # before its .txnindex followed loses no aborted transaction whose batch is still
    # in the log: reopened (from a recovery point past the cleaned segments, which are
    # not rescanned), the log names P4's abort, later passes keep its marker while
    # P4's emptied last batch stays, and a log rebuilt from its batches alone has no
    # transaction left hanging (LSO = high watermark).
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    write_interleaved_txns(w)
    log = w.log
    hw = leo = log.log_end_offset
    p4_abort = (4, w.done[-1].marker)

    def rename(index: TransactionIndex, path: Path) -> None:
        # the cleaned segment holding P4's abort, whose emptied batch (P4's last) stays
        if path.name.endswith(".txnindex" + suffix) and any(
            e.producer_id == 4 for e in index.entries()
        ):
            raise Crash(path.name) if failure == "crash" else OSError(path.name)
        real_rename(index, path)

    real_rename = TransactionIndex.rename
    monkeypatch.setattr(TransactionIndex, "rename", rename)
    if failure == "crash":  # a process that dies cleans nothing up
        monkeypatch.setattr(LogSegment, "delete_files", lambda self: None)
    with pytest.raises(Crash if failure == "crash" else OSError):
        clean(log, 0, clock())
    monkeypatch.undo()
    for segment in log.segments:
        segment.close_handlers()
    again = Log.open(
        log.dir, log.config, clock=clock, high_watermark=hw, recovery_point=leo
    )

    assert p4_abort in {(e.producer_id, e.last_offset) for e in txn_entries(again)}
    for _ in range(3):  # past any delete horizon a pass could stamp
        clean(again, 0, clock())
        clock.advance(COMPACT.delete_retention_ms)
    assert p4_abort in {(p, o) for o, p, _ in marker_batches(again)}
    again = recovered(again, clock)
    assert again.last_stable_offset == hw
    assert latest_values(consume(again, committed=True)) == w.committed_latest()
