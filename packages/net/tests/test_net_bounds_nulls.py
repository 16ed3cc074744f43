"""A null where the schema forbids one is a malformed body, in every request kio models.

Kafka's generated readers throw on a negative length for a non-nullable array, string or
bytes field; kio decodes it to ``None`` and the handler later fails with a TypeError
(ListOffsets, DescribeConfigs, CreatePartitions, DeleteTopics,
OffsetCommit, OffsetFetch, LeaveGroup). The bounds check must refuse every such body,
and still accept a null wherever the schema allows one.

The bodies are written by a small encoder of this file's own, which fills every field
with a minimal value and every array with one element, so that every field at every
depth is reached; kio decoding the un-nulled body checks that the encoder speaks the
same format kio does.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Iterator, Mapping

import pytest
import trio
from kio.schema.list_offsets.v1.request import ListOffsetsRequest
from kio.serial import entity_reader
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
)
from kio.static.protocol import Entity

from minikafka.net import Request, encode_request_header, request_schema
from minikafka.net._bounds import _FIXED_SIZES, _VARINTS, BoundsError, check_bounds
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    echo_metadata,
    request_frame,
    serving,
)

_ITEM = "[]"  # a path step meaning "the array's (one) element"

# Every request schema kio models, for every API key and version: a superset of what the
# broker advertises (its table lives in the broker package, above this one).
SCHEMAS = [
    schema
    for api_key in range(100)
    for version in range(20)
    if (schema := request_schema(api_key, version)) is not None
]


def _nullable(annotation: object) -> bool:
    return typing.get_origin(annotation) in (types.UnionType, typing.Union) and type(
        None
    ) in typing.get_args(annotation)


def _item(annotation: object) -> object:
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return typing.get_args(annotation)[0]


def _fields(schema: type[Entity]) -> Iterator[dataclasses.Field[object]]:
    return (f for f in dataclasses.fields(schema) if get_field_tag(f) is None)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _null(kafka_type: str, flexible: bool) -> bytes:
    if flexible:
        return b"\x00"
    return struct.pack(">h" if kafka_type == "string" else ">i", -1)


def _minimal_primitive(kafka_type: str, flexible: bool) -> bytes:
    if kafka_type in _FIXED_SIZES:  # the bounds check's own table of widths
        return bytes(_FIXED_SIZES[kafka_type])
    if kafka_type in _VARINTS:
        return b"\x00"
    text = b"a" if kafka_type == "string" else b""
    if flexible:
        return _uvarint(len(text) + 1) + text
    return struct.pack(">h" if kafka_type == "string" else ">i", len(text)) + text


def encode(
    schema: type[Entity], null_at: tuple[str, ...] = (), path: tuple[str, ...] = ()
) -> bytes:
    """A body of ``schema`` with one element in every array, and a null at ``null_at``."""
    flexible = bool(schema.__flexible__)
    out = bytearray()
    for field in _fields(schema):
        here = (*path, field.name)
        kind = classify_field(field)
        entity = (
            kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        )
        kafka_type = "" if entity else get_schema_field_type(field)
        if here == null_at:
            out += _null("array" if kind.is_array else kafka_type, flexible)
            continue
        if kind.is_array:
            out += _uvarint(2) if flexible else struct.pack(">i", 1)
            if entity is not None:
                out += encode(entity, null_at, (*here, _ITEM))
            elif (*here, _ITEM) == null_at:
                out += _null(kafka_type, flexible)
            else:
                out += _minimal_primitive(kafka_type, flexible)
            continue
        if entity is not None:
            if _nullable(field.type):
                out += b"\x01"
            out += encode(entity, null_at, here)
            continue
        out += _minimal_primitive(kafka_type, flexible)
    if flexible:
        out += b"\x00"  # no tagged fields
    return bytes(out)


def null_targets(
    schema: type[Entity], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], bool]]:
    """Every (path, nullable) of an array, string or bytes field, or of a string array's
    element, at any depth."""
    for field in _fields(schema):
        here = (*path, field.name)
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            yield here, _nullable(field.type)
            yield from null_targets(kind.type_, (*here, _ITEM))
        elif isinstance(kind, EntityField):
            yield from null_targets(kind.type_, here)
        elif kind.is_array:
            yield here, _nullable(field.type)
            if get_schema_field_type(field) in ("string", "bytes", "records"):
                yield (*here, _ITEM), _nullable(_item(field.type))
        elif get_schema_field_type(field) in ("string", "bytes", "records"):
            yield here, _nullable(field.type)


class _Recording:
    """Serves Metadata (echoed) and ListOffsets (noted, never answered): a ListOffsets
    that reached it would show in ``seen``."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return {18: (0, 4), 3: (0, 12), 2: (1, 5)}

    async def handle(self, request: Request) -> None:
        self.seen.append(request.api_key)
        if request.api_key == 3:
            echo_metadata(request)


def _id(schema: type[Entity]) -> str:
    return f"{schema.__name__}v{schema.__version__}"


@pytest.mark.parametrize("schema", SCHEMAS, ids=_id)
def test_a_null_is_refused_exactly_where_the_schema_forbids_it(
    schema: type[Entity],
) -> None:
    """Every non-nullable array, string and bytes field (and string-array element) sent as
    null is refused by the bounds check; every nullable one sent as null is accepted."""
    baseline = encode(schema)
    assert check_bounds(schema, baseline, 0) == len(baseline)
    # The encoder speaks kio's format: kio reads the baseline to its last byte.
    _body, size = entity_reader(schema)(baseline, 0)
    assert size == len(baseline)
    for path, nullable in null_targets(schema):
        body = encode(schema, null_at=path)
        if nullable:
            assert check_bounds(schema, body, 0) == len(body), path
        else:
            with pytest.raises(BoundsError, match="serialized as null"):
                check_bounds(schema, body, 0)


def test_the_sweep_covers_the_fields_of_the_issue() -> None:
    """The APIs the issue names have non-nullable arrays in the sweep (a guard against a
    sweep that silently finds nothing)."""
    names = {
        (s.__name__, path[0])
        for s in SCHEMAS
        for path, nullable in null_targets(s)
        if not nullable and len(path) == 1
    }
    for expected in [
        ("ListOffsetsRequest", "topics"),
        ("DescribeConfigsRequest", "resources"),
        ("CreatePartitionsRequest", "topics"),
        ("DeleteTopicsRequest", "topic_names"),
        ("OffsetCommitRequest", "topics"),
        ("LeaveGroupRequest", "members"),
    ]:
        assert expected in names


async def test_a_null_array_closes_only_its_connection() -> None:
    """Over the wire: ListOffsets v1 with a null ``topics`` closes that connection before
    any handler sees it, and the server goes on serving another client."""
    handler = _Recording()
    # replica_id, then topics = null
    body = struct.pack(">i", -1) + struct.pack(">i", -1)
    payload = encode_request_header(2, 1, 7, "test") + body
    assert ListOffsetsRequest.__version__ == 1
    async with serving(handler) as server:
        bystander = await RawConnection.open(server)
        victim = await RawConnection.open(server)
        await victim.send(struct.pack(">i", len(payload)) + payload)
        with trio.fail_after(10):
            assert await victim.wait_closed()
            await bystander.send(request_frame(METADATA_V9, 1))
            response = await bystander.receive_response(3, 9)
            assert response is not None
            assert response[0] == 1
        await bystander.aclose()
    assert handler.seen == [3]
