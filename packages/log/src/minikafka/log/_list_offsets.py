"""ListOffsets: which offset a timestamp (or one of the special values) names in a log.

Kafka's ``UnifiedLog.fetchOffsetByTimestamp``. A consumer resetting its position asks
for the earliest offset (-2), the latest (-1), the record with the largest timestamp
(-3, KIP-734), or the first record at or after a time (KIP-33's time index). Tiered
storage (KIP-405) adds the earliest offset on local disk (-4) and the last offset
copied to remote storage (-5): with no tiered storage here, the first is the log start
offset and the second offset -1, as Kafka answers for a topic without it. Every
answer carries the leader epoch of the offset (KIP-320), so that the consumer can
detect a truncation behind it.
"""

from __future__ import annotations

import attrs

from ._batch import TimestampType
from ._epoch_cache import LeaderEpochFileCache
from ._local_log import LocalLog
from ._records import decode_batch
from ._segment import LogSegment
from ._segment_read import TimestampAndOffset, scan_batches

EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # ListOffsets: the log end offset (the broker answers the HW)
MAX_TIMESTAMP = -3  # ListOffsets (KIP-734): the record with the largest timestamp
EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsets v8+ (KIP-405): the local log's start
LATEST_TIERED_TIMESTAMP = (
    -5
)  # ListOffsets v9+ (KIP-1005): the last offset in remote storage


def offset_by_timestamp(
    local: LocalLog, epochs: LeaderEpochFileCache, log_start_offset: int, timestamp: int
) -> TimestampAndOffset | None:
    """The earliest offset from the log start whose record timestamp is >= ``timestamp``."""
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        # Without tiered storage every record is local: both start at the log start.
        return TimestampAndOffset(
            -1, log_start_offset, epochs.epoch_for_offset(log_start_offset)
        )
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return TimestampAndOffset(-1, -1, -1)  # nothing was ever tiered
    if timestamp == LATEST_TIMESTAMP:
        return TimestampAndOffset(-1, local.log_end_offset, epochs.latest_epoch)
    if timestamp == MAX_TIMESTAMP:
        return max_timestamp_offset(local.segments, epochs)
    for segment in local.segments:
        if segment.largest_timestamp < timestamp:
            continue
        found = segment_offset_by_timestamp(segment, timestamp, log_start_offset)
        if found is not None:
            return attrs.evolve(
                found, leader_epoch=epochs.epoch_for_offset(found.offset)
            )
    return None


def max_timestamp_offset(
    segments: list[LogSegment], epochs: LeaderEpochFileCache
) -> TimestampAndOffset | None:
    """The record with the largest timestamp (the first of them), found from the segments'
    running maximum and one decoded batch."""
    best: LogSegment | None = None
    for segment in segments:
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
            epoch = epochs.epoch_for_offset(record.offset)
            return TimestampAndOffset(header.max_timestamp, record.offset, epoch)
    return None


def segment_offset_by_timestamp(
    segment: LogSegment, timestamp: int, start_offset: int
) -> TimestampAndOffset | None:
    """The first record of ``segment`` at or after ``start_offset`` whose timestamp is
    >= ``timestamp``.

    The time index gives a place to start; batch headers skip every batch whose
    maxTimestamp is too small; only the one batch that holds the answer is decoded.
    """
    from_offset = max(segment.time_index.lookup(timestamp), start_offset)
    _, position = segment.offset_index.lookup(from_offset)
    for batch_position, header in scan_batches(
        segment.file, position, segment.size, verify_crc=False
    ):
        if header.max_timestamp < timestamp or header.last_offset < start_offset:
            continue
        _, records = decode_batch(segment.read_batch(batch_position, header))
        for record in records:
            if record.offset < start_offset:
                continue
            if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
                return TimestampAndOffset(header.max_timestamp, record.offset)
            if record.timestamp >= timestamp:
                return TimestampAndOffset(record.timestamp, record.offset)
    return None
