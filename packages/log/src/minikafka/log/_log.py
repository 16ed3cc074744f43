"""Log: one partition's segments, its offsets, and what replication needs from it.

Kafka's UnifiedLog in one class. It owns the ordered segments of ``<topic>-<partition>/``
and four offsets:

- the *log start offset*: the first offset still readable (retention and DeleteRecords
  move it forward);
- the *log end offset* (LEO): the offset the next appended record gets;
- the *high watermark* (HW): set by replication, the end of what every in-sync replica
  has; consumers read below it;
- the *recovery point*: everything below it has been fsynced, so a restart after a crash
  rescans only the segments from it on.

Appends go to the active segment, rolled by size, age or a full index. Reads start with
a binary search over segment base offsets. Followers truncate with
:meth:`Log.truncate_to` to the offset the leader-epoch cache (KIP-101) agrees on. The
idempotent producers' state (KIP-98, :mod:`._producer_state`) is checked on a leader's
append and kept by every replica, so that a follower can take over.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from minikafka.trace import NullTracer, Tracer

from ._batch import RecordBatchHeader, TimestampType
from ._checkpoint import LeaderEpochCheckpointFile
from ._config import LogConfig
from ._epoch_cache import LeaderEpochFileCache
from ._events import LogRecovered, LogTruncated, SegmentRolled, SegmentsDeleted
from ._files import STANDALONE_CAPACITY, FilePool
from ._loader import load_segments
from ._names import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TopicPartition,
    segment_file_name,
)
from ._producer_state import BatchMetadata, ProducerStateManager
from ._record_checks import MAX_LONG, RecordRules
from ._records import decode_batch
from ._segment import FetchDataInfo, LogOffsetMetadata, LogSegment, TimestampAndOffset
from ._storage import storage_error
from ._validator import (
    LogAppendInfo,
    UnexpectedAppendOffsetError,
    append_info,
    assign_offsets,
    decompressed_limit,
    recompress,
    validate_batches,
    validate_records,
)

EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # ListOffsets: the log end offset (the broker answers the HW)
MAX_TIMESTAMP = -3  # ListOffsets (KIP-734): the record with the largest timestamp


class OffsetOutOfRangeError(Exception):
    """A read outside [log start offset, log end offset]: OFFSET_OUT_OF_RANGE (1)."""

    error_code = 1


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define(eq=False)
class Log:
    dir: Path
    topic_partition: TopicPartition
    config: LogConfig
    clock: Callable[[], int]
    segments: list[LogSegment]
    leader_epoch_cache: LeaderEpochFileCache
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    last_flush_ms: int
    flush_requested_offset: int = 0  # a roll asks for the finished segment to be fsynced
    producer_state: ProducerStateManager = attrs.field(factory=ProducerStateManager)
    _pending_deletes: list[tuple[int, LogSegment]] = attrs.field(factory=list)
    _hw_position: LogOffsetMetadata | None = None  # cleared whenever segments shrink or go
    # Where the segments' descriptors come from: the LogManager's pool, shared by all its
    # logs (see _files); a log opened on its own has a small one of its own.
    files: FilePool = attrs.field(factory=lambda: FilePool(STANDALONE_CAPACITY))
    # The cache's file, kept so the LogManager can retry a write that failed.
    leader_epoch_checkpoint: LeaderEpochCheckpointFile | None = None
    # Where this log's events go: its LogManager's tracer, the node's (issue 16).
    tracer: Tracer = attrs.field(factory=NullTracer)

    # --- opening and closing -------------------------------------------------------

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig | None = None,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
        had_clean_shutdown: bool = False,
        clock: Callable[[], int] = wall_clock_ms,
        files: FilePool | None = None,
        tracer: Tracer | None = None,
    ) -> Log:
        """Open or create the log in ``dir`` (named ``<topic>-<partition>``).

        After an unclean shutdown the segments from the recovery point on are rescanned
        (:mod:`._loader`); the checkpointed offsets come from the LogManager.
        """
        config = config or LogConfig()
        dir.mkdir(parents=True, exist_ok=True)
        tp = TopicPartition.parse(dir.name)
        now = clock()
        files = files or FilePool(STANDALONE_CAPACITY)
        loaded = load_segments(
            dir, config, now, recovery_point, log_start_offset, had_clean_shutdown, files
        )
        epoch_file = LeaderEpochCheckpointFile(dir / LEADER_EPOCH_CHECKPOINT)
        cache = LeaderEpochFileCache.open(epoch_file)
        leo = loaded.segments[-1].next_offset
        start = min(max(log_start_offset, loaded.segments[0].base_offset), leo)
        cache.truncate_from_end(leo)
        cache.truncate_from_start(start)
        log = cls(
            dir,
            tp,
            config,
            clock,
            loaded.segments,
            cache,
            log_start_offset=start,
            log_end_offset=leo,
            high_watermark=min(max(high_watermark, start), leo),
            recovery_point=min(recovery_point, leo),
            last_flush_ms=now,
            files=files,
            leader_epoch_checkpoint=epoch_file,
            tracer=NullTracer() if tracer is None else tracer,
        )
        log._rebuild_producer_state()
        if loaded.recovered_segments and log.tracer.enabled:
            log.tracer.emit(
                LogRecovered(
                    tp.topic,
                    tp.partition,
                    loaded.recovered_segments,
                    loaded.truncated_bytes,
                    leo,
                )
            )
        return log

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

    def _segment_for(self, offset: int) -> int:
        """Index of the last segment whose base offset is <= ``offset`` (0 if none)."""
        i = bisect.bisect_right(self.segments, offset, key=lambda s: s.base_offset)
        return max(i - 1, 0)

    # --- the write path ---------------------------------------------------------------

    def append_as_leader(self, records: bytearray | memoryview, leader_epoch: int) -> LogAppendInfo:
        """Validate a producer's batches, give them offsets (in place) and append them.

        Every record is checked (:mod:`._record_checks`); a batch whose codec is not the
        topic's ``compression.type`` is recompressed into a new buffer, any other keeps
        the producer's bytes.

        An idempotent producer's retry of a batch the log holds appends nothing and is
        answered with the original's offsets (``duplicate=True``); a batch out of its
        producer's sequence or epoch raises before anything of the request is written.
        """
        config = self.config
        batches = validate_batches(
            records, max_message_bytes=config.max_message_bytes, from_client=True
        )
        if not batches:
            return append_info(batches)
        now = self.clock()
        # Every record is walked before anything is written: a batch with a good CRC but
        # records no consumer can read must not reach the log (Kafka's LogValidator).
        rules = RecordRules(
            require_key=config.compact,
            now_ms=now,
            before_max_ms=MAX_LONG if config.log_append_time else config.timestamp_before_max_ms,
            after_max_ms=MAX_LONG if config.log_append_time else config.timestamp_after_max_ms,
        )
        payloads = validate_records(
            records, batches, rules, decompressed_limit(config.max_message_bytes)
        )
        duplicate = self.producer_state.validate_append(batches)
        if duplicate is not None:
            return self._duplicate_info(duplicate)
        target = config.target_compression
        if target is not None and any(h.compression is not target for _, h in batches):
            records, batches = recompress(
                records,
                batches,
                payloads,
                target,
                config.compression_level,
                config.max_message_bytes,
            )
        append_time = now if config.log_append_time else None
        batches, info = assign_offsets(
            records, batches, self.log_end_offset, leader_epoch, append_time
        )
        self._append(records, batches, info, now)
        self.producer_state.update_batches(batches)  # the headers now carry their offsets
        if leader_epoch >= 0:  # -1: a log used without replication (tools, tests)
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        return info

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches that carry the leader's offsets and epochs."""
        # The leader checked max.message.bytes against its own config; a follower takes
        # whatever its leader accepted, as Kafka does.
        batches = validate_batches(records, max_message_bytes=2**31, from_client=False)
        if not batches:
            return append_info(batches)
        first = batches[0][1]
        if first.base_offset < self.log_end_offset:
            raise UnexpectedAppendOffsetError(
                f"follower append starts at offset {first.base_offset}, below the log end "
                f"offset {self.log_end_offset}"
            )
        info = append_info(batches)
        self._append(records, batches, info, self.clock())
        self.producer_state.update_batches(batches)  # unchecked: the leader decided
        for _, header in batches:
            latest = self.leader_epoch_cache.latest_epoch
            if header.partition_leader_epoch >= 0 and (
                latest is None or header.partition_leader_epoch > latest
            ):
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        return info

    def _duplicate_info(self, original: BatchMetadata) -> LogAppendInfo:
        """The answer to a retried batch: the offsets and time the original was given."""
        return LogAppendInfo(
            first_offset=original.first_offset,
            last_offset=original.last_offset,
            max_timestamp=original.max_timestamp,
            offset_of_max_timestamp=original.last_offset,
            # Under LogAppendTime the original's maxTimestamp is the time it was appended.
            log_append_time=original.max_timestamp if self.config.log_append_time else -1,
            record_count=original.last_offset - original.first_offset + 1,
            batch_count=1,
            valid_bytes=0,
            duplicate=True,
        )

    def _append(
        self,
        records: bytes | bytearray | memoryview,
        batches: list[tuple[int, RecordBatchHeader]],
        info: LogAppendInfo,
        now: int,
    ) -> None:
        # A disk that refuses the write (issue 15) must not leave a torn tail behind: a
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
                raise storage_error(f"appending to {self.dir}", exc, undone=False) from exc
            raise storage_error(f"appending to {self.dir}", exc, undone=True) from exc
        self.log_end_offset = info.last_offset + 1
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            try:
                self.flush(self.log_end_offset)
            except OSError as exc:  # fsyncgate: nothing after a failed fsync is trusted
                raise storage_error(f"flushing {self.dir}", exc, undone=False) from exc

    def _maybe_roll(self, info: LogAppendInfo, now: int) -> LogSegment:
        active = self.active_segment
        reason = active.should_roll(info.valid_bytes, info.max_timestamp, info.last_offset, now)
        if reason is None:
            return active
        # Normally the new segment starts at the log end. Only a follower batch too far
        # ahead for the active segment's 32-bit relative offsets starts one at its own
        # first offset (Kafka's rule), leaving a gap between segments.
        overflow = reason == "relative offset overflow"
        return self.roll(reason, info.first_offset if overflow else None)

    def roll(self, reason: str = "requested", base_offset: int | None = None) -> LogSegment:
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
            self.tracer.emit(SegmentRolled(tp.topic, tp.partition, new_base, reason, active.size))
        return segment

    def _undo_roll(self, active: LogSegment, new_base: int) -> bool:
        """After a roll failed: cut a torn time-index entry, remove the new empty files.

        True when the log's files are as they were (a full disk); False when even that
        failed and the log cannot be trusted any more.
        """
        try:
            active.time_index.truncate_to(active.next_offset)  # rewrites whole entries only
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
            if segment.base_offset < offset and segment.next_offset > self.recovery_point:
                segment.flush()

    def mark_flushed(self, offset: int, now: int | None = None) -> None:
        """Move the recovery point after a successful fsync (on the owning thread)."""
        self.recovery_point = max(self.recovery_point, min(offset, self.log_end_offset))
        self.last_flush_ms = self.clock() if now is None else now

    def flush(self, offset: int | None = None) -> None:
        target = self.log_end_offset if offset is None else offset
        self.fsync_up_to(target)
        self.mark_flushed(target)

    # --- the read path ----------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """Batches from ``start_offset`` as a file slice, stopping before ``max_offset``.

        Consumers pass the high watermark as ``max_offset``; followers pass nothing and
        read to the log end.
        """
        if not self.log_start_offset <= start_offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is outside [{self.log_start_offset}, "
                f"{self.log_end_offset}] of {self.topic_partition}"
            )
        end = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if start_offset >= end:
            return FetchDataInfo(self.offset_metadata(start_offset), None)
        limit = None if end == self.log_end_offset else self._high_watermark_metadata(end)
        for segment in self.segments[self._segment_for(start_offset) :]:
            max_position = None
            if limit is not None:
                if segment.base_offset > limit.segment_base_offset:
                    break
                if segment.base_offset == limit.segment_base_offset:
                    max_position = limit.relative_position
            fetched = segment.read(
                max(start_offset, segment.base_offset), max_bytes, max_position, min_one_message
            )
            if fetched is not None:
                return fetched
            # The offset lies in a gap (compaction removed it): go on to the next segment.
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
        for segment in self.segments[self._segment_for(offset) :]:
            found = segment.translate_offset(offset)
            if found is not None:
                return LogOffsetMetadata(offset, segment.base_offset, found[0])
        active = self.active_segment
        return LogOffsetMetadata(offset, active.base_offset, active.size)

    def batches(self) -> Iterator[tuple[LogSegment, int, RecordBatchHeader]]:
        """Every batch of the log as (segment, position, header), for tools."""
        for segment in self.segments:
            for position, header in segment.batches():
                yield segment, position, header

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the earliest offset whose record timestamp is >= ``timestamp``."""
        cache = self.leader_epoch_cache
        if timestamp == EARLIEST_TIMESTAMP:
            start = self.log_start_offset
            return TimestampAndOffset(-1, start, cache.epoch_for_offset(start))
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset, cache.latest_epoch)
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        for segment in self.segments:
            if segment.largest_timestamp < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return attrs.evolve(found, leader_epoch=cache.epoch_for_offset(found.offset))
        return None

    def _max_timestamp_offset(self) -> TimestampAndOffset | None:
        best: LogSegment | None = None
        for segment in self.segments:
            if segment.size and (
                best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far
            ):
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        found = best.translate_offset(best.offset_of_max_timestamp_so_far)
        if found is None:
            return None
        position, header = found
        _, records = decode_batch(best.read_batch(position, header))
        for record in records:
            if (
                record.timestamp == header.max_timestamp
                or header.timestamp_type is TimestampType.LOG_APPEND_TIME
            ):
                epoch = self.leader_epoch_cache.epoch_for_offset(record.offset)
                return TimestampAndOffset(header.max_timestamp, record.offset, epoch)
        return None

    # --- replication's hooks ------------------------------------------------------------

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start, log end]; returns the value set."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the HW forward only (a leader's HW never goes back); True if it moved."""
        old = self.high_watermark
        return offset > old and self.update_high_watermark(offset) > old

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset >= ``target_offset`` (a follower after KIP-101's agreement).

        Returns False when there was nothing to remove.
        """
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {target_offset}")
        if target_offset >= self.log_end_offset:
            return False
        previous = self.log_end_offset
        if target_offset < self.segments[0].base_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        keep = self._segment_for(target_offset) + 1
        doomed = self.segments[keep:]
        del self.segments[keep:]
        self._schedule_delete(doomed)
        self.active_segment.truncate_to(target_offset)
        # Kafka sets the log end to the target even when that falls inside a batch it
        # removed whole; ending where the data ends keeps "segments follow each other
        # without holes", which recovery relies on.
        self.log_end_offset = self.active_segment.next_offset
        target_offset = self.log_end_offset
        self.high_watermark = min(self.high_watermark, target_offset)
        self.recovery_point = min(self.recovery_point, target_offset)
        self.log_start_offset = min(self.log_start_offset, target_offset)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        if self.producer_state.last_producer_offset >= target_offset:
            self._rebuild_producer_state()  # a removed batch had a producer id
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(LogTruncated(tp.topic, tp.partition, target_offset, previous))
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop everything and start empty at ``new_offset`` (a follower far behind)."""
        previous = self.log_end_offset
        self._schedule_delete(self.segments)
        self.segments = [
            LogSegment.open(self.dir, new_offset, self.config, self.clock(), files=self.files)
        ]
        self.log_start_offset = self.log_end_offset = new_offset
        self.high_watermark = self.recovery_point = new_offset
        self.leader_epoch_cache.clear()
        self.producer_state.clear()
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(LogTruncated(tp.topic, tp.partition, new_offset, previous))

    def _rebuild_producer_state(self) -> None:
        """Replay the producer ids and sequences of every batch from the log start on.

        Kafka writes the state to a ``.snapshot`` file at each roll and at shutdown, so
        that loading and truncation replay only the batches after the latest snapshot.
        We rebuild it by scanning the batch headers (no record is decoded): simpler,
        at the price of reading every header of the log at start-up.
        """
        start = self.log_start_offset
        self.producer_state.rebuild(
            header
            for segment in self.segments[self._segment_for(start) :]
            for _, header in segment.batches()
            if header.last_offset >= start
        )

    def maybe_increment_log_start_offset(self, new_start: int, reason: str = "") -> bool:
        """Move the log start offset forward (retention, DeleteRecords); never past the HW."""
        if new_start <= self.log_start_offset:
            return False
        if new_start > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {new_start}, past the high watermark "
                f"{self.high_watermark}"
            )
        self.log_start_offset = new_start
        self.leader_epoch_cache.truncate_from_start(new_start)
        self.recovery_point = max(self.recovery_point, new_start)
        return True

    # --- retention ------------------------------------------------------------------------

    def delete_old_segments(self) -> int:
        """Apply retention.ms, retention.bytes and the log start offset; returns segments gone.

        Only whole segments go, only below the high watermark, oldest first (Kafka's
        ``deleteOldSegments``). A compacted-only topic keeps everything but what the log
        start offset has passed.
        """
        deleted = 0
        if self.config.delete:
            deleted += self._delete_segments(self._retention_ms_breached, "retention.ms")
            deleted += self._delete_segments(self._retention_size_breached(), "retention.bytes")
        deleted += self._delete_segments(self._before_log_start, "log start offset")
        return deleted

    def _retention_ms_breached(self, segment: LogSegment, _next: LogSegment | None) -> bool:
        retention = self.config.retention_ms
        return retention >= 0 and self.clock() - segment.largest_timestamp > retention

    def _retention_size_breached(self) -> Callable[[LogSegment, LogSegment | None], bool]:
        excess = self.size - self.config.retention_bytes

        def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal excess
            if self.config.retention_bytes < 0 or excess - segment.size < 0:
                return False
            excess -= segment.size
            return True

        return breached

    def _before_log_start(self, _segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= self.log_start_offset

    def _delete_segments(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str
    ) -> int:
        doomed: list[LogSegment] = []
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = following.base_offset if following else self.log_end_offset
            last_and_empty = following is None and segment.size == 0
            if upper > self.high_watermark or last_and_empty or not predicate(segment, following):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(self.segments):
            self.roll(reason)  # a log always has an active segment
        del self.segments[: len(doomed)]
        self._schedule_delete(doomed)
        self.maybe_increment_log_start_offset(self.segments[0].base_offset)
        tp = self.topic_partition
        if self.tracer.enabled:
            self.tracer.emit(
                SegmentsDeleted(
                    tp.topic,
                    tp.partition,
                    reason,
                    tuple(s.base_offset for s in doomed),
                    self.log_start_offset,
                )
            )
        return len(doomed)

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
