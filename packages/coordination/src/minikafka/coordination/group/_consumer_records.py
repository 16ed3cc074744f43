"""A consumer group's records in ``__consumer_offsets`` (KIP-848), as Kafka writes them.

Kafka's group coordinator keeps a consumer group as seven kinds of record, each keyed so
that compaction keeps the latest of each (the key's int16 version is the record type,
as for the classic records in ``_offsets_records.py``; every key is non-flexible v0 of
strings, every value an int16 version 0 and a flexible body: compact strings and
arrays, a tagged-field section after each struct):

====  ==========================================  ==========================================
type  key                                         value
====  ==========================================  ==========================================
3     ConsumerGroupMetadata (group)               the group epoch
4     ConsumerGroupPartitionMetadata (group)      subscribed topics: id, name, partitions
5     ConsumerGroupMemberMetadata (group, member) instance, rack, client, subscription,
                                                  rebalance timeout, server assignor
6     ConsumerGroupTargetAssignmentMetadata       the target assignment epoch
7     ConsumerGroupTargetAssignmentMember         the member's target, by topic id
8     ConsumerGroupCurrentMemberAssignment        member epoch, previous epoch, state,
                                                  assigned and pending-revocation
16    ConsumerGroupRegularExpression (group,      the topics it resolved to, the metadata
      regular expression)                         version and time (``_regex_subscriptions``)
====  ==========================================  ==========================================

:func:`group_records` is a group's whole state as those records; a write is the
difference between the state before a heartbeat and after it (:func:`changed_records`:
new values, and a tombstone for each key that went), so the log replays to what the
coordinator had. :class:`ConsumerGroupLoader` replays them into groups when a coordinator
takes a partition over. Fields Kafka 4.x adds as tagged fields (the classic member
metadata of a migrated member, the metadata hash) are not written, and skipped on reading.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping

import attrs

from minikafka.common import TopicPartition

from ._consumer_group import ConsumerGroup, MemberInfo
from ._current_assignment import ConsumerGroupMember
from ._member_state import MemberState
from ._offsets_records import _Reader
from ._regex_subscriptions import (
    REGULAR_EXPRESSION,
    ResolvedRegularExpression,
    regex_records,
)
from ._target_assignment import MemberSubscription

__all__ = [
    "CONSUMER_RECORD_TYPES",
    "ConsumerGroupLoader",
    "changed_records",
    "group_records",
    "is_consumer_record",
]

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
CONSUMER_RECORD_TYPES = frozenset((*range(3, 9), REGULAR_EXPRESSION))

# Kafka's MemberState bytes in the CurrentMemberAssignment record
_STATE_BYTES = {
    MemberState.UNREVOKED_PARTITIONS: 0,
    MemberState.UNRELEASED_PARTITIONS: 1,
    MemberState.STABLE: 2,
    MemberState.UNKNOWN: 127,
}
_STATES = {b: s for s, b in _STATE_BYTES.items()}

Record = tuple[bytes, bytes | None]


# --- writing ------------------------------------------------------------------------


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return _uvarint(0)
    raw = value.encode()
    return _uvarint(len(raw) + 1) + raw


def _array(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


_NO_TAGS = _uvarint(0)


def _key(record_type: int, *strings: str) -> bytes:
    parts = [struct.pack(">h", record_type)]
    for s in strings:
        raw = s.encode()
        parts.append(struct.pack(">h", len(raw)) + raw)
    return b"".join(parts)


def _value(*fields: bytes) -> bytes:
    return struct.pack(">h", 0) + b"".join(fields) + _NO_TAGS


def _by_topic(
    partitions: Iterable[TopicPartition], ids: Mapping[str, uuid.UUID]
) -> bytes:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return _array(
        [
            ids[topic].bytes
            + _array([struct.pack(">i", p) for p in numbers])
            + _NO_TAGS
            for topic, numbers in grouped.items()
        ]
    )


def group_records(
    group: ConsumerGroup, ids: Mapping[str, uuid.UUID]
) -> dict[bytes, bytes]:
    """The group's whole state as Kafka's records, key to value; ``ids`` names every
    topic the group's partitions are of."""
    gid = group.group_id
    out = {
        _key(GROUP_METADATA, gid): _value(struct.pack(">i", group.group_epoch)),
        _key(PARTITION_METADATA, gid): _value(
            _array(
                [
                    ids[name].bytes
                    + _compact_string(name)
                    + struct.pack(">i", count)
                    + _array([])
                    + _NO_TAGS
                    for name, count in sorted(group.metadata.items())
                    if name in ids
                ]
            )
        ),
        _key(TARGET_METADATA, gid): _value(struct.pack(">i", group.assignment_epoch)),
    }
    for member_id, member in group.members.items():
        subscription = group.subscriptions[member_id]
        info = group.info.get(member_id, MemberInfo())
        out[_key(MEMBER_METADATA, gid, member_id)] = _value(
            _compact_string(subscription.instance_id),
            _compact_string(subscription.rack_id),
            _compact_string(info.client_id),
            _compact_string(info.client_host),
            _array(
                [
                    _compact_string(t)
                    for t in sorted(subscription.subscribed_topic_names)
                ]
            ),
            _compact_string(subscription.subscribed_topic_regex),
            struct.pack(">i", member.rebalance_timeout_ms),
            _compact_string(subscription.server_assignor),
        )
        out[_key(TARGET_MEMBER, gid, member_id)] = _value(
            _by_topic(group.target.get(member_id, ()), ids)
        )
        out[_key(CURRENT_ASSIGNMENT, gid, member_id)] = _value(
            struct.pack(
                ">iib",
                member.member_epoch,
                member.previous_member_epoch,
                _STATE_BYTES.get(member.state, 127),
            ),
            _by_topic(member.assigned, ids),
            _by_topic(member.pending_revocation, ids),
        )
    out.update(regex_records(gid, group.regex))
    return out


