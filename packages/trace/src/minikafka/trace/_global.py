"""The process's default tracer: configured once at start-up, by the command that starts it.

Components never look a tracer up: each is given one by whoever builds it (ARCHITECTURE.md,
"Traces and labs"), so several nodes, each with its own tracer and node id, can live in one
process. What stays global is only a default: ``minikafka broker`` configures it here and
passes it on, and ``BrokerServer.open`` falls back on :func:`get_tracer` when given none.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from threading import Lock

from ._tracer import NullTracer, Tracer
from ._writer import JsonLinesTracer

TRACE_DIR_ENV = "MINIKAFKA_TRACE_DIR"
"""The environment variable :func:`configure_from_env` reads; unset or empty: no tracing."""

_lock = Lock()
_tracer: Tracer = NullTracer()


def get_tracer() -> Tracer:
    """The installed tracer: a :class:`NullTracer` until :func:`configure_tracing`.

    For whoever assembles a node and was given no tracer; a component keeps the tracer
    it was built with and never calls this.
    """
    return _tracer


def install_tracer(tracer: Tracer) -> Tracer:
    """Install ``tracer`` and return the previous one, which is left open.

    For tests and embedders that bring their own tracer; :func:`configure_tracing` is the
    usual entry point.
    """
    global _tracer
    with _lock:
        previous, _tracer = _tracer, tracer
    return previous


def configure_tracing(
    directory: Path | None, node: int, events: Iterable[str] | None = None
) -> Tracer:
    """Install a :class:`JsonLinesTracer` on ``directory`` (None: a
    :class:`NullTracer`), writing the kinds ``events`` names (None: every kind).

    The previous tracer is closed, so its buffered events reach its files first.
    """
    tracer: Tracer = (
        NullTracer(node)
        if directory is None
        else JsonLinesTracer.open(directory, node, events=events)
    )
    install_tracer(tracer).close()
    return tracer


def configure_from_env(node: int, events: Iterable[str] | None = None) -> Tracer:
    """:func:`configure_tracing` with the directory from ``MINIKAFKA_TRACE_DIR``."""
    value = os.environ.get(TRACE_DIR_ENV, "")
    return configure_tracing(Path(value) if value else None, node, events)
