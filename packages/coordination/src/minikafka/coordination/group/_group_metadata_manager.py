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

This module is the cache: which partitions this broker serves (``group_status``), their
groups, and each partition's offsets on its timeline. When this broker becomes a
partition's leader, ``load`` replays the partition from its start and commits; when it
stops being the leader, ``unload`` drops its groups (they go Dead) and its timeline, and
the new leader replays the same records. The parts it is made of, each a module:

- ``_snapshottable_coordinator.py``: a partition's offsets on a timeline (Kafka's
  ``SnapshottableCoordinator`` and ``OffsetMetadataManager.Offsets``): a write's records
  replayed at once, read back as committed, reverted when the write fails;
- ``_coordinator_loader.py``: a partition's replay on load (``CoordinatorLoaderImpl``);
- ``_record_helpers.py``: a group and its offsets as records, and a group back from its
  record (``GroupCoordinatorRecordHelpers``);
- ``_offset_expiration.py``: when a classic group's offsets expire (KIP-211,
  ``OffsetExpirationConditionImpl``).

The coordinator decides when to write. It is a core: no I/O, time passed in (seconds,
wall clock, as the records carry wall-clock timestamps in milliseconds).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._consumer_group import ConsumerGroup
from ._coordinator_loader import LoadedRecord, replay_partition
from ._group import GroupMetadata
from ._offset_expiration import expired_offsets
from ._offsets_records import OffsetValue
from ._record_helpers import (
    StoredRecord,
    group_record,
    offset_records,
    restore_group,
    tombstones,
)
from ._snapshottable_coordinator import Offsets, SnapshottableCoordinator

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
        """Replay the partition from its start (``replay_partition``: the last record
        per key wins, as after compaction), then serve its groups, each as its last
        record describes it. Returns how many groups it holds. A group that has only
        pending offsets (KIP-98) is restored Empty, as Kafka's loader does."""
        loaded = replay_partition(records, lambda g: self.partition_for(g) == partition)
        self.shards[partition] = loaded.shard
        group_ids = loaded.group_ids()
        for group_id in group_ids:
            self.groups[group_id] = restore_group(
                group_id, loaded.stored.get(group_id), now
            )
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
                self.groups[group_id] = restore_group(group_id, None, now)

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

    # --- records and retention (``_record_helpers.py``, ``_offset_expiration.py``) ---
    # Kept as the manager's: the rebalance, the offsets manager and the consumer
    # groups' retention build their records and expire offsets through it.

    group_record = staticmethod(group_record)
    offset_records = staticmethod(offset_records)
    tombstones = staticmethod(tombstones)
    expired_offsets = staticmethod(expired_offsets)
