"""The performance goals, each a row with its ratio, from benchmarks of the same run.

The request path and replication have goals on the 2-vCPU machine (bench/README.md,
"``goals``"): an ``acks=all`` produce on three brokers answered in milliseconds, the
small request at half its old cost, tracing cheap, minikafka's producer as quick as the
pure-Python aiokafka. This benchmark measures nothing itself: it runs after the
benchmarks that measure (``python -m bench goals`` runs them first when they were not
named), takes each goal's figure from their reports of this run, and prints one row per
goal: the figure, the bound, the figure over the bound, met or not, and Apache Kafka's
figure for the same scenario where a benchmark of this run measured Kafka's broker.

Every figure here is quoted from its benchmark's report (its JSON holds every run); this
module only picks and compares, so a goal's row can never disagree with the benchmark
that measured it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from . import broker_produce, cluster_replication, e2e_latency
from ._common import Report, machine_facts, markdown_table, now_utc, report_header

NAME = "goals"
NEEDS = (
    "broker_produce",
    "e2e_latency",
    "tracing",
    "client_latency",
    "cluster_replication",
)
"""The benchmarks a goal takes its figure from, in the order they run."""
KAFKA_FROM = ("kafka_reference", "cluster_reference")
"""Benchmarks of Apache Kafka's broker that ``goals`` quotes when they ran in the same
invocation (``make bench`` runs them all; ``python -m bench goals`` alone does not, as
they need Java and some minutes)."""


@attrs.frozen
class Goal:
    """One goal: what is measured, the bound, and which way is better."""

    name: str
    unit: str
    bound: float
    at_most: bool
    """True: the figure must not exceed ``bound`` (latency, cost); False: not fall below it."""
    source: str
    """The benchmark (and scenario) the figure comes from."""


@attrs.frozen
class Row:
    goal: Goal
    figure: float | None
    kafka: float | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.figure is None else self.figure / self.goal.bound

    @property
    def met(self) -> bool | None:
        if self.figure is None:
            return None
        if self.goal.at_most:
            return self.figure <= self.goal.bound
        return self.figure >= self.goal.bound


def _find(items: Sequence[Mapping[str, Any]], **match: object) -> Mapping[str, Any]:
    for item in items:
        if all(item.get(k) == v for k, v in match.items()):
            return item
    raise KeyError(f"no item with {match}")


def _doc(reports: Mapping[str, Report], name: str) -> Mapping[str, Any]:
    return reports[name].document


def _cluster_p99(rate: int, producer: str) -> Callable[[Mapping[str, Report]], float]:
    def figure(reports: Mapping[str, Report]) -> float:
        latency = _doc(reports, "cluster_replication")["latency"]
        settings = cluster_replication.PRODUCERS[producer]
        return float(_find(latency, rate=rate, producer=settings)["latency"]["p99_ms"])

    return figure


def _kafka_cluster_p99(
    rate: int, producer: str
) -> Callable[[Mapping[str, Report]], float]:
    def figure(reports: Mapping[str, Report]) -> float:
        latency = _doc(reports, "cluster_reference")["latency"]
        run = _find(latency, system="Apache Kafka", producer=producer, rate=rate)
        if run["figures"] is None:
            raise KeyError(f"Kafka's run failed: {run['failed']}")
        return float(run["figures"]["latency"]["p99_ms"])

    return figure


def _rf3_over_single(reports: Mapping[str, Report]) -> float:
    throughput = _doc(reports, "cluster_replication")["throughput"]
    single = _find(throughput, scenario="single node, acks=1")["records_per_s"]
    rf3 = _find(throughput, scenario="3 brokers, RF 3, acks=all")["records_per_s"]
    return float(rf3) / float(single)


def _small_produce(reports: Mapping[str, Report]) -> float:
    small = _find(_doc(reports, "broker_produce")["scenarios"], name="small")
    return float(small["broker"]["requests_per_s"])


def _single_p99(idempotent: bool) -> Callable[[Mapping[str, Report]], float]:
    def figure(reports: Mapping[str, Report]) -> float:
        scenarios = _doc(reports, "e2e_latency")["scenarios"]
        run = _find(scenarios, rate=10_000, acks="all", idempotent=idempotent)
        return float(run["median"]["latency"]["p99_ms"])

    return figure


def _kafka_single_p99(reports: Mapping[str, Report]) -> float:
    table = _doc(reports, "kafka_reference")["table"]
    row = _find(table, scenario="e2e 10,000 records/s, acks=all")
    return float(row["kafka"])


def _tracing_cost(reports: Mapping[str, Report]) -> float:
    overhead = _doc(reports, "tracing")["overhead"]
    one = next(o for o in overhead if str(o["workload"]).startswith("one record per"))
    # The share of untraced throughput a traced broker loses, in percent.
    return 100.0 * (1.0 - float(one["traced_over_untraced_records_per_s"]))


def _client_p99(reports: Mapping[str, Report], client: str) -> float:
    runs = _doc(reports, "client_latency")["runs"]
    return statistics.median(
        float(r["latency"]["p99_ms"]) for r in runs if r["client"] == client
    )


def _over_aiokafka(client: str) -> Callable[[Mapping[str, Report]], float]:
    def figure(reports: Mapping[str, Report]) -> float:
        return _client_p99(reports, client) / _client_p99(
            reports, "aiokafka, pure Python"
        )

    return figure


_CLUSTER = "three brokers, RF 3, acks=all, linger.ms=0"
GOALS: tuple[
    tuple[
        Goal,
        Callable[[Mapping[str, Report]], float],
        Callable[[Mapping[str, Report]], float] | None,
    ],
    ...,
] = (
    *(
        (
            Goal(
                f"{_CLUSTER}: end-to-end p99 at {rate:,} records/s, {producer} producer",
                "ms",
                cluster_replication.GOAL_P99_MS[rate],
                True,
                "cluster_replication",
            ),
            _cluster_p99(rate, producer),
            _kafka_cluster_p99(rate, producer),
        )
        for producer in cluster_replication.PRODUCERS
        for rate in cluster_replication.LATENCY_RATES
    ),
    (
        Goal(
            "RF 3 acks=all throughput over the single node's acks=1 (large batches)",
            "x",
            cluster_replication.GOAL_RATIO,
            False,
            "cluster_replication",
        ),
        _rf3_over_single,
        None,
    ),
    (
        Goal(
            "single node: small Produce (one 100 B record, acks=1)",
            "requests/s",
            broker_produce.SMALL_GOAL_REQ_S,
            False,
            "broker_produce",
        ),
        _small_produce,
        None,
    ),
    (
        Goal(
            "single node: end-to-end p99 at 10,000 records/s, linger.ms=0, acks=all, "
            "librdkafka defaults producer",
            "ms",
            e2e_latency.GOAL_P99_MS,
            True,
            "e2e_latency",
        ),
        _single_p99(False),
        _kafka_single_p99,
    ),
    (
        Goal(
            "single node: end-to-end p99 at 10,000 records/s, linger.ms=0, acks=all, "
            "idempotent producer",
            "ms",
            e2e_latency.GOAL_P99_MS,
            True,
            "e2e_latency",
        ),
        _single_p99(True),
        None,
    ),
    (
        Goal(
            "single node: throughput lost to tracing, one record per request",
            "%",
            10.0,
            True,
            "tracing",
        ),
        _tracing_cost,
        None,
    ),
    *(
        (
            Goal(
                f"{client}: p99 over pure-Python aiokafka's, 1,000 records/s",
                "x",
                1.0,
                True,
                "client_latency",
            ),
            _over_aiokafka(client),
            None,
        )
        # The threaded API (an application's thread beside the client's trio thread)
        # and the async one (one trio thread, as aiokafka runs on one asyncio loop).
        for client in ("minikafka", "minikafka, async on trio")
    ),
)


def evaluate(reports: Mapping[str, Report]) -> list[Row]:
    """Each goal's row, from the reports of this run (a missing report: no figure)."""
    rows = []
    for goal, figure, kafka in GOALS:
        rows.append(
            Row(
                goal,
                _quoted(figure, reports),
                None if kafka is None else _quoted(kafka, reports),
            )
        )
    return rows


