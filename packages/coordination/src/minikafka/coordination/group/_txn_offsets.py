"""Transactional offset commits as ``__consumer_offsets`` holds them (KIP-98, KIP-447).

A TxnOffsetCommit writes ordinary offset records, but in a transactional batch of the
producer whose transaction they belong to; they count as committed only once that
producer's COMMIT marker follows them in the partition, and never if an ABORT marker
does. Until then they are *pending* (Kafka's ``pendingTransactionalOffsetCommits`` of
``GroupMetadata``, ``pendingTransactionalOffsets`` and ``openTransactionsByGroup`` of the
newer ``OffsetMetadataManager``): kept apart from the committed offsets, by producer, so
that a marker moves or drops exactly that producer's offsets.

This module holds the two kinds of record a partition's replay may now meet besides the
plain ``(key, value)`` pair (:class:`TxnStoredRecord`, :class:`TxnMarkerRecord`) and the
pending offsets themselves (:class:`PendingTxnOffsets`), kept on the same
``SnapshotRegistry`` as the committed offsets so a snapshot or a revert covers both.
"""

from __future__ import annotations

import attrs

from minikafka.common import TopicPartition
from minikafka.common.timeline import (
    LATEST_EPOCH,
    SnapshotRegistry,
    TimelineHashMap,
    TimelineHashSet,
)

from ._offsets_records import OffsetKey, OffsetValue

__all__ = [
    "LOADED",
    "PendingTxnOffsets",
    "Position",
    "TxnCompletion",
    "TxnMarkerRecord",
    "TxnStoredRecord",
]

Position = tuple[int, int]
"""Where an offset record sits in its partition's log, for Kafka's ``olderThan``:
``(0, n)`` for the n-th record a load replayed, ``(1, write_id)`` for a record this
coordinator wrote after the load (write ids follow the log's order, and every write
comes after everything the load replayed)."""

LOADED: Position = (0, 0)


def written_at(write_id: int) -> Position:
    return (1, write_id)


@attrs.frozen
class TxnStoredRecord:
    """A record of a transactional batch of producer ``producer_id`` (a TxnOffsetCommit's
    offset record): pending until that producer's marker."""

    producer_id: int
    key: bytes
    value: bytes | None


@attrs.frozen
class TxnMarkerRecord:
    """A control record: producer ``producer_id``'s transaction ended, committed or
    aborted (Kafka's ``ControlRecordType.COMMIT``/``ABORT``)."""

    producer_id: int
    commit: bool


@attrs.frozen
class TxnCompletion:
    """A transaction's marker on a partition's timeline: already in the log, so it is
    replayed like a write (a revert of an earlier write replays it again) but it
    cannot fail (``SnapshottableCoordinator.complete``)."""

    producer_id: int
    commit: bool


@attrs.define(eq=False)
class PendingOffsets:
    """One producer's pending offsets, group by group, with where each record sits."""

    registry: SnapshotRegistry
    _by_group: TimelineHashMap[
        str, TimelineHashMap[TopicPartition, tuple[OffsetValue, Position]]
    ] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._by_group = TimelineHashMap(self.registry)

    def put(self, key: OffsetKey, value: OffsetValue, position: Position) -> None:
        partitions = self._by_group.get(key.group)
        if partitions is None:
            partitions = TimelineHashMap(self.registry)
            self._by_group.put(key.group, partitions)
        partitions.put(TopicPartition(key.topic, key.partition), (value, position))

    def remove(self, group_id: str, tp: TopicPartition) -> bool:
        """Drop one pending offset; True when the group has none left from this producer."""
        partitions = self._by_group.get(group_id)
        if partitions is None:
            return True
        partitions.remove(tp)
        if not partitions:
            self._by_group.remove(group_id)
            return True
        return False

    def of_group(
        self, group_id: str, epoch: int = LATEST_EPOCH
    ) -> dict[TopicPartition, tuple[OffsetValue, Position]]:
        partitions = self._by_group.get(group_id, epoch)
        return {} if partitions is None else dict(partitions.items(epoch))

    def group_ids(self, epoch: int = LATEST_EPOCH) -> list[str]:
        return self._by_group.keys(epoch)


@attrs.define(eq=False)
class PendingTxnOffsets:
    """Every open transaction's offsets in one ``__consumer_offsets`` partition: by
    producer (what a marker completes) and, as an index, the producers each group waits
    on (what OffsetFetch's require_stable, expiry and deletion ask about)."""

    registry: SnapshotRegistry
    _by_producer: TimelineHashMap[int, PendingOffsets] = attrs.field(init=False)
    _open: TimelineHashMap[str, TimelineHashSet[int]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._by_producer = TimelineHashMap(self.registry)
        self._open = TimelineHashMap(self.registry)

    def put(
        self, producer_id: int, key: OffsetKey, value: OffsetValue, position: Position
    ) -> None:
        pending = self._by_producer.get(producer_id)
        if pending is None:
            pending = PendingOffsets(self.registry)
            self._by_producer.put(producer_id, pending)
        pending.put(key, value, position)
        producers = self._open.get(key.group)
        if producers is None:
            producers = TimelineHashSet(self.registry)
            self._open.put(key.group, producers)
        producers.add(producer_id)

    def remove_partition(self, group_id: str, tp: TopicPartition) -> None:
        """A tombstone for the partition's offset takes every producer's pending offset
        for it too (Kafka's replay of a tombstone, ``OffsetMetadataManager``)."""
        producers = self._open.get(group_id)
        if producers is None:
            return
        for producer_id in list(producers):
            pending = self._by_producer.get(producer_id)
            if pending is not None and pending.remove(group_id, tp):
                self._forget(producer_id, group_id)

    def complete(
        self, producer_id: int
    ) -> dict[str, dict[TopicPartition, tuple[OffsetValue, Position]]]:
        """The producer's transaction ended: take its pending offsets out, by group."""
        pending = self._by_producer.remove(producer_id)
        if pending is None:
            return {}
        taken = {g: pending.of_group(g) for g in pending.group_ids()}
        for group_id in taken:
            self._forget(producer_id, group_id)
        return taken

    def _forget(self, producer_id: int, group_id: str) -> None:
        producers = self._open.get(group_id)
        if producers is None:
            return
        producers.remove(producer_id)
        if not producers:
            self._open.remove(group_id)
        pending = self._by_producer.get(producer_id)
        if pending is not None and not pending.group_ids():
            self._by_producer.remove(producer_id)

    # --- questions ---------------------------------------------------------------------

    def group_ids(self, epoch: int = LATEST_EPOCH) -> list[str]:
        """The groups waiting on at least one open transaction."""
        return self._open.keys(epoch)

    def has_open(self, group_id: str, epoch: int = LATEST_EPOCH) -> bool:
        return self._open.contains_key(group_id, epoch)

    def partitions(
        self, group_id: str, epoch: int = LATEST_EPOCH
    ) -> set[TopicPartition]:
        """The partitions with a pending offset of the group, from any producer."""
        producers = self._open.get(group_id, epoch)
        if producers is None:
            return set()
        out: set[TopicPartition] = set()
        for producer_id in producers.iterate(epoch):
            pending = self._by_producer.get(producer_id, epoch)
            if pending is not None:
                out.update(pending.of_group(group_id, epoch))
        return out

    def producers(self, group_id: str, epoch: int = LATEST_EPOCH) -> list[int]:
        producers = self._open.get(group_id, epoch)
        return [] if producers is None else list(producers.iterate(epoch))
