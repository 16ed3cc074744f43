"""Three brokers with RF 3 and acks=all: Apache Kafka's and minikafka's, in one run.

``cluster_replication``'s scenarios, measured on two clusters of the same shape running
side by side on this machine, alternating:

- **Apache Kafka** (the release ``reference/pom.xml`` pins): ``reference.cluster.
  KafkaCluster``, a controller-only node and three broker-only nodes, each a JVM
  (brokers ``-Xms256m -Xmx512m``, the controller ``-Xms128m -Xmx256m``), otherwise Kafka's
  defaults (``min.insync.replicas=1``, as minikafka's);
- **minikafka**: ``cluster_replication.three_brokers``, a controller and three
  broker-only nodes, each a process (``ProcessCluster``, what ``make cluster`` runs),
  ``min.insync.replicas=1``.

Measured on each, on a fresh one-partition topic with RF 3 per measurement (created, then
waited for until its three replicas are in sync):

- **throughput**: ``cluster_replication``'s, ``RECORDS`` 100-byte records from a
  confluent-kafka producer in this process as fast as it takes them, ``acks=all``,
  ``linger.ms=5`` and librdkafka's batch size (large batches), timed from the first
  ``produce()`` to the last acknowledgement; CPU of each node and of the producer, and
  the three brokers' CPU per record (what the machine's load disturbs least);
- **end-to-end latency**: ``cluster_replication``'s, which is ``e2e_latency``'s paced
  produce-to-consume run (librdkafka producer and consumer in this process,
  ``linger.ms=0``, librdkafka's other defaults, ``max.in.flight`` included, 100-byte
  stamped records checked in order) with ``acks=all``, at 1,000 and 10,000 records/s,
  for ``SECONDS`` at each (after ``e2e_latency``'s half-second warm-up): p50/p99/max, the
  rate sent, the time until the last record was acknowledged and consumed (records over
  that time is the rate the cluster sustained), the leader's CPU. At 10,000/s a cluster
  that falls behind queues requests; one second sent keeps the queue under librdkafka's
  60 s request timeout, past which it would resend and reorder (a run that fails its
  order check anyway is reported as failed, with why, and the benchmark goes on).

Both clusters start first and run for the whole benchmark (the one not measured is
idle); ``WARMUP_RUNS`` unmeasured throughput runs on each warm the JVMs' JIT (Kafka's
first 300,000 records go at a fifth of its later rate), and one unmeasured latency run
at 1,000 records/s the small-request path's (without it, Kafka's C2 compiler threads
took as much of the leader's CPU as its request path in the first latency run). Then
``REPEATS`` rounds of throughput and ``LATENCY_REPEATS`` rounds of latency, each round
measuring Kafka then minikafka, the next the other way round, so both see the same
moments of a shared machine. The run with the median figure (records/s, p99) is quoted.
Every measurement records what the rest of the machine used meanwhile (``/proc/stat``
less both clusters' processes and this one) and the load average. Nothing is pinned:
nine processes share the machine's cores.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Protocol

import attrs
from confluent_kafka.admin import AdminClient

from reference.cluster import CONTROLLER_ID, KafkaCluster
from reference.kafka import kafka_version

from . import cluster_replication, e2e_latency
from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    own_cpu_seconds,
    process_cpu_seconds,
    report_header,
)
from ._wire import VALUE_BYTES

NAME = "cluster_reference"
RATES = (1_000, 10_000)
REPEATS = 3
LATENCY_REPEATS = 2
WARMUP_RUNS = 2
SECONDS = {1_000: e2e_latency.SECONDS, 10_000: 1.0}
QUICK_SECONDS = {1_000: e2e_latency.QUICK_SECONDS, 10_000: 0.3}
RECORDS = cluster_replication.RECORDS
QUICK_RECORDS = cluster_replication.QUICK_RECORDS
KAFKA, MINIKAFKA = "Apache Kafka", "minikafka"
PRODUCERS = cluster_replication.PRODUCERS
DEFAULTS = "librdkafka defaults"
SYSTEMS = (KAFKA, MINIKAFKA)


class Cluster(Protocol):
    """What both clusters offer a measurement: where to connect, and each node's pid."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def node_ids(self) -> list[int]: ...

    def pid(self, node: int) -> int | None: ...


@attrs.frozen
class Load:
    """The rest of the machine during one measurement."""

    other_cpu_percent: float | None
    """CPU the other processes used, % of one core (``/proc/stat`` less both clusters'
    processes and this one)."""
    load_average: float
    """The one-minute load average at the end."""


