"""Running one broker process: start-up errors named for what they are, the process's
tracer, and the clean shutdown on SIGTERM or Ctrl-C (what ``minikafka broker`` runs).

A listener that cannot be bound, or a disk that fails while the logs load, is the user's
to fix: each is said in one line and the process exits 1; a bad configuration exits 2; a
fatal fault (``FatalFaultError``: the node cannot vouch for its state) is logged in one
line at ERROR and the process exits 1; so does a broker that could not register with
the controller quorum within ``initial.broker.registration.timeout.ms``; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import gc
import logging
import signal
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import trio
import typer

from minikafka.common import ConfigError, FatalFaultError
from minikafka.trace import (
    TRACE_DIR_ENV,
    JsonLinesTracer,
    Tracer,
    configure_from_env,
    configure_tracing,
    event_types,
)

from ._config import KafkaConfig
from ._controller_node import ControllerNode
from ._meta_properties import StorageError
from ._server import BrokerServer, RegistrationTimeoutError
from .zk import ZkBrokerServer

_BIND_ERRNOS = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


def run_broker(config: KafkaConfig, tracer: Tracer) -> None:
    try:
        server: BrokerServer | ControllerNode | ZkBrokerServer
        if config.zookeeper_mode:
            server = ZkBrokerServer.open(config, tracer=tracer)
        elif config.roles.is_broker:
            server = BrokerServer.open(config, tracer=tracer)
        else:
            server = ControllerNode.open(config, tracer=tracer)
    except ConfigError as exc:
        typer.echo(f"minikafka broker: configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except StorageError as exc:
        typer.echo(f"minikafka broker: cannot start: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        # Loading the logs or the metadata log: a full or failing disk, a dir we may not
        # write. The user's to fix; the message names the file when the OS did.
        typer.echo(f"minikafka broker: cannot start: {_describe(exc)}", err=True)
        raise typer.Exit(1) from None
    try:
        trio.run(_serve, server)
    except FatalFaultError as fault:  # raised outside any nursery
        _fatal(fault)
    except BaseExceptionGroup as group:
        # A listener that cannot be bound (port in use, no such address), a disk that
        # fails while starting, or (ZooKeeper mode, once the cluster id is known) log
        # directories of another cluster or broker are the user's to fix: say which in
        # one line. So is a fatal fault (Kafka's ProcessTerminatingFaultHandler: a
        # committed record that cannot be replayed, the Raft driver failing): the node
        # stops, the others take over. Anything else is a bug and keeps its traceback.
        faults, _ = group.split(FatalFaultError)
        if faults is not None:
            _fatal(_first(faults))
        timeouts, others = group.split(RegistrationTimeoutError)
        if timeouts is not None and others is None:
            typer.echo(f"minikafka broker: stopped: {_first(timeouts)}", err=True)
            raise typer.Exit(1) from None
        storage, others = group.split(StorageError)
        if storage is not None and others is None:
            typer.echo(f"minikafka broker: cannot start: {_first(storage)}", err=True)
            raise typer.Exit(1) from None
        os_errors, rest = group.split(OSError)
        if os_errors is None or rest is not None:
            raise
        first = _first(os_errors)
        if (
            isinstance(first, socket.gaierror)
            or getattr(first, "errno", None) in _BIND_ERRNOS
        ):
            typer.echo(f"minikafka broker: cannot listen: {first}", err=True)
        else:
            assert isinstance(first, OSError)
            typer.echo(
                f"minikafka broker: stopped by an I/O error: {_describe(first)}",
                err=True,
            )
        raise typer.Exit(1) from None


def _fatal(fault: BaseException) -> NoReturn:
    """Kafka's ProcessTerminatingFaultHandler: one line at ERROR, then exit 1."""
    logging.getLogger("minikafka.broker").error("Encountered fatal fault: %s", fault)
    raise typer.Exit(1) from None


def _describe(exc: OSError) -> str:
    """``[Errno 28] No space left on device: 'path'``, whatever the OSError's shape."""
    if exc.errno is None:
        return str(exc)
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    text = f"{exc.strerror or exc} ({name})"
    return f"{exc.filename}: {text}" if exc.filename else text


def start_tracing(
    trace_dir: Path | None, node_id: int, events: Sequence[str] | None = None
) -> Tracer:
    """Install this process's tracer for broker ``node_id`` and say where it writes.

    ``--trace-dir`` wins over ``MINIKAFKA_TRACE_DIR``; neither: a NullTracer. A
    directory is one run: the file names carry node and pid, so the processes of a
    local cluster (and a restarted broker) can share it. ``events`` (``--trace-events``)
    are the kinds to write, ``component.event``; None: every kind.
    """
    unknown = sorted(set(events or ()) - {f"{c}.{e}" for c, e in event_types()})
    if unknown:
        typer.echo(f"minikafka broker: no such trace events: {unknown}", err=True)
        raise typer.Exit(2)
    try:
        if trace_dir is not None:
            tracer = configure_tracing(trace_dir, node_id, events)
        else:
            tracer = configure_from_env(node_id, events)
    except OSError as exc:
        where = trace_dir if trace_dir is not None else f"${TRACE_DIR_ENV}"
        typer.echo(f"minikafka broker: cannot trace into {where}: {exc}", err=True)
        raise typer.Exit(2) from None
    if isinstance(tracer, JsonLinesTracer):
        pattern = f"trace-node{tracer.node}-{tracer.pid}-*.jsonl"
        print(
            f"minikafka broker: tracing to {tracer.directory.resolve() / pattern}",
            flush=True,
        )
    return tracer


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def _freeze_startup_objects() -> None:
    """Keep what start-up built (the modules, the schemas, the metadata image, the
    loaded logs) out of the cyclic collector's passes from now on.

    CPython's oldest generation is collected in one stop-the-world pass over every
    object it holds: with start-up's hundred thousand objects, 44-180 ms per pass on the
    2-vCPU machine, during which no request moves, and an ``acks=all`` round trip
    through this broker waits (bench/README.md, ``replication_waterfall``).
    ``gc.freeze`` moves them to a generation the collector never walks (CPython's
    documentation suggests it for a process that forks; a long-lived server gains the
    same); what requests allocate later is collected as before. One collection
    first, so that garbage is not frozen with them.
    """
    gc.collect()
    gc.freeze()


async def _serve(server: BrokerServer | ControllerNode | ZkBrokerServer) -> None:
    # The receiver stays open until the end: a second Ctrl-C (or the SIGINT that
    # `uv run` forwards beside the terminal's own) must not interrupt the clean shutdown.
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            _freeze_startup_objects()
            # Printed once the broker is ready for clients; scripts and tests wait for it.
            host, port = server.bound_address()
            role = "controller" if isinstance(server, ControllerNode) else "broker"
            print(f"minikafka {role} ready on {host}:{port}", flush=True)
            async for signum in signals:
                logging.getLogger("minikafka.broker").info(
                    "%s: shutting down", signal.Signals(signum).name
                )
                break
            await server.shutdown()
            nursery.cancel_scope.cancel()
