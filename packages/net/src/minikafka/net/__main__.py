"""``python -m minikafka.net``: the Reactor serving a one-broker cluster with no topics.

Prints one line per request with Kafka's request time breakdown. Stop with Ctrl-C
(or SIGTERM): the server stops accepting, finishes the requests in flight and exits.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from typing import Annotated

import trio
import typer

from minikafka.common import ConfigError, run_app
from minikafka.trace import configure_from_env

from ._config import Listener, NetConfig
from ._demo import DemoApis, format_request_line
from ._server import SocketServer

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command(
    help="The Reactor serving a one-broker cluster with no topics: one line per "
    "request with Kafka's request time breakdown. Stop with Ctrl-C (or SIGTERM): the "
    "server stops accepting, finishes the requests in flight and exits."
)
def serve(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 9092,
    node_id: Annotated[int, typer.Option()] = 1,
    num_network_threads: Annotated[int, typer.Option()] = 3,
    num_io_threads: Annotated[int, typer.Option()] = 8,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="do not print each request")
    ] = False,
) -> None:
    raise typer.Exit(
        _main(host, port, node_id, num_network_threads, num_io_threads, quiet)
    )


def _main(
    host: str,
    port: int,
    node_id: int,
    num_network_threads: int,
    num_io_threads: int,
    quiet: bool,
) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = NetConfig(
            listeners=(Listener("PLAINTEXT", host, port),),
            num_network_threads=num_network_threads,
            num_io_threads=num_io_threads,
        )
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        trio.run(_serve, config, node_id, quiet)
    except OSError as e:
        print(
            f"error: cannot listen on {host}:{port}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 1
    return 0


async def _serve(config: NetConfig, node_id: int, quiet: bool) -> None:
    listener = config.listeners[0]
    handler = DemoApis(node_id, listener.host, listener.port)
    server = SocketServer(
        config,
        handler,
        on_request_completed=None
        if quiet
        else lambda r, m: print(format_request_line(r, m), flush=True),
        tracer=configure_from_env(node_id),
    )
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            host, port = server.bound_address()
            handler.port = port
            print(
                f"minikafka.net demo: node {node_id} listening on {host}:{port} (Ctrl-C stops)",
                flush=True,
            )
            async for signum in signals:
                print(f"{signal.Signals(signum).name}: shutting down", flush=True)
                await server.shutdown()
                break
    server.tracer.close()


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.net")


if __name__ == "__main__":
    sys.exit(main())
