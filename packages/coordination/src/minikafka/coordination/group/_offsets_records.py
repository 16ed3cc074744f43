"""The records of ``__consumer_offsets``: offset commits and group metadata, keys and values.

Seed 000's consume path: the group coordinator keeps committed offsets and each group's
membership as records of the compacted topic ``__consumer_offsets`` and, when it becomes
coordinator for one of the topic's partitions, replays them into its cache. The key names
what a record is about (one group's offset for one partition, or one group), so compaction
keeps only the latest record per key; a null value (a tombstone) deletes it.

Every key and value is an int16 version and a non-flexible body: big-endian integers, a
string is an int16 length and UTF-8 (-1 for null), bytes an int32 length, an array an int32
count. The key's version doubles as the record type (Kafka's ``GroupCoordinatorRecordSerde``):

- key v0 and v1, ``OffsetCommitKey``: group, topic, partition (int32); Kafka writes v1;
- key v2, ``GroupMetadataKey``: group;
- keys v3-v15 are KIP-848 consumer-group and share-group records kept in the same topic:
  :class:`UnknownRecordTypeError`, which Kafka's loader logs and skips;
- ``OffsetCommitValue`` v0 and v2: offset (int64), metadata, commit_timestamp (int64);
  v1 appends expire_timestamp (int64); v3 has no expiry but a leader_epoch (int32) after
  the offset. Kafka 2.1+ writes v3, or v1 when the commit carried an expire timestamp;
- ``GroupMetadataValue`` v0: protocol_type, generation (int32), protocol and leader
  (nullable), members; v1 adds each member's rebalance_timeout; v2 adds
  current_state_timestamp (int64) before the members; v3 adds each member's nullable
  group_instance_id (KIP-345). Kafka 2.3+ writes v3.

Both values define a v4, the first flexible version (compact lengths, tagged fields), which
Kafka reads but does not write yet; it is rejected here like any unknown value version.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import attrs

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSIONS = range(4)
GROUP_VALUE_VERSIONS = range(4)

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class OffsetsRecordError(ValueError):
    """Bytes that are not an offsets-topic record, or a record that cannot be written."""


class UnknownRecordTypeError(OffsetsRecordError):
    """A key version that is not an offset commit or a classic group's metadata.

    Kafka's loader skips these ("a left over from an aborted upgrade") while any other
    malformed record fails the load, so the two need telling apart.
    """

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown record type (key version) {record_type}")
        self.record_type = record_type


@attrs.frozen
class OffsetKey:
    group: str
    topic: str
    partition: int


@attrs.frozen
class GroupMetadataKey:
    group: str


OffsetsRecordKey = OffsetKey | GroupMetadataKey


@attrs.frozen
class OffsetValue:
    """A committed offset; ``leader_epoch`` -1 means unknown (and is lost in v1)."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int | None = None


@attrs.frozen
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


def _member_tuple(members: Iterable[StoredMember]) -> tuple[StoredMember, ...]:
    return tuple(members)


@attrs.frozen
class GroupMetadataValue:
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[StoredMember, ...] = attrs.field(default=(), converter=_member_tuple)


# --- writing -----------------------------------------------------------------------------


def _pack(fmt: struct.Struct, value: int, what: str) -> bytes:
    try:
        return fmt.pack(value)
    except struct.error as e:
        raise OffsetsRecordError(f"{what} {value} does not fit its field: {e}") from e


def _nullable_string(value: str | None, what: str) -> bytes:
    if value is None:
        return _INT16.pack(-1)
    raw = value.encode()
    if len(raw) > 0x7FFF:
        raise OffsetsRecordError(
            f"{what} is {len(raw)} bytes, more than a string holds"
        )
    return _INT16.pack(len(raw)) + raw


def _bytes(value: bytes) -> bytes:
    return _pack(_INT32, len(value), "bytes length") + value


