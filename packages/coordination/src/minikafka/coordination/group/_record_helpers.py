"""A classic group and its offsets as records of ``__consumer_offsets``, and back (seed
000, "__consumer_offsets").

Kafka's ``GroupCoordinatorRecordHelpers``: ``newGroupMetadataRecord``
(:func:`group_record`, written on each new generation), ``newOffsetCommitRecord``
(:func:`offset_records`) and the tombstones that delete a group
(``newOffsetCommitTombstoneRecord``, ``newGroupMetadataTombstoneRecord``:
:func:`tombstones`). The way back is
:func:`restore_group`, the group a load rebuilds from its last record (the older
coordinator's ``GroupMetadata.loadGroup``; the newer one's ``GroupMetadataManager``
replaying a ``GroupMetadataValue``).

The bytes themselves are ``_offsets_records.py``'s; this module only maps a group's
metadata to the record's fields and the fields to a group. No I/O, time passed in
(seconds, wall clock: the records carry wall-clock timestamps in milliseconds).
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.common import TopicPartition

from ._group import GroupMetadata, MemberMetadata
from ._group_state import GroupState
from ._offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
    StoredMember,
    encode_group_record,
    encode_offset_record,
)

__all__ = [
    "StoredRecord",
    "group_record",
    "offset_records",
    "restore_group",
    "tombstones",
]

StoredRecord = tuple[bytes, bytes | None]
"""One record of ``__consumer_offsets``: its key and value (None: a tombstone)."""


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


def offset_records(
    group_id: str, offsets: Iterable[tuple[TopicPartition, OffsetValue | None]]
) -> list[StoredRecord]:
    """One record per partition; a None value is the offset's tombstone."""
    return [
        encode_offset_record(OffsetKey(group_id, tp.topic, tp.partition), value)
        for tp, value in offsets
    ]


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


def restore_group(
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
