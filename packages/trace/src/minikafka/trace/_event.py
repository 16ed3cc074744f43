"""Trace event types: the :class:`TraceEvent` base, the registry and field-type rules.

ARCHITECTURE.md, "Traces and labs": every package declares its events as frozen attrs classes and
registers them with :func:`register_event`. Registration checks, once and at import time, everything
the writer and the Spark schemas rely on, and compiles the class's line encoder (``_encode``), so
emitting stays a few attribute reads and one formatted string.
"""

from __future__ import annotations

import re
import threading
import types
import typing
from collections.abc import Mapping
from typing import ClassVar, Literal, TypeVar

import attrs

from ._encode import (
    Encoder,
    FieldsEncoder,
    compile_encoder,
    compile_fields_encoder,
    reference_encoder,
)

ENVELOPE_FIELDS = ("ts", "node", "component", "event")
"""The names every written line starts with; event fields may not reuse them."""

# Dots would make the "component.event" keys of all_spark_schemas ambiguous, and these
# names end up as file-system friendly labels in lab output, so keep them plain.
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")

_SCALARS: tuple[type, ...] = (int, float, str, bool)


class TraceEvent:
    """Base class of all trace events.

    A concrete event is a frozen attrs class that sets ``COMPONENT`` (the package or
    subsystem, ``"net"``) and ``EVENT`` (what happened, ``"request"``) and is decorated
    with :func:`register_event`. Its fields become the columns of its Spark schema.

    The JSON Lines tracer encodes an event after ``emit`` has returned (in its writer
    thread), so what a field holds must not change once emitted: tuples for arrays, and
    a map field given a dict of its own (``dict(counts)``), never a live one.
    """

    # Empty slots so slotted attrs subclasses stay dict-free: events are built on hot
    # paths.
    __slots__ = ()

    COMPONENT: ClassVar[str]
    EVENT: ClassVar[str]


E = TypeVar("E", bound=TraceEvent)


@attrs.frozen
class FieldType:
    """The shape of one event field: a scalar, a tuple of scalars or a str-keyed map."""

    kind: Literal["scalar", "array", "map"]
    scalar: type
    """The scalar itself, the tuple's element type or the map's value type."""
    nullable: bool


