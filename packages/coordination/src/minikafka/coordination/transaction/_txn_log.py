"""The records of ``__transaction_state``: one key and one value per transactional id.

The transaction coordinator writes each move of a transaction (:class:`TxnTransitMetadata`)
as a record of the compacted topic ``__transaction_state``, keyed by the transactional
id, so compaction keeps the latest state of each; a null value (a tombstone) is a
transactional id that expired. A coordinator that becomes leader of one of the topic's
partitions replays its records into its cache.

Both key and value start with an int16 version (Kafka's ``TransactionLog``):

- ``TransactionLogKey`` v0: ``transactional_id`` (a string: int16 length, UTF-8);
- ``TransactionLogValue`` v0: producer id (int64), producer epoch (int16), transaction
  timeout (int32), the state's id (int8), the partitions (a nullable array of topic and
  partition ids), the last update and start times (int64 ms);
- ``TransactionLogValue`` v1, the first flexible version (compact strings and arrays,
  tagged fields, KIP-915): the same fields, and three tagged ones Kafka's transactions
  version 2 uses (KIP-890 part 2): the previous producer id (tag 0), the next producer
  id (tag 1) and the client's transaction version (tag 2), written only when not -1, -1
  and 0.

The classes below are written by hand in kio's form from Kafka's schemas
(``TransactionLogKey.json``, ``TransactionLogValue.json``), so kio's generic reader and
writer handle them, as the ZooKeeper-era message bodies in ``minikafka.net`` are.
"""

# No ``from __future__ import annotations``: kio reads the schema classes' field types
# at run time, as objects.
import io
import struct
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

from minikafka.common import TopicPartition

from ._txn_metadata import TxnTransitMetadata
from ._txn_state import TransactionState

__all__ = [
    "TransactionLogError",
    "TxnLogValue",
    "key_bytes",
    "read_key",
    "read_value",
    "value_bytes",
]

_INT16 = struct.Struct(">h")
_E = TypeVar("_E")


class TransactionLogError(ValueError):
    """Bytes that are not a ``__transaction_state`` record."""


# --- the schemas, in kio's form ------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _KeyV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    transactional_id: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _PartitionsV0:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    topic: str = field(metadata={"kafka_type": "string"})
    partition_ids: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _ValueV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    transaction_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_status: i8 = field(metadata={"kafka_type": "int8"})
    transaction_partitions: tuple[_PartitionsV0, ...] | None
    transaction_last_update_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})
    transaction_start_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _PartitionsV1:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    topic: str = field(metadata={"kafka_type": "string"})
    partition_ids: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _ValueV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    transaction_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_status: i8 = field(metadata={"kafka_type": "int8"})
    transaction_partitions: tuple[_PartitionsV1, ...] | None
    transaction_last_update_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})
    transaction_start_timestamp_ms: i64 = field(metadata={"kafka_type": "int64"})
    previous_producer_id: i64 = field(
        metadata={"kafka_type": "int64", "tag": 0}, default=i64(-1)
    )
    next_producer_id: i64 = field(
        metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1)
    )
    client_transaction_version: i16 = field(
        metadata={"kafka_type": "int16", "tag": 2}, default=i16(0)
    )


_VALUES: dict[int, type[_ValueV0] | type[_ValueV1]] = {0: _ValueV0, 1: _ValueV1}


# --- what the coordinator writes and reads ---------------------------------------------


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    """A value read back: the state of one transactional id as its record holds it."""

    version: int
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_last_update_timestamp: int
    txn_start_timestamp: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def key_bytes(transactional_id: str) -> bytes:
    """The record key of ``transactional_id`` (version 0)."""
    return _write(0, _KeyV0(transactional_id=transactional_id))


def read_key(data: bytes) -> str:
    """The transactional id a record key names."""
    version, body = _split(data, "key")
    if version != 0:
        raise TransactionLogError(f"unknown transaction log key version {version}")
    return _read(_KeyV0, body, "key").transactional_id


