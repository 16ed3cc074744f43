"""``python -m minikafka.net``: the Reactor serving a one-broker cluster with no topics.

Prints one line per request with Kafka's request time breakdown. Stop with Ctrl-C
(or SIGTERM): the server stops accepting, finishes the requests in flight and exits.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import trio

from minikafka.common import ConfigError
from minikafka.trace import configure_from_env

from ._config import Listener, NetConfig
from ._demo import DemoApis, format_request_line
from ._server import SocketServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minikafka.net", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--num-network-threads", type=int, default=3)
    parser.add_argument("--num-io-threads", type=int, default=8)
    parser.add_argument(
        "--quiet", action="store_true", help="do not print each request"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = NetConfig(
            listeners=(Listener("PLAINTEXT", args.host, args.port),),
            num_network_threads=args.num_network_threads,
            num_io_threads=args.num_io_threads,
        )
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        trio.run(_serve, config, args.node_id, args.quiet)
    except OSError as e:
        print(
            f"error: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
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


if __name__ == "__main__":
    sys.exit(main())