@attrs.frozen
class ThroughputRun:
    system: str
    figures: cluster_replication.Throughput
    load: Load

    @property
    def broker_us_per_record(self) -> float:
        """The three brokers' CPU over the run, µs per record (the controller's left
        out: it is not on the produce path)."""
        used = sum(
            v
            for k, v in self.figures.cpu_percent.items()
            if k.startswith("node-") and k != f"node-{CONTROLLER_ID}" and v is not None
        )
        return used / 100 * self.figures.seconds / self.figures.records * 1e6


@attrs.frozen
class LatencyRun:
    system: str
    producer: str
    """One of ``cluster_replication.PRODUCERS``."""
    rate: int
    figures: e2e_latency.Run | None
    load: Load
    failed: str | None = None
    """Why the run failed its checks (``figures`` is then None)."""

    @property
    def sustained_per_s(self) -> float | None:
        """Every record sent (the warm-up's too) over the time from the first
        ``produce()`` to the last record acknowledged and consumed: the rate the cluster
        kept up with, if below the rate sent."""
        run = self.figures
        if run is None or run.stall:
            return None
        total = run.warmup_records + run.records
        return total / (run.seconds + run.warmup_records / run.rate)

    @property
    def leader_us_per_record(self) -> float | None:
        """The leader's CPU over the timed stretch and the drain after it, µs per timed
        record (the warm-up's backlog drains in it too: an upper bound)."""
        run = self.figures
        if run is None or run.broker_cpu_percent is None:
            return None
        return run.broker_cpu_percent / 100 * run.seconds / run.records * 1e6


@contextmanager
def _measuring_load(pids: list[int], out: list[Load]) -> Iterator[None]:
    """Appends to ``out`` what the machine less ``pids`` and this process used."""
    busy, own, started = machine_busy_seconds(), own_cpu_seconds(), time.perf_counter()
    ours = [process_cpu_seconds(pid) for pid in pids]
    yield
    wall = time.perf_counter() - started
    after, used_own = machine_busy_seconds(), own_cpu_seconds() - own
    other = None
    ours_after = [process_cpu_seconds(pid) for pid in pids]
    if busy is not None and after is not None:
        used = sum(
            b - a
            for a, b in zip(ours, ours_after, strict=True)
            if a is not None and b is not None
        )
        other = max(0.0, 100 * (after - busy - used - used_own) / wall)
    out.append(Load(other, os.getloadavg()[0]))


def _new_topic(cluster: Cluster, topic: str) -> int:
    """A one-partition RF 3 topic, its replicas in sync as every broker's metadata has
    it (a consumer asking a broker that has not heard of it yet would be told
    UNKNOWN_TOPIC_OR_PARTITION); the pid of its leader."""
    e2e_latency._create_topic(cluster.bootstrap, topic, 3)
    for broker in cluster.bootstrap.split(","):
        leader = cluster_replication.wait_in_sync(broker, topic)
    pid = cluster.pid(leader)
    if pid is None:
        raise BenchError(f"{topic}: its leader, node {leader}, is not running")
    return pid


def _pids(cluster: Cluster) -> dict[str, int]:
    found = {f"node-{n}": cluster.pid(n) for n in cluster.node_ids}
    return {name: pid for name, pid in found.items() if pid is not None}


def _throughput(
    cluster: Cluster, topic: str, records: int
) -> cluster_replication.Throughput:
    _new_topic(cluster, topic)
    return cluster_replication._measure(
        "3 brokers, RF 3, acks=all",
        cluster.bootstrap,
        topic,
        records,
        "all",
        _pids(cluster),
    )


def _alternating(rounds: int) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Each round's order: Kafka first, then minikafka first, and so on."""
    for r in range(rounds):
        yield r, SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]


@contextmanager
def _both_clusters(scratch: Path) -> Iterator[dict[str, Cluster]]:
    with ExitStack() as stack:
        kafka = stack.enter_context(KafkaCluster(scratch / "kafka"))
        mini = stack.enter_context(
            cluster_replication.three_brokers(scratch / "minikafka")
        )
        AdminClient({"bootstrap.servers": mini.bootstrap}).list_topics(timeout=30)
        yield {KAFKA: kafka, MINIKAFKA: mini}


