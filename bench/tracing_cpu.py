"""What tracing costs a broker in CPU per small Produce, and on which of its threads.

``python -m bench.tracing_cpu [--rounds N] [--quick]``: two brokers run side by side, one
with ``--trace-dir`` and one without, both under ``bench.profile_request_path``'s
harness (unprofiled here) and driven with its ``broker produce`` workload (4 connections
x 32 Produce v8 in flight, each one 100-byte record, acks=1: a ``net.request`` and a
``replication.hw_advance`` line per request; ``--trace-events`` makes the traced
broker write only the kinds it names). The two are driven in turn, alternating
which goes first, ``--rounds`` times; each round's figure is the broker's CPU time
(``/proc``, user + system, all its threads) over its requests. The minimum and the
median of the rounds are quoted: a shared machine's load slows a round, it never
speeds one up.

At the end the traced broker's CPU is split by thread: the one running trio (the
request path: building and queueing events) and the others (the JSON Lines tracer's
writer thread, which encodes the queue and writes it out; the untraced broker's other
threads are shown beside it for scale). Not a benchmark of ``make bench``: a CPU
figure that the machine's load disturbs less than a throughput.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import trio

from . import profile_request_path as profile
from ._common import ServerProcess, markdown_table


def thread_cpu_seconds(pid: int) -> tuple[float, float]:
    """(CPU of the process's main thread, CPU of all its other threads), from ``/proc``."""
    main = others = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])
        if int(task.name) == pid:
            main += ticks
        else:
            others += ticks
    hz = os.sysconf("SC_CLK_TCK")
    return main / hz, others / hz


def _rows(
    results: dict[str, list[float]], threads: dict[str, tuple[float, float]], n: int
) -> list[list[str]]:
    off, on = results["no tracing"], results["--trace-dir"]
    rows = []
    for label, figures in results.items():
        main, others = threads[label]
        rows.append(
            [
                label,
                f"{min(figures):.1f}",
                f"{statistics.median(figures):.1f}",
                " ".join(f"{f:.0f}" for f in figures),
                f"{main / n * 1e6:.1f}",
                f"{others / n * 1e6:.1f}",
            ]
        )
    rows.append(
        [
            "traced - untraced",
            f"{min(on) - min(off):+.1f} ({min(on) / min(off) - 1:+.0%})",
            f"{statistics.median(on) - statistics.median(off):+.1f} "
            f"({statistics.median(on) / statistics.median(off) - 1:+.0%})",
            "",
            f"{(threads['--trace-dir'][0] - threads['no tracing'][0]) / n * 1e6:+.1f}",
            f"{(threads['--trace-dir'][1] - threads['no tracing'][1]) / n * 1e6:+.1f}",
        ]
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tracing_cpu", description=__doc__
    )
    parser.add_argument("--rounds", type=int, default=9, help="rounds per broker")
    parser.add_argument(
        "--quick", action="store_true", help="small counts: a smoke run"
    )
    parser.add_argument(
        "--trace-events",
        metavar="KINDS",
        help="the traced broker writes only these kinds (its --trace-events)",
    )
    options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    rounds = 2 if options.quick else options.rounds
    with tempfile.TemporaryDirectory(prefix="minikafka-tracing-cpu-") as tmp:
        scratch = Path(tmp)
        servers: dict[str, ServerProcess] = {}
        with ExitStack() as stack:
            for label, trace_dir in (
                ("no tracing", None),
                ("--trace-dir", scratch / "trace"),
            ):
                _name, target, args, scenario = next(
                    w
                    for w in profile.workloads(
                        options.quick, scratch / f"data-{len(servers)}", trace_dir
                    )
                    if w[0] == "broker produce"
                )
                if trace_dir is not None and options.trace_events is not None:
                    args = [*args, "--trace-events", options.trace_events]
                server = stack.enter_context(
                    profile._spawn(target, args, scratch / f"{len(servers)}.prof")
                )
                trio.run(profile._prepare_topics, server.host, server.port)
                servers[label] = server
            labels = list(servers)
            results: dict[str, list[float]] = {label: [] for label in labels}
            before = {
                label: thread_cpu_seconds(s.process.pid) for label, s in servers.items()
            }
            requests = 0
            for r in range(rounds):
                for label in labels if r % 2 == 0 else labels[::-1]:
                    n, cpu = trio.run(profile._drive, servers[label], scenario, None)
                    results[label].append(cpu / n * 1e6)
                    # the thread split below counts the warm-up rounds' requests too
                    requests += (
                        n
                        * scenario.rounds
                        // (scenario.rounds - scenario.warmup_rounds)
                    )
            after = {
                label: thread_cpu_seconds(s.process.pid) for label, s in servers.items()
            }
    threads = {
        label: (after[label][0] - before[label][0], after[label][1] - before[label][1])
        for label in labels
    }
    per_broker = requests // len(labels)
    print(
        markdown_table(
            [
                "broker",
                "CPU µs/request (min)",
                "(median)",
                "rounds",
                "trio thread µs/request",
                "other threads µs/request",
            ],
            _rows(results, threads, per_broker),
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
