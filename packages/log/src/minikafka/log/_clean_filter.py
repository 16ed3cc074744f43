"""What the cleaner keeps of each batch: the decisions of a cleaning pass, without I/O.

:mod:`._cleaner` reads segments and writes the cleaned one; every choice about a batch
is made here, from the batch's bytes and what the pass has seen before it (Kafka's
``Cleaner.cleanInto`` filter, ``MemoryRecords.filterTo`` and
``CleanedTransactionMetadata``, KIP-98 and KIP-534):

- a record survives if no later record of the dirty part has its key (the offset map);
  a tombstone only until its batch's delete horizon;
- the records of an aborted transaction never survive: the pass learns of aborted
  transactions from the segments' ``.txnindex`` (first offset, producer, marker), and
  from a transaction's first offset to its ABORT marker its producer's transactional
  batches are discarded;
- a marker stays while any batch of its transaction is in the log. A marker whose
  transaction had no batch left in this pass is stamped with a delete horizon (now +
  ``delete.retention.ms``, the tombstones' clock), and a pass after the horizon drops
  it; so a marker outlives its transaction's data by at least one pass and by
  ``delete.retention.ms``, long enough for a read_committed reader to see it;
- the last batch of each producer stays, emptied of its records if none survive: its
  sequence (or, when a marker is the producer's last write, its epoch) is what the
  producer state is rebuilt from, so a producer whose records were all compacted away
  is not answered OUT_OF_ORDER_SEQUENCE_NUMBER;
- the batch that ends a group of segments stays, emptied if need be, so that the
  cleaned segment ends where the old ones did.

An ABORT marker kept is an aborted transaction that still applies: its entry goes to
the cleaned segment's ``.txnindex`` (:attr:`CleanedTransactionMetadata.retained`).
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Iterable, Mapping

import attrs

from ._batch import RecordBatchHeader, TimestampType
from ._markers import ABORT, COMMIT, control_record_type
from ._producer_state import ProducerStateEntry
from ._records import Record, build_batch, decode_batch
from ._txn_index import AbortedTxn

__all__ = [
    "BatchRetention",
    "CleanedTransactionMetadata",
    "CleanerContext",
    "LastRecord",
    "batch_retention",
    "filter_batch",
    "last_records_of_active_producers",
]


@attrs.define
class _OngoingAbort:
    txn: AbortedTxn
    observed: bool = False  # a batch of it was read in this pass


@attrs.define(eq=False)
class CleanedTransactionMetadata:
    """The transactions a cleaning pass is inside of, as it reads the log in offset
    order (Kafka's ``CleanedTransactionMetadata``): one per pass, across its groups."""

    _upcoming: list[tuple[int, int, AbortedTxn]] = attrs.field(factory=list)
    """Aborted transactions not reached yet: a heap by first offset."""
    _order: itertools.count[int] = attrs.field(factory=itertools.count)
    _aborting: dict[int, _OngoingAbort] = attrs.field(factory=dict)
    """Producer id -> its aborted transaction the pass is inside of."""
    _committing: set[int] = attrs.field(factory=set)
    """Producers with a transactional batch read whose marker is not read yet."""
    retained: list[AbortedTxn] = attrs.field(factory=list)
    """The aborted transactions whose marker is kept, in marker order: the cleaned
    segment's ``.txnindex`` (the cleaner takes them after each group)."""

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        """Aborted transactions from the ``.txnindex`` of the segments about to be read
        (the same one twice is harmless: a producer is inside one at a time)."""
        for txn in aborted:
            heapq.heappush(self._upcoming, (txn.first_offset, next(self._order), txn))

    def _reach(self, offset: int) -> None:
        while self._upcoming and self._upcoming[0][0] <= offset:
            txn = heapq.heappop(self._upcoming)[2]
            self._aborting.setdefault(txn.producer_id, _OngoingAbort(txn))

    def on_batch(self, header: RecordBatchHeader) -> bool:
        """A data batch read: whether it belongs to an aborted transaction (discard)."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._aborting.get(header.producer_id)
        if ongoing is None:
            self._committing.add(header.producer_id)
            return False
        ongoing.observed = True
        return True

    def on_control_batch(
        self, header: RecordBatchHeader, records: list[Record]
    ) -> bool:
        """A control batch read: whether it may go (once its delete horizon passed).

        A marker may go when no batch of its transaction was read in this pass; an
        ABORT marker that stays has its transaction's entry retained. An emptied
        control batch may go; a control record of another kind stays.
        """
        self._reach(header.last_offset)
        if not records:
            return True  # emptied by an earlier pass: its producer's last write then
        kind = control_record_type(records[0])
        if kind == ABORT:
            ongoing = self._aborting.pop(header.producer_id, None)
            if ongoing is not None and ongoing.observed:
                self.retained.append(ongoing.txn)
                return False
            return True
        if kind == COMMIT:
            if header.producer_id in self._committing:
                self._committing.discard(header.producer_id)
                return False
            return True
        return False

    def take_retained(self) -> list[AbortedTxn]:
        """The entries retained since the last call (one group's cleaned segment)."""
        taken, self.retained = self.retained, []
        return taken


@attrs.frozen
class LastRecord:
    """A producer's last write, as the cleaner must keep it (Kafka's ``LastRecord``):
    the last offset of its last data batch, or None when its last write is a marker of
    ``producer_epoch`` (which then keeps the epoch)."""

    last_data_offset: int | None
    producer_epoch: int


def last_records_of_active_producers(
    producers: Mapping[int, ProducerStateEntry],
) -> dict[int, LastRecord]:
    """Kafka's ``UnifiedLog.lastRecordsOfActiveProducers``, from the producer state."""
    return {
        producer_id: LastRecord(
            entry.last_data_offset if entry.last_data_offset >= 0 else None,
            entry.producer_epoch,
        )
        for producer_id, entry in producers.items()
    }


class BatchRetention(enum.Enum):
    """What happens to a batch whose records all go (Kafka's ``BatchRetention``)."""

    DELETE = "delete"  # the batch goes, whatever its records
    DELETE_EMPTY = "delete_empty"  # the batch goes if no record survives
    RETAIN_EMPTY = "retain_empty"  # the batch stays, emptied if no record survives


def batch_retention(
    header: RecordBatchHeader,
    discard_records: bool,
    last_records: Mapping[int, LastRecord],
    group_end: int,
) -> BatchRetention:
    """A producer's last batch and the group's last batch stay; a discarded batch
    goes; any other goes once empty."""
    if header.producer_id >= 0 and _is_last_of_producer(header, last_records):
        return BatchRetention.RETAIN_EMPTY
    if header.next_offset == group_end:
        return BatchRetention.RETAIN_EMPTY
    return BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY


def _is_last_of_producer(
    header: RecordBatchHeader, last_records: Mapping[int, LastRecord]
) -> bool:
    last = last_records.get(header.producer_id)
    if last is None:
        return False  # not an active producer: nothing of it needs keeping
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset  # its last sequence
    return header.is_control and header.producer_epoch == last.producer_epoch


@attrs.frozen
class CleanerContext:
    """What every batch of a pass is judged against."""

    offset_map: Mapping[bytes, int]
    txns: CleanedTransactionMetadata
    last_records: Mapping[int, LastRecord]
    now: int
    delete_retention_ms: int


def filter_batch(
    original: bytes, header: RecordBatchHeader, ctx: CleanerContext, group_end: int
) -> tuple[bytes | None, int]:
    """The batch to write in place of ``original`` (None: drop it) and how many
    records were dropped."""
    _, records = decode_batch(original)
    horizon = header.delete_horizon_ms
    if header.is_control:
        can_discard = ctx.txns.on_control_batch(header, records)
        # a marker rides on the tombstones' clock
        discard_records = can_discard and horizon is not None and horizon <= ctx.now
    else:
        can_discard = discard_records = ctx.txns.on_batch(header)
    retention = batch_retention(header, discard_records, ctx.last_records, group_end)
    if retention is BatchRetention.DELETE:
        return None, len(records)
    if discard_records:
        kept: list[Record] = []
    elif header.is_control:
        kept = records
    else:
        kept = [r for r in records if _retain_record(r, horizon, ctx)]
    dropped = len(records) - len(kept)
    if not kept:
        if retention is BatchRetention.RETAIN_EMPTY:
            return _empty_batch(header), dropped
        return None, dropped
    # a tombstone's or an empty transaction's marker's clock starts now
    marker_of_empty_txn = can_discard and header.is_control
    has_tombstones = any(r.value is None for r in kept) and not header.is_control
    if (has_tombstones or marker_of_empty_txn) and horizon is None:
        return _rebuilt(header, kept, ctx.now + ctx.delete_retention_ms), dropped
    if not dropped:
        return original, 0
    return _rebuilt(header, kept, horizon), dropped


def _retain_record(record: Record, horizon: int | None, ctx: CleanerContext) -> bool:
    if record.key is None:
        return False  # a compacted topic's records must have keys; Kafka drops these
    if ctx.offset_map.get(record.key, -1) > record.offset:
        return False  # a later record has the same key
    if record.value is None:
        return horizon is None or ctx.now < horizon  # a tombstone, until its horizon
    return True


def _rebuilt(
    header: RecordBatchHeader, kept: list[Record], delete_horizon_ms: int | None
) -> bytes:
    """The batch of ``header`` holding only ``kept``: its offsets, producer and
    timestamps stay, so a reader sees the same batch with records missing."""
    return build_batch(
        kept,
        base_offset=header.base_offset,
        compression=header.compression,
        partition_leader_epoch=header.partition_leader_epoch,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        timestamp_type=header.timestamp_type,
        last_offset_delta=header.last_offset_delta,
        delete_horizon_ms=delete_horizon_ms,
        max_timestamp=(
            header.max_timestamp
            if header.timestamp_type is TimestampType.LOG_APPEND_TIME
            else None
        ),
    )


def _empty_batch(header: RecordBatchHeader) -> bytes:
    """The header of ``header``'s batch with no records (Kafka's ``writeEmptyHeader``):
    its offsets, producer, sequence and kind stay."""
    return build_batch(
        [],
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        partition_leader_epoch=header.partition_leader_epoch,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        timestamp_type=header.timestamp_type,
        max_timestamp=header.max_timestamp,
    )
