"""The JSON Lines tracer's queue: ``emit`` stamps and queues, the writer thread encodes.

What the request path relies on: events reach the file in emit order without anyone
calling ``flush()``, a full queue is encoded by the emitter (backpressure, not loss), the
timestamp is the emit's, and an event that cannot be encoded costs only itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import JsonLinesTracer, TraceEvent, read_trace, register_event


@register_event
@attrs.frozen
class Queued(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "queue_item"
    n: int
    tags: tuple[str, ...]


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.01)  # polling the trace directory, inside the deadline


def _ns(directory: Path) -> list[int]:
    return [int(str(r["n"])) for r in read_trace(directory)]


def test_the_writer_thread_writes_every_event_in_emit_order(tmp_path: Path) -> None:
    count = 2_000  # several of the writer thread's chunks
    with JsonLinesTracer.open(tmp_path, node=1, flush_interval=0.05) as tracer:
        for n in range(count):
            tracer.emit(Queued(n, ("a",)), ts=float(n))
        _wait_for(lambda: len(_ns(tmp_path)) == count, "the writer thread's lines")
        assert _ns(tmp_path) == list(range(count))


def test_a_full_queue_is_encoded_by_the_emitter(tmp_path: Path) -> None:
    # The writer thread waits an hour: only the emitter can write these lines.
    with JsonLinesTracer.open(
        tmp_path, node=1, flush_interval=3600, buffer_bytes=0, max_pending=10
    ) as tracer:
        for n in range(9):
            tracer.emit(Queued(n, ()), ts=0.0)
        assert _ns(tmp_path) == []
        tracer.emit(Queued(9, ()), ts=0.0)
        assert _ns(tmp_path) == list(range(10))


def test_an_event_is_stamped_when_emitted_not_when_encoded(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, node=1, flush_interval=3600) as tracer:
        before = time.time()
        tracer.emit(Queued(0, ()))
        after = time.time()
        _wait_for(lambda: time.time() > after + 0.05, "the clock to move on")
        tracer.flush()
    (record,) = read_trace(tmp_path)
    assert isinstance(record["ts"], float)
    assert before <= record["ts"] <= after


def test_an_event_that_cannot_be_encoded_is_dropped_and_the_trace_goes_on(
    tmp_path: Path,
) -> None:
    bad = Queued(1, (object(),))  # type: ignore[arg-type]  # not JSON: the writer refuses it
    with JsonLinesTracer.open(tmp_path, node=1, flush_interval=0.05) as tracer:
        tracer.emit(Queued(0, ()), ts=0.0)
        tracer.emit(bad, ts=0.0)
        tracer.emit(Queued(2, ()), ts=0.0)
        _wait_for(lambda: _ns(tmp_path) == [0, 2], "the lines around the bad one")
        tracer.emit(Queued(3, ()), ts=0.0)
        _wait_for(lambda: _ns(tmp_path) == [0, 2, 3], "the thread to go on writing")


def test_an_event_that_cannot_be_encoded_is_logged_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with JsonLinesTracer.open(tmp_path, node=1, flush_interval=3600) as tracer:
        tracer.emit(Queued(1, (object(),)), ts=0.0)  # type: ignore[arg-type]
        tracer.emit(Queued(2, ()), ts=0.0)
        tracer.flush()
    assert _ns(tmp_path) == [2]
    assert "Queued(n=1, tags=(<object object" in caplog.text
    assert "cannot be encoded; dropped" in caplog.text


def test_open_rejects_an_empty_queue(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_pending"):
        JsonLinesTracer.open(tmp_path, node=1, max_pending=0)
