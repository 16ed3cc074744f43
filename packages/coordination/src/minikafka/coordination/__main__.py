"""``python -m minikafka.coordination``: a consumer group's rebalances, runnable alone.

    simulate [--protocol classic|consumer|both] [--members 3] [--partitions 5]
             [--assignor range] [--remote-assignor uniform]
             [--events join:4,leave:2,crash:1,slow:3]
             [--seed 0] [--session-timeout-ms 45000] [--heartbeat-interval-ms 3000]
             [--topic topic]
                                  the real group coordinator and the consumer's member
                                  core on virtual time: the timeline, every generation's
                                  assignment, each member's partitions over time and how
                                  long each rebalance stopped consumption

Exit status: 0 fine, 2 bad usage (an unknown assignor, a malformed or impossible event).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from minikafka.common import run_app

from .simulate._simulate import simulate
from .simulate._simulate_values import (
    PROTOCOLS,
    SimulationConfig,
    SimulationError,
    parse_events,
    render_simulation,
)

app = typer.Typer(
    name="python -m minikafka.coordination",
    help="minikafka's group coordinator: simulate a consumer group's rebalances.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """minikafka's group coordinator: simulate a consumer group's rebalances."""


@app.command("simulate")
def simulate_command(
    protocol: Annotated[
        str,
        typer.Option(help="group.protocol: classic, consumer (KIP-848), or both"),
    ] = "classic",
    members: Annotated[int, typer.Option(help="consumers that start the group")] = 3,
    partitions: Annotated[int, typer.Option(help="partitions of the topic")] = 5,
    assignor: Annotated[
        str, typer.Option(help="range, roundrobin, sticky or cooperative-sticky")
    ] = "range",
    remote_assignor: Annotated[
        str,
        typer.Option(help="the consumer protocol's server assignor: uniform, range"),
    ] = "uniform",
    events: Annotated[
        str,
        typer.Option(
            help="e.g. join:4,leave:2,crash:1,slow:3, in order, each once settled"
        ),
    ] = "",
    seed: Annotated[
        int, typer.Option(help="seeds member ids and processing times")
    ] = 0,
    session_timeout_ms: Annotated[
        int, typer.Option(help="session.timeout.ms")
    ] = 45_000,
    heartbeat_interval_ms: Annotated[
        int, typer.Option(help="heartbeat.interval.ms")
    ] = 3_000,
    topic: Annotated[
        str, typer.Option(help="the topic the group subscribes to")
    ] = "topic",
) -> None:
    """Drive the real GroupCoordinator and the consumers' member cores on virtual time."""
    protocols = PROTOCOLS if protocol == "both" else (protocol,)
    try:
        results = []
        for name in protocols:
            config = SimulationConfig(
                members=members,
                partitions=partitions,
                assignor=assignor,
                events=parse_events(events),
                seed=seed,
                topic=topic,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                protocol=name,
                remote_assignor=remote_assignor,
            )
            results.append(simulate(config))
    except SimulationError as exc:
        typer.echo(f"simulate: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo("\n\n".join(render_simulation(result) for result in results))


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.coordination")


if __name__ == "__main__":
    sys.exit(main())
