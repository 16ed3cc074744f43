"""Trace events of the log (ARCHITECTURE.md, "Traces and labs"): what changed the shape of a log on
disk, and its transactions' markers and last stable offset (KIP-98)."""

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


@register_event
@attrs.frozen
class ProducerStateLoaded(TraceEvent):
    """The producers' state rebuilt (opening, truncation): from a ``.snapshot``
    (``snapshot_offset``, -1 for none: from the log start) and a replay of the batches
    after it, ``batches_read`` headers up to ``log_end_offset``."""

    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "producer_state_loaded"

    topic: str
    partition: int
    snapshot_offset: int
    batches_read: int
    log_end_offset: int


@register_event
@attrs.frozen
class TxnMarkerWritten(TraceEvent):
    """A transaction marker appended (KIP-98), by the leader or fetched by a follower."""

    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "txn_marker"

    topic: str
    partition: int
    producer_id: int
    commit: bool
    offset: int


@register_event
@attrs.frozen
class LastStableOffsetMoved(TraceEvent):
    """The last stable offset moved (KIP-98): where read_committed reads stop."""

    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "lso_moved"

    topic: str
    partition: int
    previous: int
    last_stable_offset: int


@register_event
@attrs.frozen
class AbortedTxnServed(TraceEvent):
    """An aborted transaction a read_committed read lists beside its records (KIP-98):
    the consumer drops ``producer_id``'s records from ``first_offset`` up to the abort
    marker at ``last_offset``. One event per aborted range per read that serves it; the
    read started at ``fetch_offset``."""

    COMPONENT: ClassVar[str] = "log"
    EVENT: ClassVar[str] = "aborted_txn_served"

    topic: str
    partition: int
    fetch_offset: int
    producer_id: int
    first_offset: int
    last_offset: int
