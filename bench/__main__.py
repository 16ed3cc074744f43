"""``python -m bench [--quick] [NAME ...]``: run the benchmarks, print, write results.

Each benchmark's JSON (figures, machine facts, the exact command) and chart go to
``bench/results/<name>.json`` and ``.svg``. ``--quick`` runs small counts (a few
seconds) to check that everything works; its figures are not worth quoting and go to
``<name>.quick.json`` and ``.svg`` instead, leaving the last full run's alone.

``goals`` runs last and measures nothing itself: it quotes the goals' figures from the
reports of the benchmarks it needs, run first in the same invocation if not named.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from . import (
    broker_clients,
    broker_memory,
    broker_produce,
    client_consumer,
    client_latency,
    client_producer,
    cluster_reference,
    cluster_replication,
    controller_quorum,
    e2e_latency,
    goals,
    group_rebalance,
    group_rebalance_clients,
    kafka_reference,
    log_io,
    log_validate,
    net_reactor,
    raft_quorum,
    replication_waterfall,
    security_cost,
    trace_parquet,
    tracing,
    transactions,
    zookeeper_mode,
)
from ._common import ROOT, Report, build_label, find_bench_error, write_results

BENCHMARKS: dict[str, Callable[[bool], Report]] = {
    net_reactor.NAME: net_reactor.run,
    log_io.NAME: log_io.run,
    log_validate.NAME: log_validate.run,
    broker_clients.NAME: broker_clients.run,
    tracing.NAME: tracing.run,
    broker_produce.NAME: broker_produce.run,
    broker_memory.NAME: broker_memory.run,
    e2e_latency.NAME: e2e_latency.run,
    client_producer.NAME: client_producer.run,
    client_consumer.NAME: client_consumer.run,
    client_latency.NAME: client_latency.run,
    cluster_replication.NAME: cluster_replication.run,
    replication_waterfall.NAME: replication_waterfall.run,
    raft_quorum.NAME: raft_quorum.run,
    controller_quorum.NAME: controller_quorum.run,
    zookeeper_mode.NAME: zookeeper_mode.run,
    trace_parquet.NAME: trace_parquet.run,
    kafka_reference.NAME: kafka_reference.run,
    cluster_reference.NAME: cluster_reference.run,
    transactions.NAME: transactions.run,
    security_cost.NAME: security_cost.run,
    group_rebalance.NAME: group_rebalance.run,
    group_rebalance_clients.NAME: group_rebalance_clients.run,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="small counts, for a smoke run"
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to run (default: all: {', '.join(BENCHMARKS)}, {goals.NAME})",
    )
    args = parser.parse_args(argv)
    known = [*BENCHMARKS, goals.NAME]
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(
            f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(known)}"
        )
    names = _with_goals_needs(args.names or known)
    reports: dict[str, Report] = {}
    for name in names:
        started = time.perf_counter()
        print(
            f"== {name}{' (--quick)' if args.quick else ''}, {build_label()}",
            flush=True,
        )
        try:
            if name == goals.NAME:
                report = goals.run(args.quick, reports)
            else:
                report = BENCHMARKS[name](args.quick)
        except Exception as e:
            error = find_bench_error(e)
            if error is None:
                raise
            print(f"{name} failed: {error}", file=sys.stderr)
            return 1
        reports[name] = report
        print(report.table)
        # A smoke run must not overwrite the figures of a full one.
        stem = f"{name}.quick" if args.quick else name
        for path in write_results(report, stem):
            print(f"wrote {path.relative_to(ROOT)}")
        print(f"({time.perf_counter() - started:.1f} s)\n", flush=True)
    return 0


def _with_goals_needs(names: list[str]) -> list[str]:
    """``names``, with the benchmarks ``goals`` quotes before it and ``goals`` last."""
    if goals.NAME not in names:
        return names
    rest = [name for name in names if name != goals.NAME]
    return [*rest, *(n for n in goals.NEEDS if n not in rest), goals.NAME]


if __name__ == "__main__":
    sys.exit(main())