@attrs.frozen
class Results:
    """Every run of both clusters, in the order measured within each list."""

    records: int
    seconds: dict[int, float]
    throughput: dict[str, list[ThroughputRun]]
    latency: dict[tuple[str, str, int], list[LatencyRun]]
    """Every run by (system, producer, rate)."""

    def median_throughput(self) -> list[ThroughputRun]:
        return [
            median_run(runs, lambda t: t.figures.records_per_s)
            for runs in self.throughput.values()
        ]

    def median_latency(self) -> list[LatencyRun]:
        """Per system and rate, the run with the median p99 (the lower of two) among
        those that passed their checks, else the first."""
        medians = []
        for runs in self.latency.values():
            passed = [r for r in runs if r.figures is not None and not r.figures.stall]
            medians.append(median_run(passed, lambda t: _p99(t)) if passed else runs[0])
        return medians

    def document(self) -> dict[str, object]:
        def throughput(x: ThroughputRun) -> dict[str, object]:
            return {**attrs.asdict(x), "broker_us_per_record": x.broker_us_per_record}

        def latency(x: LatencyRun) -> dict[str, object]:
            return {
                **attrs.asdict(x),
                "sustained_per_s": x.sustained_per_s,
                "leader_us_per_record": x.leader_us_per_record,
            }

        return {
            "kafka_version": kafka_version(),
            "records": self.records,
            "value_bytes": VALUE_BYTES,
            "timed_seconds": {str(k): v for k, v in self.seconds.items()},
            "throughput": [throughput(x) for x in self.median_throughput()],
            "latency": [latency(x) for x in self.median_latency()],
            "runs": {
                "throughput": [
                    throughput(x) for runs in self.throughput.values() for x in runs
                ],
                "latency": [latency(x) for runs in self.latency.values() for x in runs],
            },
        }


def _p99(run: LatencyRun) -> float:
    return run.figures.latency["p99_ms"] if run.figures is not None else math.inf


def measure(quick: bool = False) -> dict[str, object]:
    """Both clusters' figures as JSON-ready values: ``throughput`` and ``latency`` (the
    median runs, each with its ``system``, ``figures`` and the machine's ``load``) and
    every run under ``runs``."""
    return measure_runs(quick).document()


def measure_runs(quick: bool = False) -> Results:
    """Starts both clusters, measures them alternating, stops them."""
    records = QUICK_RECORDS if quick else RECORDS
    repeats, latency_repeats = (1, 1) if quick else (REPEATS, LATENCY_REPEATS)
    results = Results(
        records,
        QUICK_SECONDS if quick else SECONDS,
        {s: [] for s in SYSTEMS},
        {(s, p, rate): [] for p in PRODUCERS for rate in RATES for s in SYSTEMS},
    )
    with (
        tempfile.TemporaryDirectory(prefix="minikafka-bench-cluster-ref-") as scratch,
        _both_clusters(Path(scratch)) as clusters,
    ):
        every_pid = [pid for c in clusters.values() for pid in _pids(c).values()]
        for w in range(1 if quick else WARMUP_RUNS):  # not measured
            for cluster in clusters.values():
                _throughput(cluster, f"warmup-{w}", records)
        for r, order in _alternating(repeats):
            for system in order:
                loads: list[Load] = []
                with _measuring_load(every_pid, loads):
                    done = _throughput(clusters[system], f"throughput-{r}", records)
                results.throughput[system].append(ThroughputRun(system, done, loads[0]))
                print(
                    f"  run {r + 1}/{repeats} {system:<13} acks=all RF 3 "
                    f"{done.records_per_s:>10,.0f} rec/s  (other CPU "
                    f"{_percent(loads[0].other_cpu_percent)})",
                    flush=True,
                )
        for system, cluster in clusters.items():  # the small-request path's JIT
            warm = results.seconds[RATES[0]]
            _latency(
                system, cluster, DEFAULTS, RATES[0], warm, "latency-warmup", every_pid
            )
        for r, order in _alternating(latency_repeats):
            for producer in PRODUCERS:
                for rate in RATES:
                    for system in order:
                        run = _latency(
                            system,
                            clusters[system],
                            producer,
                            rate,
                            _seconds(results.seconds, producer, rate),
                            f"latency-{producer.split()[0]}-{rate}-{r}",
                            every_pid,
                        )
                        results.latency[(system, producer, rate)].append(run)
                        print(
                            f"  run {r + 1}/{latency_repeats} {system:<13} {producer:<19}"
                            f" e2e {rate:>6,}/s {_latency_cells(run)[0]} "
                            f"({_latency_cells(run)[1]})",
                            flush=True,
                        )
    return results


