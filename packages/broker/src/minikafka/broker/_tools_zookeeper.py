"""``minikafka zookeeper start|stop|status|ls|get``: the ZooKeeper of ZooKeeper mode
(ZooKeeper mode), started by the project from Debian's package, and a look inside it, as
``zookeeper-shell.sh`` gives a Kafka operator (a znode's children, its data with JSON
indented, its version and, for an ephemeral znode, the session that owns it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from minikafka.zk.__main__ import main as zk_main
from minikafka.zk._server import DEFAULT_PORT

zookeeper_app = typer.Typer(
    name="zookeeper",
    help="Run a ZooKeeper for ZooKeeper mode and look inside it.",
    no_args_is_help=True,
)

Dir = Annotated[Path, typer.Option("--dir", help="its directory (config, data, log)")]
Port = Annotated[int, typer.Option("--port", help="its client port on 127.0.0.1")]
Connect = Annotated[
    str, typer.Option("--zookeeper", help="host:port (zookeeper.connect)")
]


@zookeeper_app.callback()
def _zookeeper_group() -> None:
    """Run a ZooKeeper for ZooKeeper mode and look inside it."""


def _run(*argv: str) -> None:
    status = zk_main(list(argv))
    if status:
        raise typer.Exit(status)


@zookeeper_app.command()
def start(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Start a standalone ZooKeeper on 127.0.0.1 (Debian's `zookeeper` package)."""
    _run("start", "--dir", str(root), "--port", str(port))


@zookeeper_app.command()
def stop(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Stop it (SIGTERM)."""
    _run("stop", "--dir", str(root), "--port", str(port))


@zookeeper_app.command()
def status(root: Dir = Path("zookeeper"), port: Port = DEFAULT_PORT) -> None:
    """Whether it runs and answers ruok."""
    _run("status", "--dir", str(root), "--port", str(port))


@zookeeper_app.command("ls")
def list_children(path: str, zookeeper: Connect = f"127.0.0.1:{DEFAULT_PORT}") -> None:
    """A znode's children."""
    _run("ls", path, "--zookeeper", zookeeper)


@zookeeper_app.command()
def get(path: str, zookeeper: Connect = f"127.0.0.1:{DEFAULT_PORT}") -> None:
    """A znode's data (JSON indented), its version and its owner if ephemeral."""
    _run("get", path, "--zookeeper", zookeeper)
