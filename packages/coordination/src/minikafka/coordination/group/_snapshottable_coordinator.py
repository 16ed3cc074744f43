"""One ``__consumer_offsets`` partition's offsets on a timeline: written, committed,
reverted (KIP-848's coordinator runtime; seed 000, "__consumer_offsets").

Kafka's newer coordinator (KIP-848, since Kafka 3.7) keeps each partition's state as a
``SnapshottableCoordinator`` driven by its ``CoordinatorRuntime``, and the offsets
follow the log's consistency model. Each partition's offsets are :class:`Offsets` (Kafka's
``OffsetMetadataManager.Offsets``) on a ``minikafka.common.timeline.SnapshotRegistry``,
and a write's records are *replayed* into them as soon as the write is made, so the next
request is checked against them. A snapshot is taken after each write; reads that answer
a client (OffsetFetch) read at the last committed write's snapshot; a failed write
reverts the partition to the snapshot before it. Transactional offsets (KIP-98) are
pending on the same registry (``_txn_offsets.py``) until their transaction's marker.

A classic group's membership is not on the timeline: like Kafka's classic groups, it
lives in memory and is written as a group record on each generation; a consumer group's
records have their own bookkeeping (``_consumer_timeline.py``). Which partitions this
broker loaded, and their groups, is ``GroupMetadataManager``'s. A core: no I/O, no
clock.
"""

from __future__ import annotations

import attrs

from minikafka.common import TopicPartition
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

from ._consumer_records import is_consumer_record
from ._offsets_records import OffsetKey, OffsetValue, decode_key, decode_offset_value
from ._record_helpers import StoredRecord
from ._txn_offsets import (
    LOADED,
    PendingTxnOffsets,
    Position,
    TxnCompletion,
    written_at,
)

__all__ = ["Offsets", "SnapshottableCoordinator"]


@attrs.define(eq=False)
class Offsets:
    """One partition's committed offsets, group by group, on a timeline (Kafka's
    ``OffsetMetadataManager.Offsets``): a ``TimelineHashMap`` of groups whose values are
    a ``TimelineHashMap`` of partitions each, all on one registry, so a snapshot or a revert
    covers every group at once. Reads take an ``epoch``: ``LATEST_EPOCH`` for what has
    been written, a snapshot's epoch for the state then."""

    registry: SnapshotRegistry
    _by_group: TimelineHashMap[str, TimelineHashMap[TopicPartition, OffsetValue]] = (
        attrs.field(init=False)
    )
    # where each offset's record sits in the log: a transaction's marker replaces an
    # offset only with a pending one written after it (Kafka's ``olderThan``)
    _positions: TimelineHashMap[tuple[str, TopicPartition], Position] = attrs.field(
        init=False
    )

    def __attrs_post_init__(self) -> None:
        self._by_group = TimelineHashMap(self.registry)
        self._positions = TimelineHashMap(self.registry)

    def position_of(self, group_id: str, tp: TopicPartition) -> Position | None:
        return self._positions.get((group_id, tp))

    def of_group(
        self, group_id: str, epoch: int = LATEST_EPOCH
    ) -> dict[TopicPartition, OffsetValue]:
        partitions = self._by_group.get(group_id, epoch)
        return {} if partitions is None else dict(partitions.items(epoch))

    def group_ids(self, epoch: int = LATEST_EPOCH) -> list[str]:
        return self._by_group.keys(epoch)

    def replay(
        self, key: OffsetKey, value: OffsetValue | None, position: Position = LOADED
    ) -> None:
        """Apply one offset record: a value is the partition's offset now, a tombstone
        removes it (and the group's map once it is empty, as compaction would)."""
        tp = TopicPartition(key.topic, key.partition)
        partitions = self._by_group.get(key.group)
        if value is not None:
            if partitions is None:
                partitions = TimelineHashMap(self.registry)
                self._by_group.put(key.group, partitions)
            partitions.put(tp, value)
            self._positions.put((key.group, tp), position)
        elif partitions is not None:
            partitions.remove(tp)
            self._positions.remove((key.group, tp))
            if not partitions:
                self._by_group.remove(key.group)


@attrs.frozen
class _Write:
    """A write on the timeline; a transactional one's offsets are pending for its
    producer."""

    records: tuple[StoredRecord, ...]
    producer_id: int | None