def _seconds(seconds: dict[int, float], producer: str, rate: int) -> float:
    """How long a run sends: ``seconds[rate]`` for librdkafka's defaults (a backlog
    must stay short), the full time for the idempotent producer, which keeps up."""
    return seconds[rate] if producer == DEFAULTS else seconds[RATES[0]]


def _latency(
    system: str,
    cluster: Cluster,
    producer: str,
    rate: int,
    seconds: float,
    topic: str,
    every_pid: list[int],
) -> LatencyRun:
    leader = _new_topic(cluster, topic)
    loads: list[Load] = []
    try:
        with _measuring_load(every_pid, loads):
            run = e2e_latency._one_run(
                cluster.bootstrap,
                leader,
                e2e_latency.Scenario(rate, "all"),
                seconds,
                topic,
                create=False,
                producer_settings=PRODUCERS[producer],
            )
    except BenchError as e:
        # a finding (a consumer error, records out of order), not a reason to lose the
        # other figures
        load = Load(None, os.getloadavg()[0])
        return LatencyRun(system, producer, rate, None, load, str(e))
    return LatencyRun(system, producer, rate, run, loads[0])


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _ms(value: float) -> str:
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.2f} ms"


def _latency_cells(timed: LatencyRun) -> tuple[str, str, str]:
    """(latencies, rates, CPU) of a run, or its failure."""
    run = timed.figures
    if run is None:
        return f"failed: {timed.failed}", "", ""
    lat = run.latency
    sustained = timed.sustained_per_s
    cpu = timed.leader_us_per_record
    return (
        f"p50 {_ms(lat['p50_ms'])}, p99 {_ms(lat['p99_ms'])}, max {_ms(lat['max_ms'])}",
        f"{run.achieved_rate_per_s:,.0f}/s sent, "
        + (
            run.stall
            or f"all done in {run.seconds:.1f} s: {sustained:,.0f}/s sustained"
        ),
        f"leader {_percent(run.broker_cpu_percent)}"
        + ("" if cpu is None else f", {cpu:,.0f} µs/record"),
    )


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    results = measure_runs(quick)
    document: dict[str, object] = {
        **report_header(
            NAME, __doc__, quick, len(results.throughput[KAFKA]), started, clock
        ),
        "latency_repeats": len(results.latency[(KAFKA, DEFAULTS, RATES[0])]),
        "warmup_runs": 1 if quick else WARMUP_RUNS,
        "producer": {
            "throughput": {"acks": "all", "linger.ms": 5, "compression.type": "none"},
            "latency": {"acks": "all", "linger.ms": 0, "compression.type": "none"},
            "latency_producers": PRODUCERS,
            "other": "librdkafka defaults",
        },
        "machine": machine_facts(),
        **results.document(),
    }
    return Report(NAME, document, _table(results), _chart(results))


def _table(results: Results) -> str:
    header = ["3 brokers, RF 3, acks=all", "figure", "", "CPU", "other CPU"]
    rows: list[list[str]] = []
    for median in results.median_throughput():
        t = median.figures
        rates = [x.figures.records_per_s for x in results.throughput[median.system]]
        cpu = ", ".join(
            f"{k} {v:.0f}%" for k, v in t.cpu_percent.items() if v is not None
        )
        rows.append(
            [
                f"{median.system}: throughput, linger.ms=5",
                f"{t.records_per_s:,.0f} rec/s ({min(rates):,.0f}-{max(rates):,.0f})",
                f"{t.mb_per_s:.1f} MB/s; brokers {median.broker_us_per_record:.1f} "
                "µs CPU/record",
                cpu,
                _percent(median.load.other_cpu_percent),
            ]
        )
    for timed in results.median_latency():
        rows.append(
            [
                f"{timed.system}: e2e {timed.rate:,}/s, linger.ms=0, {timed.producer}",
                *_latency_cells(timed),
                _percent(timed.load.other_cpu_percent),
            ]
        )
    return markdown_table(header, rows) + (
        "\nthroughput: the median run (range); latency: the run with the median p99 "
        "(the lower of two); 'done in': from the first timed record to the last one "
        "acknowledged and consumed; other CPU: the rest of the machine meanwhile, "
        "% of one core."
    )


def _chart(results: Results) -> str:
    return bar_chart_svg(
        "3 brokers, RF 3, acks=all: Apache Kafka and minikafka, records/s",
        "records/s",
        [
            (m.system, [("records/s", m.figures.records_per_s)])
            for m in results.median_throughput()
        ],
    )
