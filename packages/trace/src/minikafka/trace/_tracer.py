"""The :class:`Tracer` port every package emits through, and the do-nothing tracer.

Packages depend on the Protocol only; which tracer is behind it (JSON Lines files, nothing,
an in-memory recorder in tests) is chosen by whoever assembles the process.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from ._event import TraceEvent


class TracerClosedError(RuntimeError):
    """An event was emitted through a tracer after its ``close()``."""


@runtime_checkable
class Tracer(Protocol):
    """Where trace events go. ``enabled`` is False when events would be dropped, so a
    hot path can skip building one: ``if tracer.enabled: tracer.emit(Event(...))``. A
    path that runs per request asks about its own kind instead, :meth:`wants`, since a
    tracer may write only the kinds its readers asked for."""

    @property
    def enabled(self) -> bool: ...

    @property
    def node(self) -> int:
        """The broker (or controller) id written into every line's envelope."""
        ...

    def wants(self, event_type: type[TraceEvent]) -> bool:
        """Whether an event of ``event_type`` would be written (False when not
        ``enabled``): ``if tracer.wants(RequestCompleted): tracer.emit(...)``."""
        ...

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        """Record ``event`` at ``ts`` (seconds since the epoch). A core always passes
        the ``now`` it was given (an :class:`~minikafka.trace.EpochClock` reading);
        only a shell leaves it out, for the tracer to read the wall clock."""
        ...

    def emit_fields(
        self,
        event_type: type[TraceEvent],
        fields: tuple[object, ...],
        ts: float | None = None,
    ) -> None:
        """``emit(event_type(*fields), ts)`` without building the event: its field
        values in declaration order, for a site that runs per request."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@attrs.frozen
class NullTracer:
    """The tracer of a process that does not trace: it drops everything."""

    node: int = 0

    @property
    def enabled(self) -> bool:
        return False

    def wants(self, event_type: type[TraceEvent]) -> bool:
        return False

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        pass

    def emit_fields(
        self,
        event_type: type[TraceEvent],
        fields: tuple[object, ...],
        ts: float | None = None,
    ) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
