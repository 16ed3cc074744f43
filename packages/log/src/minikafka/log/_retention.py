"""Retention: which of a log's oldest segments may be deleted, and why.

The decisions of Kafka's ``UnifiedLog.deleteOldSegments``: a ``cleanup.policy=delete``
topic keeps data for ``retention.ms`` and up to ``retention.bytes`` per partition, and
every log drops what its log start offset has passed (DeleteRecords). Only whole
segments go, oldest first, and only those entirely below the high watermark.

The breaches only decide, from values they are given (the time included);
:func:`delete_segments` takes the chosen segments out of the Log
(:meth:`~minikafka.log._log.Log.delete_old_segments`).

The LogManager runs that for every log each ``log.retention.check.interval.ms``
(:meth:`~minikafka.log.LogManager.cleanup_logs`). A log whose deletion fails does not
stop the others: an I/O error takes its dir offline (Kafka's ``LogDirFailureChannel``),
any other error is logged once and the log is tried again at the next pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._events import SegmentsDeleted
from ._producer_snapshots import delete_snapshots
from ._segment import LogSegment

if TYPE_CHECKING:
    from ._log import Log

# Whether a segment may go, given the one after it (None for the active segment).
Breach = Callable[[LogSegment, LogSegment | None], bool]


def retention_ms_breached(retention_ms: int, now: int) -> Breach:
    """``retention.ms``: the segment's newest record is older than the limit (-1: never)."""

    def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
        return retention_ms >= 0 and now - segment.largest_timestamp > retention_ms

    return breached


def retention_size_breached(retention_bytes: int, log_size: int) -> Breach:
    """``retention.bytes``: the log without this segment is still at least the limit."""
    excess = log_size - retention_bytes

    def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
        nonlocal excess
        if retention_bytes < 0 or excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return breached


def before_log_start(log_start_offset: int) -> Breach:
    """The log start offset has passed the whole segment (the next one starts at or below it)."""

    def breached(_segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= log_start_offset

    return breached


def deletable_segments(
    segments: list[LogSegment], log_end_offset: int, high_watermark: int, breach: Breach
) -> list[LogSegment]:
    """The oldest segments, in order, that ``breach`` accepts, stopping at the first it
    does not.

    A segment that reaches above the high watermark stays (deleting uncommitted data on
    the leader would leave the followers' copies the only ones), and so does an empty
    active segment.
    """
    doomed: list[LogSegment] = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following else log_end_offset
        last_and_empty = following is None and segment.size == 0
        if upper > high_watermark or last_and_empty or not breach(segment, following):
            break
        doomed.append(segment)
    return doomed


def delete_segments(log: Log, breach: Breach, reason: str) -> int:
    """Take out the oldest segments ``breach`` chooses (below the high watermark), move
    the log start offset to the first one left and drop the producer snapshots of the
    segments gone; returns how many went."""
    doomed = deletable_segments(
        log.segments, log.log_end_offset, log.high_watermark, breach
    )
    if not doomed:
        return 0
    log.local.remove_oldest_segments(doomed, reason)
    log.maybe_increment_log_start_offset(log.segments[0].base_offset)
    delete_snapshots(log.dir, below=log.segments[0].base_offset)
    tp = log.topic_partition
    if log.tracer.enabled:
        log.tracer.emit(
            SegmentsDeleted(
                tp.topic,
                tp.partition,
                reason,
                tuple(s.base_offset for s in doomed),
                log.log_start_offset,
            )
        )
    return len(doomed)
