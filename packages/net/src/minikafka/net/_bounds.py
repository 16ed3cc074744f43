"""A bounds check on a request body before kio decodes it.

kio's native reader trusts declared lengths: an array that claims four billion
elements makes it try to allocate for all of them before reading one, and a failed
allocation aborts the whole process, which no ``except`` can catch. Kafka's own
generated readers refuse such input ("Tried to allocate a collection of size N, but
there are only M bytes remaining"), and so do we: this walk follows the same schema
kio will use, reading only lengths, and rejects any array, string or byte field that
claims more bytes than the frame has left. It allocates nothing and decodes no value;
record batches (``records``) are skipped by their length, so a produce request costs
a few dozen steps however large it is.
"""

from __future__ import annotations

import dataclasses
import struct
from functools import cache

import attrs
from kio.serial._introspect import (  # kio 0.6.5's schema introspection (pinned)
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.static.protocol import Entity

_FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_VARINTS = {"uvarint", "varint", "uvarlong", "varlong"}


class BoundsError(Exception):
    """A length in the body points past the end of the frame."""


def check_bounds(schema: type[Entity], buf: bytes, offset: int) -> int:
    """Walk ``schema`` over ``buf`` from ``offset``; return where the body ends."""
    return _Walker(buf).entity(schema, offset)


@attrs.frozen
class _FieldPlan:
    """What the walk needs of one field, worked out once per schema, not per request."""

    kafka_type: str
    """The primitive's Kafka type; empty for an entity field or array."""
    entity: type[Entity] | None
    is_array: bool
    nullable_entity: bool


@cache
def _plan(schema: type[Entity]) -> tuple[tuple[_FieldPlan, ...], bool]:
    plans = []
    for field in dataclasses.fields(schema):
        if get_field_tag(field) is not None:
            continue  # tagged fields are skipped by size in the tagged section
        kind = classify_field(field)
        entity = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        plans.append(
            _FieldPlan(
                kafka_type="" if entity else get_schema_field_type(field),
                entity=entity,
                is_array=kind.is_array,
                nullable_entity=isinstance(kind, EntityField) and is_optional(field),
            )
        )
    return tuple(plans), bool(schema.__flexible__)


class _Walker:
    __slots__ = ("buf", "end")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.end = len(buf)

    def entity(self, schema: type[Entity], pos: int) -> int:
        plans, flexible = _plan(schema)
        for plan in plans:
            pos = self.field(plan, flexible, pos)
        if flexible:
            pos = self.tagged_fields(pos)
        return pos

    def field(self, plan: _FieldPlan, flexible: bool, pos: int) -> int:
        count = 1
        if plan.is_array:
            count, pos = self.array_length(flexible, pos)
        elif plan.nullable_entity:
            (marker,) = self.unpack(">b", pos)
            pos += 1
            if marker < 0:
                return pos
        for _ in range(count):
            if plan.entity is not None:
                pos = self.entity(plan.entity, pos)
            else:
                pos = self.primitive(plan.kafka_type, flexible, pos)
        return pos

    def primitive(self, kafka_type: str, flexible: bool, pos: int) -> int:
        size = _FIXED_SIZES.get(kafka_type)
        if size is not None:
            return self.skip(pos, size)
        if kafka_type in _VARINTS:
            return self.uvarint(pos)[1]
        if kafka_type == "string":
            if flexible:
                length, pos = self.uvarint(pos)
                return self.skip(pos, length - 1) if length else pos
            (length,) = self.unpack(">h", pos)
            return self.skip(pos + 2, max(length, 0))
        if kafka_type in ("bytes", "records"):
            if flexible:
                length, pos = self.uvarint(pos)
                return self.skip(pos, length - 1) if length else pos
            (length,) = self.unpack(">i", pos)
            return self.skip(pos + 4, max(length, 0))
        raise BoundsError(f"no bounds rule for kafka type {kafka_type!r}")

    def array_length(self, flexible: bool, pos: int) -> tuple[int, int]:
        if flexible:
            raw, pos = self.uvarint(pos)
            count = raw - 1
        else:
            (count,) = self.unpack(">i", pos)
            pos += 4
        # Every element takes at least one byte: more elements than bytes left is a lie.
        if count > self.end - pos:
            raise BoundsError(f"array of {count} elements with {self.end - pos} bytes left")
        return max(count, 0), pos

    def tagged_fields(self, pos: int) -> int:
        count, pos = self.uvarint(pos)
        if count > self.end - pos:
            raise BoundsError(f"{count} tagged fields with {self.end - pos} bytes left")
        for _ in range(count):
            _tag, pos = self.uvarint(pos)
            size, pos = self.uvarint(pos)
            pos = self.skip(pos, size)
        return pos

    def skip(self, pos: int, size: int) -> int:
        if size < 0 or pos + size > self.end:
            raise BoundsError(f"{size} bytes declared at {pos}, frame ends at {self.end}")
        return pos + size

    def unpack(self, fmt: str, pos: int) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        self.skip(pos, size)
        return struct.unpack_from(fmt, self.buf, pos)

    def uvarint(self, pos: int) -> tuple[int, int]:
        value, shift = 0, 0
        while True:
            if pos >= self.end:
                raise BoundsError("varint runs past the end of the frame")
            byte = self.buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value, pos
            shift += 7
            if shift > 63:
                raise BoundsError("varint longer than 10 bytes")
