"""Compaction of a topic written by transactions, as Kafka's cleaner does it (KIP-98,
KIP-534): aborted records go, markers stay while their transaction has data and then
``delete.retention.ms`` more, the cleaned ``.txnindex`` and the producer state stay
right.

A ``Writer`` keeps the history of what it wrote (which offsets each transaction holds,
how it ended); ``consume`` is a consumer's view of the log at either isolation level.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from minikafka.log import (
    AbortedTxn,
    CompressionType,
    FetchIsolation,
    Log,
    LogConfig,
    Record,
    build_batch,
    clean,
    decode_batch,
    iter_batches,
    make_records,
)
from minikafka.log._markers import read_end_txn_marker
from minikafka.log.testing import ManualClock

COMPACT = LogConfig(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=10_000,
    file_delete_delay_ms=0,
)

Pairs = list[tuple[bytes, bytes | None]]


@attrs.define
class Txn:
    producer_id: int
    batches: list[tuple[int, int]] = attrs.field(factory=list)  # (base, last offset)
    records: list[tuple[int, bytes, bytes | None]] = attrs.field(factory=list)
    marker: int | None = None
    committed: bool | None = None


@attrs.define
class Writer:
    """Writes keyed batches (plain, or in a producer's transaction) and markers, and
    remembers which transaction each offset belongs to."""

    log: Log
    compression: CompressionType = CompressionType.NONE
    _sequences: dict[int, int] = attrs.field(factory=dict)
    open: dict[int, Txn] = attrs.field(factory=dict)
    done: list[Txn] = attrs.field(factory=list)
    plain: list[tuple[int, bytes, bytes | None]] = attrs.field(factory=list)

    def write(self, pairs: Pairs, producer_id: int | None = None) -> None:
        """A batch of ``pairs``: plain without a producer, else in its transaction."""
        records = make_records(pairs, timestamp_ms=self.log.clock())
        if producer_id is None:
            batch = bytearray(build_batch(records, compression=self.compression))
        else:
            sequence = self._sequences.get(producer_id, 0)
            self._sequences[producer_id] = sequence + len(pairs)
            batch = bytearray(
                build_batch(
                    records,
                    compression=self.compression,
                    producer_id=producer_id,
                    producer_epoch=0,
                    base_sequence=sequence,
                    is_transactional=True,
                )
            )
        info = self.log.append_as_leader(batch, leader_epoch=0)
        written = [(info.first_offset + i, k, v) for i, (k, v) in enumerate(pairs)]
        if producer_id is None:
            self.plain.extend(written)
        else:
            txn = self.open.setdefault(producer_id, Txn(producer_id))
            txn.batches.append((info.first_offset, info.last_offset))
            txn.records.extend(written)
        self.log.update_high_watermark(self.log.log_end_offset)

    def end(self, producer_id: int, commit: bool) -> None:
        """The producer's marker; its transaction is decided."""
        info = self.log.append_txn_marker(producer_id, 0, commit, 0, leader_epoch=0)
        txn = self.open.pop(producer_id, Txn(producer_id))
        txn.marker, txn.committed = info.first_offset, commit
        self.done.append(txn)
        self.log.update_high_watermark(self.log.log_end_offset)

    def aborted_offsets(self) -> set[int]:
        return {o for t in self.done if not t.committed for o, _, _ in t.records}

    def committed_latest(self) -> dict[bytes, bytes]:
        """What a read_committed reader of the whole history ends with, per key
        (a key whose latest value is a tombstone is absent)."""
        writes = list(self.plain)
        for txn in self.done:
            if txn.committed:
                writes.extend(txn.records)
        return latest(writes)


def latest(records: list[tuple[int, bytes, bytes | None]]) -> dict[bytes, bytes]:
    by_key: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, key, value in sorted(records, key=lambda r: r[0]):
        by_key[key] = (offset, value)
    return {k: v for k, (_, v) in by_key.items() if v is not None}


def consume(log: Log, committed: bool) -> list[tuple[int, bytes, bytes | None]]:
    """Every record a consumer reading from the log start hands out, as a Kafka
    consumer does: read_committed up to the LSO, skipping aborted transactions
    (Kafka's ``CompletedFetch``), read_uncommitted up to the high watermark."""
    out: list[tuple[int, bytes, bytes | None]] = []
    position = log.log_start_offset
    while True:
        if committed:
            fetched = log.read(
                position, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED
            )
        else:
            fetched = log.read(position, 1 << 20, max_offset=log.high_watermark)
        if fetched.records is None:
            return out
        data = fetched.records.read_bytes()
        upcoming = sorted(
            fetched.aborted_transactions or (), key=lambda a: a.first_offset
        )
        aborting: set[int] = set()
        for at, header in iter_batches(data):
            _, records = decode_batch(data, at)
            if committed and header.producer_id >= 0:
                while upcoming and upcoming[0].first_offset <= header.last_offset:
                    aborting.add(upcoming.pop(0).producer_id)
                if header.is_control:
                    if records and not _is_commit(records[0]):
                        aborting.discard(header.producer_id)
                elif header.is_transactional and header.producer_id in aborting:
                    position = header.next_offset
                    continue
            if not header.is_control:
                out.extend(
                    (r.offset, r.key or b"", r.value)
                    for r in records
                    if r.offset >= position
                )
            position = max(position, header.next_offset)


def _is_commit(record: Record) -> bool:
    try:
        return read_end_txn_marker(record).commit
    except ValueError:
        return True  # another kind of control record: ends nothing


def markers(log: Log) -> list[tuple[int, int, int | None]]:
    """(offset, producer id, delete horizon) of every control batch still holding
    its marker record."""
    found = []
    for _, _, header in log.batches():
        if header.is_control and header.record_count:
            found.append(
                (header.base_offset, header.producer_id, header.delete_horizon_ms)
            )
    return found


def txn_log(dir: Path, clock: ManualClock, config: LogConfig = COMPACT) -> Writer:
    return Writer(Log.open(dir / "t-0", config, clock=clock))


def interleaved(w: Writer) -> None:
    """Three producers' transactions interleaved with plain writes: P1 commits, P2
    aborts a value of the key P1 committed (which must not hide it), P3 aborts then
    commits, P2 then commits, P4's only transaction aborts; then plain writes roll the
    active segment past them."""
    w.write([(b"a", b"a0"), (b"b", b"b0")])
    w.write([(b"a", b"a1"), (b"c", b"c1")], producer_id=1)
    w.write([(b"a", b"aborted-a"), (b"d", b"aborted-d")], producer_id=2)
    w.write([(b"e", b"aborted-e")], producer_id=3)
    w.write([(b"b", b"b1")])
    w.write([(b"c", b"c2")], producer_id=1)
    w.end(1, commit=True)
    w.write([(b"b", b"aborted-b")], producer_id=2)
    w.end(3, commit=False)
    w.end(2, commit=False)
    w.write([(b"e", b"e3"), (b"f", b"f3")], producer_id=3)
    w.end(3, commit=True)
    w.write([(b"f", b"f2"), (b"g", b"g2")], producer_id=2)
    w.end(2, commit=True)
    w.write([(b"h", b"aborted-h")], producer_id=4)  # P4's last write: aborted
    w.end(4, commit=False)
    for i in range(12):
        w.write([(b"fill-%d" % (i % 3), b"x" * 40)])


def test_cleaning_removes_aborted_records_and_keeps_the_latest_committed_values(
    tmp_path: Path,
) -> None:
    # Guarantee: after a pass no record of an aborted transaction is left in the
    # cleaned segments, an aborted record never hides the committed value of its key
    # (the offset map skips aborted batches), every key keeps its latest committed
    # value, and read_committed and read_uncommitted readers now read the same.
    clock = ManualClock()
    w = txn_log(tmp_path, clock)
    interleaved(w)
    log = w.log
    before = latest(consume(log, committed=True))
    assert before == w.committed_latest()
    assert latest(consume(log, committed=False))[b"a"] == b"aborted-a"
    size = log.size

    result = clean(log, 0, clock())

    assert result is not None
    assert max(w.aborted_offsets()) < result.next_dirty_offset  # all were cleanable
    uncommitted = consume(log, committed=False)
    assert not {o for o, _, _ in uncommitted} & w.aborted_offsets()
    assert latest(consume(log, committed=True)) == before
    assert latest(uncommitted) == before
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
    interleaved(w)
    log = w.log
    aborts = {(t.producer_id, t.marker) for t in w.done if not t.committed}
    all_markers = {(t.producer_id, t.marker) for t in w.done}
    entries = txn_entries(log)
    assert {(e.producer_id, e.last_offset) for e in entries} == aborts

    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in markers(log)} == all_markers
    assert all(h is None for _, _, h in markers(log))
    assert txn_entries(log) == entries  # the removed records' transactions

    clean(log, 0, clock())
    horizon = clock() + COMPACT.delete_retention_ms
    stamped = {(p, o) for o, p, h in markers(log) if h == horizon}
    # P4's abort stays unstamped: its emptied batch is its producer's last.
    assert stamped == aborts - {(4, w.done[-1].marker)}
    assert {(e.producer_id, e.last_offset) for e in txn_entries(log)} == {
        (4, w.done[-1].marker)
    }

    clock.advance(COMPACT.delete_retention_ms - 1)
    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in markers(log)} == all_markers
    clock.advance(1)
    clean(log, 0, clock())
    assert {(p, o) for o, p, _ in markers(log)} == all_markers - stamped
    assert latest(consume(log, committed=True)) == w.committed_latest()


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
    assert (first, 1, None) in markers(log)
    clean(log, 0, clock())
    assert (first, 1, clock() + COMPACT.delete_retention_ms) in markers(log)
    clock.advance(COMPACT.delete_retention_ms)
    clean(log, 0, clock())
    assert first not in {o for o, _, _ in markers(log)}
    assert w.done[1].marker in {o for o, _, _ in markers(log)}


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
    interleaved(w)
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


