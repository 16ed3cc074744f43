"""The sparse offset and time indexes of a segment.

A segment file is addressed by *position* (bytes), a fetch by *offset*. The offset index
maps one to the other, but only every ``index.interval.bytes`` of appended data, not for
every batch: an index small enough to stay in memory (and in the page cache) finds the
neighbourhood with a binary search, and a short forward scan of batch headers does the
rest. Entries are 8 bytes, ``relativeOffset:int32 position:int32`` (relative to the
segment's base offset, so 32 bits suffice).

The time index maps timestamps to offsets for ListOffsets-by-time and retention; an
entry is 12 bytes, ``timestamp:int64 relativeOffset:int32``, and is only added when the
timestamp is larger than the last entry's, so both columns are monotonic.

Kafka preallocates ``segment.index.bytes`` and memory-maps the file; here the entries
live in two Python arrays and are appended to the file as they are made. ``full`` is
the same rule: a segment rolls when its index has ``segment.index.bytes / entry size``
entries. Because lookups never read the file, an index needs a descriptor only to
append, truncate or fsync: it holds a :class:`~._files.PooledFile`, which the LogManager's
pool closes when idle (Kafka opens its index files lazily for the same reason).
"""

from __future__ import annotations

import abc
import bisect
import errno
import struct
from array import array
from pathlib import Path
from typing import ClassVar, Self

import attrs

from ._files import FilePool, PooledFile

MAX_RELATIVE_OFFSET = 2**31 - 1  # entries hold offsets relative to the segment's base


class CorruptIndexError(Exception):
    """An index file that cannot be trusted; the segment rebuilds it from the log."""


@attrs.define(eq=False)
class _SparseIndex(abc.ABC):
    """Two monotonic columns (``keys`` searched, ``values`` returned) backed by a file."""

    path: Path
    base_offset: int
    max_entries: int
    _file: PooledFile
    _keys: array[int] = attrs.field(factory=lambda: array("q"))
    _values: array[int] = attrs.field(factory=lambda: array("q"))

    ENTRY: ClassVar[struct.Struct]

    @classmethod
    def open(
        cls,
        path: Path,
        base_offset: int,
        max_index_bytes: int,
        files: FilePool | None = None,
    ) -> Self:
        # O_APPEND (the pool's files all are): after a reopen, new entries go after the
        # loaded ones, not over them. Without a pool the index gets one of its own.
        file = (files or FilePool(1)).file(path)
        index = cls(path, base_offset, max(1, max_index_bytes // cls.ENTRY.size), file)
        try:
            index._load()
        except BaseException:
            file.close()
            raise
        return index

    def _load(self) -> None:
        data = self._file.pread(self._file.stat().st_size, 0)
        if len(data) % self.ENTRY.size:
            raise CorruptIndexError(
                f"{self.path}: {len(data)} bytes is not a whole number of entries"
            )
        for first, second in self.ENTRY.iter_unpack(data):
            key, value = self._decode(first, second)
            if self._keys and (key <= self._keys[-1] or value < self._values[-1]):
                raise CorruptIndexError(f"{self.path}: entries are not increasing")
            self._keys.append(key)
            self._values.append(value)

    # Subclasses say which column is searched and how an entry is laid out.
    @abc.abstractmethod
    def _decode(self, first: int, second: int) -> tuple[int, int]: ...

    @abc.abstractmethod
    def _encode(self, key: int, value: int) -> bytes: ...

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return len(self._keys) * self.ENTRY.size

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values, strict=True))

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def _append(self, key: int, value: int) -> None:
        entry = self._encode(key, value)
        if self._file.write(entry) != len(entry):
            # A short write means a full disk; the segment cuts the torn entry off (a
            # misaligned file would make every later entry unreadable after a restart).
            raise OSError(errno.ENOSPC, f"short write of an entry to {self.path}")
        self._keys.append(key)
        self._values.append(value)

    def _floor(self, key: int) -> int:
        """Index of the last entry whose key is <= ``key``; -1 if there is none."""
        return bisect.bisect_right(self._keys, key) - 1

    def _truncate_entries(self, keep: int) -> None:
        del self._keys[keep:]
        del self._values[keep:]
        self._file.truncate(keep * self.ENTRY.size)

    def reset(self) -> None:
        self._truncate_entries(0)

    def flush(self) -> None:
        self._file.fsync()

    def close(self) -> None:
        self._file.close()  # idempotent

    @property
    def file(self) -> PooledFile:
        return self._file

    def rename(self, path: Path) -> None:
        self._file.rename(path)
        self.path = path


@attrs.define(eq=False)
class OffsetIndex(_SparseIndex):
    """offset -> position of the batch to start scanning from."""

    ENTRY: ClassVar[struct.Struct] = struct.Struct(">ii")

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return self.base_offset + first, second

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key - self.base_offset, value)

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            raise ValueError(
                f"offset {offset} is not after the last entry {self._keys[-1]}"
            )
        self._append(offset, position)

    def fetch_upper_bound_offset(self, position: int) -> int | None:
        """The offset of the first entry at or past ``position`` (None: no such entry):
        an offset no batch that starts before ``position`` reaches past (Kafka's
        ``fetchUpperBoundOffset``, which bounds a read_committed fetch's search for
        aborted transactions)."""
        i = bisect.bisect_left(self._values, position)
        return self._keys[i] if i < len(self._keys) else None

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """The last entry at or before ``target_offset``, or ``(base_offset, 0)``."""
        i = self._floor(target_offset)
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries for offsets >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._keys, offset))


@attrs.define(eq=False)
class TimeIndex(_SparseIndex):
    """timestamp -> offset from which a scan finds the first record at or after it."""

    ENTRY: ClassVar[struct.Struct] = struct.Struct(">qi")

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return first, self.base_offset + second

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value - self.base_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry only if it moves time forward (Kafka's ``maybeAppend``)."""
        if self._keys and timestamp <= self._keys[-1]:
            return
        if self._values and offset < self._values[-1]:
            return
        self._append(timestamp, offset)

    def lookup(self, target_timestamp: int) -> int:
        """An offset from which scanning cannot miss a record with timestamp >= target."""
        i = self._floor(target_timestamp)
        return self.base_offset if i < 0 else self._values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries for offsets >= ``offset``."""
        keep = 0
        while keep < len(self._values) and self._values[keep] < offset:
            keep += 1
        self._truncate_entries(keep)
