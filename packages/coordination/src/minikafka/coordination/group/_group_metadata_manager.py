"""GroupMetadataManager: the coordinator's cache of groups and offsets, and the log
behind it (seed 000, "__consumer_offsets"; seed 002 §1, "the group becomes Dead").

A group's coordinator is the leader of one partition of the compacted internal topic
``__consumer_offsets``: the partition ``abs(hash(group id)) % offsets.topic.num.partitions``
(``partition_for``, with Java's ``String.hashCode`` so a group lands where Kafka puts it).
Everything the coordinator must not forget lives in that partition as records: one per
committed offset (key: group, topic, partition) and one per group (key: group) with its
generation, protocol, leader and every member's subscription and assignment. Compaction
keeps the latest record per key, and a null value (a tombstone) deletes the key, so the
partition stays about as large as the groups and offsets it describes.

The offsets follow the log's consistency model, Kafka's newer coordinator's
(``CoordinatorRuntime`` over a ``SnapshottableCoordinator`` per partition, KIP-848's
runtime): each partition's offsets are :class:`Offsets` on a
``minikafka.common.timeline.SnapshotRegistry``, and a write's records are *replayed* into
them as soon as the write is made, so the next request is checked against them. A
snapshot is taken after each write; reads that answer a client (OffsetFetch) read at the
last committed write's snapshot; a failed write reverts the partition to the snapshot
before it. When this broker becomes the partition's leader, ``load`` replays the
partition from its start the same way and commits; when it stops being the leader,
``unload`` drops its groups (they go Dead) and its timeline, and the new leader replays
the same records. A classic group's membership is not on the timeline: like Kafka's
classic groups, it lives in memory and is written as a group record on each generation.

This module is the cache and the record bookkeeping; the coordinator decides when to
write. It is a core: no I/O, time passed in (seconds, wall clock, as the records carry
wall-clock timestamps in milliseconds).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

from ._consumer_group import ConsumerGroup
from ._consumer_records import is_consumer_record
from ._group import GroupMetadata, MemberMetadata
from ._group_state import GroupState
from ._offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    StoredMember,
    decode_key,
    decode_offset_value,
    decode_record,
    encode_group_record,
    encode_offset_record,
)
from ._txn_offsets import (
    LOADED,
    PendingTxnOffsets,
    Position,
    TxnCompletion,
    TxnMarkerRecord,
    TxnStoredRecord,
    written_at,
)

__all__ = [
    "OFFSETS_TOPIC",
    "GroupMetadataManager",
    "LoadedRecord",
    "Offsets",
    "PartitionStatus",
    "SnapshottableCoordinator",
    "StoredRecord",
    "partition_for",
]

OFFSETS_TOPIC = "__consumer_offsets"

StoredRecord = tuple[bytes, bytes | None]
"""One record of ``__consumer_offsets``: its key and value (None: a tombstone)."""

LoadedRecord: TypeAlias = StoredRecord | TxnStoredRecord | TxnMarkerRecord
"""What a load replays: a plain record, a record of a transactional batch, or a
transaction's marker (KIP-98; ``_txn_offsets.py``)."""


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``.

    Java hashes a string over its UTF-16 code units, ``h = 31 * h + unit`` in 32-bit
    two's complement; ``Utils.abs`` maps ``Integer.MIN_VALUE`` (whose ``Math.abs`` is
    itself) to 0.
    """
    h = 0
    data = group_id.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % num_partitions


class PartitionStatus(enum.Enum):
    LOADING = "loading"  # this broker leads it; the replay has not finished
    ACTIVE = "active"  # replayed; its groups are served from the cache


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


@attrs.define(eq=False)
class GroupMetadataManager:
    num_partitions: int
    groups: dict[str, GroupMetadata] = attrs.field(init=False, factory=dict)
    consumer_groups: dict[str, ConsumerGroup] = attrs.field(init=False, factory=dict)
    partitions: dict[int, PartitionStatus] = attrs.field(init=False, factory=dict)
    # the offsets of each loaded partition, on its timeline
    shards: dict[int, SnapshottableCoordinator] = attrs.field(init=False, factory=dict)

    # --- ownership -----------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def group_status(self, group_id: str) -> ErrorCode:
        """Whether this coordinator may serve ``group_id`` now (Kafka's validateGroupStatus):
        NOT_COORDINATOR sends the client back to FindCoordinator, LOAD_IN_PROGRESS to retry."""
        status = self.partitions.get(self.partition_for(group_id))
        if status is None:
            return ErrorCode.not_coordinator
        if status is PartitionStatus.LOADING:
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.none

    def begin_loading(self, partition: int) -> None:
        self.partitions[partition] = PartitionStatus.LOADING

    def load(self, partition: int, records: Iterable[LoadedRecord], now: float) -> int:
        """Replay the partition from its start, then commit what was replayed; the last
        record per key wins, as after compaction. Returns how many groups it holds.
        Record types this coordinator does not know (KIP-848's consumer and share
        groups) are skipped, as Kafka does. A malformed record is skipped too, where
        Kafka fails the whole load and leaves the partition's groups without a
        coordinator: the log has checked every batch's CRC, so such a record was written
        wrong, and the groups around it are still good.

        Transactional records (KIP-98) are pending for their producer until its marker:
        a COMMIT makes them committed where they are newer than the committed offset,
        an ABORT drops them (Kafka's loader); those whose marker has not come yet stay
        pending, for ``complete_transaction``. A group that has only pending offsets is
        restored Empty, as Kafka's loader does."""
        shard = SnapshottableCoordinator()
        stored: dict[str, GroupMetadataValue] = {}
        here: dict[str, bool] = {}  # group id -> hashed onto this partition
        for n, record in enumerate(records):
            if isinstance(record, TxnMarkerRecord):
                shard.replay_marker(record.producer_id, record.commit)
                continue
            if isinstance(record, TxnStoredRecord):
                producer_id: int | None = record.producer_id
                key_bytes, value_bytes = record.key, record.value
            else:
                producer_id = None
                key_bytes, value_bytes = record
            try:
                key, value = decode_record(key_bytes, value_bytes)
            except OffsetsRecordError:
                continue
            if key.group not in here:
                here[key.group] = self.partition_for(key.group) == partition
            if not here[key.group]:
                continue
            if isinstance(key, OffsetKey):
                assert value is None or isinstance(value, OffsetValue)
                shard.replay_offset(key, value, (0, n), producer_id)
            elif value is None:
                stored.pop(key.group, None)
            else:
                assert isinstance(value, GroupMetadataValue)
                stored[key.group] = value
        shard.loaded()
        self.shards[partition] = shard
        group_ids = (
            stored.keys()
            | set(shard.offsets.group_ids())
            | set(shard.pending.group_ids())
        )
        for group_id in group_ids:
            self.groups[group_id] = _restore_group(group_id, stored.get(group_id), now)
        self.partitions[partition] = PartitionStatus.ACTIVE
        return len(group_ids)

    def unload(self, partition: int) -> list[GroupMetadata]:
        """This broker stopped leading ``partition``: forget its groups and its offsets
        (the caller makes the groups Dead and answers their parked requests)."""
        self.partitions.pop(partition, None)
        self.shards.pop(partition, None)
        gone = [
            g
            for g in self.groups.values()
            if self.partition_for(g.group_id) == partition
        ]
        for group in gone:
            del self.groups[group.group_id]
        for group_id in list(self.consumer_groups):
            if self.partition_for(group_id) == partition:
                del self.consumer_groups[group_id]
        return gone

    # --- the timeline: writes replayed, committed, failed --------------------------------

    def written(
        self,
        partition: int,
        write_id: int,
        records: tuple[StoredRecord, ...],
        producer_id: int | None = None,
    ) -> None:
        """A write was made: its records are the partition's state from now on (a
        transactional write's offsets as pending for ``producer_id``)."""
        shard = self.shards.get(partition)
        if shard is not None:
            shard.write(write_id, records, producer_id)

    def complete_transaction(
        self, partition: int, write_id: int, producer_id: int, commit: bool
    ) -> dict[str, int]:
        """The producer's marker is in ``partition`` (as ``write_id`` on its timeline):
        how many pending offsets each group had, now committed or dropped; nothing
        when this broker does not serve the partition."""
        shard = self.shards.get(partition)
        if shard is None:
            return {}
        return shard.complete(write_id, producer_id, commit)

    def committed(self, partition: int, write_id: int) -> None:
        shard = self.shards.get(partition)
        if shard is not None:
            shard.commit(write_id)

    def failed(self, partition: int, write_id: int, now: float) -> None:
        """A write failed: the partition's offsets go back to before it. A group its
        offsets name is served again, Empty, as a load would restore it (a deletion
        whose tombstones were not written leaves the group in the log)."""
        shard = self.shards.get(partition)
        if shard is None or not shard.fail(write_id):
            return
        named = shard.offsets.group_ids() + shard.pending.group_ids()
        for group_id in named:
            if group_id not in self.groups:
                self.groups[group_id] = _restore_group(group_id, None, now)

    def current_offsets(self, group_id: str) -> dict[TopicPartition, OffsetValue]:
        """The group's offsets as written so far, committed or not: what the next write
        is decided on."""
        shard = self.shards.get(self.partition_for(group_id))
        return {} if shard is None else shard.offsets.of_group(group_id)

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, OffsetValue]:
        """The group's offsets as of the last committed write: what a client is told."""
        shard = self.shards.get(self.partition_for(group_id))
        if shard is None:
            return {}
        return shard.offsets.of_group(group_id, shard.last_committed)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with a transactional offset still pending, as written
        so far (what expiry, OffsetDelete and DeleteGroups decide on)."""
        shard = self.shards.get(self.partition_for(group_id))
        return set() if shard is None else shard.pending.partitions(group_id)

    def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        """What OffsetFetch with require_stable refuses (KIP-447): a partition with a
        pending transactional offset, as written so far or as of the last committed
        write (a marker not committed yet still leaves the answer unstable)."""
        shard = self.shards.get(self.partition_for(group_id))
        if shard is None:
            return set()
        return shard.pending.partitions(group_id) | shard.pending.partitions(
            group_id, shard.last_committed
        )

    # --- records -----------------------------------------------------------------------

    @staticmethod
    def group_record(
        group: GroupMetadata, assignments: dict[str, bytes], now: float
    ) -> StoredRecord:
        """The group as Kafka stores it on each new generation: members with their
        subscription for the chosen protocol and the assignment about to be handed out."""
        protocol = group.protocol_name
        members = tuple(
            StoredMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"",
                assignments.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        value = GroupMetadataValue(
            group.protocol_type or "",
            group.generation_id,
            protocol,
            group.leader_id,
            int(now * 1000),
            members,
        )
        return encode_group_record(GroupMetadataKey(group.group_id), value)

    @staticmethod
    def offset_records(
        group_id: str, offsets: Iterable[tuple[TopicPartition, OffsetValue | None]]
    ) -> list[StoredRecord]:
        """One record per partition; a None value is the offset's tombstone."""
        return [
            encode_offset_record(OffsetKey(group_id, tp.topic, tp.partition), value)
            for tp, value in offsets
        ]

    @staticmethod
    def tombstones(
        group_id: str, partitions: Iterable[TopicPartition]
    ) -> list[StoredRecord]:
        """Everything the log holds for a deleted group: its offsets, then the group."""
        records = [
            encode_offset_record(OffsetKey(group_id, tp.topic, tp.partition), None)
            for tp in partitions
        ]
        records.append(encode_group_record(GroupMetadataKey(group_id), None))
        return records

    # --- retention ----------------------------------------------------------------------

    @staticmethod
    def expired_offsets(
        group: GroupMetadata,
        offsets: dict[TopicPartition, OffsetValue],
        now: float,
        retention_ms: int,
    ) -> list[TopicPartition]:
        """The group's ``offsets`` past ``offsets.retention.minutes`` (KIP-211): a
        group's offsets live as long as it has members; once it is Empty they expire
        ``retention`` after it became Empty (or after their commit, for a group that
        never had members). An offset committed with an explicit expire timestamp
        (OffsetCommit v2-v4's retention time) expires then."""
        if group.state is not GroupState.EMPTY:
            return []
        return [
            tp
            for tp, value in offsets.items()
            if _expires_at(group, value, retention_ms) <= now
        ]


def _expires_at(group: GroupMetadata, value: OffsetValue, retention_ms: int) -> float:
    if value.expire_timestamp is not None:
        return value.expire_timestamp / 1000
    since = value.commit_timestamp / 1000
    if group.protocol_type and group.state_timestamp is not None:
        since = group.state_timestamp
    return since + retention_ms / 1000


def _restore_group(
    group_id: str, value: GroupMetadataValue | None, now: float
) -> GroupMetadata:
    """A group as its last record describes it (Kafka's ``GroupMetadata.loadGroup``):
    Empty without members, else Stable with the stored assignment; every member must
    heartbeat within its session timeout from now or is removed."""
    if value is None:
        group = GroupMetadata(group_id)
        group.state_timestamp = now
        return group
    group = GroupMetadata(
        group_id,
        GroupState.STABLE if value.members else GroupState.EMPTY,
        value.generation_id,
        value.protocol_type or None,
        value.protocol_name,
    )
    protocol = value.protocol_name or ""
    for stored in value.members:
        member = MemberMetadata(
            stored.member_id,
            stored.group_instance_id,
            stored.client_id,
            stored.client_host,
            stored.rebalance_timeout_ms,
            stored.session_timeout_ms,
            value.protocol_type,
            ((protocol, stored.subscription),),
            assignment=stored.assignment,
            heartbeat_deadline=now + stored.session_timeout_ms / 1000,
        )
        group.add(member)
    if value.leader in group.members:
        group.leader_id = value.leader
    stamp = value.current_state_timestamp
    group.state_timestamp = stamp / 1000 if stamp >= 0 else now
    return group
