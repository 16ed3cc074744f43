"""``python -m minikafka.raft simulate``: run seeded quorums under faults, check Raft's
invariants after every step, and shrink any failing schedule (KIP-595; see ``_simulator``).

    python -m minikafka.raft simulate --voters 3 --observers 2 --seeds 1000
    python -m minikafka.raft simulate --seed 17 --timeline      # one run, its elections
    python -m minikafka.raft simulate --faults crash,partition  # only these faults
    python -m minikafka.raft simulate --storm --seeds 300       # crash storms
    python -m minikafka.raft simulate --seed 3 --observers 2 --describe  # the leader's view
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Sequence
from typing import Annotated

import typer

from minikafka.common import run_app, usage_error
from minikafka.trace.testing import RecordingTracer

from ._describe import format_replication, format_status
from ._election_printout import format_timeline
from ._scenarios import FAULT_KINDS, describe, random_scenario, storm_scenario
from ._simulator import Simulation, shrink


def _recorder(tracers: dict[int, RecordingTracer], node: int) -> RecordingTracer:
    return tracers.setdefault(node, RecordingTracer(node=node))


app = typer.Typer(
    help="Run seeded Raft quorums under faults and check the invariants (KIP-595).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """Run seeded Raft quorums under faults and check the invariants (KIP-595)."""


@app.command("simulate")
def simulate(
    ctx: typer.Context,
    voters: Annotated[int, typer.Option()] = 3,
    observers: Annotated[int, typer.Option()] = 0,
    seeds: Annotated[int, typer.Option(help="how many seeds to run")] = 100,
    first_seed: Annotated[int, typer.Option()] = 0,
    seed: Annotated[int | None, typer.Option(help="run this one seed only")] = None,
    faults: Annotated[
        str,
        typer.Option(
            help=f"comma-separated, among {','.join(FAULT_KINDS)} (default: all)",
            show_default=False,
        ),
    ] = ",".join(FAULT_KINDS),
    storm: Annotated[
        bool,
        typer.Option(
            "--storm",
            help="crash storms (the leader crashed again and again, crash points armed)",
        ),
    ] = False,
    timeline: Annotated[
        bool,
        typer.Option("--timeline", help="print the run's elections (with --seed)"),
    ] = False,
    describe_quorum: Annotated[
        bool,
        typer.Option(
            "--describe",
            help="print the leader's DescribeQuorum at the end, as "
            "kafka-metadata-quorum.sh does",
        ),
    ] = False,
) -> None:
    """Run seeded simulations."""
    kinds = [k for k in faults.split(",") if k]
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        usage_error(
            ctx,
            f"--faults: unknown {', '.join(unknown)}; known: {', '.join(FAULT_KINDS)}",
        )
    if voters < 1 or observers < 0:
        usage_error(ctx, "--voters must be at least 1 and --observers at least 0")
    raise typer.Exit(
        _simulate(
            voters,
            observers,
            seeds,
            first_seed,
            seed,
            kinds,
            storm,
            timeline,
            describe_quorum,
        )
    )


def _simulate(
    voters: int,
    observers: int,
    count_of_seeds: int,
    first_seed: int,
    one_seed: int | None,
    kinds: list[str],
    storm: bool,
    timeline: bool,
    show_describe: bool,
) -> int:
    seeds = (
        [one_seed]
        if one_seed is not None
        else range(first_seed, first_seed + count_of_seeds)
    )
    started = time.perf_counter()
    failed = events = commits = elections = 0
    for seed in seeds:
        if storm:
            scenario = storm_scenario(seed, voters, observers)
        else:
            scenario = random_scenario(seed, voters, observers, kinds)
        tracers: dict[int, RecordingTracer] = {}
        tracer_for = functools.partial(_recorder, tracers) if timeline else None
        simulation = Simulation(scenario, seed, tracer_for=tracer_for)
        result = simulation.run()
        events += result.events
        commits += result.commits
        elections += result.elections
        if timeline:
            print(describe(scenario))
            records = [r for t in tracers.values() for r in t.records]
            print(format_timeline(records))
        leader = simulation.leader()
        info = leader.describe_quorum(simulation.now) if leader else None
        if show_describe and info is not None:
            print(format_status(info, simulation.now))
            print()
            print(format_replication(info))
        if not result.ok:
            failed += 1
            print(f"seed {seed}: {result.violation}")
            smallest = shrink(scenario, seed)
            print(f"the smallest schedule that fails (seed {seed}):")
            print(describe(smallest))
    elapsed = time.perf_counter() - started
    count = len(seeds)
    print(
        f"{count} seeds, {failed} failed; {events} events, {commits} entries committed, "
        f"{elections} epochs with a leader; {elapsed:.1f}s ({elapsed / count * 1000:.0f} ms "
        f"a seed)"
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.raft")


if __name__ == "__main__":
    sys.exit(main())
