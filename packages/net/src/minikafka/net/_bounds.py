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

The walk is on every request's path, so it is written out once per schema as one plain
Python function (:func:`walk_source` shows it): Kafka's generated readers are code
written from the schema too. Walking the schema's steps with a call per entity, field
and skip cost a one-record produce request more than kio's decoding of it.

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
from collections.abc import Callable
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
    return _walk(schema)(buf, offset, len(buf))


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


def _short(pos: int, size: int, end: int) -> BoundsError:
    return BoundsError(f"{size} bytes declared at {pos}, frame ends at {end}")


def _null(name: str) -> BoundsError:
    return BoundsError(f"non-nullable field {name} was serialized as null")


def _too_many(count: int, pos: int, end: int) -> BoundsError:
    return BoundsError(f"array of {count} elements with {end - pos} bytes left")


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``: its value and where it ends."""
    value, shift = 0, 0
    while True:
        if pos >= end:
            raise BoundsError("varint runs past the end of the frame")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise BoundsError("varint longer than 10 bytes")


def _tagged_fields(buf: bytes, pos: int, end: int) -> int:
    """Skip a flexible entity's tagged fields, each by its declared size."""
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise BoundsError(f"{count} tagged fields with {end - pos} bytes left")
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if size > end - pos:
            raise _short(pos, size, end)
        pos += size
    return pos


_Walk = Callable[[bytes, int, int], int]


@cache
def _walk(schema: type[Entity]) -> _Walk:
    """``schema``'s walk as one Python function (:func:`walk_source`), compiled once."""
    namespace: dict[str, object] = {
        "BoundsError": BoundsError,
        "_short": _short,
        "_null": _null,
        "_too_many": _too_many,
        "_uvarint": _uvarint,
        "_tagged_fields": _tagged_fields,
        "_I8": _I8.unpack_from,
        "_I16": _I16.unpack_from,
        "_I32": _I32.unpack_from,
    }
    exec(walk_source(schema), namespace)  # our own code, written from the schema
    return typing.cast(_Walk, namespace["walk"])


def walk_source(schema: type[Entity]) -> str:
    """The Python source of ``schema``'s walk: ``walk(buf, pos, end) -> end of body``."""
    writer = _WalkWriter()
    writer.line("def walk(buf, pos, end):", 0)
    writer.entity(schema, 1)
    writer.line("return pos", 1)
    return "\n".join(writer.lines) + "\n"


class _WalkWriter:
    """Writes the checks of a schema's walk as lines of Python, entity by entity."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def entity(self, schema: type[Entity], depth: int) -> None:
        steps, flexible = _plan(schema)
        if not steps and not flexible:
            self.line("pass", depth)  # an entity of no fields: nothing to check
        for step in steps:
            if isinstance(step, int):
                # A run of fixed-size fields: one skip for all of them.
                self.skip(str(step), depth)
            else:
                self.field(step, flexible, depth)
        if flexible:  # tagged fields: usually none, one zero byte
            self.line("if pos < end and buf[pos] == 0:", depth)
            self.line("pos += 1", depth + 1)
            self.line("else:", depth)
            self.line("pos = _tagged_fields(buf, pos, end)", depth + 1)

    def skip(self, size: str, depth: int) -> None:
        self.line(f"if pos + {size} > end:", depth)
        self.line(f"raise _short(pos, {size}, end)", depth + 1)
        self.line(f"pos += {size}", depth)

    def field(self, plan: _FieldPlan, flexible: bool, depth: int) -> None:
        self.line(f"# {plan.name}", depth)
        if plan.is_array:
            self.array(plan, flexible, depth)
        elif plan.entity is not None:
            if plan.nullable:  # a nullable struct: a marker byte, -1 for null
                self.skip("1", depth)
                self.line("if _I8(buf, pos - 1)[0] >= 0:", depth)
                self.entity(plan.entity, depth + 1)
            else:
                self.entity(plan.entity, depth)
        else:
            self.primitive(plan, plan.nullable, flexible, depth)

    def array(self, plan: _FieldPlan, flexible: bool, depth: int) -> None:
        self.length("count", "_I32", 4, flexible, depth)
        # Every element takes at least one byte: more elements than bytes left is a lie.
        self.line("if count > end - pos:", depth)
        self.line("raise _too_many(count, pos, end)", depth + 1)
        depth = self.unless_null("count", plan.nullable, plan.name, depth)
        if plan.item_size:  # fixed-size elements: skipped in one step
            self.skip(f"count * {plan.item_size}", depth)
            return
        self.line("for _ in range(count):", depth)
        if plan.entity is not None:
            self.entity(plan.entity, depth + 1)
        else:
            self.primitive(plan, plan.nullable_items, flexible, depth + 1)

    def primitive(
        self, plan: _FieldPlan, nullable: bool, flexible: bool, depth: int
    ) -> None:
        kafka_type = plan.kafka_type
        if plan.item_size:  # only as an array's element; a struct's runs are merged
            self.skip(str(plan.item_size), depth)
        elif kafka_type in _VARINTS:
            self.line("pos = _uvarint(buf, pos, end)[1]", depth)
        elif kafka_type in ("string", "bytes", "records"):
            if kafka_type == "string":
                self.length("length", "_I16", 2, flexible, depth)
            else:
                self.length("length", "_I32", 4, flexible, depth)
            depth = self.unless_null("length", nullable, plan.name, depth)
            self.skip("length", depth)
        else:
            message = f"no bounds rule for kafka type {kafka_type!r}"
            self.line(f"raise BoundsError({message!r})", depth)

    def length(
        self, name: str, prefix: str, size: int, flexible: bool, depth: int
    ) -> None:
        """Read a length or count into ``name``: a varint plus one in a flexible version
        (0 is null), else a signed big-endian int (negative is null)."""
        if flexible:
            self.line("if pos < end and buf[pos] < 0x80:", depth)
            self.line(f"{name} = buf[pos] - 1", depth + 1)
            self.line("pos += 1", depth + 1)
            self.line("else:", depth)
            self.line(f"{name}, pos = _uvarint(buf, pos, end)", depth + 1)
            self.line(f"{name} -= 1", depth + 1)
        else:
            self.line(f"if pos + {size} > end:", depth)
            self.line(f"raise _short(pos, {size}, end)", depth + 1)
            self.line(f"{name} = {prefix}(buf, pos)[0]", depth)
            self.line(f"pos += {size}", depth)

    def unless_null(self, length: str, nullable: bool, name: str, depth: int) -> int:
        """A null (any negative length or count, not only -1, as Kafka's readers take
        it) ends the field where the schema allows one and is malformed anywhere else;
        returns the depth of the code that reads the value."""
        if nullable:
            self.line(f"if {length} >= 0:", depth)
            return depth + 1
        self.line(f"if {length} < 0:", depth)
        self.line(f"raise _null({name!r})", depth + 1)
        return depth
