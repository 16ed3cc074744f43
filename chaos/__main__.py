"""``python -m chaos``: the chaos harness's commands.

``check HISTORY FINAL [--traces DIR] [--cluster DIR]`` checks a recorded history against its final
state (and the run's traces) and prints each anomaly with the operations or trace
events that show it, then a count by kind; it exits 1 if it found any.
``run --seed N --duration S --mode kraft|zk --controllers 1|3 [--faults K,...]
[--links auto|namespaces|proxies] [--clients confluent-kafka,minikafka] [--producers N]
[--transactions [N]] --out DIR``
runs a cluster through the seed's faults with real clients, checks what they saw and
prints a summary (:mod:`chaos.runner`); it exits 1 on any anomaly, 2 if the run itself
went wrong (its summary's notes say how).
``schedule --seed N`` prints the nemesis's schedule for a seed as JSON lines
(:mod:`chaos.nemesis`): what a run with that seed would inject, without running it.
``timeline RUN_DIR`` draws a run directory's ``timeline.svg`` again from its files
(:mod:`chaos.timeline`: the faults per node, the operations' outcomes and the anomalies
over time), as the runner drew it at the end of the run.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from minikafka.trace import read_trace

from . import disk
from .checker import check
from .faults import DISK_KINDS, PROCESS_KINDS
from .history import parse_final_state, parse_history, parse_transactional_final
from .nemesis import Options, Topology, parse_faults, schedule
from .netns import unavailable
from .runner import RunOptions, needs_network, refused, run
from .timeline import redraw
from .traces import TRACE_ANOMALY_KINDS, check_traces, kept_records
from .workload import CLIENT, CLIENTS
from .writers import read_writers


def _check(args: argparse.Namespace, out: TextIO) -> int:
    ops = parse_history(Path(args.history).read_text().splitlines())
    final = parse_final_state(Path(args.final).read_text())
    records = kept_records(read_trace(Path(args.traces))) if args.traces else []
    writers = read_writers(Path(args.cluster), args.topic) if args.cluster else None
    transactions = parse_transactional_final(Path(args.final).read_text())
    report = check(ops, final, records, writers, transactions)
    traced = check_traces(records, ops) if args.traces else []
    for anomaly in (*report.anomalies, *report.explained):
        ops_ = ", ".join(str(i) for i in anomaly.ops) or "-"
        where = f"{anomaly.topic}-{anomaly.partition}"
        print(f"{anomaly.kind:<20} {where:<16} ops {ops_}: {anomaly.detail}", file=out)
    for traced_anomaly in traced:
        events = "; ".join(str(e) for e in traced_anomaly.events)
        ops_ = ", ".join(str(i) for i in traced_anomaly.ops)
        witnesses = f"ops {ops_}" if ops_ else events
        print(
            f"{traced_anomaly.kind:<20} {traced_anomaly.detail} [{witnesses}]", file=out
        )
    counts: dict[str, int] = {str(k): n for k, n in report.counts().items()}
    if args.traces:
        for traced_kind in TRACE_ANOMALY_KINDS:
            counts[traced_kind] = sum(1 for a in traced if a.kind == traced_kind)
    print(
        f"{report.operations} operations, {report.ok_sends} acknowledged sends",
        file=out,
    )
    print(f"{'anomaly':<20} count", file=out)
    for kind, count in counts.items():
        print(f"{kind:<20} {count}", file=out)
    return 1 if report.anomalies or traced else 0


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    checking = commands.add_parser("check", help="check a history and its final state")
    checking.add_argument("history", help="the history: one operation per JSON line")
    checking.add_argument(
        "final", help="the final state read back after healing (JSON)"
    )
    checking.add_argument("--traces", help="the run's trace directory")
    checking.add_argument(
        "--cluster",
        help="the run's cluster directory (node-*/<topic>-<p>/*.log): the batch "
        "headers that tell a client's re-send under a new epoch from a duplicate",
    )
    checking.add_argument(
        "--topic", default="chaos", help="the topic whose segments --cluster reads"
    )
    scheduling = commands.add_parser("schedule", help="print a seed's fault schedule")
    scheduling.add_argument("--seed", type=int, required=True)
    scheduling.add_argument("--duration", type=float, default=Options().duration)
    scheduling.add_argument(
        "--faults", default="all", help="kinds or groups, comma-separated"
    )
    scheduling.add_argument("--brokers", default="1,2,3", help="broker ids")
    scheduling.add_argument("--controllers", default="", help="KRaft voter ids")
    drawing = commands.add_parser("timeline", help="draw a run's timeline again")
    drawing.add_argument("run_dir", help="the run's directory (history.jsonl, ...)")
    running = commands.add_parser("run", help="run a cluster through a seed's faults")
    running.add_argument("--seed", type=int, required=True)
    running.add_argument("--duration", type=float, default=120.0)
    running.add_argument("--mode", choices=("kraft", "zk"), default="kraft")
    running.add_argument("--controllers", type=int, choices=(1, 3), default=1)
    running.add_argument(
        "--faults",
        default=",".join(PROCESS_KINDS),
        help="kinds or groups, comma-separated",
    )
    running.add_argument(
        "--links",
        choices=("auto", "namespaces", "proxies"),
        default="auto",
        help="where partitions and slow links are carried out: a network namespace "
        "per node (root and iproute2), TCP fault proxies between the nodes, or auto: "
        "namespaces where they can be made, else the proxies (the summary says which)",
    )
    running.add_argument(
        "--clients",
        default=CLIENT,
        help=f"the producers' clients, taken in turn: {', '.join(CLIENTS)}",
    )
    running.add_argument(
        "--producers",
        type=int,
        default=None,
        help="producers to run (default: two, or one per client named if more)",
    )
    running.add_argument(
        "--churn",
        type=float,
        default=0.0,
        help="seconds between topic churn cycles (a topic created, written, deleted); "
        "0: none",
    )
    running.add_argument(
        "--transactions",
        type=int,
        nargs="?",
        const=2,
        default=0,
        help="consume-transform-produce workers, transactional, from the topic to "
        "chaos-out (alone: two); 0: none",
    )
    running.add_argument(
        "--client-debug",
        default="",
        metavar="CONTEXTS",
        help="librdkafka debug contexts for the group consumers (cgrp,broker,...), "
        "logged to standard error; none by default",
    )
    running.add_argument("--out", required=True, help="the run's directory")
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args, out, parser)
    if args.command == "schedule":
        return _schedule(args, out, parser)
    if args.command == "timeline":
        print(redraw(Path(args.run_dir)), file=out)
        return 0
    return _check(args, out)


def _run(args: argparse.Namespace, out: TextIO, parser: argparse.ArgumentParser) -> int:
    try:
        kinds = parse_faults(args.faults)
    except ValueError as exc:
        parser.error(str(exc))
    no_tmpfs = disk.unavailable() if any(k in DISK_KINDS for k in kinds) else None
    # Only a run that asks for namespaces is refused without them: otherwise its
    # partitions and slow links go on the link proxies (chaos.proxies).
    asked = needs_network(kinds) and args.links == "namespaces"
    no_namespaces = unavailable() if asked else None
    why = refused(kinds, no_namespaces, args.mode, no_tmpfs)
    if why is not None:
        parser.error(why)
    clients = tuple(c.strip() for c in args.clients.split(",") if c.strip())
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown or not clients:
        parser.error(f"--clients: choose from {', '.join(CLIENTS)}, not {unknown}")
    if args.producers is not None and args.producers < 1:
        parser.error("--producers: at least one")
    if args.transactions < 0:
        parser.error("--transactions: none (0) or more")
    # SIGTERM ends the run through its cleanup (nodes killed, namespaces removed),
    # as Ctrl-C does, rather than leaving them behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    opts = RunOptions(
        args.seed,
        args.duration,
        args.mode,
        args.controllers,
        faults=kinds,
        producers=producer_count(clients, args.producers),
        clients=clients,
        churn=args.churn,
        transactions=args.transactions,
        links=args.links,
        client_debug=args.client_debug,
    )
    return run(opts, Path(args.out), out)


def producer_count(clients: tuple[str, ...], asked: int | None) -> int:
    """``--producers``, or by default two producers, or one per client named when
    ``--clients`` names more: producers take the clients in turn, so a third client
    named with two producers would run nothing."""
    return asked if asked is not None else max(2, len(clients))


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _schedule(
    args: argparse.Namespace, out: TextIO, parser: argparse.ArgumentParser
) -> int:
    try:
        kinds = parse_faults(args.faults)
    except ValueError as exc:
        parser.error(str(exc))
    topology = Topology(_ids(args.brokers), _ids(args.controllers))
    drawn = schedule(args.seed, topology, Options(duration=args.duration, faults=kinds))
    for line in drawn.lines():
        print(line, file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
