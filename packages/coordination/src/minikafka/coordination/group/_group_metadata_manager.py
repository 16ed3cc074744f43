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

The records are written before the coordinator answers (the shell appends them with
acks=all and reports back), so the cache in memory is always something the log can
rebuild: when this broker becomes the partition's leader, ``load`` replays the partition
from its start into groups and offsets; when it stops being the leader, ``unload``
drops them (the groups go Dead) and the new leader replays the same records.

This module is the cache and the record bookkeeping; the coordinator decides when to
write. It is a core: no I/O, time passed in (seconds, wall clock, as the records carry
wall-clock timestamps in milliseconds).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._group import GroupMetadata, MemberMetadata
from ._group_state import GroupState
from ._offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    StoredMember,
    decode_record,
    encode_group_record,
    encode_offset_record,
)

__all__ = [
    "OFFSETS_TOPIC",
    "GroupMetadataManager",
    "PartitionStatus",
    "StoredRecord",
    "partition_for",
]

OFFSETS_TOPIC = "__consumer_offsets"

StoredRecord = tuple[bytes, bytes | None]
"""One record of ``__consumer_offsets``: its key and value (None: a tombstone)."""


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
    partitions: dict[int, PartitionStatus] = attrs.field(init=False, factory=dict)

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

    def load(self, partition: int, records: Iterable[StoredRecord], now: float) -> int:
        """Replay the partition from its start; the last record per key wins, as after
        compaction. Returns how many groups it holds. Record types this coordinator does
        not know (KIP-848's consumer and share groups) are skipped, as Kafka does. A
        malformed record is skipped too, where Kafka fails the whole load and leaves the
        partition's groups without a coordinator: the log has checked every batch's CRC,
        so such a record was written wrong, and the groups around it are still good."""
        offsets: dict[str, dict[TopicPartition, OffsetValue]] = {}
        stored: dict[str, GroupMetadataValue] = {}
        for key_bytes, value_bytes in records:
            try:
                key, value = decode_record(key_bytes, value_bytes)
            except OffsetsRecordError:
                continue
            if isinstance(key, OffsetKey):
                tp = TopicPartition(key.topic, key.partition)
                if value is None:
                    offsets.get(key.group, {}).pop(tp, None)
                else:
                    assert isinstance(value, OffsetValue)
                    offsets.setdefault(key.group, {})[tp] = value
            elif value is None:
                stored.pop(key.group, None)
            else:
                assert isinstance(value, GroupMetadataValue)
                stored[key.group] = value
        loaded = 0
        for group_id in stored.keys() | {g for g, o in offsets.items() if o}:
            if self.partition_for(group_id) != partition:
                continue
            group = _restore_group(group_id, stored.get(group_id), now)
            group.offsets.update(offsets.get(group_id, {}))
            self.groups[group_id] = group
            loaded += 1
        self.partitions[partition] = PartitionStatus.ACTIVE
        return loaded

    def unload(self, partition: int) -> list[GroupMetadata]:
        """This broker stopped leading ``partition``: forget its groups (the caller makes
        them Dead and answers their parked requests)."""
        self.partitions.pop(partition, None)
        gone = [
            g
            for g in self.groups.values()
            if self.partition_for(g.group_id) == partition
        ]
        for group in gone:
            del self.groups[group.group_id]
        return gone

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
    def tombstones(group: GroupMetadata) -> list[StoredRecord]:
        """Everything the log holds for a deleted group: its offsets, then the group."""
        records = [
            encode_offset_record(
                OffsetKey(group.group_id, tp.topic, tp.partition), None
            )
            for tp in group.offsets
        ]
        records.append(encode_group_record(GroupMetadataKey(group.group_id), None))
        return records

    # --- retention ----------------------------------------------------------------------

    @staticmethod
    def expired_offsets(
        group: GroupMetadata, now: float, retention_ms: int
    ) -> list[TopicPartition]:
        """Offsets past ``offsets.retention.minutes`` (KIP-211): a group's offsets live
        as long as it has members; once it is Empty they expire ``retention`` after it
        became Empty (or after their commit, for a group that never had members). An
        offset committed with an explicit expire timestamp (OffsetCommit v2-v4's
        retention time) expires then."""
        if group.state is not GroupState.EMPTY:
            return []
        return [
            tp
            for tp, value in group.offsets.items()
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
