"""Requests of any API version from plain values: ``make(API, 5, group_id="g", ...)``.

kio has one class per API version, each with only the fields that version carries. A
scenario names its request once, with plain Python values (ints, strings, bytes, lists of
dicts for nested entities); :func:`make` builds the class of the version asked for,
keeping the fields that version has, converting each value to kio's field type, and
filling a field nobody named with the schema's default, or a neutral value when the
schema has none. So one scenario text serves every version of an API.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Mapping
from functools import cache

from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64, i64Timedelta
from kio.static.protocol import Entity, RequestPayload

from minikafka.net import request_schema


def make(api_key: int, version: int, **values: object) -> RequestPayload:
    cls = request_schema(api_key, version)
    if cls is None:
        raise ValueError(f"kio has no request class for api key {api_key} v{version}")
    return typing.cast(RequestPayload, _entity(cls, values))


def _entity(cls: type[Entity], values: Mapping[str, object]) -> Entity:
    hints = _hints(cls)
    fields: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            fields[field.name] = _fit(hints[field.name], values[field.name])
        elif (
            field.default is dataclasses.MISSING
            and field.default_factory is dataclasses.MISSING
        ):
            fields[field.name] = _neutral(hints[field.name])
    return cls(**fields)


def _fit(hint: object, value: object) -> object:
    """``value`` as the field's type: kio's sized ints, timedeltas (given in ms), records."""
    if value is None:
        return None
    inner = _strip_optional(hint)
    if typing.get_origin(inner) is tuple:
        (element, _ellipsis) = typing.get_args(inner)
        assert isinstance(value, tuple | list), (hint, value)
        return tuple(_fit(element, v) for v in value)
    assert isinstance(inner, type), hint
    if dataclasses.is_dataclass(inner):
        assert isinstance(value, Mapping), (inner, value)
        return _entity(typing.cast(type[Entity], inner), value)
    if issubclass(inner, i64Timedelta | i32Timedelta):
        if isinstance(value, int):
            value = datetime.timedelta(milliseconds=value)
        assert isinstance(value, datetime.timedelta)
        return inner.parse(value)
    if issubclass(inner, i8 | i16 | i32 | i64):
        assert isinstance(value, int)
        return inner(value)
    if issubclass(inner, Records):
        assert isinstance(value, bytes)
        return Records(value)
    if issubclass(inner, uuid.UUID) and isinstance(value, str):
        return uuid.UUID(value)
    return value


def _neutral(hint: object) -> object:
    inner = _strip_optional(hint)
    if typing.get_origin(inner) is tuple:
        return ()
    assert isinstance(inner, type), hint
    if issubclass(inner, bool):
        return False
    if issubclass(inner, i8 | i16 | i32 | i64):
        return inner(0)
    if issubclass(inner, i64Timedelta | i32Timedelta):
        return inner.parse(datetime.timedelta(0))
    if issubclass(inner, int):
        return 0
    if issubclass(inner, bytes):
        return b""
    if issubclass(inner, str):
        return ""
    if issubclass(inner, uuid.UUID):
        return uuid.UUID(int=0)
    if dataclasses.is_dataclass(inner):
        return _entity(typing.cast(type[Entity], inner), {})
    raise TypeError(f"no neutral value for {hint!r}")


def _strip_optional(hint: object) -> object:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0]
    return hint


@cache
def _hints(cls: type[Entity]) -> Mapping[str, object]:
    return typing.get_type_hints(cls)