def value_bytes(transit: TxnTransitMetadata, version: int = 0) -> bytes:
    """The record value of a prepared move (v0, or the flexible v1).

    The partitions are listed by topic in name order, each topic's ids in order: Kafka
    groups them by topic the same way; a reader must not rely on the order."""
    if version not in _VALUES:
        raise TransactionLogError(f"unknown transaction log value version {version}")
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(transit.topic_partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    common = {
        "producer_id": i64(transit.producer_id),
        "producer_epoch": i16(transit.producer_epoch),
        "transaction_timeout_ms": i32(transit.txn_timeout_ms),
        # PrepareEpochFence is a state of the cache only: a fencing is written as the
        # abort it leads to.
        "transaction_status": i8(_stored(transit.state).id),
        "transaction_last_update_timestamp_ms": i64(transit.txn_last_update_timestamp),
        "transaction_start_timestamp_ms": i64(transit.txn_start_timestamp),
    }
    # An Empty transaction's partitions are written as null, any other's as a list
    # (empty once its markers are written), as Kafka's TransactionLog writes them.
    partitions_cls = _PartitionsV0 if version == 0 else _PartitionsV1
    partitions = (
        None
        if transit.state is TransactionState.EMPTY
        else tuple(
            partitions_cls(topic=t, partition_ids=tuple(i32(p) for p in ps))
            for t, ps in by_topic.items()
        )
    )
    if version == 0:
        value: _ValueV0 | _ValueV1 = _ValueV0(
            transaction_partitions=partitions,  # type: ignore[arg-type]
            **common,  # type: ignore[arg-type]
        )
    else:
        value = _ValueV1(
            transaction_partitions=partitions,  # type: ignore[arg-type]
            previous_producer_id=i64(transit.last_producer_id),
            **common,  # type: ignore[arg-type]
        )
    return _write(version, value)


def read_value(data: bytes) -> TxnLogValue:
    """A record value (v0 or v1) read back."""
    version, body = _split(data, "value")
    cls = _VALUES.get(version)
    if cls is None:
        raise TransactionLogError(f"unknown transaction log value version {version}")
    value = _read(cls, body, "value")
    try:
        state = TransactionState.from_id(int(value.transaction_status))
    except ValueError as exc:
        raise TransactionLogError(str(exc)) from None
    partitions = frozenset(
        TopicPartition(p.topic, int(i))
        for p in value.transaction_partitions or ()
        for i in p.partition_ids
    )
    extra = (
        (
            int(value.previous_producer_id),
            int(value.next_producer_id),
            int(value.client_transaction_version),
        )
        if isinstance(value, _ValueV1)
        else (-1, -1, 0)
    )
    return TxnLogValue(
        version,
        int(value.producer_id),
        int(value.producer_epoch),
        int(value.transaction_timeout_ms),
        state,
        partitions,
        int(value.transaction_last_update_timestamp_ms),
        int(value.transaction_start_timestamp_ms),
        *extra,
    )


def _stored(state: TransactionState) -> TransactionState:
    if state is TransactionState.PREPARE_EPOCH_FENCE:
        return TransactionState.PREPARE_ABORT
    return state


def _write(version: int, body: object) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_INT16.pack(version))
    entity_writer(type(body))(buffer, body)  # type: ignore[type-var]
    return buffer.getvalue()


def _split(data: bytes, what: str) -> tuple[int, bytes]:
    if len(data) < 2:
        raise TransactionLogError(f"a transaction log {what} of {len(data)} bytes")
    return _INT16.unpack_from(data)[0], data[2:]


def _read(cls: type[_E], body: bytes, what: str) -> _E:
    try:
        value, size = entity_reader(cls)(body, 0)  # type: ignore[type-var]
    except Exception as exc:  # kio raises whatever its readers meet
        raise TransactionLogError(f"malformed transaction log {what}: {exc}") from None
    if size != len(body):
        raise TransactionLogError(
            f"transaction log {what}: {len(body) - size} bytes after the record"
        )
    return value
