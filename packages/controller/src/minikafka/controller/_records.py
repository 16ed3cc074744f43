"""Metadata records: what the controller decides, as data (seed 004 §2, KIP-500, KIP-631).

In KRaft mode the cluster's metadata is a log, ``__cluster_metadata``. Every decision of
the controller (a broker registered, a topic created, a leader elected) is a record in
that log, and every controller and broker builds its view of the cluster by replaying
the records in order. The classes below are those records, with Kafka's names and api
keys; the fields are the ones a reader needs to follow the mechanisms, a subset of
Kafka's schemas.

The codec is ours and small. A record is framed as Kafka frames metadata records
(frame version, api key, record version, then the fields), and the fields are encoded
from the attrs field types: ``int`` as a zig-zag varint, ``str`` as a length-prefixed
UTF-8 string (-1 for ``None``), ``bytes`` as a length and the bytes, ``bool`` as one
byte, ``UUID`` as 16 bytes, tuples as a count and their items. Each record becomes the
value of one Kafka record in a record batch, written with the log package like any
other partition's data.
"""

from __future__ import annotations

import enum
import types
import typing
import uuid
from collections.abc import Callable
from typing import ClassVar, TypeAlias

import attrs

# Leader values with a meaning of their own (Kafka's LeaderConstants).
NO_LEADER = -1
NO_LEADER_CHANGE = -2  # a PartitionChangeRecord that leaves the leader alone

FRAME_VERSION = 1

# The topic of the KRaft metadata log; no client may create or write a topic of this name.
METADATA_TOPIC = "__cluster_metadata"


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type codes, as DescribeConfigs and ConfigRecord carry them."""

    TOPIC = 2
    BROKER = 4


@attrs.frozen
class BrokerEndpoint:
    """One listener of a broker: how clients reach it."""

    name: str
    host: str
    port: int
    security_protocol: int = 0  # PLAINTEXT


@attrs.frozen
class RegisterBrokerRecord:
    """A broker joined (or re-joined) the cluster. Its epoch is this record's offset."""

    API_KEY: ClassVar[int] = 0
    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool = True


@attrs.frozen
class UnregisterBrokerRecord:
    API_KEY: ClassVar[int] = 1
    broker_id: int
    broker_epoch: int


@attrs.frozen
class TopicRecord:
    API_KEY: ClassVar[int] = 2
    name: str
    topic_id: uuid.UUID


@attrs.frozen
class PartitionRecord:
    """A partition as created: its replicas, ISR and leader (seed 001's "leader and ISR")."""

    API_KEY: ClassVar[int] = 3
    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0


@attrs.frozen
class ConfigRecord:
    """A dynamic config set (``value``) or deleted (``value=None``)."""

    API_KEY: ClassVar[int] = 4
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@attrs.frozen
class PartitionChangeRecord:
    """What changed in one partition; ``None`` (or NO_LEADER_CHANGE) means unchanged.

    Replaying it bumps the partition epoch always and the leader epoch when the leader
    changes, so the epochs themselves need not be carried (Kafka does the same).
    """

    API_KEY: ClassVar[int] = 5
    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None


@attrs.frozen
class FenceBrokerRecord:
    """The broker may not lead or be in any ISR until it is unfenced."""

    API_KEY: ClassVar[int] = 7
    broker_id: int
    broker_epoch: int


@attrs.frozen
class UnfenceBrokerRecord:
    API_KEY: ClassVar[int] = 8
    broker_id: int
    broker_epoch: int


@attrs.frozen
class RemoveTopicRecord:
    API_KEY: ClassVar[int] = 9
    topic_id: uuid.UUID


@attrs.frozen
class FeatureLevelRecord:
    """A finalized feature level, e.g. ``metadata.version``."""

    API_KEY: ClassVar[int] = 12
    name: str
    feature_level: int


