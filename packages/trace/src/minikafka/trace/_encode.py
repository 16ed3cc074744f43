"""Per-event-class trace line encoders, generated once at registration.

ARCHITECTURE.md, "Traces and labs"; the lines play the part of Kafka's request log
(``kafka.request.logger``: RequestChannel's "Completed request" line with the time breakdown),
written as JSON Lines for the labs. Building a dict per event and handing it to
``json`` cost about 4.5 µs of the 5 µs an emit took. Registration knows every field's name and
declared type, so it builds one ``%`` template per event class (constant text, the envelope's
component and event and every ``"key":``, baked in; one conversion per value) and generates a
function that reads the fields and writes the whole line with that one ``%`` operation: exact
ints by ``%d``, strings through the C escaper ``json`` itself uses (each string's spelling
remembered, :func:`escape_remembered`: a trace's strings repeat), finite floats in fixed
point where the field is a time (``ts`` with six decimals, a ``*_ms`` field with three: both
to the microsecond, :func:`decimals_for`) and by ``repr`` otherwise. Fixed point costs about a
third of the shortest round-trip digits ``json`` writes (``float.__repr__``, about 0.3 µs for
the 17 digits a measured time has), and no reader needs the digits below a microsecond.

The line is defined by :func:`reference_encoder` (value by value: json's compact, ASCII-only
spelling, floats as :func:`json_field` writes them), and a generated encoder returns exactly
its bytes: any value off the fast path (a bool or None where an int is declared, an int, inf
or nan in a float field, a non-string in a string field, an int subclass) sends the whole
event there.
"""

from __future__ import annotations

import json
import json.encoder
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._event import FieldType, TraceEvent

Encoder = Callable[["TraceEvent", float, int], str]
"""``encoder(event, ts, node)``: the event's line, newline included."""
FieldsEncoder = Callable[[tuple[object, ...], float, int], str]
"""``encoder(fields, ts, node)``: the same line from the event's field values, in
declaration order, without the event (``Tracer.emit_fields``)."""


def _json_default(value: object) -> object:
    # Map fields may hold any Mapping (a MappingProxyType, a frozen view); the C encoder
    # only knows dict, and calls back here for the rest.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(
        f"trace field value {value!r} of type {type(value).__name__} is not JSON"
    )


# ensure_ascii keeps every line pure ASCII, so len(line) is its size in bytes; allow_nan
# (the default) writes NaN and Infinity, which Python's json and Spark's reader both accept.
_encoder = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=True, default=_json_default
)

json_value: Callable[[object], str] = _encoder.encode
"""One value as the writer's JSON: the fallback of every generated encoder."""

# The C function json uses for str under ensure_ascii (the pure-Python one where the C
# accelerator is missing): quotes, escapes '"', '\\', control and non-ASCII characters.
_escape: Callable[[str], str] = json.encoder.encode_basestring_ascii
_float_repr: Callable[[float], str] = float.__repr__

ESCAPED_MAX = 4096
"""Strings whose JSON spelling :func:`escape_remembered` keeps at most."""
_escaped: dict[str, str] = {}


def escape_remembered(value: str) -> str:
    """``value`` as json spells it, remembered for the next line.

    The strings of a trace repeat (the listener, a connection's id, the client id, the
    API's name, the topic): a dict lookup is a third of the escaper's cost. Only exact
    ``str`` is remembered, and the memo is emptied when it holds :data:`ESCAPED_MAX`, so
    a broker with many connections only falls back on escaping every time. A non-string
    raises TypeError, as the escaper does.
    """
    text = _escape(value)
    if type(value) is str:
        if len(_escaped) >= ESCAPED_MAX:
            _escaped.clear()
        _escaped[value] = text
    return text


TS_DECIMALS = 6
"""Decimals of the envelope's ``ts`` (seconds since the epoch): microseconds, about what a
double holds at that magnitude anyway (its step there is a quarter of a microsecond)."""
MS_DECIMALS = 3
"""Decimals of a float field named ``*_ms`` (Kafka's names for milliseconds): microseconds,
the resolution the request path's clocks are worth."""


def decimals_for(name: str) -> int | None:
    """How many fixed decimals a finite float in field ``name`` is written with (None: the
    shortest round-trip digits, as json writes them)."""
    if name == "ts":
        return TS_DECIMALS
    return MS_DECIMALS if name.endswith("_ms") else None


