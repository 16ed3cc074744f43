"""What the Log does for transactions (KIP-98): markers, the ``.txnindex`` and
read_committed reads.

Kafka's ``UnifiedLog`` hands every appended batch to its ``ProducerStateManager``, which
opens a producer's transaction at its first transactional batch and ends it at the
producer's marker; an abort becomes an entry of the ``.txnindex`` of the segment that
holds the marker (``LogSegment.updateTxnIndex``). A read_committed fetch
(``FetchIsolation.TXN_COMMITTED``) stops at the last stable offset and carries the
aborted transactions its records overlap (``LocalLog.collectAbortedTransactions``), so
that the consumer can drop their records. The functions here are that bookkeeping, kept
beside the :class:`~._log.Log` that calls them so the Log's paths stay short; the state
lives in :class:`~._ongoing_txns.OngoingTransactions` and the segments' indexes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from ._batch import RecordBatchHeader
from ._events import AbortedTxnServed, LastStableOffsetMoved, TxnMarkerWritten
from ._local_log import LocalLog
from ._markers import EndTxnMarker, read_end_txn_marker
from ._ongoing_txns import CompletedTxn, OngoingTransactions
from ._producer_state import ProducerStateManager
from ._records import decode_batch
from ._segment import LogSegment
from ._segment_read import FetchDataInfo, scan_batches
from ._txn_index import AbortedTxn

if TYPE_CHECKING:
    from ._log import Log

if TYPE_CHECKING:
    from ._log import Log

__all__ = [
    "FetchIsolation",
    "collect_aborted_transactions",
    "lso_before",
    "trace_aborted_served",
    "trace_lso_move",
    "trace_markers",
    "track_batches",
]


class FetchIsolation(enum.Enum):
    """How far a read may go (Kafka's ``FetchIsolation``): a follower reads to the log
    end, a read_uncommitted consumer to the high watermark, a read_committed one to the
    last stable offset."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


RawBatch = Callable[[int, RecordBatchHeader], bytes]
"""The bytes of the batch at a position: a marker's record must be decoded to know
whether it commits or aborts (the header says only that it is a control batch)."""


def marker_of(raw: bytes) -> EndTxnMarker | None:
    """The marker a control batch holds; None for any other control record (Kafka
    skips the kinds it does not know, such as KRaft's own control records)."""
    _, records = decode_batch(raw, verify_crc=False)
    if not records:
        return None
    try:
        return read_end_txn_marker(records[0])
    except ValueError:
        return None


def track_batches(
    ongoing: OngoingTransactions,
    batches: Iterable[tuple[int, RecordBatchHeader]],
    raw_batch: RawBatch,
    segment: LogSegment | None,
) -> list[CompletedTxn]:
    """Account for appended (or replayed) batches: a transactional batch opens its
    producer's transaction, a marker ends it, and the abort of a transaction with
    records adds its entry to ``segment``'s ``.txnindex`` (None: the index already
    holds it, as on a replay after truncation).
    Returns the transactions the markers ended.
    """
    ended: list[CompletedTxn] = []
    for position, header in batches:
        if not header.is_control:
            ongoing.on_batch(header)
            continue
        if header.producer_id < 0:
            continue  # no producer's marker (KRaft's control records): not decoded
        marker = marker_of(raw_batch(position, header))
        if marker is None:
            continue
        completed = ongoing.on_marker(
            header.producer_id, header.producer_epoch, marker, header.base_offset
        )
        ended.append(completed)
        # A marker that ends no record (a retried one, or one whose transaction's
        # records compaction removed) aborts nothing a reader could see: like Kafka's
        # ProducerAppendInfo.appendEndTxnMarker, it adds no entry.
        empty = completed.first_offset == completed.last_offset
        if completed.aborted and not empty and segment is not None:
            # The entry's LSO is computed now, with this transaction ended: what a
            # reader may trust up to once the abort is known.
            segment.append_aborted_txn(ongoing.aborted_entry(completed))
    return ended


def replay_segments(
    producer_state: ProducerStateManager,
    ongoing: OngoingTransactions,
    segments: Sequence[LogSegment],
    start: int,
    stale: Collection[LogSegment] = (),
) -> int:
    """Replay the batches from ``start`` into the producer state and the open
    transactions; returns how many batch headers the replay read (besides the offset
    index lookup that finds where to begin).

    Each of the ``stale`` segments (emptied ``.txnindex``) gets its entries written
    again, as Kafka's ``LogSegment.recover`` rebuilds the index while replaying the
    producer state; the others' indexes already hold theirs.
    """
    read = 0
    for segment in segments:
        if segment.next_offset <= start:
            continue
        rebuild = segment in stale
        # From the batch holding ``start``, found through the offset index, so that a
        # snapshot near the end of a large segment spares reading its head.
        found = segment.translate_offset(start) if segment.base_offset < start else None
        first = found[0] if found is not None else 0
        for position, header in scan_batches(
            segment.file, first, segment.size, verify_crc=False
        ):
            read += 1
            if header.last_offset < start:
                continue
            if header.producer_id >= 0:
                producer_state.update(header)
            track_batches(
                ongoing,
                [(position, header)],
                segment.read_batch,
                segment if rebuild else None,
            )
    return read


def collect_aborted_transactions(
    local: LocalLog, start_offset: int, fetched: FetchDataInfo
) -> tuple[AbortedTxn, ...]:
    """The aborted transactions a read_committed fetch's records overlap (Kafka's
    ``addAbortedTransactions`` and ``collectAbortedTransactions``).

    From the segment the read started in on, every entry whose marker is at or after
    ``start_offset`` and whose first offset is below the upper bound (the offset after
    the records returned), until a segment's search is complete: an entry whose last
    stable offset reaches the bound says that every transaction open before the bound
    has ended by then, so no later segment can add one.
    """
    if fetched.records is None:
        return ()
    first = local.segment_index_for(fetched.fetch_offset_metadata.segment_base_offset)
    upper = _upper_bound_offset(local, first, fetched)
    found: list[AbortedTxn] = []
    for segment in local.segments[first:]:
        if segment.txn_index is None:
            continue  # no abort in it: nothing to add, nothing settled
        result = segment.txn_index.collect_aborted(start_offset, upper)
        found.extend(result.aborted)
        if result.complete:
            break
    return tuple(found)


def _upper_bound_offset(local: LocalLog, index: int, fetched: FetchDataInfo) -> int:
    """Where a read's records end, for the search of aborted transactions, as Kafka
    bounds it: the offset of the first offset-index entry at or past the slice's end,
    else the next segment's base offset (or the log end).

    The index is sparse, so the bound may lie a few batches past the records; a later
    bound only lists more transactions, which the consumer ignores without records.
    """
    assert fetched.records is not None
    segment = local.segments[index]
    end = fetched.records.position + fetched.records.length
    bound = segment.offset_index.fetch_upper_bound_offset(end)
    if bound is not None:
        return bound
    following = local.segments[index + 1 : index + 2]
    return following[0].base_offset if following else local.log_end_offset


def trace_markers(log: Log, ended: list[CompletedTxn]) -> None:
    """A trace event per marker appended (leader's or follower's), on the log's clock."""
    if ended and log.tracer.enabled:
        tp, ts = log.topic_partition, log.clock() / 1000
        for txn in ended:
            event = TxnMarkerWritten(
                tp.topic,
                tp.partition,
                txn.producer_id,
                not txn.aborted,
                txn.last_offset,
            )
            log.tracer.emit(event, ts)


def lso_before(log: Log) -> tuple[int, int] | None:
    """The LSO and the high watermark before a change that may move them, for
    :func:`trace_lso_move`; None when tracing is off, without computing the LSO (asked
    on every HW move, that is on every leader append of a single node)."""
    if not log.tracer.enabled:
        return None
    return log.last_stable_offset, log.high_watermark


def trace_lso_move(log: Log, previous: tuple[int, int] | None) -> None:
    """A trace event when the LSO moved since ``previous`` (:func:`lso_before`), unless
    it only followed the high watermark with no transaction holding it back
    (replication traces the HW's moves)."""
    if previous is None or not log.tracer.enabled:
        return
    previous_lso, previous_hw = previous
    lso = log.last_stable_offset
    following = previous_lso == previous_hw and lso == log.high_watermark
    if lso != previous_lso and not following:
        tp = log.topic_partition
        event = LastStableOffsetMoved(tp.topic, tp.partition, previous_lso, lso)
        log.tracer.emit(event, log.clock() / 1000)


def trace_aborted_served(
    log: Log, start_offset: int, aborted: Sequence[AbortedTxn]
) -> None:
    """A trace event per aborted range a read_committed read lists, on the log's
    clock: how much aborted data consumers are told to skip, and when."""
    if aborted and log.tracer.enabled:
        tp, ts = log.topic_partition, log.clock() / 1000
        for txn in aborted:
            event = AbortedTxnServed(
                tp.topic,
                tp.partition,
                start_offset,
                txn.producer_id,
                txn.first_offset,
                txn.last_offset,
            )
            log.tracer.emit(event, ts)
