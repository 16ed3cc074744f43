"""LocalLog: one partition's segments on this broker's disk, written, read and cut.

Kafka's ``LocalLog``, which KIP-405 (tiered storage) split out of ``UnifiedLog``. It owns
the ordered segments of ``<topic>-<partition>/`` and the two offsets that describe only
the files:

- the *log end offset* (LEO): the offset the next appended record gets;
- the *recovery point*: everything below it has been fsynced, so a restart after a crash
  rescans only the segments from it on.

It writes batches that already carry their offsets (and undoes a write the disk
refused), rolls the active segment, fsyncs, cuts a file slice for a read, truncates the
tail and takes segments out for deletion. What the offsets mean to clients and replicas
(the log start offset, the high watermark, leader epochs, producer ids) is the business
of :class:`~minikafka.log._log.Log`, which composes one LocalLog and checks everything
before anything reaches it.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from minikafka.common import TopicPartition
from minikafka.trace import Tracer

from ._batch import RecordBatchHeader
from ._config import LogConfig
from ._events import LogRecovered, SegmentRolled
from ._files import FilePool
from ._loader import load_segments
from ._names import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_file_name,
)
from ._segment import LogSegment
from ._segment_read import FetchDataInfo, LogOffsetMetadata
from ._storage import storage_error
from ._validator import LogAppendInfo


@attrs.define(eq=False)
class LocalLog:
    dir: Path
    topic_partition: TopicPartition
    config: LogConfig
    clock: Callable[[], int]
    segments: list[LogSegment]
    log_end_offset: int
    recovery_point: int
    last_flush_ms: int
    # Where the segments' descriptors come from: the LogManager's pool, shared by all its
    # logs (see _files); a log opened on its own has a small one of its own.
    files: FilePool
    tracer: Tracer
    # a roll asks for the finished segment to be fsynced
    flush_requested_offset: int = 0
    _pending_deletes: list[tuple[int, LogSegment]] = attrs.field(factory=list)
    # cleared whenever segments shrink or go
    _hw_position: LogOffsetMetadata | None = None

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig,
        clock: Callable[[], int],
        files: FilePool,
        tracer: Tracer,
        *,
        recovery_point: int,
        log_start_offset: int,
        had_clean_shutdown: bool,
    ) -> LocalLog:
        """Open or create the segments in ``dir`` (named ``<topic>-<partition>``).

        After an unclean shutdown the segments from the recovery point on are rescanned
        (:mod:`._loader`); the checkpointed offsets come from the LogManager.
        """
        dir.mkdir(parents=True, exist_ok=True)
        tp = TopicPartition.parse(dir.name)
        now = clock()
        loaded = load_segments(
            dir,
            config,
            now,
            recovery_point,
            log_start_offset,
            had_clean_shutdown,
            files,
        )
        leo = loaded.segments[-1].next_offset
        if loaded.recovered_segments and tracer.enabled:
            event = LogRecovered(
                tp.topic,
                tp.partition,
                loaded.recovered_segments,
                loaded.truncated_bytes,
                leo,
            )
            tracer.emit(event)
        return cls(
            dir,
            tp,
            config,
            clock,
            loaded.segments,
            log_end_offset=leo,
            recovery_point=min(recovery_point, leo),
            last_flush_ms=now,
            files=files,
            tracer=tracer,
        )

    def close(self) -> None:
        """Close every file (the LogManager flushes first on a clean shutdown).

        Every segment is closed even if one fails (a full disk refusing the active
        segment's last time-index entry); the first failure is raised after.
        """
        failure: OSError | None = None
        for segment in self.segments:
            try:
                segment.close()
            except OSError as exc:
                failure = failure or exc
        for _, segment in self._pending_deletes:
            segment.close_handlers()
        self._pending_deletes.clear()
        if failure is not None:
            raise failure

    def close_handlers(self) -> None:
        """Close every file without writing to it (a log whose directory is being deleted:
        its files may already have been renamed away from under the segments' paths)."""
        for segment in self.segments:
            segment.close_handlers()
        for _, segment in self._pending_deletes:
            segment.close_handlers()
        self._pending_deletes.clear()

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self.segments)

    def segment_index_for(self, offset: int) -> int:
        """Index of the last segment whose base offset is <= ``offset`` (0 if none)."""
        i = bisect.bisect_right(self.segments, offset, key=lambda s: s.base_offset)
        return max(i - 1, 0)

    # --- writing and rolling ------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        batches: list[tuple[int, RecordBatchHeader]],
        info: LogAppendInfo,
        now: int,
    ) -> None:
        """Write batches that carry their offsets to the active segment (rolled if
        due)."""
        # A disk that refuses the write must not leave a torn tail behind: a
        # retried append would land after it and the offsets would no longer match the
        # bytes. Whatever fails is undone, and the caller hears KafkaStorageError (56).
        segment = self._maybe_roll(info, now)
        size, next_offset = segment.size, segment.next_offset
        try:
            segment.append(records, batches)
        except OSError as exc:
            try:
                segment.truncate_back(size, next_offset)
            except OSError:
                raise storage_error(
                    f"appending to {self.dir}", exc, undone=False
                ) from exc
            raise storage_error(f"appending to {self.dir}", exc, undone=True) from exc
        self.log_end_offset = info.last_offset + 1
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            try:
                self.flush(self.log_end_offset)
            except OSError as exc:  # fsyncgate: nothing after a failed fsync is trusted
                raise storage_error(f"flushing {self.dir}", exc, undone=False) from exc

    def _maybe_roll(self, info: LogAppendInfo, now: int) -> LogSegment:
        active = self.active_segment
        reason = active.should_roll(
            info.valid_bytes, info.max_timestamp, info.last_offset, now
        )
        if reason is None:
            return active
        # Normally the new segment starts at the log end. Only a follower batch too far
        # ahead for the active segment's 32-bit relative offsets starts one at its own
        # first offset (Kafka's rule), leaving a gap between segments.
        overflow = reason == "relative offset overflow"
        return self.roll(reason, info.first_offset if overflow else None)

    def roll(
        self, reason: str = "requested", base_offset: int | None = None
    ) -> LogSegment:
        """Start a new active segment at the log end offset (or later, ``base_offset``)."""
        active = self.active_segment
        new_base = max(self.log_end_offset, base_offset or 0)
        if active.size == 0 and active.base_offset == new_base:
            return active  # nothing to close; an empty segment is already "new"
        # The new files first: if the disk refuses them the log is left as it was, with
        # its active segment, and the append that wanted the roll fails alone.
        try:
            if active.size:
                active.on_become_inactive()
            segment = LogSegment.open(
                self.dir, new_base, self.config, self.clock(), files=self.files
            )
        except OSError as exc:
            undone = self._undo_roll(active, new_base)
            raise storage_error(f"rolling {self.dir}", exc, undone=undone) from exc
        if active.size == 0:
            self.segments.pop()  # an empty segment at the wrong base: replace it
            active.close_handlers()
            active.delete_files()
        self.segments.append(segment)
        # Kafka fsyncs the finished segment in the background; the LogManager's flusher
        # does it here, off the append path.
        self.flush_requested_offset = new_base
        tp = self.topic_partition
        if self.tracer.enabled:
            self.tracer.emit(
                SegmentRolled(tp.topic, tp.partition, new_base, reason, active.size)
            )
        return segment

    def _undo_roll(self, active: LogSegment, new_base: int) -> bool:
        """After a roll failed: cut a torn time-index entry, remove the new empty files.

        True when the log's files are as they were (a full disk); False when even that
        failed and the log cannot be trusted any more.
        """
        try:
            # rewrites whole entries only
            active.time_index.truncate_to(active.next_offset)
            if new_base != active.base_offset:
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                    path = self.dir / segment_file_name(new_base, suffix)
                    if path.exists() and path.stat().st_size == 0:
                        path.unlink()
        except OSError:
            return False
        return True

    # --- flushing -----------------------------------------------------------------------

    def fsync_up_to(self, offset: int) -> None:
        """fsync the segments holding offsets in [recovery point, offset).

        Safe to call from a worker thread: it only reads the segment list it snapshots
        and segments are closed only after ``file.delete.delay.ms``.
        """
        for segment in list(self.segments):
            if (
                segment.base_offset < offset
                and segment.next_offset > self.recovery_point
            ):
                segment.flush()

    def mark_flushed(self, offset: int, now: int | None = None) -> None:
        """Move the recovery point after a successful fsync (on the owning thread)."""
        self.recovery_point = max(self.recovery_point, min(offset, self.log_end_offset))
        self.last_flush_ms = self.clock() if now is None else now

    def flush(self, offset: int | None = None) -> None:
        target = self.log_end_offset if offset is None else offset
        self.fsync_up_to(target)
        self.mark_flushed(target)

    # --- reading ------------------------------------------------------------------------

    def read(
        self, start_offset: int, end: int, max_bytes: int, min_one_message: bool
    ) -> FetchDataInfo:
        """Batches from ``start_offset`` as one segment's file slice, stopping before
        ``end``.

        The Log has checked ``start_offset`` against the log's range; ``end`` is the log
        end for a follower and the high watermark for a consumer.
        """
        if start_offset >= end:
            return FetchDataInfo(self.offset_metadata(start_offset), None)
        limit = (
            None if end == self.log_end_offset else self._high_watermark_metadata(end)
        )
        for segment in self.segments[self.segment_index_for(start_offset) :]:
            max_position = None
            if limit is not None:
                if segment.base_offset > limit.segment_base_offset:
                    break
                if segment.base_offset == limit.segment_base_offset:
                    max_position = limit.relative_position
            fetched = segment.read(
                max(start_offset, segment.base_offset),
                max_bytes,
                max_position,
                min_one_message,
            )
            if fetched is not None:
                return fetched
            # The offset lies in a gap (compaction removed it): go on to the next
            # segment.
        return FetchDataInfo(self.offset_metadata(start_offset), None)

    def _high_watermark_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where a consumer's reads stop, remembered until the HW or the segments change.

        Every consumer fetch asks for it, and the HW moves far less often than consumers
        fetch (Kafka keeps the HW's position beside it for the same reason).
        """
        cached = self._hw_position
        if cached is None or cached.offset != offset:
            cached = self._hw_position = self.offset_metadata(offset)
        return cached

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Which segment ``offset`` is in and the position of the batch that holds it."""
        active = self.active_segment
        if offset == self.log_end_offset:
            # The log end is the end of the active segment: no scan. Caught-up followers
            # and consumers fetch here, and every delayed fetch asks again on each append.
            return LogOffsetMetadata(offset, active.base_offset, active.size)
        for segment in self.segments[self.segment_index_for(offset) :]:
            found = segment.translate_offset(offset)
            if found is not None:
                return LogOffsetMetadata(offset, segment.base_offset, found[0])
        return LogOffsetMetadata(offset, active.base_offset, active.size)

    def batches(self) -> Iterator[tuple[LogSegment, int, RecordBatchHeader]]:
        """Every batch of the log as (segment, position, header), for tools."""
        for segment in self.segments:
            for position, header in segment.batches():
                yield segment, position, header

    # --- truncating and deleting ----------------------------------------------------------

    def truncate_to(self, target_offset: int) -> int:
        """Remove every offset >= ``target_offset``; returns the new log end offset.

        ``target_offset`` is at or above the first segment's base offset (the Log starts
        afresh below it, with :meth:`truncate_fully_and_start_at`).
        """
        keep = self.segment_index_for(target_offset) + 1
        doomed = self.segments[keep:]
        del self.segments[keep:]
        self._schedule_delete(doomed)
        self.active_segment.truncate_to(target_offset)
        # Kafka sets the log end to the target even when that falls inside a batch it
        # removed whole; ending where the data ends keeps "segments follow each other
        # without holes", which recovery relies on.
        self.log_end_offset = self.active_segment.next_offset
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        return self.log_end_offset

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start with an empty one at ``new_offset``."""
        self._schedule_delete(self.segments)
        self.segments = [
            LogSegment.open(
                self.dir, new_offset, self.config, self.clock(), files=self.files
            )
        ]
        self.log_end_offset = self.recovery_point = new_offset

    def remove_oldest_segments(self, doomed: list[LogSegment], reason: str) -> None:
        """Take the first ``len(doomed)`` segments out of the log and schedule their deletion."""
        if len(doomed) == len(self.segments):
            self.roll(reason)  # a log always has an active segment
        del self.segments[: len(doomed)]
        self._schedule_delete(doomed)

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        """Rename to ``.deleted`` now, remove after ``file.delete.delay.ms``.

        The rename takes the segment out of the log for any restart; the delay keeps its
        descriptor valid for slices taken just before. Truncation, retention and
        compaction all come through here, so this is where the remembered position of
        the high watermark is forgotten.
        """
        self._hw_position = None
        due = self.clock() + self.config.file_delete_delay_ms
        for segment in segments:
            segment.change_suffix(DELETED_SUFFIX)
            self._pending_deletes.append((due, segment))

    def replace_segments(self, new: LogSegment, old: list[LogSegment]) -> None:
        """Swap compacted segments in (the cleaner's last step, after ``.swap`` is on disk)."""
        first = self.segments.index(old[0])
        self.segments[first : first + len(old)] = [new]
        self._schedule_delete(old)

    def purge_deleted_segments(self, now: int | None = None) -> int:
        """Close and unlink the segments whose deletion delay has passed."""
        now = self.clock() if now is None else now
        due = [segment for when, segment in self._pending_deletes if when <= now]
        self._pending_deletes = [(w, s) for w, s in self._pending_deletes if w > now]
        for segment in due:
            segment.close_handlers()
            segment.delete_files()
        return len(due)

    def delete(self) -> None:
        """Close and remove every file of the log (the directory goes with the LogManager)."""
        self.close_handlers()
        for path in self.dir.iterdir():
            path.unlink()
        os.rmdir(self.dir)