@attrs.frozen
class ProducerIdsRecord:
    """A block of producer ids was handed out (KIP-730): every id below
    ``next_producer_id`` is taken, so no two producers ever share one, across restarts too.

    ``broker_id`` and ``broker_epoch`` say which broker asked; in a snapshot, where the
    record stands for the whole history, they are -1.
    """

    API_KEY: ClassVar[int] = 15
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@attrs.frozen
class UserScramCredentialRecord:
    """One user's SCRAM credential for one mechanism (KIP-554), set or replaced.

    ``mechanism`` is the admin API's code (1: SCRAM-SHA-256, 2: SCRAM-SHA-512); the
    log holds the derived keys, never the password nor the salted password.
    """

    API_KEY: ClassVar[int] = 11
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@attrs.frozen
class RemoveUserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism deleted (KIP-554)."""

    API_KEY: ClassVar[int] = 22
    name: str
    mechanism: int


@attrs.frozen
class AccessControlEntryRecord:
    """One ACL created (KIP-801's StandardAuthorizer in KRaft): a resource pattern
    bound to an entry, with the Uuid DeleteAcls removes it by.

    The enum fields carry Kafka's codes (``ResourceType``, ``PatternType``,
    ``AclOperation``, ``AclPermissionType``), as the admin APIs do.
    """

    API_KEY: ClassVar[int] = 18
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@attrs.frozen
class RemoveAccessControlEntryRecord:
    """The ACL of this Uuid deleted (KIP-801)."""

    API_KEY: ClassVar[int] = 19
    id: uuid.UUID


MetadataRecord: TypeAlias = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | ConfigRecord
    | PartitionChangeRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | RemoveTopicRecord
    | FeatureLevelRecord
    | ProducerIdsRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
)

RECORD_TYPES: dict[int, type[MetadataRecord]] = {
    cls.API_KEY: cls for cls in typing.get_args(MetadataRecord)
}


class MetadataRecordError(ValueError):
    """Bytes that are not a metadata record this codec knows."""


# --- encoding --------------------------------------------------------------------------


def _write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_varint(out: bytearray, value: int) -> None:
    if not -(2**63) <= value < 2**63:  # zig-zag below would silently garble it
        raise ValueError(f"{value} does not fit in a 64-bit varint")
    _write_uvarint(out, (value << 1) ^ (value >> 63))  # zig-zag, as Kafka's varlong


def _write_str(out: bytearray, value: str | None) -> None:
    if value is None:
        _write_varint(out, -1)
        return
    data = value.encode()
    _write_varint(out, len(data))
    out += data


_Writer: TypeAlias = Callable[[bytearray, typing.Any], None]
_ReaderFn: TypeAlias = Callable[["_Reader"], typing.Any]


def _write_bytes(out: bytearray, value: bytes) -> None:
    _write_uvarint(out, len(value))
    out.extend(value)


def _optional(inner: _Writer) -> _Writer:
    def write(out: bytearray, value: object) -> None:
        out.append(0 if value is None else 1)
        if value is not None:
            inner(out, value)

    return write


def _sequence(inner: _Writer) -> _Writer:
    def write(out: bytearray, values: tuple[object, ...]) -> None:
        _write_uvarint(out, len(values))
        for value in values:
            inner(out, value)

    return write


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise MetadataRecordError("truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise MetadataRecordError("varint longer than 10 bytes")

    def varint(self) -> int:
        raw = self.uvarint()
        if raw >= 2**64:  # a 10th byte can carry 7 bits; a varlong has room for 1
            raise MetadataRecordError("varint wider than 64 bits")
        return (raw >> 1) ^ -(raw & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise MetadataRecordError(f"field of {n} bytes runs past the record")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def string(self) -> str | None:
        length = self.varint()
        if length == -1:
            return None
        try:
            return self.take(length).decode()
        except UnicodeDecodeError as exc:
            raise MetadataRecordError("string field is not UTF-8") from exc


def _read_required_str(reader: _Reader) -> str:
    value = reader.string()
    if value is None:
        raise MetadataRecordError("null in a non-nullable string field")
    return value


def _read_bytes(reader: _Reader) -> bytes:
    return reader.take(reader.uvarint())


def _read_bool(reader: _Reader) -> bool:
    return reader.take(1) != b"\x00"


def _read_optional(inner: _ReaderFn) -> _ReaderFn:
    return lambda reader: inner(reader) if _read_bool(reader) else None


def _read_sequence(inner: _ReaderFn) -> _ReaderFn:
    def read(reader: _Reader) -> tuple[object, ...]:
        count = reader.uvarint()
        if count > len(reader.data):  # each item takes at least one byte
            raise MetadataRecordError(f"sequence of {count} items in a shorter record")
        return tuple(inner(reader) for _ in range(count))

    return read


def _codec_for(tp: object) -> tuple[_Writer, _ReaderFn]:
    """The writer and reader for one field type, built from its annotation."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        if inner is str:  # a nullable string has its own marker (-1), as in Kafka
            return _write_str, lambda reader: reader.string()
        write, read = _codec_for(inner)
        return _optional(write), _read_optional(read)
    if origin is tuple:
        write, read = _codec_for(args[0])
        return _sequence(write), _read_sequence(read)
    if tp is int:
        return _write_varint, lambda reader: reader.varint()
    if tp is str:
        return _write_str, _read_required_str
    if tp is bytes:
        return _write_bytes, _read_bytes
    if tp is bool:
        return (lambda out, v: out.append(1 if v else 0)), _read_bool
    if tp is uuid.UUID:
        return (lambda out, v: out.extend(v.bytes)), lambda r: uuid.UUID(
            bytes=r.take(16)
        )
    if isinstance(tp, type) and attrs.has(tp):
        return _struct_codec(tp)
    raise TypeError(f"no metadata codec for field type {tp!r}")