def _float_text(value: float, decimals: int | None) -> str:
    # Fixed point rounds the binary value correctly, as printf's %f; never an exponent.
    # float's own methods: a subclass's __repr__ or __format__ is not what a line holds.
    if decimals is None:
        return _float_repr(value)
    return float.__format__(value, f".{decimals}f")


def json_field(name: str, value: object) -> str:
    """One field's value as a line writes it: a finite float (or float subclass) with
    :func:`decimals_for`'s fixed decimals where the name has them, anything else as json."""
    if isinstance(value, float) and value - value == 0.0:
        return _float_text(value, decimals_for(name))
    return json_value(value)


def _fast(var: str, name: str, kind: FieldType) -> tuple[str | None, str, str]:
    """The guard (None: none needed) under which ``var`` takes the fast path, the ``%``
    conversion that formats it there exactly as :func:`json_field` would, and the
    expression the conversion is given."""
    if kind.kind != "scalar":
        # Arrays and maps: the C encoder does tuples, lists and dicts (None too) itself.
        return None, "%s", f"_json({var})"
    if kind.scalar is str:
        # A string seen before is looked up, any other escaped (escape_remembered): the
        # escaper accepts str and its subclasses, spelled as json spells them, and raises
        # TypeError for anything else, as the lookup does for an unhashable value; the
        # caller's except turns either into the slow path.
        text = f"(_escaped_get({var}) or _escape_new({var}))"
        if kind.nullable:
            return None, "%s", f"_null if {var} is None else {text}"
        return None, "%s", text
    if kind.scalar is float:
        # v - v is 0.0 only for finite floats; inf and nan take json's spelling (slow path).
        guard = f"type({var}) is float and {var} - {var} == 0.0"
        decimals = decimals_for(name)
        conversion = "%r" if decimals is None else f"%.{decimals}f"
        if kind.nullable:
            text = f"_repr({var})" if decimals is None else f"'{conversion}' % {var}"
            return (
                f"({var} is None or {guard})",
                "%s",
                f"_null if {var} is None else {text}",
            )
        return f"({guard})", conversion, var
    # An exact int formats as json writes it; bool and IntEnum are ints to isinstance but
    # not to json (true) or not always to format(), so they go the slow way.
    if kind.scalar is int:
        if kind.nullable:
            return (
                f"({var} is None or type({var}) is int)",
                "%s",
                f"_null if {var} is None else {var}",
            )
        return f"type({var}) is int", "%d", var
    value = f"_true if {var} else _false"
    if kind.nullable:
        guard = f"({var} is None or type({var}) is bool)"
        return guard, "%s", f"_null if {var} is None else {value}"
    return f"type({var}) is bool", "%s", value


def reference_encoder(component: str, event: str, names: tuple[str, ...]) -> Encoder:
    """The definition of a line: the envelope and the fields in order, each value as
    :func:`json_field` writes it (json's compact, ASCII-only spelling, floats with fixed
    decimals where the name has them).

    Generated encoders fall back on it, and tests hold them to it byte for byte.
    """
    line = _ReferenceLine(component, event, names)

    def encode(record_of: TraceEvent, ts: float, node: int) -> str:
        return line(tuple(getattr(record_of, name) for name in names), ts, node)

    return encode


def reference_fields_encoder(
    component: str, event: str, names: tuple[str, ...]
) -> FieldsEncoder:
    """:func:`reference_encoder` of an event given as its field values: the same line.

    A tuple of the wrong length is a ValueError (the writer drops it, loudly).
    """
    return _ReferenceLine(component, event, names)


class _ReferenceLine:
    """The reference line of one event class from its field values (in field order)."""

    def __init__(self, component: str, event: str, names: tuple[str, ...]) -> None:
        self.head = f",{_key('component')}{_escape(component)},{_key('event')}"
        self.head += _escape(event)
        self.fields = tuple((name, "," + _key(name)) for name in names)

    def __call__(self, values: tuple[object, ...], ts: float, node: int) -> str:
        if len(values) != len(self.fields):
            raise ValueError(f"{len(values)} values for {len(self.fields)} fields")
        parts = [
            '{"ts":',
            json_field("ts", ts),
            ',"node":',
            json_value(node),
            self.head,
        ]
        for (name, key), value in zip(self.fields, values, strict=True):
            parts += (key, json_field(name, value))
        parts.append("}\n")
        return "".join(parts)


