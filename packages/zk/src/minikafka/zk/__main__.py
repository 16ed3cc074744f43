"""``python -m minikafka.zk start|stop|status|ls|get``: a ZooKeeper for ZooKeeper mode,
and a look inside it (``ls`` a znode's children, ``get`` its data, JSON shown indented),
as ``zookeeper-shell.sh`` gives a Kafka operator."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import trio
from kazoo.exceptions import NoNodeError

from ._client import ZkClient
from ._server import DEFAULT_PORT, ZooKeeperError, ZooKeeperServer


def _server(args: argparse.Namespace) -> ZooKeeperServer:
    return ZooKeeperServer(Path(args.dir).resolve(), args.port)


def _pretty(data: bytes) -> str:
    try:
        return json.dumps(json.loads(data), indent=2, sort_keys=True)
    except ValueError:
        return data.decode(errors="replace")


async def _inspect(connect: str, command: str, path: str) -> str:
    client = ZkClient(connect, session_timeout=10.0)
    await client.connect(connect_timeout=10.0)
    try:
        if command == "ls":
            return "[" + ", ".join(await client.get_children(path)) + "]"
        data, stat = await client.get(path)
        owner = (
            f", ephemeral (session {stat.ephemeral_owner:#x})"
            if stat.ephemeral_owner
            else ""
        )
        return f"{_pretty(data)}\n(version {stat.version}{owner})"
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikafka.zk", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("start", "start a standalone ZooKeeper on 127.0.0.1, its data in --dir"),
        ("stop", "stop it (SIGTERM)"),
        ("status", "whether it runs and answers ruok"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--dir", default="zookeeper", help="its directory")
        command.add_argument("--port", type=int, default=DEFAULT_PORT)
    for name, help_text in (("ls", "a znode's children"), ("get", "a znode's data")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("path")
        command.add_argument("--zookeeper", default=f"127.0.0.1:{DEFAULT_PORT}")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            server = _server(args)
            server.start()
            print(
                f"ZooKeeper running on {server.connect_string} (data in {server.root})"
            )
        elif args.command == "stop":
            _server(args).stop()
        elif args.command == "status":
            server = _server(args)
            pid = server.pid()
            ok = "answers ruok" if server.is_ok() else "does not answer"
            print("not running" if pid is None else f"running (pid {pid}), {ok}")
        else:
            print(trio.run(_inspect, args.zookeeper, args.command, args.path))
    except ZooKeeperError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except NoNodeError:
        print(f"Error: no znode {args.path}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
