"""The pieces of Kafka's wire format the hand-written Produce and Fetch responses share.

Flexible versions (KIP-482) write lengths as unsigned varints of length + 1, so an empty
compact array is 1 and a null compact string or array 0, and end each structure with its
tagged fields: a count, then each field's tag, size and value. An empty tagged-fields
section is a count of 0; one field numbered 0 starts with its count (1) and its tag (0).

KIP-951: a partition refused because this broker is not its leader carries the leader
this broker knows of, and the response those leaders' endpoints, so the client need not
ask Metadata before it retries.

KIP-516: from Produce v13 and Fetch v13 a request names a topic by its id. The handlers
look the name up; an id no topic has gets a name no topic can have (``:`` is not allowed
in one), which marks its partitions UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable

from minikafka.common import TopicPartition

from ._metadata_cache import AliveBroker, MetadataCache

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
NO_TAGS = b"\x00"
ONE_TAG_ZERO = b"\x01\x00"
NULL_COMPACT = b"\x00"
"""A null compact string, array or records."""
EMPTY_COMPACT = b"\x01"
"""An empty compact array (or records of no bytes)."""
_NULL_STRING = I16.pack(-1)
UNKNOWN_TOPIC_ID = ":unknown-topic-id:"


_ONE_BYTE = tuple(bytes((value,)) for value in range(0x80))
"""The varints of 0-127, one byte each: most lengths and counts, built once."""


def uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(value: str | None, flexible: bool) -> bytes:
    """A nullable string: int16 length (-1: null), or a compact string (unsigned varint
    length + 1, 0: null)."""
    if value is None:
        return NULL_COMPACT if flexible else _NULL_STRING
    encoded = value.encode()
    if flexible:
        return uvarint(len(encoded) + 1) + encoded
    return I16.pack(len(encoded)) + encoded


def array_length(count: int, flexible: bool) -> bytes:
    return uvarint(count + 1) if flexible else I32.pack(count)


def tagged_fields(fields: Iterable[tuple[int, bytes]]) -> bytes:
    """A tagged-fields section of ``(tag, value)`` pairs, in tag order."""
    present = sorted(fields)
    out = [uvarint(len(present))]
    for tag, value in present:
        out.append(uvarint(tag) + uvarint(len(value)) + value)
    return b"".join(out)


def node_endpoints(endpoints: list[AliveBroker] | None) -> bytes:
    """A response's tagged fields: none, or tag 0, the leaders' endpoints (KIP-951)."""
    if not endpoints:
        return NO_TAGS
    entries = [uvarint(len(endpoints) + 1)]
    for node in endpoints:
        entries.append(I32.pack(node.node_id) + string(node.host, True))
        entries.append(I32.pack(node.port) + string(node.rack, True) + NO_TAGS)
    return tagged_fields([(0, b"".join(entries))])


def current_leaders(
    listener: str, cache: MetadataCache, refused: Iterable[TopicPartition]
) -> tuple[dict[TopicPartition, tuple[int, int]], list[AliveBroker]]:
    """For each partition in ``refused``, its leader and leader epoch as this broker's
    metadata has them, and the endpoints of those leaders alive on the request's
    listener (Kafka's getCurrentLeader)."""
    current: dict[TopicPartition, tuple[int, int]] = {}
    for tp in refused:
        topic = cache.topic(tp.topic)
        partition = None if topic is None else topic.partitions.get(tp.partition)
        if partition is not None:
            current[tp] = (partition.leader, partition.leader_epoch)
    leader_ids = {leader for leader, _ in current.values()}
    endpoints = [b for b in cache.alive_brokers(listener) if b.node_id in leader_ids]
    return current, endpoints


def topic_name_by_id(cache: MetadataCache, topic_id: uuid.UUID | None) -> str:
    """The name of the topic ``topic_id`` names, or a name starting with
    :data:`UNKNOWN_TOPIC_ID` if no topic has that id."""
    found = None if topic_id is None else cache.topic_by_id(topic_id)
    return found.name if found is not None else f"{UNKNOWN_TOPIC_ID}{topic_id}"
