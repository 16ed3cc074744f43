"""The process-wide tracer: configured once at start-up, looked up where events happen.

A broker process has one tracer (ARCHITECTURE.md, "Traces and labs": one buffered writer per
process), so packages call :func:`get_tracer` rather than thread a tracer through every constructor.
"""

from __future__ import annotations

import os
from pathlib import Path
from threading import Lock

from ._event import TraceEvent
from ._tracer import NullTracer, Tracer
from ._writer import JsonLinesTracer

TRACE_DIR_ENV = "MINIKAFKA_TRACE_DIR"
"""The environment variable :func:`configure_from_env` reads; unset or empty: no tracing."""

_lock = Lock()
_tracer: Tracer = NullTracer()


def get_tracer() -> Tracer:
    """The installed tracer: a :class:`NullTracer` until :func:`configure_tracing`.

    Look it up when emitting (it is one global read) instead of keeping it from import
    time, so reconfiguring takes effect everywhere.
    """
    return _tracer


def tracing() -> bool:
    """Whether the installed tracer keeps events: check it before building an event that
    costs something to build (a dict of assignment sizes, a count of record types)."""
    return _tracer.enabled


def emit(event: TraceEvent, ts: float | None = None) -> None:
    """Hand ``event`` to the installed tracer, if it keeps events.

    This is how packages emit: ``ts`` is seconds since the epoch (a core with a clock
    of its own passes its ``now``); None means the tracer's wall clock.
    """
    tracer = _tracer
    if tracer.enabled:
        tracer.emit(event, ts)


def install_tracer(tracer: Tracer) -> Tracer:
    """Install ``tracer`` and return the previous one, which is left open.

    For tests and embedders that bring their own tracer; :func:`configure_tracing` is the
    usual entry point.
    """
    global _tracer
    with _lock:
        previous, _tracer = _tracer, tracer
    return previous


def configure_tracing(directory: Path | None, node: int) -> Tracer:
    """Install a :class:`JsonLinesTracer` on ``directory`` (None: a :class:`NullTracer`).

    The previous tracer is closed, so its buffered events reach its files first.
    """
    tracer: Tracer = (
        NullTracer(node) if directory is None else JsonLinesTracer.open(directory, node)
    )
    install_tracer(tracer).close()
    return tracer


def configure_from_env(node: int) -> Tracer:
    """:func:`configure_tracing` with the directory from ``MINIKAFKA_TRACE_DIR``."""
    value = os.environ.get(TRACE_DIR_ENV, "")
    return configure_tracing(Path(value) if value else None, node)
