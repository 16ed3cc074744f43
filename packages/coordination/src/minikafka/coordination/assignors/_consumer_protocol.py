"""The ``consumer`` protocol type's bytes: ConsumerProtocolSubscription and Assignment v0-v3.

Seed 000 and seed 002: the coordinator treats a member's JoinGroup metadata and the
leader's SyncGroup assignments as opaque bytes; only consumers read them, so the format
is Kafka's client-side ``ConsumerProtocol`` (``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``). Both start with an int16 version and continue with
a non-flexible body:

- subscription v0: topics ([]string), user_data (nullable bytes); v1 adds
  owned_partitions ([]{topic, []int32}, KIP-429); v2 adds generation_id (int32, KIP-792);
  v3 adds rack_id (nullable string, KIP-881);
- assignment v0-v3: assigned_partitions ([]{topic, []int32}), user_data (nullable bytes);
  the versions only follow the subscription's.

Versions only append fields, so a reader parses a newer version as the newest it knows
and ignores what follows, which is how Kafka keeps old consumers working in a group with
newer ones. The encoding is written by hand (a few dozen bytes, no tagged fields); the
tests check it against kio's generated schemas and kafka-python.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from minikafka.common import TopicPartition

from ._assignor import NO_GENERATION, Assignment, Subscription

CONSUMER_PROTOCOL_TYPE = "consumer"
"""JoinGroup's ``protocol_type`` for consumer groups (``ConsumerProtocol.PROTOCOL_TYPE``)."""

SUBSCRIPTION_VERSIONS = range(4)
ASSIGNMENT_VERSIONS = range(4)
HIGHEST_SUBSCRIPTION_VERSION = SUBSCRIPTION_VERSIONS[-1]
HIGHEST_ASSIGNMENT_VERSION = ASSIGNMENT_VERSIONS[-1]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """Bytes that are not a subscription or assignment (Kafka's ``SchemaException``)."""


# --- writing -----------------------------------------------------------------------------


def _int16(value: int) -> bytes:
    return _INT16.pack(value)


def _int32(value: int) -> bytes:
    return _INT32.pack(value)


def _string(value: str) -> bytes:
    raw = value.encode()
    return _int16(len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return _int16(-1) if value is None else _string(value)


def _nullable_bytes(value: bytes | None) -> bytes:
    return _int32(-1) if value is None else _int32(len(value)) + value


def _string_array(values: Iterable[str]) -> bytes:
    items = list(values)
    return _int32(len(items)) + b"".join(_string(v) for v in items)


def encode_topic_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    """``[]{topic string, partitions []int32}``, one entry per topic, topics sorted.

    The same shape serves owned partitions, assigned partitions and the sticky assignor's
    user data; grouping by topic is what the schemas' nested arrays ask for.
    """
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(set(partitions)):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_int32(len(by_topic))]
    for topic, ids in by_topic.items():
        out.append(_string(topic))
        out.append(_int32(len(ids)))
        out.extend(_int32(p) for p in ids)
    return b"".join(out)


# --- reading -----------------------------------------------------------------------------


class _Reader:
    """A cursor over the bytes; every short read is a :class:`ConsumerProtocolError`."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, size: int) -> bytes:
        if size > self.remaining:
            raise ConsumerProtocolError(
                f"needs {size} bytes at offset {self._pos}, {self.remaining} left"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int16(self) -> int:
        value: int = _INT16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        if size < 0:
            raise ConsumerProtocolError(f"negative string length {size}")
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as e:
            raise ConsumerProtocolError(f"string is not UTF-8: {e}") from e

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ConsumerProtocolError("null where a string is required")
        return value

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        if size == -1:
            return None
        if size < 0:
            raise ConsumerProtocolError(f"negative bytes length {size}")
        return self._take(size)

    def count(self) -> int:
        # The arrays here are not nullable; a count must also fit in what is left (each
        # element takes at least two bytes), so a corrupt count fails before it allocates.
        size = self.int32()
        if size < 0 or size * 2 > self.remaining:
            raise ConsumerProtocolError(
                f"array length {size} with {self.remaining} bytes left"
            )
        return size

    def string_array(self) -> list[str]:
        return [self.string() for _ in range(self.count())]

    def topic_partitions(self) -> list[TopicPartition]:
        result: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string()
            result.extend(
                TopicPartition(topic, self.int32()) for _ in range(self.count())
            )
        return result


def _version(reader: _Reader, what: str, highest: int) -> int:
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"unsupported {what} version {version}")
    # Newer versions only append fields: read what this version knows, skip the rest.
    return min(version, highest)


def _check_version(version: int, versions: range, what: str) -> None:
    if version not in versions:
        raise ConsumerProtocolError(f"cannot encode {what} version {version}")


# --- the two messages --------------------------------------------------------------------


def encode_subscription(
    subscription: Subscription, version: int = HIGHEST_SUBSCRIPTION_VERSION
) -> bytes:
    """A member's JoinGroup metadata; fields newer than ``version`` are left out."""
    _check_version(version, SUBSCRIPTION_VERSIONS, "subscription")
    out = [
        _int16(version),
        _string_array(subscription.topics),
        _nullable_bytes(subscription.user_data),
    ]
    if version >= 1:
        out.append(encode_topic_partitions(subscription.owned_partitions))
    if version >= 2:
        out.append(_int32(subscription.generation_id))
    if version >= 3:
        out.append(_nullable_string(subscription.rack_id))
    return b"".join(out)


def decode_subscription(data: bytes) -> Subscription:
    """Parse JoinGroup member metadata; fields the version lacks get their defaults."""
    reader = _Reader(data)
    version = _version(reader, "subscription", HIGHEST_SUBSCRIPTION_VERSION)
    topics = reader.string_array()
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions() if version >= 1 else []
    generation = reader.int32() if version >= 2 else NO_GENERATION
    rack = reader.nullable_string() if version >= 3 else None
    return Subscription(
        topics,
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation,
        # Kafka reads an empty rack as no rack.
        rack_id=rack or None,
    )


def encode_assignment(
    assignment: Assignment, version: int = HIGHEST_ASSIGNMENT_VERSION
) -> bytes:
    """One member's part of the leader's SyncGroup request."""
    _check_version(version, ASSIGNMENT_VERSIONS, "assignment")
    return b"".join(
        (
            _int16(version),
            encode_topic_partitions(assignment.partitions),
            _nullable_bytes(assignment.user_data),
        )
    )


def decode_assignment(data: bytes) -> Assignment:
    """Parse a SyncGroup response's assignment.

    Empty bytes fail, as in Kafka: even an empty assignment carries its version and an
    empty array, so no bytes mean the leader left this member out.
    """
    reader = _Reader(data)
    _version(reader, "assignment", HIGHEST_ASSIGNMENT_VERSION)
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    return Assignment(sorted(partitions), user_data)
