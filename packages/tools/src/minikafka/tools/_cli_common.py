"""What the ``minikafka`` client tools share: the ``--bootstrap-server`` and
``--command-config`` options (each declared once, so every tool's flag and help are the
same), running a tool against a cluster (a ToolError is one line on stderr and exit
status 1), and usage errors (exit status 2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import trio
import typer

from minikafka.client import AsyncAdminClient, KafkaException

from ._connection import (
    ToolError,
    connect,
    describe_failure,
    load_properties,
    lone_errors,
)

T = TypeVar("T")

_BOOTSTRAP_SERVER = typer.Option(
    "--bootstrap-server", metavar="HOST:PORT", help="the broker(s), comma-separated"
)
BootstrapServer = Annotated[str, _BOOTSTRAP_SERVER]
OptionalBootstrapServer = Annotated[str | None, _BOOTSTRAP_SERVER]
"""For a tool that names its own error when it is missing (kafka-configs.sh's "Either
--bootstrap-server or --bootstrap-controller must be specified.")."""


CommandConfig = Annotated[
    str | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        help="a properties file for the admin client (security.protocol, ssl.*, sasl.*)",
    ),
]


def run_tool(
    tool: Callable[[AsyncAdminClient], Awaitable[T]],
    bootstrap: str,
    client_id: str,
    command_config: str | None = None,
) -> T:
    """Run ``tool`` against a cluster, connecting as ``command_config`` (a properties
    file) says; a ToolError is printed and exits 1."""

    async def main() -> T:
        properties = None if command_config is None else load_properties(command_config)
        async with connect(
            bootstrap, client_id=client_id, command_config=properties
        ) as cluster:
            return await tool(cluster)

    return run_client_tool(main)


def run_client_tool(tool: Callable[[], Awaitable[T]]) -> T:
    """Run a tool that makes its own minikafka.client (the console producer and
    consumer); a ToolError is printed and exits 1."""
    try:
        with lone_errors():
            return trio.run(tool)
    except ToolError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(1) from None
    except KafkaException as e:
        typer.echo(f"Error: {describe_failure(e.args[0])}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def usage(message: str) -> typer.BadParameter:
    return typer.BadParameter(message)
