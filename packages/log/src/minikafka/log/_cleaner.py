"""Log compaction for ``cleanup.policy=compact``: keep the latest record of every key.

``__consumer_offsets`` is compacted (seed 000): a group's committed offset for a
partition is a record keyed by (group, topic, partition), and only the newest one
matters. The cleaner (Kafka's LogCleaner, one pass of ``Cleaner.clean``):

0. Picks the logs to clean: those whose dirty ratio reaches ``min.cleanable.dirty.ratio``,
   and (KIP-354) those whose oldest dirty record is older than ``max.compaction.lag.ms``,
   whatever their ratio, so that a key's old values are gone within a known time.
1. Builds an *offset map* key -> latest offset over the dirty part of the log, from the
   first dirty offset up to the first uncleanable one (never the active segment, never
   past the last stable offset, never records younger than ``min.compaction.lag.ms``);
   aborted transactions' records are left out.
2. Rewrites every segment below that point, in groups that fit ``segment.bytes``: a
   record survives if no later record has its key. Offsets are never changed, so a
   compacted log has gaps; a batch keeps its base offset and lastOffsetDelta.
3. Tombstones (a key with a null value) are kept for ``delete.retention.ms`` so that a
   consumer reading the log sees the delete: the first pass stamps the batch with a
   delete horizon (KIP-534), a pass after the horizon drops them.
4. Transactions (KIP-98): aborted transactions' records go, found through the
   segments' ``.txnindex``; a marker stays while its transaction has a batch, then
   rides on the tombstones' clock; the cleaned ``.txnindex`` keeps the aborted
   transactions whose marker stays. The last batch of every idempotent producer stays,
   emptied of its records if none survive, so that the producer's state can be rebuilt
   from the log. Every such decision is :mod:`._clean_filter`'s, without I/O.

Crash safety comes from the order of renames: the new segment is written as
``.cleaned`` and fsynced, renamed ``.swap``, the old segments renamed ``.deleted``, and
the ``.swap`` renamed live. A crash before ``.swap`` leaves the old segments; a crash
after it is finished at start-up by the loader (:mod:`._loader`).

A pass that fails is the LogManager's to handle, as the LogCleaner's cleaner thread
handles it in Kafka (:meth:`~minikafka.log.LogManager.clean_logs`): an exception marks
the partition uncleanable (``LogCleanerManager.markPartitionUncleanable``), and an I/O
error takes the log dir offline (``LogDirFailureChannel``). The one exception is a full
disk while the ``.cleaned`` file is written: nothing of the log was touched yet, the
file is discarded, and the error says so (a ``KafkaStorageError`` with ``offline``
false), so the next pass simply tries again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import attrs

from ._batch import RecordBatchHeader
from ._clean_filter import (
    CleanedTransactionMetadata,
    CleanerContext,
    filter_batch,
    last_records_of_active_producers,
)
from ._config import MAX_LONG
from ._events import LogCleaned
from ._index import MAX_RELATIVE_OFFSET
from ._log import Log
from ._names import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from ._records import decode_batch
from ._segment import LogSegment
from ._storage import storage_error
from ._txn_index import AbortedTxn

CrashHook = Callable[[str], None]
"""Called at each step of a swap with its name; tests raise from it to simulate a crash."""


@attrs.frozen
class CleanResult:
    first_dirty_offset: int
    next_dirty_offset: int  # where the next pass starts: the cleaner checkpoint
    bytes_before: int
    bytes_after: int
    records_removed: int


def first_uncleanable_offset(log: Log, now: int) -> int:
    """The active segment, the last stable offset and min.compaction.lag.ms bound
    cleaning (Kafka's first unstable offset: an undecided transaction's records may yet
    be aborted, so they are not compacted; the LSO is never past the high watermark)."""
    bound = min(log.active_segment.base_offset, log.last_stable_offset)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for segment in log.segments:
            if segment.largest_timestamp > now - lag:
                bound = min(bound, segment.base_offset)
                break
    return bound


def cleanable_segments(log: Log, end: int) -> list[LogSegment]:
    """Whole segments that lie entirely below ``end``."""
    result = []
    for i, segment in enumerate(log.segments[:-1]):
        if log.segments[i + 1].base_offset <= end:
            result.append(segment)
    return result


def dirty_ratio(log: Log, first_dirty_offset: int, now: int) -> float:
    """Dirty bytes over cleanable bytes: the cleaner takes the dirtiest log first."""
    segments = cleanable_segments(log, first_uncleanable_offset(log, now))
    total = sum(s.size for s in segments)
    dirty = sum(s.size for s in segments if s.base_offset >= first_dirty_offset)
    return dirty / total if total else 0.0


def max_compaction_delay(log: Log, first_dirty_offset: int, now: int) -> int:
    """How long past ``max.compaction.lag.ms`` the oldest dirty record is; 0 if it is not.

    KIP-354 (Kafka's ``LogCleanerManager.maxCompactionDelay``): the first batch of each
    dirty segment below the active one gives the segment's age; batches without a
    timestamp (<= 0) say nothing.
    """
    lag = log.config.max_compaction_lag_ms
    if lag >= MAX_LONG:
        return 0
    oldest: int | None = None
    for segment in log.segments[:-1]:
        if segment.next_offset <= first_dirty_offset:
            continue
        for _, header in segment.batches():
            if header.max_timestamp > 0:
                oldest = (
                    header.max_timestamp
                    if oldest is None
                    else min(oldest, header.max_timestamp)
                )
            break  # the first batch only, as Kafka reads it
    if oldest is None:
        return 0
    return max(now - lag - oldest, 0)


def should_clean(log: Log, first_dirty_offset: int, now: int) -> bool:
    """Whether a pass is due: dirty enough, or a dirty record waited max.compaction.lag.ms."""
    if max_compaction_delay(log, first_dirty_offset, now) > 0:
        return True
    return (
        dirty_ratio(log, first_dirty_offset, now)
        >= log.config.min_cleanable_dirty_ratio
    )


def aborted_transactions(log: Log, start: int, upper: int) -> list[AbortedTxn]:
    """The aborted transactions that may have records in ``[start, upper)``, as Kafka's
    cleaner collects them (``UnifiedLog.collectAbortedTransactions``): from the segment
    holding ``start`` on, each ``.txnindex`` entry that begins before ``upper``, until
    an entry's last stable offset says no later segment can add one."""
    found: list[AbortedTxn] = []
    for segment in log.segments[log.local.segment_index_for(start) :]:
        if segment.txn_index is None:
            continue  # no abort in it: nothing to add, nothing settled
        result = segment.txn_index.collect_aborted(log.log_start_offset, upper)
        found.extend(result.aborted)
        if result.complete:
            break
    return found


def build_offset_map(
    log: Log, segments: list[LogSegment], first_dirty_offset: int
) -> dict[bytes, int]:
    """key -> the offset of its latest record in the dirty segments.

    The records of aborted transactions are not counted: they are about to go, and an
    aborted record must not hide the committed value before it.
    """
    offsets: dict[bytes, int] = {}
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions(
        aborted_transactions(log, first_dirty_offset, segments[-1].next_offset)
    )
    for segment in segments:
        if segment.next_offset <= first_dirty_offset:
            continue
        for position, header in segment.batches():
            raw = segment.read_batch(position, header)
            if header.is_control:
                txns.on_control_batch(header, decode_batch(raw)[1])
                continue
            if txns.on_batch(header):
                continue  # an aborted transaction's batch
            for record in decode_batch(raw)[1]:
                if record.key is not None and record.offset >= first_dirty_offset:
                    offsets[record.key] = record.offset
    return offsets


def clean(
    log: Log,
    first_dirty_offset: int,
    now: int,
    crash_hook: CrashHook | None = None,
) -> CleanResult | None:
    """One cleaning pass over ``log``; None when there is nothing cleanable."""
    end = first_uncleanable_offset(log, now)
    segments = cleanable_segments(log, end)
    if not segments or segments[-1].next_offset <= first_dirty_offset:
        return None
    offset_map = build_offset_map(
        log, segments, max(first_dirty_offset, log.log_start_offset)
    )
    next_dirty = log.segments[len(segments)].base_offset
    before = sum(s.size for s in segments)
    # One transaction tracker for the whole pass: a transaction may span groups.
    ctx = CleanerContext(
        offset_map,
        CleanedTransactionMetadata(),
        last_records_of_active_producers(log.producer_state.producers),
        now,
        log.config.delete_retention_ms,
    )
    removed = 0
    for group in _group_segments(segments, log.config.segment_bytes):
        removed += _clean_group(log, group, ctx, crash_hook or _no_crash)
    after = sum(s.size for s in log.segments if s.base_offset < next_dirty)
    result = CleanResult(first_dirty_offset, next_dirty, before, after, removed)
    if log.tracer.enabled:  # the log's tracer: its LogManager's, the node's
        tp = log.topic_partition
        event = LogCleaned(
            tp.topic,
            tp.partition,
            first_dirty_offset,
            next_dirty,
            before,
            after,
            removed,
        )
        log.tracer.emit(event)
    return result


def _no_crash(step: str) -> None:
    return None


def _group_segments(
    segments: list[LogSegment], max_bytes: int
) -> list[list[LogSegment]]:
    """Consecutive segments that fit one segment: ``segment.bytes`` and 32-bit relative offsets."""
    groups: list[list[LogSegment]] = []
    for segment in segments:
        fits_offsets = bool(groups) and (
            segment.next_offset - 1 - groups[-1][0].base_offset <= MAX_RELATIVE_OFFSET
        )
        if fits_offsets and sum(s.size for s in groups[-1]) + segment.size <= max_bytes:
            groups[-1].append(segment)
        else:
            groups.append([segment])
    return groups


def _clean_group(
    log: Log,
    group: list[LogSegment],
    ctx: CleanerContext,
    crash_hook: CrashHook,
) -> int:
    # A .cleaned file left by an earlier failed pass would be appended to: start afresh.
    for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        name = segment_file_name(group[0].base_offset, kind) + CLEANED_SUFFIX
        (log.dir / name).unlink(missing_ok=True)
    cleaned = LogSegment.open(
        log.dir,
        group[0].base_offset,
        log.config,
        ctx.now,
        suffix=CLEANED_SUFFIX,
        files=log.files,
    )
    try:
        return _write_and_swap(log, group, cleaned, ctx, crash_hook)
    except BaseException:
        # Not yet part of the log: discard it. Once its .log is renamed .swap (the
        # first file change_suffix renames) it is whole, and an error from there on
        # (an I/O error: the dir goes offline) is left to the loader, which finishes
        # the swap at the next start as after a crash.
        if cleaned.suffix == CLEANED_SUFFIX and cleaned.file.path == cleaned.log_path:
            # A file left behind is removed by the next pass or the next start.
            with contextlib.suppress(OSError):
                cleaned.close_handlers()
                cleaned.delete_files()
        raise


def _write_and_swap(
    log: Log,
    group: list[LogSegment],
    cleaned: LogSegment,
    ctx: CleanerContext,
    crash_hook: CrashHook,
) -> int:
    try:
        removed = _write_cleaned(log, group, cleaned, ctx)
    except OSError as exc:
        # Only the .cleaned file was written, and it is discarded: on a full disk the
        # log stays online and the next pass tries again.
        raise storage_error(f"cleaning {log.dir}", exc, undone=True) from exc
    crash_hook("cleaned written")
    cleaned.change_suffix(SWAP_SUFFIX)
    crash_hook("renamed to swap")
    log.replace_segments(cleaned, group)  # old segments -> .deleted
    crash_hook("old segments deleted")
    cleaned.change_suffix("")
    crash_hook("swap renamed live")
    return removed


def _write_cleaned(
    log: Log, group: list[LogSegment], cleaned: LogSegment, ctx: CleanerContext
) -> int:
    """Copy what survives of ``group`` into ``cleaned``, with the ``.txnindex`` entries
    of the aborted transactions whose marker stays, and fsync it; returns records
    dropped."""
    removed = 0
    group_end = group[-1].next_offset
    for i, segment in enumerate(group):
        # Every aborted transaction that may have records in this segment, from the
        # whole log's indexes: its marker may be in a later segment.
        upper = group[i + 1].base_offset if i + 1 < len(group) else group_end
        ctx.txns.add_aborted_transactions(
            aborted_transactions(log, segment.base_offset, upper)
        )
        for position, header in segment.batches():
            original = segment.read_batch(position, header)
            kept, dropped = filter_batch(original, header, ctx, group_end)
            removed += dropped
            if kept is not None:
                cleaned.append(kept, [(0, RecordBatchHeader.read(kept))])
            for aborted in ctx.txns.take_retained():
                cleaned.append_aborted_txn(aborted)
    cleaned.on_become_inactive()
    cleaned.flush()
    return removed
