"""``python -m minikafka.controller``: the controller's decisions, runnable alone.

    assign --brokers 1000-1004 --partitions 10 --replication-factor 3 [--start-index I]
           [--replica-shift S] [--racks a,a,b,b,c] [--json]
                                  replica placement as seed 001's tables show it
    replay DIR                    print the MetadataImage stored in a metadata log

Exit status: 0 fine, 1 a refused assignment or a log that ends in a torn batch, 2 bad usage
or a directory without a metadata log.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import run_app

from ._assign_cmd import AssignOptions, run_assign
from ._tool import ReplayError, print_replay

app = typer.Typer(
    name="python -m minikafka.controller",
    help="Replica placement and the KRaft metadata log of minikafka's controller.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """Replica placement and the KRaft metadata log of minikafka's controller."""


@app.command()
def assign(
    brokers: Annotated[
        str | None,
        typer.Option(
            metavar="IDS",
            help="broker ids, comma-separated; ranges allowed: 1000-1004",
        ),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option(metavar="N", help="number of partitions")
    ] = None,
    replication_factor: Annotated[
        int | None, typer.Option(metavar="N", help="replicas per partition")
    ] = None,
    start_index: Annotated[
        int | None,
        typer.Option(metavar="I", help="broker list index of partition 0's leader"),
    ] = None,
    replica_shift: Annotated[
        int | None,
        typer.Option(metavar="S", help="initial follower shift (nextReplicaShift)"),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(metavar="N", help="seed for the start index and shift not given"),
    ] = None,
    racks: Annotated[
        str | None,
        typer.Option(
            metavar="NAMES",
            help="rack of each broker, comma-separated, in --brokers order",
        ),
    ] = None,
    replica_assignment: Annotated[
        str | None,
        typer.Option(
            metavar="TEXT",
            help="check this manual assignment instead (1000:1001,1001:1002)",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print only the assignment, as JSON")
    ] = False,
) -> None:
    """Place partitions' replicas on brokers, as AdminUtils does."""
    options = AssignOptions(
        brokers=brokers,
        partitions=partitions,
        replication_factor=replication_factor,
        start_index=start_index,
        replica_shift=replica_shift,
        seed=seed,
        racks=racks,
        replica_assignment=replica_assignment,
        json=as_json,
    )
    raise typer.Exit(run_assign(options, sys.stdout))


@app.command()
def replay(
    dir: Annotated[
        Path,
        typer.Argument(
            help="a metadata dir (holding __cluster_metadata-0) or that partition"
        ),
    ],
) -> None:
    """Print the image a metadata log holds."""
    try:
        status = print_replay(dir, sys.stdout)
    except ReplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    raise typer.Exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.controller")


if __name__ == "__main__":
    sys.exit(main())
