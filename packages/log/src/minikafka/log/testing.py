"""Helpers for tests of the log and of the packages built on it (replication, groups)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from ._batch import CompressionType, iter_batches
from ._log import Log
from ._log_txns import FetchIsolation
from ._markers import read_end_txn_marker
from ._records import Record, build_batch, decode_batch, make_records
from ._segment import LogSegment


@attrs.define
class ManualClock:
    """A clock in milliseconds that moves only when told to (``Log.open(clock=...)``)."""

    now_ms: int = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def keyed_batch(
    pairs: Iterable[tuple[bytes | None, bytes | None]],
    timestamp_ms: int = 1_700_000_000_000,
    compression: CompressionType = CompressionType.NONE,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """A producer's batch of ``(key, value)`` records, ready for ``append_as_leader``.

    An idempotent producer's batch gives its ``producer_id``, ``producer_epoch`` and the
    ``base_sequence`` of its first record.
    """
    records = make_records(pairs, timestamp_ms=timestamp_ms)
    return bytearray(
        build_batch(
            records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )
    )


def txn_batch(
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int = 1,
    timestamp_ms: int = 1_700_000_000_000,
) -> bytearray:
    """A transactional producer's batch of ``count`` records (KIP-98), each value naming
    its producer and sequence."""
    values = [(None, b"%d/%d" % (producer_id, base_sequence + i)) for i in range(count)]
    records = make_records(values, timestamp_ms=timestamp_ms)
    return bytearray(
        build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=True,
        )
    )


def value_batch(
    count: int, value_bytes: int = 100, timestamp_ms: int = 1_700_000_000_000
) -> bytearray:
    """``count`` keyless records of ``value_bytes`` each in one batch."""
    return keyed_batch([(None, b"x" * value_bytes)] * count, timestamp_ms)


def read_all_records(log: Log) -> list[Record]:
    """Every record in the log, in offset order, decoded (for assertions, not for speed)."""
    records: list[Record] = []
    for segment, position, header in log.batches():
        _, batch = decode_batch(segment.read_batch(position, header))
        records.extend(batch)
    return records


@contextmanager
def segments_closed_after() -> Iterator[None]:
    """Close every segment opened inside the block, whether or not its log was closed.

    Tests (hypothesis ones especially) open many logs and drop them; without this their
    descriptors pile up in the one pytest process until it hits its limit. The
    ``conftest.py`` of the log's and replication's tests wraps every test in it
    (closing is idempotent, so logs a test closed itself are fine).
    """
    opened: list[LogSegment] = []
    original = LogSegment.__dict__["open"]

    def tracking(*args: Any, **kwargs: Any) -> LogSegment:
        segment: LogSegment = original.__func__(LogSegment, *args, **kwargs)
        opened.append(segment)
        return segment

    LogSegment.open = staticmethod(tracking)  # type: ignore[method-assign]
    try:
        yield
    finally:
        LogSegment.open = original  # type: ignore[method-assign]
        for segment in opened:
            segment.close_handlers()


# --- transactional histories (compaction's tests, and Kafka's cleaner beside ours) ---

Pairs = list[tuple[bytes, bytes | None]]


@attrs.define
class WrittenTxn:
    """One producer's transaction as a :class:`TxnWriter` wrote it: its batches, its
    records, its marker and how it ended (None while open)."""

    producer_id: int
    batches: list[tuple[int, int]] = attrs.field(factory=list)  # (base, last offset)
    records: list[tuple[int, bytes, bytes | None]] = attrs.field(factory=list)
    marker: int | None = None
    committed: bool | None = None


@attrs.define
class TxnWriter:
    """Writes keyed batches (plain, or in a producer's transaction) and markers, and
    remembers which transaction each offset belongs to."""

    log: Log
    compression: CompressionType = CompressionType.NONE
    _sequences: dict[int, int] = attrs.field(factory=dict)
    open: dict[int, WrittenTxn] = attrs.field(factory=dict)
    done: list[WrittenTxn] = attrs.field(factory=list)
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
            txn = self.open.setdefault(producer_id, WrittenTxn(producer_id))
            txn.batches.append((info.first_offset, info.last_offset))
            txn.records.extend(written)
        self.log.update_high_watermark(self.log.log_end_offset)

    def end(self, producer_id: int, commit: bool) -> None:
        """The producer's marker; its transaction is decided."""
        info = self.log.append_txn_marker(producer_id, 0, commit, 0, leader_epoch=0)
        txn = self.open.pop(producer_id, WrittenTxn(producer_id))
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
        return latest_values(writes)


def latest_values(records: list[tuple[int, bytes, bytes | None]]) -> dict[bytes, bytes]:
    """Each key's latest value among ``(offset, key, value)`` records; a key whose
    latest value is a tombstone is absent."""
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


def marker_batches(log: Log) -> list[tuple[int, int, int | None]]:
    """(offset, producer id, delete horizon) of every control batch still holding
    its marker record."""
    found = []
    for _, _, header in log.batches():
        if header.is_control and header.record_count:
            found.append(
                (header.base_offset, header.producer_id, header.delete_horizon_ms)
            )
    return found


def write_interleaved_txns(w: TxnWriter) -> None:
    """Four producers' transactions interleaved with plain writes: P1 commits, P2
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


def write_random_txns(w: TxnWriter, rng: random.Random) -> None:
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