def changed_records(
    before: Mapping[bytes, bytes], after: Mapping[bytes, bytes]
) -> list[Record]:
    """What turns the log's ``before`` into ``after``: the members' tombstones first
    (Kafka removes a member's current assignment, then its target, then its
    subscription), then each new or changed value in record-type order."""
    gone: list[Record] = [
        (k, None) for k in sorted(before.keys() - after.keys(), key=_type_desc)
    ]
    changed: list[Record] = [
        (k, v)
        for k, v in sorted(after.items(), key=lambda kv: _type_asc(kv[0]))
        if before.get(k) != v
    ]
    return gone + changed


def _type_asc(key: bytes) -> tuple[int, bytes]:
    return struct.unpack_from(">h", key)[0], key


def _type_desc(key: bytes) -> tuple[int, bytes]:
    record_type, rest = _type_asc(key)
    return -record_type, rest


# --- reading ------------------------------------------------------------------------


class _FlexReader(_Reader):
    """A flexible value: compact lengths and tagged-field sections."""

    def uvarint(self, what: str) -> int:
        shift = value = 0
        while True:
            byte = self._take(1, what)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise self.error(f"{what}: varint too long")

    def compact_string(self, what: str) -> str | None:
        size = self.uvarint(what) - 1
        if size < 0:
            return None
        try:
            return self._take(size, what).decode()
        except UnicodeDecodeError as e:
            raise self.error(f"{what} is not UTF-8: {e}") from e

    def count(self, what: str, element_size: int = 1) -> int:
        size = self.uvarint(what) - 1
        left = len(self._data) - self._pos
        if size < 0 or size * element_size > left:
            raise self.error(f"{what} count {size} with {left} bytes left")
        return size

    def topic_id(self, what: str) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16, what))

    def int8(self, what: str) -> int:
        value: int = struct.unpack(">b", self._take(1, what))[0]
        return value

    def tags(self) -> None:
        for _ in range(self.uvarint("tag count")):
            self.uvarint("tag")
            self._take(self.uvarint("tag size"), "tagged field")

    def by_topic(self, what: str) -> list[tuple[uuid.UUID, list[int]]]:
        out = []
        for _ in range(self.count(what, 17)):
            topic_id = self.topic_id(what)
            partitions = [self.int32(what) for _ in range(self.count(what, 4))]
            self.tags()
            out.append((topic_id, partitions))
        return out


def _version_zero(value: bytes, record: str) -> _FlexReader:
    reader = _FlexReader(value, record)
    version = reader.int16("version")
    if version != 0:
        raise reader.error(f"unsupported version {version}")
    return reader


@attrs.define
class _Loading:
    epoch: int = 0
    assignment_epoch: int = 0
    topics: dict[uuid.UUID, tuple[str, int]] = attrs.field(factory=dict)
    members: dict[str, tuple[MemberSubscription, MemberInfo, int]] = attrs.field(
        factory=dict
    )
    targets: dict[str, list[tuple[uuid.UUID, list[int]]]] = attrs.field(factory=dict)
    regexes: dict[str, ResolvedRegularExpression] = attrs.field(factory=dict)
    current: dict[
        str,
        tuple[
            int,
            int,
            int,
            list[tuple[uuid.UUID, list[int]]],
            list[tuple[uuid.UUID, list[int]]],
        ],
    ] = attrs.field(factory=dict)