def _key(name: str) -> str:
    return _escape(name) + ":"


def encoder_source(
    component: str,
    event: str,
    names: tuple[str, ...],
    kinds: tuple[FieldType, ...],
    *,
    from_fields: bool = False,
) -> str:
    """The Python source of :func:`compile_encoder`'s function, to read or test.

    ``names`` are attribute names (Python identifiers, checked again here because they
    are written into source); the line's template, with each key's JSON spelling and
    one ``%`` conversion per value, is computed here, once. The function reads every
    field, checks in one condition that each value has its declared type (and each
    float is finite), and then writes the whole line with one ``%`` operation;
    otherwise, or if a string field holds a non-string, it returns the reference
    encoding. ``from_fields``: it takes the tuple of field values instead of the event
    (``fields, ts, node``) and unpacks it: a ValueError if its length is wrong.
    """
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"trace field name {name!r} is not an identifier")
    guards = ["type(ts) is float and ts - ts == 0.0", "type(node) is int"]
    loads: list[str] = []
    # The template: constant JSON text, '%' doubled, and one conversion per value.
    template = [
        '{"ts":%.' + str(TS_DECIMALS) + 'f,"node":%d,"component":',
        _escape(component).replace("%", "%%"),
        ',"event":',
        _escape(event).replace("%", "%%"),
    ]
    values = ["ts", "node"]
    if from_fields:
        # One UNPACK_SEQUENCE instead of a load per field ("() = fields" if none).
        loads.append(f"({''.join(f'v{i}, ' for i in range(len(names)))}) = fields")
    for index, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        var = f"v{index}"
        if not from_fields:
            loads.append(f"{var} = event.{name}")
        guard, conversion, value = _fast(var, name, kind)
        if guard is not None:
            guards.append(guard)
        template += ["," + _key(name).replace("%", "%%"), conversion]
        values.append(value)
    template.append("}\n")
    argument = "fields" if from_fields else "event"
    return "\n".join(
        [
            f"def encode({argument}, ts, node):",
            *(f"    {line}" for line in loads),
            f"    if {' and '.join(guards)}:",
            "        try:",
            f"            return {''.join(template)!r} % ({', '.join(values)},)",
            "        except TypeError:",
            "            pass",
            f"    return _slow({argument}, ts, node)",
            "",
        ]
    )


def compile_encoder(
    component: str, event: str, names: tuple[str, ...], kinds: tuple[FieldType, ...]
) -> Encoder:
    """The line encoder of one event class, generated from its declared fields."""
    slow = reference_encoder(component, event, names)  # as EventSpec.reference
    source = encoder_source(component, event, names, kinds)
    encode = _compile(source, slow, f"{component}.{event}")
    _name(encode, component, event, "")
    return typing.cast(Encoder, encode)


def compile_fields_encoder(
    component: str, event: str, names: tuple[str, ...], kinds: tuple[FieldType, ...]
) -> FieldsEncoder:
    """The same line encoder taking the event's field values (``from_fields``)."""
    slow = reference_fields_encoder(component, event, names)
    source = encoder_source(component, event, names, kinds, from_fields=True)
    encode = _compile(source, slow, f"{component}.{event}")
    _name(encode, component, event, "_fields")
    return typing.cast(FieldsEncoder, encode)


def _name(encode: types.FunctionType, component: str, event: str, tail: str) -> None:
    encode.__qualname__ = f"encode_{component}_{event}{tail}".replace("-", "_")
    encode.__doc__ = f"The trace line of a {component}.{event} event (generated)."


def _compile(source: str, slow: object, label: str) -> types.FunctionType:
    namespace: dict[str, object] = {
        "_json": json_value,
        "_escaped_get": _escaped.get,
        "_escape_new": escape_remembered,
        "_repr": _float_repr,
        "_null": "null",
        "_true": "true",
        "_false": "false",
        "_slow": slow,
    }
    code = compile(source, f"<trace encoder {label}>", "exec")
    # The source is built from checked identifiers and repr'd constants only.
    exec(code, namespace)
    encode = namespace["encode"]
    assert isinstance(encode, types.FunctionType)
    return encode
