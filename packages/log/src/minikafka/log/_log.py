"""Log: one partition's log as clients and replicas see it.

Kafka's ``UnifiedLog``. The segments on disk, with the *log end offset* (LEO) and the
*recovery point*, are a :class:`~._local_log.LocalLog` it composes (as Kafka's does since
KIP-405); the Log adds what the offsets mean to the rest of the broker:

- the *log start offset*: the first offset still readable (retention and DeleteRecords
  move it forward);
- the *high watermark* (HW): set by replication, the end of what every in-sync replica
  has; consumers read below it;
- the leader-epoch cache (KIP-101), with which followers truncate
  (:meth:`Log.truncate_to`) to the offset they and the leader agree on;
- the idempotent producers' state (KIP-98, :mod:`._producer_state`), checked on a
  leader's append and kept by every replica, so that a follower can take over, written
  down in ``.snapshot`` files at each roll and at close (:mod:`._producer_snapshots`);
- the transactions (KIP-98, :mod:`._log_txns`): the open ones, the *last stable
  offset* (LSO) where read_committed reads stop, the COMMIT and ABORT markers
  (:meth:`Log.append_txn_marker`) and each segment's index of aborted transactions.

Every append is validated here before the LocalLog writes it; reads are checked against
the log's range; retention's choices (:mod:`._retention`) move the log start offset.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from minikafka.common import ApiError, ErrorCode
from minikafka.trace import NullTracer, Tracer

from ._batch import RecordBatchHeader, whole_batches_size
from ._checkpoint import LeaderEpochCheckpointFile
from ._compression import Buffer
from ._config import LogConfig
from ._epoch_cache import LeaderEpochFileCache
from ._events import LogTruncated
from ._files import STANDALONE_CAPACITY, FilePool
from ._list_offsets import LATEST_TIMESTAMP, offset_by_timestamp
from ._local_log import LocalLog
from ._local_view import LocalLogView
from ._log_txns import (
    FetchIsolation,
    collect_aborted_transactions,
    lso_before,
    trace_aborted_served,
    trace_lso_move,
    trace_markers,
    track_batches,
)
from ._markers import EndTxnMarker, end_txn_marker_batch
from ._names import LEADER_EPOCH_CHECKPOINT
from ._ongoing_txns import OngoingTransactions
from ._producer_snapshots import (
    delete_snapshots,
    rebuild_producer_state,
    take_snapshot,
)
from ._producer_state import AppendOrigin, ProducerStateManager
from ._record_checks import MAX_LONG, RecordRules
from ._retention import (
    before_log_start,
    delete_segments,
    retention_ms_breached,
    retention_size_breached,
)
from ._segment import LogSegment
from ._segment_read import FetchDataInfo, LogOffsetMetadata, TimestampAndOffset
from ._validator import (
    LogAppendInfo,
    UnexpectedAppendOffsetError,
    append_info,
    assign_offsets,
    decompressed_limit,
    duplicate_append_info,
    recompress,
    validate_batches,
    validate_records,
)
from ._verification import VerificationGuard, validate_producers

Batches = list[tuple[int, RecordBatchHeader]]


class OffsetOutOfRangeError(ApiError):
    """A read outside [log start offset, log end offset]: OFFSET_OUT_OF_RANGE (1)."""

    error_code = ErrorCode.offset_out_of_range


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define(eq=False)
class Log(LocalLogView):
    local: LocalLog  # the segments, the log end offset and the recovery point
    leader_epoch_cache: LeaderEpochFileCache
    log_start_offset: int
    high_watermark: int
    producer_state: ProducerStateManager = attrs.field(factory=ProducerStateManager)
    # KIP-98's open and unreplicated transactions, which hold the LSO back
    ongoing_txns: OngoingTransactions = attrs.field(factory=OngoingTransactions)
    # The cache's file, kept so the LogManager can retry a write that failed.
    leader_epoch_checkpoint: LeaderEpochCheckpointFile | None = None
    # The last rebuild of the producer state: the offset its replay began at (a
    # snapshot's, or the log start) and the batch headers it read (recovery's cost).
    replayed_from: int = 0
    replayed_batches: int = 0

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
        local = LocalLog.open(
            dir,
            config or LogConfig(),
            clock,
            files or FilePool(STANDALONE_CAPACITY),
            # Where this log's events go: its LogManager's tracer, the node's.
            NullTracer() if tracer is None else tracer,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
        )
        epoch_file = LeaderEpochCheckpointFile(dir / LEADER_EPOCH_CHECKPOINT)
        cache = LeaderEpochFileCache.open(epoch_file)
        leo = local.log_end_offset
        start = min(max(log_start_offset, local.segments[0].base_offset), leo)
        cache.truncate_from_end(leo)
        cache.truncate_from_start(start)
        log = cls(
            local,
            cache,
            log_start_offset=start,
            high_watermark=min(max(high_watermark, start), leo),
            leader_epoch_checkpoint=epoch_file,
        )
        rebuild_producer_state(log)
        return log

    def close(self) -> None:
        """Snapshot the producers as of the log end, then close every file (the
        LogManager flushes first on a clean shutdown)."""
        take_snapshot(self, self.log_end_offset)
        self.local.close()

    def close_handlers(self) -> None:
        """Close every file without writing to it (its directory is being deleted)."""
        self.local.close_handlers()

    def delete(self) -> None:
        """Close and remove every file of the log (the directory goes with the LogManager)."""
        self.local.delete()

    # --- the write path ---------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytearray | memoryview,
        leader_epoch: int,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Validate a producer's batches, give them offsets (in place) and append them.

        Every record is checked (:mod:`._record_checks`); a batch whose codec is not the
        topic's ``compression.type`` is recompressed into a new buffer, any other keeps
        the producer's bytes.

        An idempotent producer's retry of a batch the log holds appends nothing and is
        answered with the original's offsets (``duplicate=True``); a batch out of its
        producer's sequence or epoch raises before anything of the request is written
        (a coordinator's, :class:`AppendOrigin`, its epoch only).
        """
        config = self.config
        batches = validate_batches(
            records, max_message_bytes=config.max_message_bytes, from_client=True
        )
        # aside: an empty request
        if not batches:
            return append_info(batches)
        now = self.clock()
        # Every record is walked before anything is written: a batch with a good CRC but
        # records no consumer can read must not reach the log (Kafka's LogValidator).
        # No time bound when the broker stamps the time itself (LogAppendTime).
        stamped = config.log_append_time
        rules = RecordRules(
            require_key=config.compact,
            now_ms=now,
            before_max_ms=MAX_LONG if stamped else config.timestamp_before_max_ms,
            after_max_ms=MAX_LONG if stamped else config.timestamp_after_max_ms,
        )
        payloads = validate_records(
            records, batches, rules, decompressed_limit(config.max_message_bytes)
        )
        duplicate = validate_producers(self, batches, origin, verification_guard)
        # aside: an idempotent producer's retry
        if duplicate is not None:
            return duplicate_append_info(duplicate)
        target = config.target_compression
        # aside: a topic with its own compression.type
        if target is not None and any(h.compression is not target for _, h in batches):
            records, batches = recompress(
                records,
                batches,
                payloads,
                target,
                config.compression_level,
                config.max_message_bytes,
            )
        append_time = now if stamped else None
        batches, info = assign_offsets(
            records, batches, self.log_end_offset, leader_epoch, append_time
        )
        self._append_local(records, batches, info, now)  # the headers carry offsets
        if leader_epoch >= 0:  # -1: a log used without replication (tools, tests)
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        return info

    def append_as_follower(
        self, records: bytes | bytearray | memoryview
    ) -> LogAppendInfo:
        """Append batches that carry the leader's offsets and epochs.

        ``records`` is what a fetch brought, which may end inside a batch: only the whole
        batches are appended (Kafka's ``trimInvalidBytes``), and the follower fetches the
        rest again from the next offset. Corruption inside the whole part still raises.
        """
        whole = whole_batches_size(records)
        if whole < len(records):
            records = memoryview(records)[:whole]
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
        self._append_local(records, batches, info, self.clock())  # the leader decided
        for _, header in batches:
            latest = self.leader_epoch_cache.latest_epoch
            if header.partition_leader_epoch >= 0 and (
                latest is None or header.partition_leader_epoch > latest
            ):
                self.leader_epoch_cache.assign(
                    header.partition_leader_epoch, header.base_offset
                )
        return info

    def append_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
    ) -> LogAppendInfo:
        """Append a transaction's COMMIT or ABORT marker for its producer (Kafka's
        ``appendAsLeader`` with origin COORDINATOR of ``withEndTransactionMarker``).

        A marker from a fenced producer epoch or coordinator epoch raises before
        anything is written; an abort adds its entry to the active segment's
        ``.txnindex``.
        """
        marker = EndTxnMarker(commit, coordinator_epoch)
        self.ongoing_txns.check_marker(producer_id, producer_epoch, marker)
        now = self.clock()
        records = end_txn_marker_batch(
            marker,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp=now,
            base_offset=self.log_end_offset,
            partition_leader_epoch=leader_epoch,
        )
        batches = validate_batches(records, max_message_bytes=2**31, from_client=False)
        info = append_info(batches)
        self._append_local(records, batches, info, now)
        if leader_epoch >= 0:
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        return info

    def _append_local(
        self, records: Buffer, batches: Batches, info: LogAppendInfo, now: int
    ) -> None:
        """Write, then move every appended batch's producer state and transaction
        (Kafka analyses a follower's batches as a leader's); a roll first snapshots the
        producers as of the new segment's base offset."""
        active = self.local.segments[-1]  # read directly, not through two properties
        self.local.append(records, batches, info, now)
        if self.local.segments[-1] is not active:
            take_snapshot(self, self.local.segments[-1].base_offset)
        self.producer_state.update_batches(batches)
        ended = track_batches(
            self.ongoing_txns,
            batches,
            # only a marker's batch is read (rare): no view taken on every append
            lambda position, header: bytes(records[position : position + header.size]),
            self.local.segments[-1],
        )
        trace_markers(self, ended)

    def roll(
        self, reason: str = "requested", base_offset: int | None = None
    ) -> LogSegment:
        """Start a new active segment at the log end offset (or later, ``base_offset``)."""
        active = self.active_segment
        segment = self.local.roll(reason, base_offset)
        if segment is not active:
            take_snapshot(self, segment.base_offset)
        return segment

    # --- flushing (the LocalLog's recovery point) -----------------------------------------

    def fsync_up_to(self, offset: int) -> None:
        """fsync the segments holding offsets in [recovery point, offset) (thread-safe)."""
        self.local.fsync_up_to(offset)

    def mark_flushed(self, offset: int, now: int | None = None) -> None:
        """Move the recovery point after a successful fsync (on the owning thread)."""
        self.local.mark_flushed(offset, now)

    def flush(self, offset: int | None = None) -> None:
        self.local.flush(offset)

    # --- the read path ----------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
        isolation: FetchIsolation | None = None,
    ) -> FetchDataInfo:
        """Batches from ``start_offset`` as a file slice, stopping before
        ``max_offset`` and the end ``isolation`` sets (Kafka's ``FetchIsolation``).

        Consumers pass the high watermark as ``max_offset`` (or ``HIGH_WATERMARK``);
        followers pass nothing and read to the log end. ``TXN_COMMITTED`` stops at the
        last stable offset and lists the aborted transactions the records overlap.
        """
        if not self.log_start_offset <= start_offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is outside [{self.log_start_offset}, "
                f"{self.log_end_offset}] of {self.topic_partition}"
            )
        end = self._isolation_end(isolation)
        end = end if max_offset is None else min(max_offset, end)
        fetched = self.local.read(start_offset, end, max_bytes, min_one_message)
        if isolation is not FetchIsolation.TXN_COMMITTED:
            return fetched
        aborted = collect_aborted_transactions(self.local, start_offset, fetched)
        trace_aborted_served(self, start_offset, aborted)
        return attrs.evolve(fetched, aborted_transactions=aborted)

    def _isolation_end(self, isolation: FetchIsolation | None) -> int:
        if isolation is FetchIsolation.HIGH_WATERMARK:
            return self.high_watermark
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The LSO: where read_committed reads stop (KIP-98): the first offset of
        the oldest undecided or unreplicated transaction, else the high watermark."""
        # Never below the log start (DeleteRecords may pass an open transaction's
        # start), as Kafka's first unstable offset.
        lso = self.ongoing_txns.last_stable_offset(self.high_watermark)
        return max(lso, self.log_start_offset)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Which segment ``offset`` is in and the position of the batch that holds it."""
        return self.local.offset_metadata(offset)

    def batches(self) -> Iterator[tuple[LogSegment, int, RecordBatchHeader]]:
        """Every batch of the log as (segment, position, header), for tools."""
        return self.local.batches()

    def fetch_offset_by_timestamp(
        self, timestamp: int, isolation: FetchIsolation | None = None
    ) -> TimestampAndOffset | None:
        """ListOffsets: the earliest offset whose record timestamp is >= ``timestamp``.

        With an ``isolation``, the latest offset (-1) is where such a read stops: the
        high watermark, or for read_committed the last stable offset (Kafka's
        ``lastFetchableOffset``); without one it is the log end.
        """
        if timestamp == LATEST_TIMESTAMP and isolation is not None:
            end = self._isolation_end(isolation)
            epoch = self.leader_epoch_cache.epoch_for_offset(end)
            return TimestampAndOffset(-1, end, epoch)
        return offset_by_timestamp(
            self.local, self.leader_epoch_cache, self.log_start_offset, timestamp
        )

    # --- replication's hooks ------------------------------------------------------------

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start, log end]; returns the value set."""
        previous = lso_before(self)  # None unless traced: this runs on every append
        self.high_watermark = min(
            max(offset, self.log_start_offset), self.log_end_offset
        )
        self.ongoing_txns.on_high_watermark(self.high_watermark)
        trace_lso_move(self, previous)
        return self.high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the HW forward only (a leader's HW never goes back); True if it moved."""
        old = self.high_watermark
        return offset > old and self.update_high_watermark(offset) > old

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset >= ``target_offset`` (a follower after KIP-101's
        agreement).

        Returns False when there was nothing to remove.
        """
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {target_offset}")
        if target_offset >= self.log_end_offset:
            return False
        previous = self.log_end_offset
        lso = lso_before(self)
        if target_offset < self.segments[0].base_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        # The LocalLog may end below the target: it removes a batch the target cuts
        # whole.
        target_offset = self.local.truncate_to(target_offset)
        self.high_watermark = min(self.high_watermark, target_offset)
        self.log_start_offset = min(self.log_start_offset, target_offset)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self.ongoing_txns.truncate_to(target_offset)
        delete_snapshots(self.dir, above=target_offset)
        if self.producer_state.last_producer_offset >= target_offset:
            rebuild_producer_state(self)  # a removed batch had a producer id
        trace_lso_move(self, lso)
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(
                LogTruncated(tp.topic, tp.partition, target_offset, previous)
            )
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop everything and start empty at ``new_offset`` (a follower far behind)."""
        previous = self.log_end_offset
        lso = lso_before(self)
        self.local.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = self.high_watermark = new_offset
        self.leader_epoch_cache.clear()
        self.producer_state.clear()
        self.ongoing_txns = OngoingTransactions()
        delete_snapshots(self.dir, above=-1)
        trace_lso_move(self, lso)
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(LogTruncated(tp.topic, tp.partition, new_offset, previous))

    def maybe_increment_log_start_offset(
        self, new_start: int, reason: str = ""
    ) -> bool:
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
        self.local.recovery_point = max(self.local.recovery_point, new_start)
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
            now, config = self.clock(), self.config
            deleted += delete_segments(
                self, retention_ms_breached(config.retention_ms, now), "retention.ms"
            )
            deleted += delete_segments(
                self,
                retention_size_breached(config.retention_bytes, self.size),
                "retention.bytes",
            )
        deleted += delete_segments(
            self, before_log_start(self.log_start_offset), "log start offset"
        )
        return deleted

    def replace_segments(self, new: LogSegment, old: list[LogSegment]) -> None:
        """Swap compacted segments in (the cleaner's last step, after ``.swap`` is on disk)."""
        self.local.replace_segments(new, old)

    def purge_deleted_segments(self, now: int | None = None) -> int:
        """Close and unlink the segments whose deletion delay has passed."""
        return self.local.purge_deleted_segments(now)
