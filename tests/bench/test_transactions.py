"""The code of ``bench/transactions.py`` that turns its runs into the table.

The benchmark measures and never asserts; what it must get right is quoting each
broker's median run, putting a transactional run beside its ceiling (the idempotent run,
read_uncommitted) of the same broker, and pooling the commit latencies of the measured
runs. No broker runs here.
"""

from __future__ import annotations

import pytest

from bench.transactions import (
    ABORT_EVERY,
    TXN_SIZES,
    Run,
    consume_workloads,
    table_rows,
)

RECORDS = 1_000
CONSUME = 2_000


def _run(workload: str, rate: float, round_number: int, records: int) -> Run:
    """A run at ``rate`` records/s whose commits (if transactional) each took as many
    seconds as its round's number plus one."""
    commits = (float(round_number + 1),) * 10 if workload.startswith("txn") else ()
    return Run(
        workload,
        f"t-{workload}",
        records,
        records / rate,
        records / rate / 10,
        0.0,
        0.0,
        commits,
    )


def _runs(scale: float) -> list[Run]:
    """Three rounds of every workload, at ``scale`` times base rates that differ by
    round (1, 3, 2 times: the median round is the last)."""
    runs: list[Run] = []
    for round_number, factor in enumerate((1.0, 3.0, 2.0)):
        speed = factor * scale
        runs.append(_run("idempotent", 1000.0 * speed, round_number, RECORDS))
        for size in TXN_SIZES:
            runs.append(_run(f"txn-{size}", 500.0 * speed, round_number, RECORDS))
        for workload, _, expected, _ in consume_workloads(CONSUME):
            rate = 400.0 if workload.endswith("read_committed") else 800.0
            runs.append(_run(workload, rate * speed, round_number, expected))
    return runs


def test_rows_quote_medians_ratios_to_the_ceiling_and_pooled_commits() -> None:
    """Each rate row is the broker's median run with its range; the ratio rows divide
    a broker's transactional (read_committed) median by its own idempotent
    (read_uncommitted) median; commit percentiles pool every measured commit."""
    rows = table_rows(
        {"kafka": _runs(1.0), "minikafka": _runs(0.5)},
        RECORDS,
        CONSUME,
    )
    by_figure = [(row.scenario, row.figure) for row in rows]
    idempotent = rows[0]
    assert idempotent.scenario == "idempotent produce, 1,000 x 100 B"
    assert (idempotent.kafka, idempotent.minikafka) == pytest.approx((2000.0, 1000.0))
    assert idempotent.kafka_range == pytest.approx((1000.0, 3000.0))
    txn = by_figure.index(
        (f"transactions of {TXN_SIZES[0]}, 1,000 x 100 B", "records/s (median of 3)")
    )
    assert (rows[txn].kafka, rows[txn].minikafka) == pytest.approx((1000.0, 500.0))
    over = rows[txn + 2]
    assert over.figure == "records/s / idempotent"
    assert (over.kafka, over.minikafka) == pytest.approx((0.5, 0.5))
    p50, p99 = rows[txn + 3], rows[txn + 4]
    assert p50.figure == "commit p50 ms (of 30)"
    assert (p50.kafka, p99.kafka) == pytest.approx((2000.0, 3000.0))
    aborted = f"read_committed records/s ({CONSUME - CONSUME // ABORT_EVERY:,} read)"
    last = [row.figure for row in rows][-5:]
    assert last[2].startswith(aborted)
    assert rows[-1].figure == "read_committed / read_uncommitted"
    assert (rows[-1].kafka, rows[-1].minikafka) == pytest.approx((0.5, 0.5))
