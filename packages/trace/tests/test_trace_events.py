"""register_event: what it accepts, what it rejects and why; decode_event."""

# Deliberately postponed annotations: registration must resolve them.
from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import (
    ENVELOPE_FIELDS,
    TraceEvent,
    decode_event,
    event_types,
    register_event,
)
from minikafka.trace._event import FieldType, field_type, spec_for_class


@register_event
@attrs.frozen
class Everything(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "events_everything"
    an_int: int
    a_float: float
    a_str: str
    a_bool: bool
    maybe_int: int | None
    maybe_str: typing.Optional[str]  # noqa: UP045 - the old spelling must work too
    ints: tuple[int, ...]
    strs: tuple[str, ...]
    floats: tuple[float, ...]
    counts: Mapping[str, int]
    labels: dict[str, str]
    weights: typing.Mapping[str, float]  # the old spelling must work too


def test_registered_under_component_and_event() -> None:
    assert event_types()[("test", "events_everything")] is Everything


def test_event_types_is_read_only() -> None:
    types_ = event_types()
    with pytest.raises(TypeError):
        types_[("test", "x")] = Everything  # type: ignore[index]


def test_postponed_annotations_are_resolved() -> None:
    spec = spec_for_class(Everything)
    assert dict(zip(spec.names, spec.types, strict=True)) == {
        "an_int": FieldType("scalar", int, False),
        "a_float": FieldType("scalar", float, False),
        "a_str": FieldType("scalar", str, False),
        "a_bool": FieldType("scalar", bool, False),
        "maybe_int": FieldType("scalar", int, True),
        "maybe_str": FieldType("scalar", str, True),
        "ints": FieldType("array", int, False),
        "strs": FieldType("array", str, False),
        "floats": FieldType("array", float, False),
        "counts": FieldType("map", int, False),
        "labels": FieldType("map", str, False),
        "weights": FieldType("map", float, False),
    }


@pytest.mark.parametrize(
    "annotation",
    [
        list[int],
        tuple[int, int],
        tuple[int],
        dict[int, int],
        Mapping[str, list[int]],
        int | str,
        int | str | None,
        bytes,
        object,
        set[str],
        tuple[tuple[int, ...], ...],
    ],
)
def test_unsupported_annotations(annotation: object) -> None:
    assert field_type(annotation) is None


def test_rejects_a_non_attrs_class() -> None:
    class Plain(TraceEvent):
        COMPONENT: ClassVar[str] = "test"
        EVENT: ClassVar[str] = "events_plain"

    with pytest.raises(TypeError, match="not an attrs class"):
        register_event(Plain)


def test_rejects_an_undecorated_subclass_of_an_event() -> None:
    class Sub(Everything):
        EVENT: ClassVar[str] = "events_sub"

    with pytest.raises(TypeError, match="not an attrs class"):
        register_event(Sub)


def test_rejects_a_class_that_is_not_a_trace_event() -> None:
    @attrs.frozen
    class NotAnEvent:
        COMPONENT: ClassVar[str] = "test"
        EVENT: ClassVar[str] = "events_not"

    with pytest.raises(TypeError, match="not a subclass of TraceEvent"):
        register_event(NotAnEvent)  # type: ignore[type-var]


def test_rejects_missing_component() -> None:
    @attrs.frozen
    class NoComponent(TraceEvent):
        EVENT: ClassVar[str] = "events_no_component"
        x: int

    with pytest.raises(TypeError, match="must set COMPONENT"):
        register_event(NoComponent)


def test_rejects_missing_event() -> None:
    @attrs.frozen
    class NoEvent(TraceEvent):
        COMPONENT: ClassVar[str] = "test"
        x: int

    with pytest.raises(TypeError, match="must set EVENT"):
        register_event(NoEvent)


def test_rejects_a_dotted_name() -> None:
    @attrs.frozen
    class Dotted(TraceEvent):
        COMPONENT: ClassVar[str] = "test.sub"
        EVENT: ClassVar[str] = "events_dotted"

    with pytest.raises(ValueError, match="COMPONENT"):
        register_event(Dotted)


def test_rejects_an_unsupported_field_type() -> None:
    @attrs.frozen
    class Listy(TraceEvent):
        COMPONENT: ClassVar[str] = "test"
        EVENT: ClassVar[str] = "events_listy"
        offsets: list[int]

    with pytest.raises(TypeError, match=r"Listy\.offsets: unsupported field type"):
        register_event(Listy)
    assert ("test", "events_listy") not in event_types()


@pytest.mark.parametrize("name", ENVELOPE_FIELDS)
def test_rejects_envelope_name_clash(name: str) -> None:
    cls = attrs.make_class(
        "Clash", {name: attrs.field(type=int)}, bases=(TraceEvent,), frozen=True
    )
    setattr(cls, "COMPONENT", "test")  # noqa: B010 - make_class returns a plain type
    setattr(cls, "EVENT", f"events_clash_{name}")  # noqa: B010
    with pytest.raises(ValueError, match="clashes with the envelope"):
        register_event(cls)


def test_rejects_init_false_fields() -> None:
    @attrs.frozen
    class Derived(TraceEvent):
        COMPONENT: ClassVar[str] = "test"
        EVENT: ClassVar[str] = "events_derived"
        x: int
        y: int = attrs.field(init=False, default=0)

    with pytest.raises(TypeError, match="init fields"):
        register_event(Derived)


@attrs.frozen
class First(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "events_duplicate"
    x: int


@attrs.frozen
class Second(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "events_duplicate"
    y: int


def test_rejects_a_duplicate_key() -> None:
    register_event(First)
    with pytest.raises(
        ValueError, match=r"test\.events_duplicate is already registered"
    ):
        register_event(Second)
    assert event_types()[("test", "events_duplicate")] is First


def test_registering_twice_is_a_no_op() -> None:
    assert register_event(Everything) is Everything
    assert event_types()[("test", "events_everything")] is Everything


def test_a_redefinition_replaces_the_old_class() -> None:
    # What a re-run notebook cell or an importlib.reload does.
    def define() -> type[TraceEvent]:
        @register_event
        @attrs.frozen
        class Reloaded(TraceEvent):
            COMPONENT: ClassVar[str] = "test"
            EVENT: ClassVar[str] = "events_reloaded"
            x: int

        return Reloaded

    old, new = define(), define()
    assert old is not new
    assert event_types()[("test", "events_reloaded")] is new


@register_event
@attrs.frozen
class Private(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "events_private"
    _hidden: int
    total_ms: float | None = None


def test_decode_event_rebuilds_the_event() -> None:
    event = Everything(
        1,
        2.5,
        "s",
        True,
        None,
        "m",
        (1, 2),
        ("a",),
        (0.5,),
        {"a": 1},
        {"k": "v"},
        {"w": 1.0},
    )
    record: dict[str, object] = {
        "ts": 1.0, "node": 3, "component": "test", "event": "events_everything",
        "an_int": 1, "a_float": 2.5, "a_str": "s", "a_bool": True, "maybe_int": None,
        "maybe_str": "m", "ints": [1, 2], "strs": ["a"], "floats": [0.5],
        "counts": {"a": 1}, "labels": {"k": "v"}, "weights": {"w": 1},
    }  # fmt: skip
    decoded = decode_event(record)
    assert decoded == event
    assert isinstance(decoded, Everything)
    assert type(decoded.weights["w"]) is float


def test_decode_event_uses_init_aliases_and_defaults_nullable_fields() -> None:
    record: dict[str, object] = {
        "component": "test",
        "event": "events_private",
        "_hidden": 4,
    }
    assert decode_event(record) == Private(hidden=4)


def test_decode_event_rejects_unknown_types_and_missing_fields() -> None:
    with pytest.raises(KeyError, match=r"no trace event registered as test\.nope"):
        decode_event({"component": "test", "event": "nope"})
    with pytest.raises(ValueError, match="'_hidden' is missing"):
        decode_event({"component": "test", "event": "events_private"})