@attrs.define
class ConsumerGroupLoader:
    """Replays consumer-group records, last one per key winning (Kafka's
    ``GroupMetadataManager.replay`` for the consumer group records), then builds the
    groups. A topic id is named by the group's partition metadata; a partition of a
    topic it no longer names (deleted meanwhile) is dropped, as the next target would
    drop it."""

    _groups: dict[str, _Loading] = attrs.field(factory=dict)

    @staticmethod
    def key_group(key: bytes) -> tuple[int, str, str]:
        """(record type, group id, member id or "") of a consumer-group key."""
        reader = _Reader(key, "consumer group record key")
        record_type = reader.int16("type")
        group_id = reader.string("group")
        member_id = ""
        if record_type in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
            member_id = reader.string("member")
        elif record_type == REGULAR_EXPRESSION:
            member_id = reader.string("regular expression")  # its second key field
        return record_type, group_id, member_id

    def replay(self, key: bytes, value: bytes | None) -> None:
        record_type, group_id, member_id = self.key_group(key)
        if value is None:
            self._tombstone(record_type, group_id, member_id)
            return
        g = self._groups.setdefault(group_id, _Loading())
        r = _version_zero(value, f"consumer group record type {record_type}")
        if record_type == GROUP_METADATA:
            g.epoch = r.int32("epoch")
        elif record_type == TARGET_METADATA:
            g.assignment_epoch = r.int32("assignment epoch")
        elif record_type == PARTITION_METADATA:
            g.topics = {}
            for _ in range(r.count("topics", 22)):
                topic_id = r.topic_id("topic id")
                name = r.compact_string("topic name") or ""
                count = r.int32("partitions")
                for _ in range(r.count("partition metadata")):
                    r.int32("partition")
                    for _ in range(r.count("racks")):
                        r.compact_string("rack")
                    r.tags()
                r.tags()
                g.topics[topic_id] = (name, count)
        elif record_type == MEMBER_METADATA:
            instance_id = r.compact_string("instance id")
            rack_id = r.compact_string("rack id")
            client_id = r.compact_string("client id") or ""
            client_host = r.compact_string("client host") or ""
            names = [r.compact_string("topic") or "" for _ in range(r.count("topics"))]
            regex = r.compact_string("regex")
            timeout = r.int32("rebalance timeout")
            assignor = r.compact_string("server assignor")
            subscription = MemberSubscription(
                names, instance_id, rack_id, assignor, regex or None
            )
            g.members[member_id] = (
                subscription,
                MemberInfo(client_id, client_host),
                timeout,
            )
        elif record_type == TARGET_MEMBER:
            g.targets[member_id] = r.by_topic("target")
        elif record_type == REGULAR_EXPRESSION:
            topics = [r.compact_string("topic") or "" for _ in range(r.count("topics"))]
            version, stamp = r.int64("version"), r.int64("timestamp")
            g.regexes[member_id] = ResolvedRegularExpression(
                frozenset(topics), version, stamp
            )
        elif record_type == CURRENT_ASSIGNMENT:
            epoch, previous, state = (
                r.int32("epoch"),
                r.int32("previous"),
                r.int8("state"),
            )
            g.current[member_id] = (
                epoch,
                previous,
                state,
                r.by_topic("assigned"),
                r.by_topic("pending"),
            )

    def _tombstone(self, record_type: int, group_id: str, member_id: str) -> None:
        g = self._groups.get(group_id)
        if g is None:
            return
        if record_type == GROUP_METADATA:
            del self._groups[group_id]  # the group was deleted
        elif record_type == MEMBER_METADATA:
            g.members.pop(member_id, None)
        elif record_type == TARGET_MEMBER:
            g.targets.pop(member_id, None)
        elif record_type == REGULAR_EXPRESSION:
            g.regexes.pop(member_id, None)
        elif record_type == CURRENT_ASSIGNMENT:
            g.current.pop(member_id, None)

    def groups(self, now: float, session_timeout_ms: int) -> list[ConsumerGroup]:
        """The groups replayed, each member given a fresh session from ``now``."""
        out = []
        for group_id, g in self._groups.items():
            names = {topic_id: name for topic_id, (name, _) in g.topics.items()}

            group = ConsumerGroup(group_id, g.epoch, g.assignment_epoch)
            group.metadata = dict(g.topics.values())
            group.topic_ids = {name: topic_id for topic_id, name in names.items()}
            group.regex.resolved = dict(g.regexes)
            for member_id, (subscription, info, timeout) in g.members.items():
                epoch, previous, state, assigned, pending = g.current.get(
                    member_id, (0, 0, _STATE_BYTES[MemberState.STABLE], [], [])
                )
                member_state = _STATES.get(state, MemberState.UNKNOWN)
                group.members[member_id] = ConsumerGroupMember(
                    member_id,
                    epoch,
                    previous,
                    member_state,
                    _tps(names, assigned),
                    _tps(names, pending),
                    timeout,
                    session_deadline=now + session_timeout_ms / 1000,
                    rebalance_deadline=now + timeout / 1000
                    if member_state is MemberState.UNREVOKED_PARTITIONS
                    else None,
                )
                group.subscriptions[member_id] = subscription
                group.info[member_id] = info
                group.target[member_id] = _tps(names, g.targets.get(member_id, []))
            out.append(group)
        return out


def _tps(
    names: Mapping[uuid.UUID, str], entries: list[tuple[uuid.UUID, list[int]]]
) -> frozenset[TopicPartition]:
    return frozenset(
        TopicPartition(names[t], p) for t, ps in entries if t in names for p in ps
    )


def is_consumer_record(key: bytes) -> bool:
    """Whether ``key`` is one of this module's record types."""
    if len(key) < 2:
        return False
    record_type: int = struct.unpack_from(">h", key)[0]
    return record_type in CONSUMER_RECORD_TYPES
