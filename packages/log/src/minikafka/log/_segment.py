"""LogSegment: one ``.log`` file of batches with its ``.index`` and ``.timeindex``.

A partition's log is a sequence of segments; only the last one (the active segment) is
written to. Appends are plain ``write`` calls on an ``O_APPEND`` file: the bytes go to
the page cache and reach the disk when the kernel writes them back or when the log is
flushed (``fsync``). Reads never copy batches through Python: :meth:`LogSegment.read`
answers with a :class:`FileSlice` (file, position, length) that the network layer sends
with ``sendfile``, the zero-copy path of seed 000's fetch.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import attrs

from minikafka.net import FileRegion

from ._batch import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    RecordBatchHeader,
    TimestampType,
    check_crc,
    read_batch_header,
)
from ._config import LogConfig
from ._index import MAX_RELATIVE_OFFSET, CorruptIndexError, OffsetIndex, TimeIndex
from ._names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from ._records import decode_batch

_INT32 = struct.Struct(">i")
_SCAN_CHUNK = 1024 * 1024  # how much a scan reads at once: many small batches per syscall
_HEADER_SCAN_CHUNK = 16 * 1024  # a lookup scans about index.interval.bytes (4 KiB) of headers


@attrs.frozen
class FileSlice:
    """``length`` bytes of a segment file from ``position``: what a fetch sends.

    ``fd`` is the segment's open file, valid while the log is not changed; what is sent
    later goes by :meth:`file_region`, which names the file by path.
    """

    fd: int
    path: Path
    position: int
    length: int

    def read_bytes(self) -> bytes:
        """The bytes themselves (tools, tests, and the broker's non-zero-copy path)."""
        return os.pread(self.fd, self.length, self.position)

    def file_region(self) -> FileRegion:
        """The network layer's description of the same bytes, for a fetch response.

        By path, not by ``fd``: the response may wait in a queue while retention or a
        follower's truncation closes the segment, and a closed descriptor's number can be
        reused by another file. Opening the path at send time either reads this
        segment's bytes or fails (the segment is gone and the connection is closed);
        it never sends another file's bytes.
        """
        return FileRegion(self.path, self.position, self.length)


@attrs.frozen
class LogOffsetMetadata:
    """An offset and where it lies: which segment, how far into it (Kafka's name)."""

    offset: int
    segment_base_offset: int
    relative_position: int


@attrs.frozen
class FetchDataInfo:
    fetch_offset_metadata: LogOffsetMetadata
    records: FileSlice | None  # None: nothing to send

    @property
    def size(self) -> int:
        return self.records.length if self.records else 0


@attrs.frozen
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None = None


def scan_batches(
    fd: int, start: int, end: int, *, verify_crc: bool
) -> Iterator[tuple[int, RecordBatchHeader]]:
    """Every batch header in ``[start, end)`` of an open file, read in large chunks.

    Raises CorruptRecordError (with the absolute position) at the first batch that is
    torn, has a bad length or magic, or (with ``verify_crc``) a bad CRC.
    """
    # Checking CRCs needs every byte; finding offsets needs only each 61-byte header, so
    # a header scan reads small chunks and skips over large batches without reading them.
    chunk = _SCAN_CHUNK if verify_crc else _HEADER_SCAN_CHUNK
    buf = b""
    origin = start  # the file position of buf[0]
    position = start
    while position < end:
        rel = position - origin
        if len(buf) - rel < RECORD_BATCH_OVERHEAD:
            buf, origin, rel = os.pread(fd, min(chunk, end - position), position), position, 0
        if len(buf) - rel >= LOG_OVERHEAD:
            size = _INT32.unpack_from(buf, rel + 8)[0] + LOG_OVERHEAD
            if position + size > end:
                raise CorruptRecordError(
                    f"batch at position {position} declares {size} bytes but only "
                    f"{end - position} remain in the file",
                    position,
                )
            if verify_crc and rel + size > len(buf):  # a batch longer than the chunk
                buf, origin, rel = os.pread(fd, size, position), position, 0
        header = read_batch_header(buf, rel, origin, whole=verify_crc)
        if verify_crc:
            check_crc(buf, rel, header, origin)
        yield position, header
        position += header.size


_Index = TypeVar("_Index", OffsetIndex, TimeIndex)


def _open_index(
    kind: type[_Index], path: Path, base_offset: int, config: LogConfig
) -> tuple[_Index, bool]:
    """The index at ``path``; a damaged one is replaced by an empty one (False: rebuild it)."""
    try:
        return kind.open(path, base_offset, config.segment_index_bytes), True
    except CorruptIndexError:
        path.unlink()
        return kind.open(path, base_offset, config.segment_index_bytes), False


@attrs.define(eq=False)
class LogSegment:
    """One segment: its files, its size, and the offsets and timestamps it holds."""

    dir: Path
    base_offset: int
    config: LogConfig
    suffix: str  # "" for a live segment; ".cleaned" or ".swap" while compaction builds one
    _fd: int
    offset_index: OffsetIndex
    time_index: TimeIndex
    created_ms: int
    size: int = 0
    next_offset: int = 0  # one past the last offset in the segment
    max_timestamp_so_far: int = -1
    offset_of_max_timestamp_so_far: int = -1
    rolling_based_timestamp: int | None = None  # the first batch's max timestamp
    _bytes_since_last_index_entry: int = 0

    # --- opening and closing -------------------------------------------------------

    @classmethod
    def open(
        cls,
        dir: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        suffix: str = "",
        *,
        trust_end: bool = True,
    ) -> LogSegment:
        """Open (creating if absent) the segment's three files.

        The segment's end is found from its offset index and a scan of the batches after
        the last entry; a segment that may hold a torn or unflushed tail must be
        :meth:`recover`-ed instead of trusted (``trust_end=False`` skips the scan).
        """
        log_path = dir / (segment_file_name(base_offset, LOG_SUFFIX) + suffix)
        fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        index_path = dir / (segment_file_name(base_offset, INDEX_SUFFIX) + suffix)
        time_path = dir / (segment_file_name(base_offset, TIME_INDEX_SUFFIX) + suffix)
        # A missing index (a crash between renames, a user's rm) is rebuilt, never trusted
        # empty: an empty index would still answer, only slowly, and hide the damage.
        indexes_ok = (index_path.exists() and time_path.exists()) or os.fstat(fd).st_size == 0
        offset_index, offset_ok = _open_index(OffsetIndex, index_path, base_offset, config)
        time_index, time_ok = _open_index(TimeIndex, time_path, base_offset, config)
        indexes_ok = indexes_ok and offset_ok and time_ok
        segment = cls(
            dir,
            base_offset,
            config,
            suffix,
            fd,
            offset_index,
            time_index,
            created_ms=now_ms,
            size=os.fstat(fd).st_size,
            next_offset=base_offset,
        )
        if not trust_end:
            return segment
        try:
            if not indexes_ok or not segment._indexes_consistent():
                segment.recover()  # rebuilds both indexes from the batches
            else:
                segment._load_end()
        except BaseException:
            segment.close_handlers()
            raise
        return segment

    @property
    def log_path(self) -> Path:
        return self.dir / (segment_file_name(self.base_offset, LOG_SUFFIX) + self.suffix)

    @property
    def fd(self) -> int:
        return self._fd

    def _indexes_consistent(self) -> bool:
        """Kafka's index sanity check: every entry must point inside this segment."""
        last = self.offset_index.last_entry()
        return last is None or last[1] < self.size or (last[1] == 0 and self.size == 0)

    def _load_end(self) -> None:
        """Find next_offset and the max timestamp without reading the whole segment.

        Both indexes are sparse, so the batches after the time index's last entry are
        scanned (headers only): they hold the log's end and maybe a newer timestamp
        (Kafka's ``readLargestTimestamp``).
        """
        last_time = self.time_index.last_entry()
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = last_time or (-1, -1)
        _, position = self.offset_index.lookup(last_time[1] if last_time else self.base_offset)
        self.next_offset = self.base_offset
        for _, header in scan_batches(self._fd, position, self.size, verify_crc=False):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset
        first = next(scan_batches(self._fd, 0, self.size, verify_crc=False), None)
        self.rolling_based_timestamp = first[1].max_timestamp if first else None

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()

    def on_become_inactive(self) -> None:
        """On roll: a last time-index entry so the segment's max timestamp survives a restart."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )

    def close(self) -> None:
        if self._fd < 0:
            return  # already closed
        self.on_become_inactive()
        self.close_handlers()

    def close_handlers(self) -> None:
        """Close the files without touching them (for a segment that is being deleted).

        Idempotent: closing a descriptor twice could close another file that reused its
        number in between.
        """
        self.offset_index.close()
        self.time_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def paths(self) -> list[Path]:
        return [self.log_path, self.offset_index.path, self.time_index.path]

    def change_suffix(self, new_suffix: str) -> None:
        """Rename the three files (``.cleaned`` -> ``.swap`` -> live, or live -> ``.deleted``)."""
        for path in self.paths():
            stem = path.name[: len(path.name) - len(self.suffix)] if self.suffix else path.name
            target = self.dir / (stem + new_suffix)
            if path == self.log_path:
                os.rename(path, target)
            elif path == self.offset_index.path:
                self.offset_index.rename(target)
            else:
                self.time_index.rename(target)
        self.suffix = new_suffix

    def delete_files(self) -> None:
        for path in self.paths():
            path.unlink(missing_ok=True)

    # --- the write path ---------------------------------------------------------------

    def should_roll(
        self, batch_bytes: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> str | None:
        """Why the next append needs a new segment, or None (Kafka's ``shouldRoll``)."""
        if self.size > 0 and self.size > self.config.segment_bytes - batch_bytes:
            return "segment.bytes"
        if self.size > 0 and self._time_waited_for_roll(now_ms, max_timestamp) > (
            self.config.max_segment_ms
        ):
            return "segment.ms"
        if self.offset_index.full:
            return "offset index full"
        if self.time_index.full:
            return "time index full"
        if last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
            return "relative offset overflow"
        return None

    def _time_waited_for_roll(self, now_ms: int, max_timestamp: int) -> int:
        # Kafka measures segment age by the records' own timestamps when they have them,
        # so replaying old data does not roll a segment per append.
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            return max_timestamp - self.rolling_based_timestamp
        return now_ms - self.created_ms

    def append(
        self, buf: bytes | bytearray | memoryview, batches: Sequence[tuple[int, RecordBatchHeader]]
    ) -> None:
        """Write already-validated batches (positions within ``buf``) and index them."""
        view = memoryview(buf)
        written = 0
        try:
            while written < len(view):  # a write to a regular file can be short (disk full)
                written += os.write(self._fd, view[written:])
        except BaseException:
            # Cut what did get written, so the file ends where the log thinks it does
            # and a retried append lands where its index entries will say.
            os.ftruncate(self._fd, self.size)
            raise
        base = self.size
        for position, header in batches:
            self._on_batch(base + position, header)
        self.size = base + len(view)

    # --- the read path ----------------------------------------------------------------

    def translate_offset(
        self, offset: int, start_position: int = 0
    ) -> tuple[int, RecordBatchHeader] | None:
        """The first batch whose last offset is >= ``offset``: index lookup, then a scan."""
        _, indexed = self.offset_index.lookup(offset)
        for position, header in scan_batches(
            self._fd, max(indexed, start_position), self.size, verify_crc=False
        ):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Up to ``max_size`` bytes from the batch holding ``start_offset``.

        As in Kafka the slice may end inside a batch; clients drop a partial trailing
        batch. ``min_one_message`` returns the whole first batch even if it is larger
        than ``max_size``, so a consumer can always make progress.
        """
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        position, header = found
        metadata = LogOffsetMetadata(start_offset, self.base_offset, position)
        limit = self.size if max_position is None else max_position
        wanted = max(max_size, header.size) if min_one_message else max_size
        length = min(limit - position, wanted)
        if length <= 0:
            return FetchDataInfo(metadata, None)
        return FetchDataInfo(metadata, FileSlice(self._fd, self.log_path, position, length))

    def batches(self, verify_crc: bool = False) -> Iterator[tuple[int, RecordBatchHeader]]:
        return scan_batches(self._fd, 0, self.size, verify_crc=verify_crc)

    def read_batch(self, position: int, header: RecordBatchHeader) -> bytes:
        return os.pread(self._fd, header.size, position)

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after ``start_offset`` whose timestamp is >= ``timestamp``.

        The time index gives a place to start; batch headers skip every batch whose
        maxTimestamp is too small; only the one batch that holds the answer is decoded.
        """
        from_offset = max(self.time_index.lookup(timestamp), start_offset)
        _, position = self.offset_index.lookup(from_offset)
        for batch_position, header in scan_batches(self._fd, position, self.size, verify_crc=False):
            if header.max_timestamp < timestamp or header.last_offset < start_offset:
                continue
            _, records = decode_batch(self.read_batch(batch_position, header))
            for record in records:
                if record.offset < start_offset:
                    continue
                if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
                    return TimestampAndOffset(header.max_timestamp, record.offset)
                if record.timestamp >= timestamp:
                    return TimestampAndOffset(record.timestamp, record.offset)
        return None

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares: the newest record, or the file's mtime without one."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(os.fstat(self._fd).st_mtime * 1000)

    # --- recovery and truncation ------------------------------------------------------

    def recover(self) -> int:
        """Rescan every batch, check its CRC, rebuild the indexes, cut a bad tail.

        Returns how many bytes were truncated. Everything before the first batch that is
        torn, corrupt or out of offset order is kept; it and everything after it go.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = -1
        self.rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self.next_offset = self.base_offset
        valid = 0
        try:
            for position, header in scan_batches(self._fd, 0, self.size, verify_crc=True):
                if header.base_offset < self.next_offset or (
                    header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET
                ):
                    raise CorruptRecordError(
                        f"batch at position {position} has base offset {header.base_offset}, "
                        f"expected at least {self.next_offset}",
                        position,
                    )
                self._on_batch(position, header)
                valid = position + header.size
        except CorruptRecordError:
            pass  # everything from the first bad batch on is cut below
        truncated = self.size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
            self.size = valid
        self.on_become_inactive()
        return truncated

    def _on_batch(self, position: int, header: RecordBatchHeader) -> None:
        """Account for a batch now in the file at ``position``, appended or rescanned.

        An index entry is added once more than ``index.interval.bytes`` have been written
        since the last one; Kafka's entry is the batch's *last* offset and its position.
        """
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = header.max_timestamp
            # Kafka's time index names the batch by its last offset; a lookup scans from
            # the offset index entry at or before it, so the batch itself is never skipped.
            self.offset_of_max_timestamp_so_far = header.last_offset
        if self._bytes_since_last_index_entry > self.config.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size
        self.next_offset = header.next_offset

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding offsets >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self._bytes_since_last_index_entry = 0
        self._load_end()  # what is left ends where the last remaining batch ends
        return removed

    def truncate_back(self, size: int, next_offset: int) -> None:
        """Undo an append that failed part-way (a full disk): the segment as it was.

        ``size`` and ``next_offset`` are what the segment had before the append. The file
        is cut to ``size`` (a short write or the index appends after a whole write may
        have left bytes beyond it) and the index entries for offsets from
        ``next_offset`` on are dropped, which also cuts a torn entry from the index file.
        """
        self.offset_index.truncate_to(next_offset)
        self.time_index.truncate_to(next_offset)
        os.ftruncate(self._fd, size)
        self.size = size
        self._bytes_since_last_index_entry = 0
        self._load_end()
