"""A tracer writes only the kinds of event it was asked for, and says so before an event
is built (``wants``), so a hot path builds no event nobody reads."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs

from minikafka.trace import (
    JsonLinesTracer,
    NullTracer,
    TraceEvent,
    read_trace,
    register_event,
)
from minikafka.trace.testing import RecordingTracer


@register_event
@attrs.frozen
class Asked(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "kinds_asked"
    n: int


@register_event
@attrs.frozen
class NotAsked(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "kinds_not_asked"
    n: int


def test_only_the_kinds_asked_for_are_written_in_order(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, 1, events=["test.kinds_asked"]) as tracer:
        assert tracer.wants(Asked)
        assert not tracer.wants(NotAsked)
        assert tracer.enabled  # other kinds still go through emit's own check
        for n in range(3):
            tracer.emit(Asked(n), ts=1.0 + n)
            tracer.emit(NotAsked(n), ts=1.5 + n)
    records = list(read_trace(tmp_path))
    assert [(r["event"], r["n"], r["ts"]) for r in records] == [
        ("kinds_asked", 0, 1.0),
        ("kinds_asked", 1, 2.0),
        ("kinds_asked", 2, 3.0),
    ]


def test_without_a_selection_every_kind_is_written(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, 1) as tracer:
        assert tracer.wants(Asked)
        assert tracer.wants(NotAsked)
        tracer.emit(Asked(1), ts=1.0)
        tracer.emit(NotAsked(2), ts=2.0)
    assert [r["event"] for r in read_trace(tmp_path)] == [
        "kinds_asked",
        "kinds_not_asked",
    ]


def test_a_closed_tracer_and_the_null_tracer_want_nothing(tmp_path: Path) -> None:
    tracer = JsonLinesTracer.open(tmp_path, 1)
    tracer.close()
    assert not tracer.wants(Asked)
    assert not NullTracer().wants(Asked)
    recording = RecordingTracer()
    assert recording.wants(Asked)
    recording.close()
    assert not recording.wants(Asked)