_STRUCT_CODECS: dict[type, tuple[_Writer, _ReaderFn]] = {}


def _struct_codec(cls: type) -> tuple[_Writer, _ReaderFn]:
    """Field codecs for an attrs class, built once from its annotations."""
    cached = _STRUCT_CODECS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    fields = [(f.name, _codec_for(hints[f.name])) for f in attrs.fields(cls)]

    def write(out: bytearray, value: object) -> None:
        for name, (writer, _) in fields:
            writer(out, getattr(value, name))

    def read(reader: _Reader) -> object:
        return cls(**{name: reader_fn(reader) for name, (_, reader_fn) in fields})

    _STRUCT_CODECS[cls] = (write, read)
    return write, read


def encode_record(record: MetadataRecord, version: int = 0) -> bytes:
    """Frame version, api key and record version, then the fields in declaration order."""
    out = bytearray()
    _write_uvarint(out, FRAME_VERSION)
    _write_uvarint(out, record.API_KEY)
    _write_uvarint(out, version)
    _struct_codec(type(record))[0](out, record)
    return bytes(out)


def decode_record(data: bytes) -> MetadataRecord:
    reader = _Reader(data)
    frame_version = reader.uvarint()
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(f"unknown frame version {frame_version}")
    api_key = reader.uvarint()
    cls = RECORD_TYPES.get(api_key)
    if cls is None:
        raise MetadataRecordError(f"unknown metadata record type {api_key}")
    version = reader.uvarint()
    if version != 0:
        raise MetadataRecordError(f"{cls.__name__} version {version} is not supported")
    try:
        record = _struct_codec(cls)[1](reader)
    except (
        TypeError,
        ValueError,
    ) as exc:  # a bad UUID length, a bool field given an int...
        raise MetadataRecordError(f"bad {cls.__name__}: {exc}") from exc
    if reader.pos != len(data):
        raise MetadataRecordError(
            f"{len(data) - reader.pos} bytes after a {cls.__name__}"
        )
    assert isinstance(record, cls)
    return record
