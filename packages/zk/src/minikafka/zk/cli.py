"""The ZooKeeper command, ``python -m minikafka.zk`` and ``minikafka zookeeper``.

A ZooKeeper for ZooKeeper mode, started by the project from Debian's package, and a look
inside it, as ``zookeeper-shell.sh`` gives a Kafka operator: a znode's children, its data
with JSON indented, its version and, for an ephemeral znode, the session that owns it.
:data:`zookeeper_app` is one typer app: this package runs it alone, and the broker's
``minikafka`` command mounts it as ``zookeeper``.

Exit status: 0 fine, 1 the server or the znode failed (said on stderr), 2 bad usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import trio
import typer
from kazoo.exceptions import NoNodeError

from ._client import ZkClient
from ._server import DEFAULT_PORT, ZooKeeperError, ZooKeeperServer

zookeeper_app = typer.Typer(
    name="zookeeper",
    help="Run a ZooKeeper for ZooKeeper mode and look inside it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Dir = Annotated[Path, typer.Option("--dir", help="its directory (config, data, log)")]
Port = Annotated[int, typer.Option("--port", help="its client port on 127.0.0.1")]
Connect = Annotated[
    str, typer.Option("--zookeeper", help="host:port (zookeeper.connect)")
]
ZnodePath = Annotated[str, typer.Argument(help="the znode, e.g. /brokers/ids")]
DEFAULT_CONNECT = f"127.0.0.1:{DEFAULT_PORT}"


@zookeeper_app.callback()
def _zookeeper_group() -> None:
    """Run a ZooKeeper for ZooKeeper mode and look inside it."""


def _fail(message: str) -> typer.Exit:
    print(f"Error: {message}", file=sys.stderr)
    return typer.Exit(1)


def _server(root: Path, port: int) -> ZooKeeperServer:
    return ZooKeeperServer(root.resolve(), port)


@zookeeper_app.command()
def start(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Start a standalone ZooKeeper on 127.0.0.1 (Debian's package), its data in --dir."""
    server = _server(root, port)
    try:
        server.start()
    except ZooKeeperError as exc:
        raise _fail(str(exc)) from None
    print(f"ZooKeeper running on {server.connect_string} (data in {server.root})")


@zookeeper_app.command()
def stop(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Stop it (SIGTERM)."""
    try:
        _server(root, port).stop()
    except ZooKeeperError as exc:
        raise _fail(str(exc)) from None


@zookeeper_app.command()
def status(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Whether it runs and answers ruok."""
    server = _server(root, port)
    try:
        pid = server.pid()
        ok = "answers ruok" if server.is_ok() else "does not answer"
    except ZooKeeperError as exc:
        raise _fail(str(exc)) from None
    print("not running" if pid is None else f"running (pid {pid}), {ok}")


@zookeeper_app.command("ls")
def list_children(path: ZnodePath, zookeeper: Connect = DEFAULT_CONNECT) -> None:
    """A znode's children."""
    print(_inspect(zookeeper, "ls", path))


@zookeeper_app.command()
def get(path: ZnodePath, zookeeper: Connect = DEFAULT_CONNECT) -> None:
    """A znode's data (JSON indented), its version and its owner if ephemeral."""
    print(_inspect(zookeeper, "get", path))


def _inspect(connect: str, command: str, path: str) -> str:
    try:
        return trio.run(_read, connect, command, path)
    except ZooKeeperError as exc:
        raise _fail(str(exc)) from None
    except NoNodeError:
        raise _fail(f"no znode {path}") from None


async def _read(connect: str, command: str, path: str) -> str:
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


def _pretty(data: bytes) -> str:
    try:
        return json.dumps(json.loads(data), indent=2, sort_keys=True)
    except ValueError:
        return data.decode(errors="replace")
