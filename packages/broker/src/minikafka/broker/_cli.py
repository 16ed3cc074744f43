"""The ``minikafka`` command (typer): ``broker`` and the tools beside it."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import trio
import typer

from minikafka.net import ConfigError

from ._config import KafkaConfig, parse_override
from ._server import BrokerServer

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
        Path | None, typer.Argument(help="a server.properties file", exists=True, dir_okay=False)
    ] = None,
    override: Annotated[
        list[str] | None,
        typer.Option("--override", help="key=value, applied over the file (repeatable)"),
    ] = None,
) -> None:
    """Run a single-node broker (KRaft combined mode) until SIGTERM or Ctrl-C."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        overrides = dict(parse_override(item) for item in override or ())
        config = KafkaConfig.load(config_file, overrides)
        server = BrokerServer.open(config)
    except ConfigError as exc:
        typer.echo(f"minikafka broker: configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    trio.run(_serve, server)


async def _serve(server: BrokerServer) -> None:
    # The receiver stays open until the end: a second Ctrl-C (or the SIGINT that
    # `uv run` forwards beside the terminal's own) must not interrupt the clean shutdown.
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            # Printed once the broker is ready for clients; scripts and tests wait for it.
            host, port = server.bound_address()
            print(f"minikafka broker ready on {host}:{port}", flush=True)
            async for signum in signals:
                logging.getLogger("minikafka.broker").info(
                    "%s: shutting down", signal.Signals(signum).name
                )
                break
            await server.shutdown()
            nursery.cancel_scope.cancel()


def main() -> None:
    app(prog_name="minikafka")
    sys.exit(0)
