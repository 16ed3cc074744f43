"""LogSegment: one ``.log`` file of batches with its ``.index`` and ``.timeindex``.

A partition's log is a sequence of segments; only the last one (the active segment) is
written to. Appends are plain ``write`` calls on an ``O_APPEND`` file: the bytes go to
the page cache and reach the disk when the kernel writes them back or when the log is
flushed (``fsync``). Reads never copy batches through Python: :meth:`LogSegment.read`
answers with a :class:`FileSlice` (file, position, length) that the network layer sends
with ``sendfile``, the zero-copy path of seed 000's fetch.

A segment does not own descriptors: its three files are pooled files
(:class:`~._files.PooledFile`) of the LogManager's pool, opened on use and closed when
the pool needs the room, so a broker can host far more segments than it may hold open
(see :mod:`._files`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import attrs

from ._batch import CorruptRecordError, RecordBatchHeader
from ._config import LogConfig
from ._files import STANDALONE_CAPACITY, FilePool, PooledFile
from ._index import MAX_RELATIVE_OFFSET, CorruptIndexError, OffsetIndex, TimeIndex
from ._names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from ._segment_read import (
    FetchDataInfo,
    FileSlice,
    LogOffsetMetadata,
    scan_batches,
)
from ._txn_index import AbortedTxn, TransactionIndex

# The most batches the unindexed tail remembers (see LogSegment._tail): with the default
# index.interval.bytes (4 KiB) and the smallest batch (61 bytes) there are at most 69.
_TAIL_LIMIT = 1024


_Index = TypeVar("_Index", OffsetIndex, TimeIndex)


def _open_index(
    kind: type[_Index], path: Path, base_offset: int, config: LogConfig, files: FilePool
) -> tuple[_Index, bool]:
    """The index at ``path``; a damaged one is replaced by an empty one (False: rebuild it)."""
    try:
        return kind.open(path, base_offset, config.segment_index_bytes, files), True
    except CorruptIndexError:
        path.unlink()
        return kind.open(path, base_offset, config.segment_index_bytes, files), False


def _open_txn_index(
    dir: Path, base_offset: int, suffix: str, files: FilePool
) -> tuple[TransactionIndex | None, bool]:
    """The segment's ``.txnindex`` if it has one, and whether it is stale: a damaged
    one is emptied, and the Log rewrites it from the markers (as Kafka rebuilds an
    index that fails its sanity check)."""
    path = dir / (segment_file_name(base_offset, TXN_INDEX_SUFFIX) + suffix)
    if not path.exists():
        return None, False
    try:
        return TransactionIndex.open(path, base_offset, files), False
    except CorruptIndexError:
        path.unlink()
        return TransactionIndex.open(path, base_offset, files), True


@attrs.define(eq=False)
class LogSegment:
    """One segment: its files, its size, and the offsets and timestamps it holds."""

    dir: Path
    base_offset: int
    config: LogConfig
    suffix: (
        str  # "" for a live segment; ".cleaned" or ".swap" while compaction builds one
    )
    _file: PooledFile  # the .log file
    offset_index: OffsetIndex
    time_index: TimeIndex
    created_ms: int
    size: int = 0
    next_offset: int = 0  # one past the last offset in the segment
    max_timestamp_so_far: int = -1
    offset_of_max_timestamp_so_far: int = -1
    rolling_based_timestamp: int | None = None  # the first batch's max timestamp
    _bytes_since_last_index_entry: int = 0
    # The unindexed tail: the last offset, position and header of every batch from the
    # last offset-index entry's batch (or the first batch, while the index is empty) to
    # the end, in order; None when not known (after a truncation, a reopen of a
    # non-empty segment, a roll, or past _TAIL_LIMIT batches) until the next index entry.
    # The index is sparse, so finding an offset means scanning the batch headers after
    # the entry before it: cheap in Kafka's JVM, about 5 us a header in Python, and a
    # consumer at the end of the log asks for an offset in exactly this region on every
    # fetch. Remembering it makes that lookup a bisect.
    _tail_last_offsets: list[int] | None = None
    _tail: list[tuple[int, RecordBatchHeader]] | None = None
    # The aborted transactions of this segment (KIP-98); like Kafka's, the file is
    # created with its first entry, so most segments never have one.
    txn_index: TransactionIndex | None = None
    # a damaged .txnindex or a rescanned segment's: the Log's replay rewrites it
    txn_index_stale: bool = False

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
        files: FilePool | None = None,
    ) -> LogSegment:
        """Open (creating if absent) the segment's three files.

        The segment's end is found from its offset index and a scan of the batches after
        the last entry; a segment that may hold a torn or unflushed tail must be
        :meth:`recover`-ed instead of trusted (``trust_end=False`` skips the scan).
        ``files`` is the pool the descriptors come from (the log's); a segment opened on
        its own gets a small pool of its own.
        """
        files = files or FilePool(STANDALONE_CAPACITY)
        log_path = dir / (segment_file_name(base_offset, LOG_SUFFIX) + suffix)
        log_file = files.file(log_path)
        index_path = dir / (segment_file_name(base_offset, INDEX_SUFFIX) + suffix)
        time_path = dir / (segment_file_name(base_offset, TIME_INDEX_SUFFIX) + suffix)
        opened: list[PooledFile] = [log_file]
        try:
            size = log_file.stat().st_size
            # A missing index (a crash between renames, a user's rm) is rebuilt, never
            # trusted empty: an empty index would still answer, only slowly, and hide the
            # damage.
            indexes_ok = (index_path.exists() and time_path.exists()) or size == 0
            offset_index, offset_ok = _open_index(
                OffsetIndex, index_path, base_offset, config, files
            )
            opened.append(offset_index.file)
            time_index, time_ok = _open_index(
                TimeIndex, time_path, base_offset, config, files
            )
            opened.append(time_index.file)
        except BaseException:
            for file in opened:  # no descriptor outlives a segment that failed to open
                file.close()
            raise
        indexes_ok = indexes_ok and offset_ok and time_ok
        segment = cls(
            dir,
            base_offset,
            config,
            suffix,
            log_file,
            offset_index,
            time_index,
            created_ms=now_ms,
            size=size,
            next_offset=base_offset,
        )
        found = _open_txn_index(dir, base_offset, suffix, files)
        segment.txn_index, segment.txn_index_stale = found
        if size == 0:
            segment._forget_tail(known=True)  # nothing in it: its tail is known (empty)
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
        return self.dir / (
            segment_file_name(self.base_offset, LOG_SUFFIX) + self.suffix
        )

    @property
    def file(self) -> PooledFile:
        """The ``.log`` file (pin it for a descriptor; see :mod:`._files`)."""
        return self._file

    @property
    def files(self) -> tuple[PooledFile, PooledFile, PooledFile]:
        return self._file, self.offset_index.file, self.time_index.file

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
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = last_time or (
            -1,
            -1,
        )
        _, position = self.offset_index.lookup(
            last_time[1] if last_time else self.base_offset
        )
        self.next_offset = self.base_offset
        for _, header in scan_batches(
            self._file, position, self.size, verify_crc=False
        ):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset
        first = next(scan_batches(self._file, 0, self.size, verify_crc=False), None)
        self.rolling_based_timestamp = first[1].max_timestamp if first else None

    def flush(self) -> None:
        # Each fsync pins its file, reopening it if the pool closed it: a fresh
        # descriptor's fsync flushes the file's dirty pages all the same (see _files).
        self._file.fsync()
        self.offset_index.flush()
        self.time_index.flush()
        if self.txn_index is not None:
            self.txn_index.flush()

    def on_become_inactive(self) -> None:
        """On roll: a last time-index entry so the segment's max timestamp survives a restart.

        The unindexed tail is let go: consumers read at the end of the log, which is now
        in the next segment.
        """
        self._forget_tail(known=False)
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )

    def close(self) -> None:
        if self._file.closed:
            return  # already closed
        try:
            self.on_become_inactive()  # may need to reopen the evicted time index
        finally:
            self.close_handlers()  # whatever happened, no descriptor is left behind

    def close_handlers(self) -> None:
        """Close the files without touching them (for a segment that is being deleted).

        Idempotent. A file pinned by a fetch response being sent is closed when that
        send ends; no reopen is possible from now on.
        """
        self.offset_index.close()
        self.time_index.close()
        self._file.close()
        if self.txn_index is not None:
            self.txn_index.close()

    def paths(self) -> list[Path]:
        txn = [] if self.txn_index is None else [self.txn_index.path]
        return [self.log_path, self.offset_index.path, self.time_index.path, *txn]

    def change_suffix(self, new_suffix: str) -> None:
        """Rename the files (``.cleaned`` -> ``.swap`` -> live, or live -> ``.deleted``)."""
        for path in self.paths():
            stem = (
                path.name[: len(path.name) - len(self.suffix)]
                if self.suffix
                else path.name
            )
            target = self.dir / (stem + new_suffix)
            if path == self.log_path:
                self._file.rename(target)
            elif path == self.offset_index.path:
                self.offset_index.rename(target)
            elif path == self.time_index.path:
                self.time_index.rename(target)
            elif self.txn_index is not None:
                self.txn_index.rename(target)
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
        if (
            self.rolling_based_timestamp is not None
            and self.rolling_based_timestamp >= 0
        ):
            return max_timestamp - self.rolling_based_timestamp
        return now_ms - self.created_ms

    def append(
        self,
        buf: bytes | bytearray | memoryview,
        batches: Sequence[tuple[int, RecordBatchHeader]],
    ) -> None:
        """Write already-validated batches (positions within ``buf``) and index them."""
        view = memoryview(buf)
        written = 0
        try:
            # a write to a regular file can be short (disk full)
            while written < len(view):
                written += self._file.write(view[written:])
        except BaseException:
            # Cut what did get written, so the file ends where the log thinks it does
            # and a retried append lands where its index entries will say.
            self._file.truncate(self.size)
            raise
        base = self.size
        for position, header in batches:
            self._on_batch(base + position, header)
        self.size = base + len(view)

    def append_aborted_txn(self, aborted: AbortedTxn) -> None:
        """An abort marker was written here (Kafka's ``updateTxnIndex``)."""
        if self.txn_index is None:
            name = segment_file_name(self.base_offset, TXN_INDEX_SUFFIX) + self.suffix
            self.txn_index = TransactionIndex.open(
                self.dir / name, self.base_offset, self._file.pool
            )
        self.txn_index.append(aborted)

    # --- the read path ----------------------------------------------------------------

    def translate_offset(
        self, offset: int, start_position: int = 0
    ) -> tuple[int, RecordBatchHeader] | None:
        """The first batch whose last offset is >= ``offset``: index lookup, then a scan
        (or a bisect of the unindexed tail, which is what that scan would read)."""
        last_offsets, tail = self._tail_last_offsets, self._tail
        if last_offsets and tail and start_position == 0 and offset >= last_offsets[0]:
            i = bisect.bisect_left(last_offsets, offset)
            return tail[i] if i < len(tail) else None
        return self._translate_by_scan(offset, start_position)

    def _translate_by_scan(
        self, offset: int, start_position: int = 0
    ) -> tuple[int, RecordBatchHeader] | None:
        _, indexed = self.offset_index.lookup(offset)
        for position, header in scan_batches(
            self._file, max(indexed, start_position), self.size, verify_crc=False
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
        # The file's path is log_path (renames move both): no name built per read.
        return FetchDataInfo(
            metadata, FileSlice(self._file, self._file.path, position, length)
        )

    def batches(
        self, verify_crc: bool = False
    ) -> Iterator[tuple[int, RecordBatchHeader]]:
        return scan_batches(self._file, 0, self.size, verify_crc=verify_crc)

    def read_batch(self, position: int, header: RecordBatchHeader) -> bytes:
        return self._file.pread(header.size, position)

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares: the newest record, or the file's mtime without one."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(self._file.stat().st_mtime * 1000)

    # --- recovery and truncation ------------------------------------------------------

    def recover(self) -> int:
        """Rescan every batch, check its CRC, rebuild the indexes, cut a bad tail.

        Returns how many bytes were truncated. Everything before the first batch that is
        torn, corrupt or out of offset order is kept; it and everything after it go.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index_stale = True  # the Log's replay of the markers rewrites it
        self._forget_tail(known=True)  # rebuilt below, batch by batch, from position 0
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = -1
        self.rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self.next_offset = self.base_offset
        valid = 0
        try:
            for position, header in scan_batches(
                self._file, 0, self.size, verify_crc=True
            ):
                if header.base_offset < self.next_offset or (
                    header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET
                ):
                    raise CorruptRecordError(
                        f"batch at position {position} has base offset "
                        f"{header.base_offset}, "
                        f"expected at least {self.next_offset}",
                        position,
                    )
                self._on_batch(position, header)
                valid = position + header.size
        except CorruptRecordError:
            pass  # everything from the first bad batch on is cut below
        truncated = self.size - valid
        if truncated:
            self._file.truncate(valid)
            self.size = valid
        if self.txn_index is not None:  # no entry may outlive its marker
            self.txn_index.truncate_to(self.next_offset)
        self.on_become_inactive()
        return truncated

    def _on_batch(self, position: int, header: RecordBatchHeader) -> None:
        """Account for a batch now in the file at ``position``, appended or rescanned.

        An index entry is added once more than ``index.interval.bytes`` have been
        written since the last one; Kafka's entry is the batch's *last* offset and its
        position.
        """
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = header.max_timestamp
            # Kafka's time index names the batch by its last offset; a lookup scans from
            # the offset index entry at or before it, so the batch itself is never
            # skipped.
            self.offset_of_max_timestamp_so_far = header.last_offset
        if self._bytes_since_last_index_entry > self.config.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )
            self._bytes_since_last_index_entry = 0
            self._forget_tail(known=True)  # a scan from the new entry starts here
        if self._tail_last_offsets is not None and self._tail is not None:
            if len(self._tail) < _TAIL_LIMIT:
                self._tail_last_offsets.append(header.last_offset)
                self._tail.append((position, header))
            else:
                self._forget_tail(known=False)  # index.interval.bytes is set very high
        self._bytes_since_last_index_entry += header.size
        self.next_offset = header.next_offset

    def _forget_tail(self, *, known: bool) -> None:
        """Empty the unindexed tail (``known``: nothing is after the last index entry's
        batch yet), or mark it unknown, so that lookups scan."""
        self._tail_last_offsets, self._tail = ([], []) if known else (None, None)

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding offsets >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if self.txn_index is not None:
            self.txn_index.truncate_to(offset)
        removed = self.size - position
        self._file.truncate(position)
        self.size = position
        self._bytes_since_last_index_entry = 0
        self._forget_tail(known=False)
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
        self._file.truncate(size)
        self.size = size
        self._bytes_since_last_index_entry = 0
        self._forget_tail(known=False)
        self._load_end()
