"""Reading a segment's ``.log`` file: what a read returns, and the scan over its batches.

:class:`FileSlice` is the zero-copy answer of a read (file, position, length), which the
network layer sends with ``sendfile`` (seed 000's fetch); :class:`FetchDataInfo` wraps
it with where the read began (:class:`LogOffsetMetadata`). :func:`scan_batches` walks a
file's batch headers in large chunks, the loop recovery, the index lookups past the last
index entry, the cleaner and ``dump-log`` share.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import attrs

from minikafka.common import FileRegion

from ._batch import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    RecordBatchHeader,
    check_crc,
    read_batch_header,
)
from ._files import PooledFile
from ._txn_index import AbortedTxn

_INT32 = struct.Struct(">i")
# how much a scan reads at once: many small batches per syscall
_SCAN_CHUNK = 1024 * 1024
# a lookup scans about index.interval.bytes (4 KiB) of headers
_HEADER_SCAN_CHUNK = 16 * 1024


def _pread(file: int | PooledFile, size: int, position: int) -> bytes:
    return (
        os.pread(file, size, position)
        if isinstance(file, int)
        else file.pread(size, position)
    )


@attrs.frozen
class FileSlice:
    """``length`` bytes of a segment file from ``position``: what a fetch sends.

    ``file`` is the segment's pooled file (or a descriptor the caller owns: tools,
    tests); ``path`` its name when the slice was taken.
    """

    file: int | PooledFile
    path: Path
    position: int
    length: int

    def read_bytes(self) -> bytes:
        """The bytes themselves (tools, tests, and the broker's non-zero-copy path)."""
        return _pread(self.file, self.length, self.position)

    def file_region(self) -> FileRegion:
        """The network layer's description of the same bytes, for a fetch response.

        The response may wait in a queue while the pool evicts the descriptor, retention
        renames the segment to ``.deleted`` or the cleaner puts a new segment under the
        same name; a descriptor *number* taken now could by then name another file, and
        the *path* could name the cleaner's new segment. The region therefore carries
        the pooled file itself: the Processor pins it for the ``sendfile`` (reopening it
        under its current name if it was evicted), so the bytes sent are this segment's,
        or the send fails (the segment was deleted) and the connection is closed.
        A caller-owned descriptor is sent by path, as before.
        """
        if isinstance(self.file, int):
            return FileRegion(self.path, self.position, self.length)
        return FileRegion(self.file, self.position, self.length)


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
    # A read_committed read's aborted transactions overlapping ``records`` (KIP-98);
    # None for any other read, as Kafka's Optional.empty.
    aborted_transactions: tuple[AbortedTxn, ...] | None = None

    @property
    def size(self) -> int:
        return self.records.length if self.records else 0


@attrs.frozen
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None = None


def scan_batches(
    file: int | PooledFile, start: int, end: int, *, verify_crc: bool
) -> Iterator[tuple[int, RecordBatchHeader]]:
    """Every batch header in ``[start, end)`` of a file, read in large chunks.

    A pooled file is pinned for each read, not across the yields: whatever the caller
    does between two batches (open other segments, as the cleaner does) may evict it, and
    the next read reopens it. Raises CorruptRecordError (with the absolute position) at
    the first batch that is torn, has a bad length or magic, or (with ``verify_crc``) a
    bad CRC.
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
            buf, origin, rel = (
                _pread(file, min(chunk, end - position), position),
                position,
                0,
            )
        if len(buf) - rel >= LOG_OVERHEAD:
            size = _INT32.unpack_from(buf, rel + 8)[0] + LOG_OVERHEAD
            if position + size > end:
                raise CorruptRecordError(
                    f"batch at position {position} declares {size} bytes but only "
                    f"{end - position} remain in the file",
                    position,
                )
            if verify_crc and rel + size > len(buf):  # a batch longer than the chunk
                buf, origin, rel = _pread(file, size, position), position, 0
        header = read_batch_header(buf, rel, origin, whole=verify_crc)
        if verify_crc:
            check_crc(buf, rel, header, origin)
        yield position, header
        position += header.size