def random_history(w: Writer, rng: random.Random) -> None:
    """Plain writes (some tombstones), three producers' transactions and their
    markers, interleaved at random; some transactions end with no record (a marker
    alone); then every transaction ends and plain writes roll past them."""
    keys = [b"k%d" % i for i in range(6)]

    def pairs() -> Pairs:
        n = rng.randint(1, 3)
        return [
            (rng.choice(keys), None if rng.random() < 0.1 else b"v%d" % rng.random())
            for _ in range(n)
        ]

    for _ in range(rng.randint(10, 60)):
        roll = rng.random()
        producer_id = rng.randint(1, 3)
        if roll < 0.3:
            w.write(pairs())
        elif roll < 0.75:
            w.write(pairs(), producer_id=producer_id)
        else:
            w.end(producer_id, commit=rng.random() < 0.5)
    for producer_id in list(w.open):
        w.end(producer_id, commit=rng.random() < 0.5)
    for i in range(12):
        w.write([(b"fill-%d" % (i % 3), b"x" * 40)])


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
        random_history(w, rng)
        log = w.log
        expected = w.committed_latest()
        lso = log.last_stable_offset
        state = producers(log)
        for _ in range(20):  # until a pass changes nothing
            state_before = batches_of(log), markers(log)
            before = {o: h for o, _, h in state_before[1]}
            result = clean(log, 0, clock())
            assert result is not None
            assert latest(consume(log, committed=True)) == expected
            below = result.next_dirty_offset
            uncommitted = [r for r in consume(log, committed=False) if r[0] < below]
            assert not {o for o, _, _ in uncommitted} & w.aborted_offsets()
            committed = [r for r in consume(log, committed=True) if r[0] < below]
            assert committed == uncommitted
            gone = set(before) - {o for o, _, _ in markers(log)}
            assert all((before[o] or clock() + 1) <= clock() for o in gone)
            markers_needed(log)  # raises if a batch outlived its marker
            assert log.last_stable_offset == lso
            clock.advance(COMPACT.delete_retention_ms)
            if (batches_of(log), markers(log)) == state_before:
                break
        else:
            raise AssertionError("the passes never settled")
        present, needed = markers_needed(log)
        assert present == needed
        aborts = {t.marker for t in w.done if not t.committed}
        entries = {(e.producer_id, e.last_offset) for e in txn_entries(log)}
        assert entries == {
            (p, o) for o, p, _ in markers(log) if o in needed and o in aborts
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
