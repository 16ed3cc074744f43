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

It also refuses a null where the schema has no null: a negative length on an array,
string or byte field the schema declares non-nullable. Kafka's generated readers throw
("non-nullable field topics was serialized as null") and the request is malformed; kio
would hand the handler ``None`` where its types promise a tuple or a ``str``, and the
handler would fail deep inside with a TypeError. Refused here, such a body closes its
connection like any other malformed one.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from functools import cache

import attrs
from kio.serial._introspect import (  # kio 0.6.5's schema introspection (pinned)
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
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
    nullable: bool
    """The field itself may be null (an array, string, bytes or struct)."""
    nullable_items: bool
    """An array's elements may be null (a string array's ``str | None``)."""
    name: str
    item_size: int
    """Bytes of one element if it is a fixed-size primitive (an ``int32`` or an array of
    them), else 0: such an array is skipped in one step, whatever its count."""


_Step = _FieldPlan | int
"""A schema's walk: a field to follow, or a run of fixed-size fields to skip at once."""


@cache
def _plan(schema: type[Entity]) -> tuple[tuple[_Step, ...], bool]:
    """The steps for ``schema``, with every run of fixed-size fields merged into one
    number of bytes (a request header's ``acks`` and ``timeout_ms`` are one skip of 6):
    the walk is on every request's path, so it makes as few steps as it can."""
    steps: list[_Step] = []
    for field in dataclasses.fields(schema):
        if get_field_tag(field) is not None:
            continue  # tagged fields are skipped by size in the tagged section
        kind = classify_field(field)
        entity = (
            kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        )
        kafka_type = "" if entity else get_schema_field_type(field)
        plan = _FieldPlan(
            kafka_type=kafka_type,
            entity=entity,
            is_array=kind.is_array,
            nullable=_admits_none(field.type),
            nullable_items=kind.is_array and _admits_none(_item_type(field.type)),
            name=f"{schema.__name__}.{field.name}",
            item_size=_FIXED_SIZES.get(kafka_type, 0),
        )
        if plan.item_size and not plan.is_array:
            if steps and isinstance(steps[-1], int):
                steps[-1] += plan.item_size
            else:
                steps.append(plan.item_size)
        else:
            steps.append(plan)
    return tuple(steps), bool(schema.__flexible__)


def _admits_none(annotation: object) -> bool:
    """``X | None`` at the top of the annotation (kio's spelling of "nullable")."""
    origin = typing.get_origin(annotation)
    return origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(
        annotation
    )


def _item_type(annotation: object) -> object:
    """The element type of ``tuple[X, ...]`` or ``tuple[X, ...] | None``."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return typing.get_args(annotation)[0]


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Walker:
    __slots__ = ("buf", "end")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.end = len(buf)

    def entity(self, schema: type[Entity], pos: int) -> int:
        steps, flexible = _plan(schema)
        for step in steps:
            # A number is a run of fixed-size fields: one skip for all of them.
            pos = (
                self.skip(pos, step)
                if isinstance(step, int)
                else self.field(step, flexible, pos)
            )
        if flexible:
            pos = self.tagged_fields(pos)
        return pos

    def field(self, plan: _FieldPlan, flexible: bool, pos: int) -> int:
        count = 1
        nullable = plan.nullable
        if plan.is_array:
            count, pos = self.array_length(flexible, pos)
            if count < 0:
                return self.null(plan, pos)
            if plan.item_size:
                return self.skip(pos, count * plan.item_size)
            nullable = plan.nullable_items
        elif plan.entity is not None and plan.nullable:
            self.skip(pos, 1)
            marker = _I8.unpack_from(self.buf, pos)[0]
            pos += 1
            if marker < 0:
                return pos
        for _ in range(count):
            if plan.entity is not None:
                pos = self.entity(plan.entity, pos)
            else:
                pos = self.primitive(plan, nullable, flexible, pos)
        return pos

    def null(self, plan: _FieldPlan, pos: int) -> int:
        """A null where the schema allows one ends the field; anywhere else it is malformed."""
        if plan.nullable:
            return pos
        raise BoundsError(f"non-nullable field {plan.name} was serialized as null")

    def primitive(
        self, plan: _FieldPlan, nullable: bool, flexible: bool, pos: int
    ) -> int:
        kafka_type = plan.kafka_type
        # only as an array's element; a struct's runs are merged steps
        if plan.item_size:
            return self.skip(pos, plan.item_size)
        if kafka_type in _VARINTS:
            return self.uvarint(pos)[1]
        if kafka_type in ("string", "bytes", "records"):
            if flexible:
                raw, pos = self.uvarint(pos)
                length = raw - 1
            else:
                prefix = _I16 if kafka_type == "string" else _I32
                self.skip(pos, prefix.size)
                length = prefix.unpack_from(self.buf, pos)[0]
                pos += prefix.size
            if length < 0:
                # Any negative length is a null to Kafka's readers, not only -1.
                if nullable:
                    return pos
                raise BoundsError(
                    f"non-nullable field {plan.name} was serialized as null"
                )
            return self.skip(pos, length)
        raise BoundsError(f"no bounds rule for kafka type {kafka_type!r}")

    def array_length(self, flexible: bool, pos: int) -> tuple[int, int]:
        """The declared element count (negative: a null array) and where the elements
        begin."""
        if flexible:
            raw, pos = self.uvarint(pos)
            count = raw - 1
        else:
            self.skip(pos, 4)
            count = _I32.unpack_from(self.buf, pos)[0]
            pos += 4
        # Every element takes at least one byte: more elements than bytes left is a lie.
        if count > self.end - pos:
            raise BoundsError(
                f"array of {count} elements with {self.end - pos} bytes left"
            )
        return count, pos

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
            raise BoundsError(
                f"{size} bytes declared at {pos}, frame ends at {self.end}"
            )
        return pos + size

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
