"""The ``minikafka`` command (typer): ``broker`` and the server's tools, then the client tools.

This package's commands are the ones that run or read a server: ``broker``; ``cluster``
(a local cluster of broker processes, ``_tools_cluster``); ``storage`` is
``kafka-storage.sh`` (``_tools_storage``); ``zookeeper`` starts and reads the ZooKeeper
ensemble of ZooKeeper mode (``minikafka.zk.cli``, mounted as it is); ``dump-log`` is
``kafka-dump-log.sh``, the log package's tool; ``trace`` is ``minikafka.trace.cli``,
mounted as it is. The client tools (``topics``, ``produce``, ``consume``,
``groups``, ``reassign-partitions``, ``leader-election``, ``metadata-quorum``) are
Kafka's scripts written on ``minikafka.client`` in ``minikafka.tools``, which does not
import the broker; they are added here so that one command has them all, as Kafka's
``bin/`` does.

``broker --trace-dir DIR`` (or ``MINIKAFKA_TRACE_DIR``) installs the process's tracer
(ARCHITECTURE.md, "Traces and labs") and hands it to ``BrokerServer.open``, which builds every
component with it, and closes it after the clean shutdown, so the last buffer of events reaches the
file.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import ConfigError
from minikafka.log import PathError, dump, raise_open_files_limit
from minikafka.log import verify as verify_log
from minikafka.tools import stdout_to_devnull, tools_app
from minikafka.trace import configure_tracing
from minikafka.trace.cli import trace_app
from minikafka.zk.cli import zookeeper_app

from ._config import KafkaConfig, parse_override
from ._run import run_broker, start_tracing
from ._tools_cluster import cluster_app
from ._tools_storage import Overrides, storage_app

app = typer.Typer(
    name="minikafka",
    help="minikafka: Kafka's broker rebuilt in typed Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """minikafka: Kafka's broker rebuilt in typed Python."""


@app.command()
def broker(
    config_file: Annotated[
        Path | None,
        typer.Argument(help="a server.properties file", exists=True, dir_okay=False),
    ] = None,
    override: Overrides = None,
    trace_dir: Annotated[
        Path | None,
        typer.Option(
            "--trace-dir",
            metavar="DIR",
            file_okay=False,
            help="write trace events (JSON Lines) into DIR, created if missing "
            "(default: $MINIKAFKA_TRACE_DIR, else no tracing)",
        ),
    ] = None,
    trace_events: Annotated[
        str | None,
        typer.Option(
            "--trace-events",
            metavar="KINDS",
            help="write only these kinds of trace event, comma-separated "
            "component.event names such as net.request,replication.hw_advance "
            "(default: every kind)",
        ),
    ] = None,
) -> None:
    """Run a single-node broker (KRaft combined mode) until SIGTERM or Ctrl-C."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        overrides = dict(parse_override(item) for item in override or ())
        config = KafkaConfig.load(config_file, overrides)
    except ConfigError as exc:
        typer.echo(f"minikafka broker: configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    # As the JVM does for every Kafka broker (HotSpot's MaxFDLimit): the soft limit of
    # open files up to the hard one, before the LogManager sizes its descriptor pool.
    raise_open_files_limit()
    # Before BrokerServer.open, which builds every component with this tracer (log
    # recovery emits while the logs load). It is also the process's, the default of an
    # embedder's BrokerServer.open.
    events = None if trace_events is None else trace_events.split(",")
    tracer = start_tracing(trace_dir, config.node_id, events)
    try:
        run_broker(config, tracer)
    finally:
        # Events are buffered: closing the tracer (which installing the NullTracer does)
        # writes the last of them out. Nothing emits any more once trio.run has returned.
        configure_tracing(None, config.node_id)


@app.command("dump-log")
def dump_log(
    path: Annotated[
        Path,
        typer.Argument(
            help="a .log, .index or .timeindex file, or a partition directory"
        ),
    ],
    deep: Annotated[
        bool, typer.Option("--deep", help="also print every record (--deep-iteration)")
    ] = False,
    index: Annotated[
        bool, typer.Option("--index", help="also print each segment's index entries")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify", help="check every batch (length, magic, CRC, offsets) instead"
        ),
    ] = False,
) -> None:
    """Print or check log segments (kafka-dump-log.sh); exits 1 if something is corrupt."""
    try:
        if verify:
            status = verify_log(path, sys.stdout)
        else:
            status = dump(path, sys.stdout, deep=deep, index=index)
    except PathError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except BrokenPipeError:
        stdout_to_devnull()
        status = 0
    raise typer.Exit(status)


app.add_typer(trace_app)
app.add_typer(storage_app)
app.add_typer(cluster_app)
app.add_typer(zookeeper_app)


# The client tools after the server's commands, in one ``minikafka --help``.
app.registered_commands.extend(tools_app.registered_commands)
app.registered_groups.extend(tools_app.registered_groups)


def main() -> None:
    app(prog_name="minikafka")
    sys.exit(0)
