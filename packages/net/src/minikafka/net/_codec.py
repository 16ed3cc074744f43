"""Message bodies: kio's generated classes, looked up by API key and version.

kio generates one frozen dataclass per (API, version, request|response) from Kafka's
own JSON schemas and gives it a native codec; this module is the thin index over it
the rest of minikafka uses, plus :func:`build`, which constructs the class of any
version from the fields it has (so one handler can answer Metadata v0 to v13) and
refuses a field name that no version of the message has (a typo is an error, not a
silently missing field).

kio has no classes for the ZooKeeper-era inter-broker APIs (LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown: Kafka 4.0 dropped their schemas); ``_zk_schemas``
writes them in kio's form and the lookups below fall back to it. One kio class cannot
carry what Kafka sends (DescribeTransactions v0's start time -1):
``_describe_transactions_v0`` is used in its place.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import re
import typing
from collections.abc import Mapping
from functools import cache
from typing import TypeVar

from kio.index import (
    UnknownAPIKey,
    UnknownEntity,
    load_request_schema,
    load_response_schema,
)
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

from . import _describe_transactions_v0, _zk_schemas
from ._bounds import BoundsError, check_bounds

E = TypeVar("E", bound=Entity)


class BodyDecodeError(Exception):
    """The body does not match the schema its header announced."""


def api_name(api_key: int) -> str:
    """Kafka's name for an API key, e.g. ``Metadata`` for 3."""
    name = api_key_map.get(api_key) or _zk_schemas.API_NAMES.get(api_key)
    if name is None:
        return f"Unknown({api_key})"
    return "".join(part.capitalize() for part in name.split("_"))


@cache
def request_schema(api_key: int, api_version: int) -> type[RequestPayload] | None:
    try:
        return load_request_schema(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity):
        return _zk_schemas.REQUESTS.get((api_key, api_version))


# Responses whose kio class cannot carry what Kafka sends: minikafka's own, in kio's form.
_RESPONSE_FIXES: Mapping[tuple[int, int], type[ResponsePayload]] = {
    (65, 0): _describe_transactions_v0.DescribeTransactionsResponse,
}


@cache
def response_schema(api_key: int, api_version: int) -> type[ResponsePayload] | None:
    fixed = _RESPONSE_FIXES.get((api_key, api_version))
    if fixed is not None:
        return fixed
    try:
        return load_response_schema(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity):
        return _zk_schemas.RESPONSES.get((api_key, api_version))


def decode_request_body(
    api_key: int, api_version: int, frame: bytes, offset: int
) -> RequestPayload:
    schema = request_schema(api_key, api_version)
    if schema is None:
        raise BodyDecodeError(f"no schema for api key {api_key} version {api_version}")
    return _decode(schema, frame, offset)


def decode_response_body(
    api_key: int, api_version: int, frame: bytes, offset: int
) -> ResponsePayload:
    schema = response_schema(api_key, api_version)
    if schema is None:
        raise BodyDecodeError(f"no schema for api key {api_key} version {api_version}")
    return _decode(schema, frame, offset)


def _decode(schema: type[E], frame: bytes, offset: int) -> E:
    try:
        check_bounds(schema, frame, offset)
    except BoundsError as e:
        raise BodyDecodeError(f"{schema.__name__}: {e}") from e
    try:
        body, _size = entity_reader(schema)(frame, offset)
    except Exception as e:
        # kio raises SerialError for short buffers, ValueError/TypeError for values its
        # types reject (bad UTF-8, a negative count), KeyError for a tagged field it
        # does not know. Whatever it is, the bytes came from a peer: not our bug.
        raise BodyDecodeError(f"{schema.__name__}: {type(e).__name__}: {e}") from e
    return body


def encode_entity(entity: Entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def build(cls: type[E], /, **values: object) -> E:
    """Construct ``cls`` from the values whose names it has, ignoring the others.

    Kafka's schemas grow by versions: Metadata v1 adds ``controller_id``, v2
    ``cluster_id``, v13 a top-level ``error_code``. A handler gives every value it
    knows and each version takes what it carries. A name that no version of the
    message has is a programming error and raises ``TypeError``, as does a field the
    class requires but no value names.
    """
    names = _field_names(cls)
    if names.issuperset(values):
        return cls(**values)  # every value is this version's: no filtered copy
    unknown = values.keys() - names - _message_fields(cls)
    if unknown:
        raise TypeError(
            f"no version of {cls.__module__}.{cls.__qualname__} has a field "
            + ", ".join(repr(name) for name in sorted(unknown))
        )
    return cls(**{k: v for k, v in values.items() if k in names})


# kio lays its classes out as kio.schema.<message>.v<version>.<request|response|...>,
# with the nested entities beside the top-level class in the same module.
_SCHEMA_MODULE = re.compile(r"^kio\.schema\.(?P<message>\w+)\.v\d+\.(?P<part>\w+)$")


@cache
def _message_fields(cls: type[Entity]) -> frozenset[str]:
    """Every field name of ``cls`` in any version of its message (same class name)."""
    match = _SCHEMA_MODULE.match(cls.__module__)
    if match is None:
        return frozenset(f.name for f in _fields(cls))
    names: set[str] = set()
    for version in schema_name_map.get(match["message"], {}):
        module_name = f"kio.schema.{match['message']}.v{version}.{match['part']}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        sibling = getattr(module, cls.__name__, None)
        if isinstance(sibling, type) and dataclasses.is_dataclass(sibling):
            names.update(f.name for f in dataclasses.fields(sibling))
    return frozenset(names)


@cache
def nested(cls: type[Entity], field_name: str) -> type[Entity]:
    """The element class of a ``tuple[X, ...]`` field, e.g. a response's broker entries
    (or of a nullable one, ``tuple[X, ...] | None``)."""
    hint = _hints(cls)[field_name]
    members = typing.get_args(hint)
    if type(None) in members:
        hint = next(m for m in members if m is not type(None))
    args = typing.get_args(hint)
    element = args[0] if args else hint
    if not isinstance(element, type):
        raise TypeError(f"{cls.__name__}.{field_name} is not a nested entity field")
    return typing.cast(type[Entity], element)


def has_field(cls: type[Entity], field_name: str) -> bool:
    return field_name in _field_names(cls)


@cache
def _field_names(cls: type[Entity]) -> frozenset[str]:
    # Looked up on every build(): dataclasses.fields() makes a tuple each call.
    return frozenset(f.name for f in _fields(cls))


@cache
def _hints(cls: type[Entity]) -> Mapping[str, object]:
    return typing.get_type_hints(cls)


def _fields(cls: type[Entity]) -> tuple[dataclasses.Field[object], ...]:
    return dataclasses.fields(cls)
