"""Trace events of the log (ARCHITECTURE.md, "Traces and labs"): what changed the shape of a log on
disk."""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event


@register_event
@attrs.frozen
class SegmentRolled(TraceEvent):
    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "segment_roll"

    topic: str
    partition: int
    base_offset: int
    reason: str
    previous_segment_bytes: int


@register_event
@attrs.frozen
class LogRecovered(TraceEvent):
    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "recovered"

    topic: str
    partition: int
    segments_recovered: int
    truncated_bytes: int
    log_end_offset: int


@register_event
@attrs.frozen
class LogTruncated(TraceEvent):
    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "truncated"

    topic: str
    partition: int
    target_offset: int
    previous_log_end_offset: int


@register_event
@attrs.frozen
class SegmentsDeleted(TraceEvent):
    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "segments_deleted"

    topic: str
    partition: int
    reason: str  # retention.ms, retention.bytes, log start offset, compaction
    base_offsets: tuple[int, ...]
    log_start_offset: int


@register_event
@attrs.frozen
class LogCleaned(TraceEvent):
    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "cleaned"

    topic: str
    partition: int
    first_dirty_offset: int
    next_dirty_offset: int
    bytes_before: int
    bytes_after: int
    records_removed: int
