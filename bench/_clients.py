"""What the two client benchmarks share: their runs and table, and aiokafka without
its C extensions.

aiokafka ships its record batch codec compiled (Cython, ``aiokafka.record._crecords``)
and falls back to Python only when ``AIOKAFKA_NO_EXTENSIONS`` is set when it is first
imported. The client benchmarks compare minikafka with the *pure-Python* clients, so they
run aiokafka twice: as installed, and in a child process with that variable set. The
child (``python -m bench.<module> --child NAME ARGS...``) times its own work, so that
its interpreter's start-up and imports stay out, and prints the seconds and its CPU
seconds over them as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import attrs

from ._common import (
    BenchError,
    bar_chart_svg,
    format_percent,
    markdown_table,
    own_cpu_seconds,
)

REFERENCE = "confluent-kafka (C)"
PURE_PYTHON = ("kafka-python", "aiokafka, pure Python")

PURE_ENV = {"AIOKAFKA_NO_EXTENSIONS": "1"}


def timed(work: Callable[[], object]) -> tuple[object, float, float]:
    """``work()``'s result, its wall seconds and this process's CPU seconds over them."""
    cpu, start = own_cpu_seconds(), time.perf_counter()
    result = work()
    return result, time.perf_counter() - start, own_cpu_seconds() - cpu


def in_child(module: str, args: Sequence[str]) -> tuple[object, float, float]:
    """Run ``python -m bench.<module> --child ARGS`` with aiokafka's extensions off."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", "--child", *args],
        env={**os.environ, **PURE_ENV},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise BenchError(f"the pure-Python child failed: {done.stderr[-2000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["result"], float(answer["seconds"]), float(answer["cpu_seconds"])


def child_main(work: Callable[[], object]) -> int:
    """The child's side: check the extensions are off, time ``work``, print JSON."""
    from aiokafka.record import default_records  # type: ignore[import-untyped]

    if "_crecords" in default_records.DefaultRecordBatchBuilder.__module__:
        raise BenchError("aiokafka's C extensions are still in use")
    result, seconds, cpu = timed(work)
    print(json.dumps({"result": result, "seconds": seconds, "cpu_seconds": cpu}))
    return 0


@attrs.frozen
class Run:
    """One client's run: records over seconds, CPU as percentages of one core."""

    client: str
    records: int
    seconds: float
    client_cpu_percent: float
    broker_cpu_percent: float | None

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


def median_of(runs: Sequence[Run], client: str) -> Run:
    ordered = sorted(
        (r for r in runs if r.client == client), key=lambda r: r.records_per_s
    )
    return ordered[len(ordered) // 2]


def table(
    runs: Sequence[Run], clients: Sequence[str], what: str, value_bytes: int
) -> str:
    """Each client's median with the range, MB/s, the ratio to confluent-kafka, CPU; and
    minikafka over each pure-Python client, the issue's goal."""
    reference = median_of(runs, REFERENCE).records_per_s
    rows = []
    for client in clients:
        median = median_of(runs, client)
        rates = [r.records_per_s for r in runs if r.client == client]
        rows.append(
            [
                client,
                f"{median.records_per_s:,.0f}",
                f"{min(rates):,.0f}-{max(rates):,.0f}",
                f"{median.records_per_s * value_bytes / 1e6:.1f}",
                f"{median.records_per_s / reference:.3f}x",
                format_percent(median.client_cpu_percent),
                format_percent(median.broker_cpu_percent),
            ]
        )
    mini = median_of(runs, "minikafka").records_per_s
    verdict = ", ".join(
        f"{mini / median_of(runs, name).records_per_s:.2f}x {name}"
        for name in PURE_PYTHON
    )
    header = [what, "records/s (median)", "range", "MB/s", "/ confluent-kafka"]
    return (
        markdown_table([*header, "client CPU", "broker CPU"], rows)
        + f"\nminikafka against the pure-Python clients: {verdict} (goal: above 1x each)"
    )


def chart(runs: Sequence[Run], clients: Sequence[str], title: str, group: str) -> str:
    return bar_chart_svg(
        title,
        "records/s",
        [(group, [(c, median_of(runs, c).records_per_s) for c in clients])],
    )
