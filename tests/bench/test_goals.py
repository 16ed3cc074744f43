"""The goals table quotes each figure from its benchmark's report of the same run, and
says met or not the way the goal reads (at most, at least); a report that is missing, or
a scenario it did not run, is "not measured", never a made-up figure."""

from __future__ import annotations

from collections.abc import Mapping

from bench import goals
from bench._common import Report
from bench.cluster_replication import PRODUCERS


def _report(name: str, document: Mapping[str, object]) -> Report:
    return Report(name, document, "")


def _latency(p99_ms: float) -> dict[str, object]:
    return {"latency": {"p99_ms": p99_ms}}


def _reports() -> dict[str, Report]:
    idempotent = PRODUCERS["idempotent"]
    return {
        "broker_produce": _report(
            "broker_produce",
            {"scenarios": [{"name": "small", "broker": {"requests_per_s": 30_000.0}}]},
        ),
        "cluster_replication": _report(
            "cluster_replication",
            {
                "throughput": [
                    {"scenario": "single node, acks=1", "records_per_s": 1_000.0},
                    {"scenario": "3 brokers, RF 3, acks=all", "records_per_s": 500.0},
                ],
                "latency": [
                    {"rate": 1_000, "producer": idempotent, **_latency(4.0)},
                    {"rate": 10_000, "producer": idempotent, **_latency(25.0)},
                ],
            },
        ),
        "tracing": _report(
            "tracing",
            {
                "overhead": [
                    {
                        "workload": "one record per request: batch.num.messages=1",
                        "traced_over_untraced_records_per_s": 0.95,
                    }
                ]
            },
        ),
    }


def _row(rows: list[goals.Row], starts: str) -> goals.Row:
    return next(r for r in rows if r.goal.name.startswith(starts))


def test_each_goal_is_quoted_and_judged_the_way_it_reads() -> None:
    rows = goals.evaluate(_reports())
    assert len(rows) == len(goals.GOALS)
    small = _row(rows, "single node: small Produce")
    assert (small.figure, small.met) == (30_000.0, True)  # at least 25,000
    ratio = _row(rows, "RF 3 acks=all throughput")
    assert (ratio.figure, ratio.met) == (0.5, False)  # at least 0.6
    tracing = _row(rows, "single node: throughput lost to tracing")
    assert tracing.figure is not None
    assert round(tracing.figure, 6) == 5.0
    assert tracing.met is True  # at most 10 %
    cluster = [r for r in rows if r.goal.name.startswith("three brokers")]
    by_figure = {r.figure: r.met for r in cluster if r.figure is not None}
    assert by_figure == {4.0: True, 25.0: False}  # at most 5 ms and at most 20 ms


def test_a_goal_whose_benchmark_did_not_run_is_not_measured() -> None:
    rows = goals.evaluate(_reports())
    defaults = [r for r in rows if "librdkafka defaults" in r.goal.name]
    assert defaults
    assert all(r.figure is None and r.met is None for r in defaults)
    client = _row(rows, "minikafka: p99 over")
    assert (client.figure, client.met) == (None, None)
    table = goals.table(rows)
    assert "not measured" in table
    assert f"of {len(rows)} goals met" in table


def test_goals_runs_after_the_benchmarks_it_quotes() -> None:
    from bench.__main__ import _with_goals_needs

    assert _with_goals_needs(["goals"]) == [*goals.NEEDS, "goals"]
    order = _with_goals_needs(["goals", "tracing", "cluster_reference"])
    assert order[-1] == "goals"
    assert order[:2] == ["tracing", "cluster_reference"]
    assert sorted(order[:-1]) == sorted({*goals.NEEDS, "cluster_reference"})
    assert _with_goals_needs(["tracing"]) == ["tracing"]
