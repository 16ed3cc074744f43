"""``python -m minikafka.raft simulate``: run seeded quorums under faults, check Raft's
invariants after every step, and shrink any failing schedule (KIP-595; see ``_simulator``).

    python -m minikafka.raft simulate --voters 3 --observers 2 --seeds 1000
    python -m minikafka.raft simulate --seed 17 --timeline      # one run, its elections
    python -m minikafka.raft simulate --faults crash,partition  # only these faults
    python -m minikafka.raft simulate --storm --seeds 300       # crash storms
    python -m minikafka.raft simulate --seed 3 --observers 2 --describe  # the leader's view
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Sequence

from minikafka.trace.testing import RecordingTracer

from ._describe import format_replication, format_status
from ._election_printout import format_timeline
from ._scenarios import FAULT_KINDS, describe, random_scenario, storm_scenario
from ._simulator import Simulation, shrink


def _recorder(tracers: dict[int, RecordingTracer], node: int) -> RecordingTracer:
    return tracers.setdefault(node, RecordingTracer(node=node))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minikafka.raft", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser("simulate", help="run seeded simulations")
    simulate.add_argument("--voters", type=int, default=3)
    simulate.add_argument("--observers", type=int, default=0)
    simulate.add_argument(
        "--seeds", type=int, default=100, help="how many seeds to run"
    )
    simulate.add_argument("--first-seed", type=int, default=0)
    simulate.add_argument("--seed", type=int, help="run this one seed only")
    simulate.add_argument(
        "--faults",
        default=",".join(FAULT_KINDS),
        help=f"comma-separated, among {','.join(FAULT_KINDS)} (default: all)",
    )
    simulate.add_argument(
        "--storm",
        action="store_true",
        help="crash storms (the leader crashed again and again, crash points armed)",
    )
    simulate.add_argument(
        "--timeline",
        action="store_true",
        help="print the run's elections (with --seed)",
    )
    simulate.add_argument(
        "--describe",
        action="store_true",
        help="print the leader's DescribeQuorum at the end, as kafka-metadata-quorum.sh does",
    )
    args = parser.parse_args(argv)
    kinds = [k for k in args.faults.split(",") if k]
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        parser.error(
            f"--faults: unknown {', '.join(unknown)}; known: {', '.join(FAULT_KINDS)}"
        )
    if args.voters < 1 or args.observers < 0:
        parser.error("--voters must be at least 1 and --observers at least 0")
    seeds = (
        [args.seed]
        if args.seed is not None
        else range(args.first_seed, args.first_seed + args.seeds)
    )
    started = time.perf_counter()
    failed = events = commits = elections = 0
    for seed in seeds:
        if args.storm:
            scenario = storm_scenario(seed, args.voters, args.observers)
        else:
            scenario = random_scenario(seed, args.voters, args.observers, kinds)
        tracers: dict[int, RecordingTracer] = {}
        tracer_for = functools.partial(_recorder, tracers) if args.timeline else None
        simulation = Simulation(scenario, seed, tracer_for=tracer_for)
        result = simulation.run()
        events += result.events
        commits += result.commits
        elections += result.elections
        if args.timeline:
            print(describe(scenario))
            records = [r for t in tracers.values() for r in t.records]
            print(format_timeline(records))
        leader = simulation.leader()
        info = leader.describe_quorum(simulation.now) if leader else None
        if args.describe and info is not None:
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


if __name__ == "__main__":
    sys.exit(main())
