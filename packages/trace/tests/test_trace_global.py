"""The process-wide tracer: configure_tracing, get_tracer, configure_from_env, testing."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import (
    TRACE_DIR_ENV,
    JsonLinesTracer,
    NullTracer,
    TraceEvent,
    configure_from_env,
    configure_tracing,
    get_tracer,
    install_tracer,
    read_trace,
    register_event,
)
from minikafka.trace.testing import RecordingTracer, recording_tracer


@register_event
@attrs.frozen
class Ping(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "global_ping"
    n: int


@attrs.frozen
class NotRegistered(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "global_not_registered"


def test_tracing_is_off_until_configured() -> None:
    tracer = get_tracer()
    assert isinstance(tracer, NullTracer)
    assert not tracer.enabled


def test_configure_tracing_installs_a_json_lines_tracer(tmp_path: Path) -> None:
    tracer = configure_tracing(tmp_path, node=3)
    assert isinstance(tracer, JsonLinesTracer)
    assert get_tracer() is tracer
    assert tracer.enabled
    assert tracer.node == 3
    get_tracer().emit(Ping(1), ts=1.0)
    get_tracer().flush()
    assert [r["n"] for r in read_trace(tmp_path)] == [1]


def test_configure_tracing_closes_the_previous_tracer(tmp_path: Path) -> None:
    first = configure_tracing(tmp_path / "a", node=1)
    first.emit(Ping(1), ts=1.0)
    second = configure_tracing(tmp_path / "b", node=1)
    assert not first.enabled
    assert [r["n"] for r in read_trace(tmp_path / "a")] == [1]
    assert get_tracer() is second
    off = configure_tracing(None, node=2)
    assert not second.enabled
    assert off == NullTracer(2)
    assert get_tracer() is off


def test_configure_from_env_unset_or_empty_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TRACE_DIR_ENV, raising=False)
    assert configure_from_env(node=1) == NullTracer(1)
    monkeypatch.setenv(TRACE_DIR_ENV, "")
    assert configure_from_env(node=1) == NullTracer(1)
    assert isinstance(get_tracer(), NullTracer)


def test_configure_from_env_writes_to_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRACE_DIR_ENV, str(tmp_path / "traces"))
    tracer = configure_from_env(node=9)
    assert isinstance(tracer, JsonLinesTracer)
    assert tracer.directory == tmp_path / "traces"
    tracer.emit(Ping(2), ts=2.0)
    tracer.close()
    assert list(read_trace(tmp_path / "traces")) == [
        {"ts": 2.0, "node": 9, "component": "test", "event": "global_ping", "n": 2}
    ]


def test_install_tracer_returns_the_previous_one_open(tmp_path: Path) -> None:
    first = configure_tracing(tmp_path, node=1)
    recorder = RecordingTracer(node=1)
    assert install_tracer(recorder) is first
    assert first.enabled
    assert install_tracer(first) is recorder


def test_recording_tracer_collects_events_and_restores() -> None:
    before = get_tracer()
    with recording_tracer(node=4) as tracer:
        assert get_tracer() is tracer
        get_tracer().emit(Ping(1), ts=5.0)
        get_tracer().emit(Ping(2))
        with pytest.raises(TypeError, match="register_event"):
            get_tracer().emit(NotRegistered())
    assert get_tracer() is before
    assert tracer.events == [Ping(1), Ping(2)]
    assert tracer.of_type(Ping) == [Ping(1), Ping(2)]
    assert tracer.records[0] == (5.0, Ping(1))


def test_two_nodes_in_one_process_write_two_streams(tmp_path: Path) -> None:
    """Tracers are injected, not global: each node's tracer writes its own node id, even
    into one shared directory, and the process's tracer sees none of it."""
    with recording_tracer() as process_tracer:
        one, two = JsonLinesTracer.open(tmp_path, 1), JsonLinesTracer.open(tmp_path, 2)
        one.emit(Ping(1), ts=1.0)
        two.emit(Ping(2), ts=2.0)
        one.emit(Ping(3), ts=3.0)
        one.close()
        two.close()
    assert process_tracer.records == []
    by_node = sorted((r["node"], r["n"]) for r in read_trace(tmp_path))
    assert by_node == [(1, 1), (1, 3), (2, 2)]
