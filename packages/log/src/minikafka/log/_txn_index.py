"""The aborted-transaction index of a segment (``.txnindex``, KIP-98).

A consumer reading with ``isolation.level=read_committed`` must drop the records of
aborted transactions, and it cannot tell them apart by looking: a transaction's records
are ordinary batches, and only the abort marker written after them says they are void.
So each segment keeps, beside its offset and time indexes, the list of transactions
aborted in it: for each, the producer id, its first and last offset, and the last stable
offset at the time the abort was written. A read_committed fetch asks the segments its
range crosses for the aborted transactions that overlap it (:meth:`TransactionIndex.
collect_aborted`) and sends them with the records; the consumer skips a producer's
batches from each one's first offset until its abort marker.

An entry is 34 bytes, as Kafka's ``AbortedTxn``: ``version:int16`` (0),
``producerId:int64``, ``firstOffset:int64``, ``lastOffset:int64`` (the marker's offset)
and ``lastStableOffset:int64``; entries are appended in the order their markers were
written, so last offsets only grow. Unlike the offset and time indexes it is not sparse
and never preallocated: a segment creates it with its first entry. Kafka's recovery
rebuilds it from the markers it finds, and so does minikafka's (:mod:`._log_txns`).
"""

from __future__ import annotations

import errno
import struct
from pathlib import Path
from typing import Self

import attrs

from ._files import FilePool, PooledFile
from ._index import CorruptIndexError

__all__ = ["AbortedTxn", "TransactionIndex", "TxnIndexSearchResult", "read_entries"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0


@attrs.frozen
class AbortedTxn:
    """One aborted transaction: a producer's records from ``first_offset`` up to its
    abort marker at ``last_offset`` are void."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(
            CURRENT_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


def read_entries(data: bytes) -> tuple[list[tuple[int, AbortedTxn]], int]:
    """The (version, entry) pairs of a ``.txnindex`` file's bytes, as they are (tools
    show damage rather than refuse it), and how many trailing bytes are not a whole
    entry."""
    whole = len(data) - len(data) % ENTRY_SIZE
    entries = [
        (version, AbortedTxn(producer_id, first, last, lso))
        for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data[:whole])
    ]
    return entries, len(data) - whole


@attrs.frozen
class TxnIndexSearchResult:
    """The aborted transactions of one segment that overlap a fetch's range, and whether
    no later segment can hold more (an entry's last stable offset reached the range's
    end: every transaction open before it has ended in this segment or earlier)."""

    aborted: tuple[AbortedTxn, ...]
    complete: bool


@attrs.define(eq=False)
class TransactionIndex:
    path: Path
    base_offset: int
    _file: PooledFile
    _entries: list[AbortedTxn] = attrs.field(factory=list)

    @classmethod
    def open(cls, path: Path, base_offset: int, files: FilePool | None = None) -> Self:
        """The index at ``path`` (created empty if missing), its entries loaded and
        checked: a whole number of entries, each of version 0, last offsets growing."""
        file = (files or FilePool(1)).file(path)
        index = cls(path, base_offset, file)
        try:
            index._load()
        except BaseException:
            file.close()
            raise
        return index

    def _load(self) -> None:
        data = self._file.pread(self._file.stat().st_size, 0)
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(
                f"{self.path}: {len(data)} bytes is not a whole number of entries"
            )
        for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data):
            if version != CURRENT_VERSION:
                raise CorruptIndexError(f"{self.path}: an entry of version {version}")
            self._check_order(last)
            self._entries.append(AbortedTxn(producer_id, first, last, lso))

    def _check_order(self, last_offset: int) -> None:
        if self._entries and self._entries[-1].last_offset >= last_offset:
            raise CorruptIndexError(
                f"{self.path}: the last offsets of aborted transactions must grow, "
                f"but {last_offset} follows {self._entries[-1].last_offset}"
            )

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def append(self, aborted: AbortedTxn) -> None:
        """An abort marker was written at ``aborted.last_offset``."""
        self._check_order(aborted.last_offset)
        entry = aborted.to_bytes()
        if self._file.write(entry) != len(entry):
            raise OSError(errno.ENOSPC, f"short write of an entry to {self.path}")
        self._entries.append(aborted)

    def truncate_to(self, offset: int) -> None:
        """Drop the transactions whose abort marker is at ``offset`` or later (the log
        is truncated there)."""
        keep = sum(1 for e in self._entries if e.last_offset < offset)
        del self._entries[keep:]
        self._file.truncate(keep * ENTRY_SIZE)

    def collect_aborted(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``:
        those whose marker is at or after the fetch offset and that began before the
        bound (Kafka's ``collectAbortedTxns``)."""
        found: list[AbortedTxn] = []
        for entry in self._entries:
            overlaps = entry.last_offset >= fetch_offset
            if overlaps and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                # Every transaction open before the bound has ended by this marker.
                return TxnIndexSearchResult(tuple(found), True)
        return TxnIndexSearchResult(tuple(found), False)

    def rename(self, path: Path) -> None:
        """Follow the segment's other files (``.deleted``, ``.swap``)."""
        self._file.rename(path)
        self.path = path

    def flush(self) -> None:
        self._file.fsync()

    def close(self) -> None:
        self._file.close()
