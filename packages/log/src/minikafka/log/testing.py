"""Helpers for tests of the log and of the packages built on it (replication, groups)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from ._batch import CompressionType
from ._log import Log
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
