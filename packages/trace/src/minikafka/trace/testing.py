"""Test helpers for packages that emit trace events (ARCHITECTURE.md, "Packages and layers":
``<name>.testing``).

with recording_tracer(node=1) as tracer:
    run_the_code_under_test()
assert tracer.of_type(IsrShrink) == [IsrShrink(...)]
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import attrs

from ._event import TraceEvent, spec_for_class
from ._global import install_tracer
from ._tracer import TracerClosedError

E = TypeVar("E", bound=TraceEvent)


@attrs.define(eq=False)
class RecordingTracer:
    """A tracer that keeps ``(ts, event)`` pairs in memory instead of writing files."""

    node: int = 0
    records: list[tuple[float, TraceEvent]] = attrs.field(factory=list)
    _closed: bool = attrs.field(default=False, init=False)

    @property
    def enabled(self) -> bool:
        return not self._closed

    @property
    def events(self) -> list[TraceEvent]:
        return [event for _, event in self.records]

    def wants(self, event_type: type[TraceEvent]) -> bool:
        return not self._closed

    def of_type(self, event_type: type[E]) -> list[E]:
        return [event for _, event in self.records if isinstance(event, event_type)]

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        # The same check as the file writer, so an unregistered event fails in tests too.
        spec_for_class(type(event))
        if self._closed:
            raise TracerClosedError(
                f"trace event {type(event).__name__} emitted after close"
            )
        self.records.append((time.time() if ts is None else float(ts), event))

    def emit_fields(
        self,
        event_type: type[TraceEvent],
        fields: tuple[object, ...],
        ts: float | None = None,
    ) -> None:
        # Built here, so a test sees the typed event and a wrong field count fails.
        self.emit(event_type(*fields), ts)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._closed = True


@contextmanager
def recording_tracer(node: int = 0) -> Iterator[RecordingTracer]:
    """Install a :class:`RecordingTracer` as the process tracer; restore the old one after."""
    tracer = RecordingTracer(node)
    previous = install_tracer(tracer)
    try:
        yield tracer
    finally:
        install_tracer(previous)