def _quoted(
    figure: Callable[[Mapping[str, Report]], float], reports: Mapping[str, Report]
) -> float | None:
    try:
        return figure(reports)
    except KeyError:
        return None  # its benchmark did not run, or not that scenario (--quick)


def run(quick: bool, reports: Mapping[str, Report]) -> Report:
    started, clock = now_utc(), time.perf_counter()
    rows = evaluate(reports)
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, 1, started, clock),
        "machine": {**machine_facts(), "load_average": list(os.getloadavg())},
        "sources": {
            name: reports[name].document.get("started_at")
            for name in (*NEEDS, *KAFKA_FROM)
            if name in reports
        },
        "goals": [
            {
                "goal": row.goal.name,
                "unit": row.goal.unit,
                "bound": row.goal.bound,
                "at_most": row.goal.at_most,
                "source": row.goal.source,
                "figure": row.figure,
                "figure_over_bound": row.ratio,
                "met": row.met,
                "kafka": row.kafka,
            }
            for row in rows
        ],
    }
    return Report(NAME, document, table(rows))


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "not measured"
    if unit == "requests/s":
        return f"{value:,.0f} {unit}"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.2f} {unit}"


def table(rows: Sequence[Row]) -> str:
    header = ["goal", "source", "bound", "measured", "measured / bound", "met", "Kafka"]
    lines = []
    for row in rows:
        goal = row.goal
        bound = ("<= " if goal.at_most else ">= ") + _number(goal.bound, goal.unit)
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}"
        met = {None: "", True: "met", False: "not met"}[row.met]
        kafka = "" if row.kafka is None else _number(row.kafka, goal.unit)
        lines.append(
            [
                goal.name,
                goal.source,
                bound,
                _number(row.figure, goal.unit),
                ratio,
                met,
                kafka,
            ]
        )
    count = sum(1 for row in rows if row.met)
    return (
        markdown_table(header, lines)
        + f"\n{count} of {len(rows)} goals met. measured / bound: below 1 meets an "
        "'at most' goal, 1 or more an 'at least' one."
    )