@attrs.frozen
class EventSpec:
    """What registration learned about an event class, precomputed for the writer."""

    cls: type[TraceEvent]
    component: str
    event: str
    names: tuple[str, ...]
    """Field names in declaration order: the JSON keys after the envelope."""
    aliases: tuple[str, ...]
    """The matching ``__init__`` argument names (attrs strips a leading underscore)."""
    types: tuple[FieldType, ...]
    encode: Encoder = attrs.field(eq=False, repr=False)
    """``encode(event, ts, node)``: the event's JSON line, generated for this class."""
    reference: Encoder = attrs.field(eq=False, repr=False)
    """The same line by definition (a dict through ``json``): slower, for tests and bench/."""
    encode_fields: FieldsEncoder = attrs.field(eq=False, repr=False)
    """``encode_fields(fields, ts, node)``: the same line from the field values in
    declaration order, generated too (``Tracer.emit_fields``)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.component, self.event)


_lock = threading.Lock()
_by_key: dict[tuple[str, str], EventSpec] = {}
_by_class: dict[type[TraceEvent], EventSpec] = {}


def field_type(annotation: object) -> FieldType | None:
    """Classify a resolved annotation, or return None when traces cannot carry it."""
    nullable = False
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(annotation)
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            return None
        nullable = True
        annotation = rest[0]
        origin = typing.get_origin(annotation)
    if annotation in _SCALARS:
        assert isinstance(annotation, type)
        return FieldType("scalar", annotation, nullable)
    args = typing.get_args(annotation)
    if (
        origin is tuple
        and len(args) == 2
        and args[1] is Ellipsis
        and args[0] in _SCALARS
    ):
        return FieldType("array", args[0], nullable)
    if (
        origin in (dict, Mapping)
        and len(args) == 2
        and args[0] is str
        and args[1] in _SCALARS
    ):
        return FieldType("map", args[1], nullable)
    return None


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _label(cls: type, attr: str) -> str:
    value = getattr(cls, attr, None)
    if not isinstance(value, str):
        raise TypeError(f"{_class_name(cls)} must set {attr}: ClassVar[str]")
    if not _NAME.match(value):
        raise ValueError(
            f"{_class_name(cls)}.{attr} = {value!r}: use letters, digits, '_' or '-' only"
        )
    return value


def _build_spec(cls: type[TraceEvent]) -> EventSpec:
    name = _class_name(cls)
    # attrs.has() alone would accept an undecorated subclass of an attrs class.
    if "__attrs_attrs__" not in cls.__dict__:
        raise TypeError(f"{name} is not an attrs class; decorate it with @attrs.frozen")
    component = _label(cls, "COMPONENT")
    event = _label(cls, "EVENT")
    try:
        # Resolves string annotations, so `from __future__ import annotations` works.
        hints = typing.get_type_hints(cls)
    except NameError as exc:
        raise TypeError(f"{name}: cannot resolve field annotations: {exc}") from exc
    names: list[str] = []
    aliases: list[str] = []
    kinds: list[FieldType] = []
    for field in attrs.fields(typing.cast("type[attrs.AttrsInstance]", cls)):
        if field.name in ENVELOPE_FIELDS:
            raise ValueError(
                f"{name}.{field.name}: field name clashes with the envelope {ENVELOPE_FIELDS}"
            )
        if not field.init:
            raise TypeError(
                f"{name}.{field.name}: trace event fields must be init fields"
            )
        kind = field_type(hints.get(field.name, field.type))
        if kind is None:
            raise TypeError(
                f"{name}.{field.name}: unsupported field type {hints.get(field.name)!r}; use "
                "int, float, str, bool (optionally | None), tuple[X, ...] or Mapping[str, X]"
            )
        names.append(field.name)
        aliases.append(field.alias)
        kinds.append(kind)
    field_names, field_kinds = tuple(names), tuple(kinds)
    encode = compile_encoder(component, event, field_names, field_kinds)
    reference = reference_encoder(component, event, field_names)
    encode_fields = compile_fields_encoder(component, event, field_names, field_kinds)
    return EventSpec(
        cls,
        component,
        event,
        field_names,
        tuple(aliases),
        field_kinds,
        encode,
        reference,
        encode_fields,
    )


def register_event(cls: type[E]) -> type[E]:
    """Validate an event class and record it under ``(COMPONENT, EVENT)``; returns
    ``cls``.

    Re-registering the same class is a no-op. A different class under a taken key is a
    ValueError, except a redefinition of the same module and qualified name (a reloaded
    module, a re-run notebook cell), which replaces the old one.
    """
    if not isinstance(cls, type) or not issubclass(cls, TraceEvent):
        raise TypeError(f"{cls!r} is not a subclass of TraceEvent")
    spec = _build_spec(cls)
    with _lock:
        old = _by_key.get(spec.key)
        if old is not None and old.cls is not cls:
            if _class_name(old.cls) != _class_name(cls):
                raise ValueError(
                    f"trace event {spec.component}.{spec.event} is already registered "
                    "by "
                    f"{_class_name(old.cls)}; {_class_name(cls)} must use another key"
                )
            del _by_class[old.cls]
        _by_key[spec.key] = spec
        _by_class[cls] = spec
    return cls


def event_types() -> Mapping[tuple[str, str], type[TraceEvent]]:
    """Every registered event class, keyed by ``(component, event)``."""
    with _lock:
        return types.MappingProxyType(
            {key: spec.cls for key, spec in sorted(_by_key.items())}
        )


def spec_for_class(cls: type[TraceEvent]) -> EventSpec:
    """The registration of ``cls``; a TypeError names the missing decorator."""
    spec = _by_class.get(cls)
    if spec is None:
        raise TypeError(
            f"{_class_name(cls)} is not a registered trace event; decorate it with @register_event"
        )
    return spec


def spec_for_key(component: str, event: str) -> EventSpec:
    spec = _by_key.get((component, event))
    if spec is None:
        raise KeyError(f"no trace event registered as {component}.{event}")
    return spec


def _decode(name: str, value: object, kind: FieldType) -> object:
    if value is None:
        if not kind.nullable:
            raise ValueError(f"field {name!r} is missing or null but not nullable")
        return None
    if kind.kind == "array":
        if not isinstance(value, list | tuple):
            raise ValueError(f"field {name!r}: expected a JSON array, got {value!r}")
        return tuple(_scalar(item, kind.scalar) for item in value)
    if kind.kind == "map":
        if not isinstance(value, Mapping):
            raise ValueError(f"field {name!r}: expected a JSON object, got {value!r}")
        return {key: _scalar(item, kind.scalar) for key, item in value.items()}
    return _scalar(value, kind.scalar)


def _scalar(value: object, scalar: type) -> object:
    # A caller may pass 3 for a float field; JSON then holds 3, so give back 3.0.
    if scalar is float and type(value) is int:
        return float(value)
    return value


def decode_event(record: Mapping[str, object]) -> TraceEvent:
    """Rebuild the event a line of :func:`read_trace` was written from.

    The event's class must be registered in this process (import its package first).
    JSON arrays come back as tuples; the envelope's ``ts`` and ``node`` stay in ``record``.
    """
    component, event = record["component"], record["event"]
    if not isinstance(component, str) or not isinstance(event, str):
        raise ValueError(f"not a trace record (component/event missing): {record!r}")
    spec = spec_for_key(component, event)
    kwargs = {
        alias: _decode(name, record.get(name), kind)
        for name, alias, kind in zip(spec.names, spec.aliases, spec.types, strict=True)
    }
    return spec.cls(**kwargs)
