"""The code of ``bench/cluster_reference.py`` that turns runs into figures and a table.

The benchmark measures and never asserts; what it must get right is deriving the rate a
cluster sustained and the CPU per record from a run's figures, quoting a median among
the runs that passed their checks (a failed run is shown, never taken as the median
while another passed), and putting both systems in one table. The runs below are built
by hand with figures of the shape the 2026-12-04 runs produced; nothing starts.
"""

from __future__ import annotations

import pytest

from bench import cluster_replication, e2e_latency
from bench.cluster_reference import (
    DEFAULTS,
    KAFKA,
    MINIKAFKA,
    LatencyRun,
    Load,
    Results,
    ThroughputRun,
    _alternating,
    _table,
)

LOAD = Load(other_cpu_percent=60.0, load_average=9.0)


def _latency_run(
    system: str, rate: int, p99_ms: float, seconds: float, cpu: float | None = 80.0
) -> LatencyRun:
    timed, warmup = rate, rate // 2  # one timed second after half a second's warm-up
    figures = e2e_latency.Run(
        rate=rate,
        acks="all",
        records=timed,
        warmup_records=warmup,
        seconds=seconds,
        achieved_rate_per_s=float(rate),
        latency={"p50_ms": p99_ms / 2, "p99_ms": p99_ms, "max_ms": p99_ms + 1},
        broker_cpu_percent=cpu,
        client_cpu_percent=10.0,
        other_cpu_percent=None,
    )
    return LatencyRun(system, DEFAULTS, rate, figures, LOAD)


def _throughput_run(system: str, records_per_s: float) -> ThroughputRun:
    records = 300_000
    seconds = records / records_per_s
    figures = cluster_replication.Throughput(
        "3 brokers, RF 3, acks=all",
        records,
        seconds,
        records_per_s,
        records_per_s * 100 / 1e6,
        {
            "producer": 20.0,
            "node-0": 4.0,
            "node-1": 30.0,
            "node-2": 20.0,
            "node-3": 10.0,
        },
    )
    return ThroughputRun(system, figures, LOAD)


def test_sustained_rate_counts_the_warmup_records_and_time() -> None:
    # 1,500 records (500 of warm-up sent over 0.5 s) done 2.5 s after the timed start:
    # the cluster kept up with 1,500 / 3.0 s, not the timed 1,000 / 2.5 s.
    run = _latency_run(KAFKA, 1_000, 900.0, seconds=2.5)
    assert run.sustained_per_s == pytest.approx(500.0)


def test_cpu_per_record_leaves_out_the_controller_and_the_producer() -> None:
    # node-1..3 at 60% of a core together for 1 s (300,000 records at 300,000/s): 2 µs
    # a record; the controller (node-0) and the producer are not on the broker side.
    run = _throughput_run(MINIKAFKA, 300_000.0)
    assert run.broker_us_per_record == pytest.approx(2.0)
    latency = _latency_run(KAFKA, 1_000, 900.0, seconds=2.0, cpu=50.0)
    assert latency.leader_us_per_record == pytest.approx(1_000.0)  # 1 s CPU / 1,000


def test_a_failed_run_is_never_the_median_while_another_passed() -> None:
    failed = LatencyRun(
        MINIKAFKA, DEFAULTS, 10_000, None, LOAD, "record 7 arrived where 9 was due"
    )
    passed = _latency_run(MINIKAFKA, 10_000, 5_000.0, seconds=20.0)
    results = Results(
        1_000, {10_000: 1.0}, {}, {(MINIKAFKA, DEFAULTS, 10_000): [failed, passed]}
    )
    assert results.median_latency() == [passed]
    alone = Results(1_000, {10_000: 1.0}, {}, {(MINIKAFKA, DEFAULTS, 10_000): [failed]})
    assert alone.median_latency() == [failed]
    assert failed.sustained_per_s is None
    assert failed.leader_us_per_record is None


def test_the_table_shows_both_systems_and_a_failure_with_its_reason() -> None:
    results = Results(
        300_000,
        {1_000: 3.0, 10_000: 1.0},
        {
            KAFKA: [
                _throughput_run(KAFKA, r) for r in (250_000.0, 260_000.0, 240_000.0)
            ],
            MINIKAFKA: [_throughput_run(MINIKAFKA, 500_000.0)],
        },
        {
            (KAFKA, DEFAULTS, 10_000): [
                _latency_run(KAFKA, 10_000, 9_600.0, seconds=10.6)
            ],
            (MINIKAFKA, DEFAULTS, 10_000): [
                LatencyRun(MINIKAFKA, DEFAULTS, 10_000, None, LOAD, "out of order")
            ],
        },
    )
    table = _table(results)
    assert "250,000 rec/s (240,000-260,000)" in table  # the median, then the range
    assert "500,000 rec/s" in table
    assert "p99 9.6 s" in table
    assert "failed: out of order" in table
    assert table.index("Apache Kafka: e2e") < table.index("minikafka: e2e")


def test_rounds_alternate_which_system_goes_first() -> None:
    orders = [order for _, order in _alternating(3)]
    assert orders == [(KAFKA, MINIKAFKA), (MINIKAFKA, KAFKA), (KAFKA, MINIKAFKA)]
