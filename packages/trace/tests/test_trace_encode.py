"""The generated line encoders write exactly what json.dumps writes for the same record,
except finite floats: ``ts`` with six decimals, ``*_ms`` fields with three."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.trace import TraceEvent, register_event
from minikafka.trace import _encode as _encode_module
from minikafka.trace._encode import compile_encoder, encoder_source
from minikafka.trace._event import EventSpec, spec_for_class


@register_event
@attrs.frozen
class Scalars(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "encode_scalars"
    i: int
    f: float
    s: str
    b: bool
    oi: int | None
    of: float | None
    os: str | None
    ob: bool | None


@register_event
@attrs.frozen
class Containers(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "encode_containers"
    ints: tuple[int, ...]
    strs: tuple[str, ...]
    floats: tuple[float, ...] | None
    counts: Mapping[str, int]
    labels: Mapping[str, str] | None
    flags: dict[str, bool]


@register_event
@attrs.frozen
class Unusual(TraceEvent):
    """A non-ASCII field name (its JSON key is escaped) and a private attribute."""

    COMPONENT: ClassVar[str] = "test-encode"
    EVENT: ClassVar[str] = "unusual_names"
    größe: int
    _hidden: str
    match: float


@register_event
@attrs.frozen
class Timings(TraceEvent):
    """Millisecond fields (fixed decimals) beside a float that keeps its shortest digits."""

    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "encode_timings"
    wait_ms: float
    maybe_ms: float | None
    caught_up_ms_ago: float
    count: int


class Level(enum.IntEnum):
    LOW = 1


class Tagged(str):
    def __str__(self) -> str:
        return "not what json writes"


class Ratio(float):
    def __repr__(self) -> str:
        return "not what json writes either"


def _json(name: str, value: object) -> str:
    if isinstance(value, float) and math.isfinite(value):
        if name == "ts":
            return "%.6f" % value  # noqa: UP031 - the printf spelling is the definition
        if name.endswith("_ms"):
            return "%.3f" % value  # noqa: UP031
    if isinstance(value, Mapping):
        value = dict(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def _expected(event: TraceEvent, ts: object, node: object) -> str:
    """The line by definition, computed here without the package's code: json's compact
    ASCII spelling of every value, but a finite float written with six decimals as ``ts``
    (microseconds) and three as a ``*_ms`` field (microseconds of a millisecond)."""
    spec = spec_for_class(type(event))
    record: dict[str, object] = {
        "ts": ts,
        "node": node,
        "component": spec.component,
        "event": spec.event,
    }
    for name in spec.names:
        record[name] = getattr(event, name)
    body = ",".join(f"{_json(key, key)}:{_json(key, v)}" for key, v in record.items())
    return "{" + body + "}\n"


def _encode(event: TraceEvent, ts: Any, node: Any) -> str:
    return spec_for_class(type(event)).encode(event, ts, node)


# Every kind of character JSON treats specially: quotes, backslashes, control characters,
# DEL, non-ASCII in and beyond the BMP, and lone surrogates (escaped, not encoded).
_SPECIAL = '"\\/\b\f\n\r\t\x00\x1f\x7f\ud800\udfff\u2028\U0001f600'
tricky = st.text(st.characters(codec=None) | st.sampled_from(_SPECIAL), max_size=12)
longs = st.integers(-(2**63), 2**63 - 1)
doubles = st.floats()  # with nan, inf, -0.0 and subnormals

scalars = st.builds(
    Scalars,
    longs, doubles, tricky, st.booleans(),
    st.none() | longs, st.none() | doubles, st.none() | tricky, st.none() | st.booleans(),
)  # fmt: skip
containers = st.builds(
    Containers,
    st.lists(longs, max_size=4).map(tuple),
    st.lists(tricky, max_size=4).map(tuple),
    st.none() | st.lists(doubles, max_size=4).map(tuple),
    st.dictionaries(tricky, longs, max_size=3),
    st.none() | st.dictionaries(tricky, tricky, max_size=3),
    st.dictionaries(tricky, st.booleans(), max_size=3),
)
timings = st.builds(Timings, doubles, st.none() | doubles, doubles, longs)
timestamps = st.floats(0, 4e9) | doubles


@settings(max_examples=300, deadline=None, derandomize=True)
@given(event=scalars | containers | timings, ts=timestamps, node=st.integers(-1, 2**31))
def test_well_typed_events_encode_as_json_dumps(
    event: TraceEvent, ts: float, node: int
) -> None:
    assert _encode(event, ts, node) == _expected(event, ts, node)


# What a caller may pass despite the annotations (attrs does not check): each is written the
# way json writes it, as it was before the encoders were generated.
anything = st.one_of(
    st.none(),
    st.booleans(),
    longs,
    doubles,
    tricky,
    st.just(Level.LOW),
    st.just(Tagged("tagged \u2603")),
    st.just(Ratio(0.25)),
    st.just((1, "two", 3.0)),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(values=st.tuples(*[anything] * 8), ts=anything, node=anything)
def test_off_type_values_encode_as_json_dumps(
    values: tuple[Any, ...], ts: Any, node: Any
) -> None:
    event = Scalars(*values)
    assert _encode(event, ts, node) == _expected(event, ts, node)


@pytest.mark.parametrize(
    "value",
    [0.1, -0.0, 1e16, 1e-5, 5e-324, 1.7976931348623157e308, 1e22, 123456789.12345678],
)
def test_float_spellings(value: float) -> None:
    event = Scalars(1, value, "", True, None, value, None, None)
    assert _encode(event, value, 1) == _expected(event, value, 1)


@pytest.mark.parametrize(
    ("value", "ts", "ms"),
    [
        (0.1, "0.100000", "0.100"),
        (-0.0, "-0.000000", "-0.000"),
        (1e-7, "0.000000", "0.000"),
        (0.0005, "0.000500", "0.001"),  # 0.0005 is a little above it in binary
        (1_796_445_879.9517577, "1796445879.951758", "1796445879.952"),
        (1e22, "10000000000000000000000.000000", "10000000000000000000000.000"),
    ],
)
def test_times_are_written_with_fixed_decimals(value: float, ts: str, ms: str) -> None:
    """ts in microseconds, *_ms fields to the microsecond, other floats unchanged."""
    line = _encode(Timings(value, value, value, 1), value, 1)
    assert line == (
        f'{{"ts":{ts},"node":1,"component":"test","event":"encode_timings",'
        f'"wait_ms":{ms},"maybe_ms":{ms},"caught_up_ms_ago":{value!r},"count":1}}\n'
    )
    assert line == _expected(Timings(value, value, value, 1), value, 1)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_floats_as_json_spells_them(value: float) -> None:
    event = Scalars(1, value, "", True, None, value, None, None)
    line = _encode(event, value, 1)
    assert line == _expected(event, value, 1)
    assert ("Infinity" in line) or ("NaN" in line)


def test_unusual_names_and_exact_bytes() -> None:
    event = Unusual(größe=3, hidden='a"b\\c\n\u00e9', match=0.5)
    line = _encode(event, 2.5, 7)
    assert line == (
        '{"ts":2.500000,"node":7,"component":"test-encode","event":"unusual_names",'
        '"gr\\u00f6\\u00dfe":3,"_hidden":"a\\"b\\\\c\\n\\u00e9","match":0.5}\n'
    )
    assert line == _expected(event, 2.5, 7)
    assert json.loads(line)["größe"] == 3


def _fresh(spec: EventSpec) -> Any:
    """A new encoder for ``spec`` whose fallback fails the test if it is ever used."""
    encode: Any = compile_encoder(spec.component, spec.event, spec.names, spec.types)

    def slow(*_args: object) -> str:
        raise AssertionError("a well-typed event left the fast path")

    encode.__globals__["_slow"] = slow
    return encode


def test_well_typed_events_stay_on_the_fast_path() -> None:
    encode = _fresh(spec_for_class(Scalars))
    for event in (
        Scalars(-(2**63), 0.1, 'q"\\\x00\u2603', False, 1, -2.5, "x", True),
        Scalars(0, -0.0, "", True, None, None, None, None),
    ):
        assert encode(event, 1_700_000_000.123, 3) == _expected(
            event, 1_700_000_000.123, 3
        )
    containers = _fresh(spec_for_class(Containers))
    held = Containers((1, 2), ("a",), None, {"p": 1}, None, {"on": True})
    assert containers(held, 1.0, 0) == _expected(held, 1.0, 0)


def test_values_off_the_fast_path_take_the_reference() -> None:
    encode = _fresh(spec_for_class(Scalars))
    for event in (
        Scalars(True, 0.5, "", True, None, None, None, None),  # bool in an int field
        Scalars(1, 2, "", True, None, None, None, None),  # int in a float field
        Scalars(1, math.inf, "", True, None, None, None, None),
    ):
        with pytest.raises(AssertionError, match="left the fast path"):
            encode(event, 1.0, 0)


def test_a_non_identifier_field_name_is_refused() -> None:
    spec = spec_for_class(Scalars)
    with pytest.raises(ValueError, match="not an identifier"):
        encoder_source("test", "bad", ("x); import os; (y",), spec.types[:1])


def test_the_source_is_one_percent_format_per_class() -> None:
    spec = spec_for_class(Scalars)
    source = encoder_source(spec.component, spec.event, spec.names, spec.types)
    assert source.startswith("def encode(event, ts, node):")
    assert source.count('return \'{"ts":%.6f,"node":%d,') == 1
    assert "_slow(event, ts, node)" in source


def _fields_of(event: TraceEvent) -> tuple[object, ...]:
    return tuple(getattr(event, name) for name in spec_for_class(type(event)).names)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(event=scalars | containers | timings, ts=timestamps, node=st.integers(-1, 2**31))
def test_field_values_encode_to_the_same_bytes_as_the_event(
    event: TraceEvent, ts: float, node: int
) -> None:
    """Tracer.emit_fields writes exactly the line emit writes for the built event."""
    spec = spec_for_class(type(event))
    assert spec.encode_fields(_fields_of(event), ts, node) == _expected(event, ts, node)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(values=st.tuples(*[anything] * 8), ts=anything, node=anything)
def test_off_type_field_values_encode_as_json_dumps(
    values: tuple[Any, ...], ts: Any, node: Any
) -> None:
    expected = _expected(Scalars(*values), ts, node)
    assert spec_for_class(Scalars).encode_fields(values, ts, node) == expected


@pytest.mark.parametrize("count", [0, 7, 9])
def test_a_field_tuple_of_the_wrong_length_is_refused(count: int) -> None:
    """A positional mistake at an emit_fields site cannot shift columns silently."""
    with pytest.raises(ValueError, match="values to unpack"):
        spec_for_class(Scalars).encode_fields((1,) * count, 1.0, 0)


def test_the_fields_source_unpacks_the_tuple_once() -> None:
    spec = spec_for_class(Scalars)
    source = encoder_source(
        spec.component, spec.event, spec.names, spec.types, from_fields=True
    )
    assert source.startswith("def encode(fields, ts, node):")
    assert "(v0, v1, v2, v3, v4, v5, v6, v7, ) = fields" in source
    assert "event." not in source
    assert "_slow(fields, ts, node)" in source


def test_remembered_escapes_write_the_same_bytes_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A string field's spelling comes from the memo once seen, byte for byte what the
    escaper writes; a str subclass is not remembered; the memo never outgrows its bound."""
    monkeypatch.setattr(_encode_module, "ESCAPED_MAX", 3)
    _encode_module._escaped.clear()
    encode = spec_for_class(Scalars).encode_fields
    for text in ('q"\\\x00\u2603', "a", "a", "b", "c", "d", 'q"\\\x00\u2603', ""):
        values = (1, 0.5, text, True, None, None, text, None)
        assert encode(values, 1.0, 0) == _expected(Scalars(*values), 1.0, 0)
        assert text in _encode_module._escaped
        assert len(_encode_module._escaped) <= 3
    tagged = Scalars(1, 0.5, Tagged("tagged"), True, None, None, None, None)
    assert encode(_fields_of(tagged), 1.0, 0) == _expected(tagged, 1.0, 0)
    assert not any(type(key) is not str for key in _encode_module._escaped)
