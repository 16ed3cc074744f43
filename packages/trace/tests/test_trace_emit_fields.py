"""Tracer.emit_fields: an event given as its field values writes the line emit writes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import (
    JsonLinesTracer,
    NullTracer,
    TraceEvent,
    TracerClosedError,
    read_trace,
    register_event,
    trace_files,
)
from minikafka.trace.testing import RecordingTracer


@register_event
@attrs.frozen
class Served(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "fields_served"
    client_id: str | None
    api_key: int
    total_ms: float


@register_event
@attrs.frozen
class Other(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "fields_other"
    n: int


_ROWS = [("c\u2603", 0, 0.1 + 0.2), (None, 18, 1e-7), ("x", 3, 12.5)]


@pytest.mark.parametrize("flush_interval", [None, 30.0])
def test_the_file_is_byte_identical_to_emitted_events(
    tmp_path: Path, flush_interval: float | None
) -> None:
    """With or without the writer thread, in one chunk or one line at a time."""
    built, given = tmp_path / "built", tmp_path / "given"
    with JsonLinesTracer.open(built, 1, flush_interval=flush_interval) as tracer:
        for n, row in enumerate(_ROWS):
            tracer.emit(Served(*row), ts=1_700_000_000.5 + n)
    with JsonLinesTracer.open(given, 1, flush_interval=flush_interval) as tracer:
        for n, row in enumerate(_ROWS):
            tracer.emit_fields(Served, row, ts=1_700_000_000.5 + n)
    [built_file], [given_file] = trace_files(built), trace_files(given)
    assert given_file.read_bytes() == built_file.read_bytes()
    assert len(given_file.read_bytes().splitlines()) == len(_ROWS)


def test_a_wrong_field_count_is_dropped_loudly_and_the_trace_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.ERROR, "minikafka.trace"),
        JsonLinesTracer.open(tmp_path, 1, flush_interval=30.0) as tracer,
    ):
        tracer.emit_fields(Served, ("c", 0), ts=1.0)
        tracer.emit_fields(Served, ("c", 0, 1.0), ts=2.0)
    assert [record["ts"] for record in read_trace(tmp_path)] == [2.0]
    assert "cannot be encoded; dropped" in caplog.text


def test_only_the_kinds_asked_for_are_written(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, 1, events=["test.fields_other"]) as tracer:
        tracer.emit_fields(Served, ("c", 0, 1.0), ts=1.0)
        tracer.emit_fields(Other, (7,), ts=2.0)
    assert [record["event"] for record in read_trace(tmp_path)] == ["fields_other"]


def test_after_close_emit_fields_raises(tmp_path: Path) -> None:
    tracer = JsonLinesTracer.open(tmp_path, 1)
    tracer.close()
    with pytest.raises(TracerClosedError, match="Served emitted after the tracer"):
        tracer.emit_fields(Served, ("c", 0, 1.0))


def test_the_recording_tracer_keeps_the_typed_event() -> None:
    """So tests of an emit_fields site assert on events, and a bad count fails there."""
    tracer = RecordingTracer()
    tracer.emit_fields(Served, ("c", 0, 1.0), ts=5.0)
    assert tracer.records == [(5.0, Served("c", 0, 1.0))]
    with pytest.raises(TypeError):
        tracer.emit_fields(Served, ("c", 0))
    NullTracer().emit_fields(Served, ("c", 0))  # drops anything, checks nothing


def test_flushing_nothing_creates_no_file(tmp_path: Path) -> None:
    """An idle tracer's writer thread flushes every interval; no empty files appear."""
    tracer = JsonLinesTracer.open(tmp_path, 1, flush_interval=30.0)
    tracer.flush()
    assert trace_files(tmp_path) == []
    tracer.emit_fields(Other, (1,), ts=1.0)
    tracer.flush()
    tracer.flush()
    tracer.close()
    assert len(trace_files(tmp_path)) == 1