@attrs.define(eq=False)
class SnapshottableCoordinator:
    """One ``__consumer_offsets`` partition's offsets between the last write made and the
    last one committed (Kafka's ``SnapshottableCoordinator``, driven as its
    ``CoordinatorRuntime`` drives it).

    Kafka's epochs are the log offsets of the writes; this core never learns them, so a
    write's id stands in: each write is appended whole, in id order, so the order of the
    ids is the order of the records in the log. ``write`` replays a write's records and
    snapshots at its id; ``commit`` moves the committed point, and everything written
    before it commits with it (a log commits a prefix); ``fail`` reverts to the snapshot
    before the failed write. The writes made after it are still on their way to the log,
    so their records are replayed again on top: the state stays the committed one plus
    every write that may still commit (Kafka appends synchronously, so a failure there
    never has later writes behind it).

    Transactional offsets (KIP-98) are pending, by producer, on the same registry
    (``pending``); a transaction's marker (``complete``) takes an id of its own on the
    timeline and counts as committed as soon as every write before it is settled.
    """

    registry: SnapshotRegistry = attrs.field(init=False, factory=SnapshotRegistry)
    offsets: Offsets = attrs.field(init=False)
    pending: PendingTxnOffsets = attrs.field(init=False)
    last_committed: int = attrs.field(init=False, default=0)
    # what each write not committed yet did, by id, in order
    _uncommitted: dict[int, _Write | TxnCompletion] = attrs.field(
        init=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        self.offsets = Offsets(self.registry)
        self.pending = PendingTxnOffsets(self.registry)

    def loaded(self) -> None:
        """The partition's records are replayed: they are the committed state."""
        self.registry.get_or_create_snapshot(self.last_committed)

    # --- replaying records ------------------------------------------------------------

    def replay_offset(
        self,
        key: OffsetKey,
        value: OffsetValue | None,
        position: Position,
        producer_id: int | None = None,
    ) -> None:
        """One offset record: a transactional one is pending for its producer; a
        tombstone removes the committed offset and every pending one of the partition
        (Kafka's ``OffsetMetadataManager.replay``)."""
        if value is None:
            self.offsets.replay(key, None)
            tp = TopicPartition(key.topic, key.partition)
            self.pending.remove_partition(key.group, tp)
        elif producer_id is None:
            self.offsets.replay(key, value, position)
        else:
            self.pending.put(producer_id, key, value, position)

    def replay_marker(self, producer_id: int, commit: bool) -> dict[str, int]:
        """The producer's marker: its pending offsets become committed (each only if
        its record is newer than the committed one's, Kafka's ``olderThan``: a plain
        commit written after the transaction's offset wins) or are dropped. Returns how
        many pending offsets each group had."""
        taken = self.pending.complete(producer_id)
        if commit:
            for group_id, partitions in taken.items():
                for tp, (value, position) in partitions.items():
                    current = self.offsets.position_of(group_id, tp)
                    if current is None or current < position:
                        key = OffsetKey(group_id, tp.topic, tp.partition)
                        self.offsets.replay(key, value, position)
        return {g: len(p) for g, p in taken.items()}

    def _replay_write(self, write_id: int, write: _Write) -> None:
        for key_bytes, value_bytes in write.records:
            if is_consumer_record(key_bytes):
                continue  # a consumer group's: not on the offsets' timeline
            key = decode_key(key_bytes)
            if isinstance(key, OffsetKey):
                value = (
                    None if value_bytes is None else decode_offset_value(value_bytes)
                )
                self.replay_offset(key, value, written_at(write_id), write.producer_id)

    def _redo(self, write_id: int, entry: _Write | TxnCompletion) -> dict[str, int]:
        if isinstance(entry, _Write):
            self._replay_write(write_id, entry)
            done: dict[str, int] = {}
        else:
            done = self.replay_marker(entry.producer_id, entry.commit)
        self._uncommitted[write_id] = entry
        self.registry.get_or_create_snapshot(write_id)
        return done

    # --- the timeline -----------------------------------------------------------------

    def write(
        self,
        write_id: int,
        records: tuple[StoredRecord, ...],
        producer_id: int | None = None,
    ) -> None:
        """Replay a write's records now and snapshot the state after them."""
        self._redo(write_id, _Write(records, producer_id))

    def complete(self, write_id: int, producer_id: int, commit: bool) -> dict[str, int]:
        """A transaction's marker is in the log: replay it as ``write_id``."""
        done = self._redo(write_id, TxnCompletion(producer_id, commit))
        self._settle()
        return done

    def commit(self, write_id: int) -> None:
        """``write_id`` is committed, and with it every write made before it."""
        if write_id not in self._uncommitted:
            return  # committed already, or made before this partition was loaded
        for done in [w for w in self._uncommitted if w <= write_id]:
            del self._uncommitted[done]
        self.last_committed = write_id
        # No read or revert will go below the committed point again.
        self.registry.delete_snapshots_up_to(write_id)
        self._settle()

    def fail(self, write_id: int) -> bool:
        """``write_id`` will not be in the log: take it out of the state. False when
        there is nothing to take out (it committed with a later write, or it was made
        before this partition was loaded)."""
        if write_id not in self._uncommitted:
            return False
        earlier = [w for w in self._uncommitted if w < write_id]
        later = [(w, e) for w, e in self._uncommitted.items() if w > write_id]
        before = earlier[-1] if earlier else self.last_committed
        self.registry.revert_to_snapshot(before)
        for w, _ in later:
            del self._uncommitted[w]
        del self._uncommitted[write_id]
        for w, entry in later:
            self._redo(w, entry)
        self._settle()
        return True

    def _settle(self) -> None:
        """A marker with nothing unsettled before it is committed: it is in the log
        already, and every write before it has been reported."""
        for write_id, entry in list(self._uncommitted.items()):
            if not isinstance(entry, TxnCompletion):
                return
            del self._uncommitted[write_id]
            self.last_committed = write_id
            self.registry.delete_snapshots_up_to(write_id)