def _member(member: StoredMember) -> bytes:
    return b"".join(
        (
            _nullable_string(member.member_id, "member_id"),
            _nullable_string(member.group_instance_id, "group_instance_id"),
            _nullable_string(member.client_id, "client_id"),
            _nullable_string(member.client_host, "client_host"),
            _pack(_INT32, member.rebalance_timeout_ms, "rebalance_timeout_ms"),
            _pack(_INT32, member.session_timeout_ms, "session_timeout_ms"),
            _bytes(member.subscription),
            _bytes(member.assignment),
        )
    )


# --- reading -----------------------------------------------------------------------------


class _Reader:
    """A cursor whose every short or malformed read is an :class:`OffsetsRecordError`.

    Nothing checks that the bytes end where the record does: Kafka's generated readers
    stop after the last field and ignore the rest, and so does this one.
    """

    def __init__(self, data: bytes, record: str) -> None:
        self._data = data
        self._pos = 0
        self._record = record

    def error(self, problem: str) -> OffsetsRecordError:
        return OffsetsRecordError(f"{self._record}: {problem}")

    def _take(self, size: int, what: str) -> bytes:
        left = len(self._data) - self._pos
        if size > left:
            raise self.error(
                f"truncated {what}: needs {size} bytes at {self._pos}, {left} left"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int16(self, what: str) -> int:
        value: int = _INT16.unpack(self._take(2, what))[0]
        return value

    def int32(self, what: str) -> int:
        value: int = _INT32.unpack(self._take(4, what))[0]
        return value

    def int64(self, what: str) -> int:
        value: int = _INT64.unpack(self._take(8, what))[0]
        return value

    def nullable_string(self, what: str) -> str | None:
        size = self.int16(what)
        if size == -1:
            return None
        if size < 0:
            raise self.error(f"{what} has negative length {size}")
        try:
            return self._take(size, what).decode()
        except UnicodeDecodeError as e:
            raise self.error(f"{what} is not UTF-8: {e}") from e

    def string(self, what: str) -> str:
        value = self.nullable_string(what)
        if value is None:
            raise self.error(f"{what} is null but is not nullable")
        return value

    def blob(self, what: str) -> bytes:
        # Subscription and assignment are not nullable in the schema: -1 is an error too.
        size = self.int32(what)
        if size < 0:
            raise self.error(f"{what} has length {size}")
        return self._take(size, what)

    def count(self, what: str, element_size: int) -> int:
        # Checked against what is left, as Kafka does, so a corrupt count fails at once
        # instead of allocating or looping for two billion elements.
        size = self.int32(what)
        left = len(self._data) - self._pos
        if size < 0 or size * element_size > left:
            raise self.error(f"{what} count {size} with {left} bytes left")
        return size


def _value_version(reader: _Reader, versions: range) -> int:
    version = reader.int16("version")
    if version not in versions:
        raise reader.error(f"unsupported version {version}")
    return version


# --- public API --------------------------------------------------------------------------


def encode_offset_record(
    key: OffsetKey, value: OffsetValue | None
) -> tuple[bytes, bytes | None]:
    """An offset commit as (key, value) bytes; ``None`` makes the tombstone that deletes it."""
    key_bytes = b"".join(
        (
            _INT16.pack(OFFSET_KEY_VERSION),
            _nullable_string(key.group, "group"),
            _nullable_string(key.topic, "topic"),
            _pack(_INT32, key.partition, "partition"),
        )
    )
    if value is None:
        return key_bytes, None
    offset = _pack(_INT64, value.offset, "offset")
    metadata = _nullable_string(value.metadata, "metadata")
    commit = _pack(_INT64, value.commit_timestamp, "commit_timestamp")
    if value.expire_timestamp is not None:
        # v1 is the only version with an expiry; Kafka drops the leader epoch to write it.
        expire = _pack(_INT64, value.expire_timestamp, "expire_timestamp")
        return key_bytes, _INT16.pack(1) + offset + metadata + commit + expire
    epoch = _pack(_INT32, value.leader_epoch, "leader_epoch")
    return key_bytes, _INT16.pack(3) + offset + epoch + metadata + commit


def encode_group_record(
    key: GroupMetadataKey, value: GroupMetadataValue | None
) -> tuple[bytes, bytes | None]:
    """A group's metadata (v3) as (key, value) bytes; ``None`` is the group's tombstone."""
    key_bytes = _INT16.pack(GROUP_KEY_VERSION) + _nullable_string(key.group, "group")
    if value is None:
        return key_bytes, None
    return key_bytes, b"".join(
        (
            _INT16.pack(3),
            _nullable_string(value.protocol_type, "protocol_type"),
            _pack(_INT32, value.generation_id, "generation_id"),
            _nullable_string(value.protocol_name, "protocol_name"),
            _nullable_string(value.leader, "leader"),
            _pack(_INT64, value.current_state_timestamp, "current_state_timestamp"),
            _INT32.pack(len(value.members)),
            *(_member(m) for m in value.members),
        )
    )


def decode_key(data: bytes) -> OffsetsRecordKey:
    """A record's key; other record types raise :class:`UnknownRecordTypeError`."""
    reader = _Reader(data, "offsets record key")
    version = reader.int16("version")
    if version in (0, 1):  # the two versions share one layout
        return OffsetKey(
            reader.string("group"), reader.string("topic"), reader.int32("partition")
        )
    if version == GROUP_KEY_VERSION:
        return GroupMetadataKey(reader.string("group"))
    raise UnknownRecordTypeError(version)


def decode_offset_value(data: bytes) -> OffsetValue:
    """An offset commit value, v0-v3; fields its version lacks get their defaults."""
    reader = _Reader(data, "offset commit value")
    version = _value_version(reader, OFFSET_VALUE_VERSIONS)
    offset = reader.int64("offset")
    epoch = reader.int32("leader_epoch") if version >= 3 else -1
    metadata = reader.string("metadata")
    commit = reader.int64("commit_timestamp")
    expire = reader.int64("expire_timestamp") if version == 1 else -1
    # Kafka's loader reads an expiry of -1 (OffsetCommitRequest.DEFAULT_TIMESTAMP) as none.
    return OffsetValue(
        offset, metadata, commit, epoch, None if expire == -1 else expire
    )


def _read_member(reader: _Reader, version: int) -> StoredMember:
    member_id = reader.string("member_id")
    instance_id = reader.nullable_string("group_instance_id") if version >= 3 else None
    client_id = reader.string("client_id")
    client_host = reader.string("client_host")
    rebalance = reader.int32("rebalance_timeout") if version >= 1 else None
    session = reader.int32("session_timeout")
    # v0 predates the rebalance timeout; Kafka's loader uses the session timeout for it.
    return StoredMember(
        member_id,
        instance_id,
        client_id,
        client_host,
        session if rebalance is None else rebalance,
        session,
        reader.blob("subscription"),
        reader.blob("assignment"),
    )


def decode_group_value(data: bytes) -> GroupMetadataValue:
    """A group metadata value, v0-v3; fields its version lacks get their defaults."""
    reader = _Reader(data, "group metadata value")
    version = _value_version(reader, GROUP_VALUE_VERSIONS)
    protocol_type = reader.string("protocol_type")
    generation = reader.int32("generation")
    protocol = reader.nullable_string("protocol")
    leader = reader.nullable_string("leader")
    timestamp = reader.int64("current_state_timestamp") if version >= 2 else -1
    # The smallest member (v0, empty fields) is 18 bytes.
    count = reader.count("members", 18)
    members = [_read_member(reader, version) for _ in range(count)]
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, timestamp, members
    )


def decode_record(
    key: bytes, value: bytes | None
) -> (
    tuple[OffsetKey, OffsetValue | None]
    | tuple[GroupMetadataKey, GroupMetadataValue | None]
):
    """A whole record; a ``None`` value is a tombstone and stays ``None``."""
    decoded = decode_key(key)
    if isinstance(decoded, OffsetKey):
        return decoded, None if value is None else decode_offset_value(value)
    return decoded, None if value is None else decode_group_value(value)
