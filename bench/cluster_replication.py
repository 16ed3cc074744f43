"""Replication's cost: a single node against three brokers with RF 3.

Throughput, in one run: a confluent-kafka (librdkafka) producer in this process sends
``RECORDS`` 100-byte records to a one-partition topic as fast as it can (``linger.ms=5``,
librdkafka's default batch size, no compression), timed from the first ``produce()`` to
the last acknowledgement, in three scenarios:

- **single node, acks=1**: ``python -m minikafka.broker broker`` (KRaft combined mode),
  a topic of one replica: the ceiling the others are measured against;
- **3 brokers, RF 3, acks=all**: a controller and three broker-only nodes, each a
  process of its own (``minikafka.broker.testing.ProcessCluster``, what ``make cluster``
  runs), ``min.insync.replicas=1``; a record is acknowledged once both followers have
  fetched it (their next fetch tells the leader, which moves the high watermark);
- **3 brokers, RF 3, acks=1**: the same cluster; acknowledged once the leader has it,
  while the followers copy in the background.

Each scenario runs ``REPEATS`` times, interleaved, on fresh nodes; the median run is
quoted with the range. It reports records/s and MB/s (values only), and the CPU of every process
(the producer's and each node's) as percentages of one core. Then the **end-to-end
latency** at a steady 1,000 and 10,000 records/s with ``acks=all`` and RF 3
(``linger.ms=0``; ``e2e_latency``'s producer and consumer, their figures p50/p99/max),
with two producers (:data:`PRODUCERS`): librdkafka's defaults, which put no limit on
requests in flight, and the idempotent producer, which sends at most 5 (the Java
producer's defaults); against the goals: p99 at most 5 ms at 1,000 records/s and 20 ms
at 10,000, and RF 3 ``acks=all`` at least 0.6x the single node's throughput.
A fresh node set per scenario; four processes and this one share the machine's CPUs (no
pinning: there are more processes than cores).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import attrs
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ProcessCluster, free_ports

from . import e2e_latency
from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    format_percent,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    own_cpu_seconds,
    process_cpu_seconds,
    report_header,
)
from ._wire import VALUE_BYTES, spawned_broker

NAME = "cluster_replication"
RECORDS = 300_000
REPEATS = 3
QUICK_RECORDS = 30_000
LATENCY_RATES = (1_000, 10_000)
PRODUCERS: dict[str, dict[str, str]] = {
    # A connection's requests are answered one at a time, so with no bound on them in
    # flight a producer that sends faster than one round trip a request queues requests
    # in the socket, where its batching cannot see them: a long run at such a rate ends
    # in librdkafka's 60 s request timeout and a resend. Waiting out the backlog shows
    # how far behind the cluster is; a resend would only duplicate records.
    "librdkafka defaults": {"socket.timeout.ms": "300000"},
    # Kafka's Java producer's defaults since 3.0: at most 5 requests in flight, so the
    # records behind them wait in the producer and leave together in the next batch.
    "idempotent": {"enable.idempotence": "true"},
}
"""The producers of the end-to-end runs: librdkafka's defaults (no limit on requests in
flight) and the idempotent producer (at most 5)."""
GOAL_P99_MS = {1_000: 5.0, 10_000: 20.0}
"""The goals' end-to-end p99 bound at each rate (``goals`` quotes both)."""
GOAL_RATIO = 0.6
_VALUE = b"x" * VALUE_BYTES


@attrs.frozen
class Throughput:
    scenario: str
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    cpu_percent: dict[str, float | None]
    """Process -> CPU over the timed stretch, % of one core (producer, node-N)."""


def _produce(
    bootstrap: str, topic: str, records: int, acks: str
) -> tuple[float, list[str]]:
    """Send ``records`` values as fast as librdkafka takes them; (seconds, errors)."""
    errors: list[str] = []

    def report(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "compression.type": "none",
            "queue.buffering.max.messages": 1_000_000,
            "on_delivery": report,
            "delivery.report.only.error": True,
        }
    )
    producer.list_topics(topic, timeout=30)  # connected, leader known
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, _VALUE, partition=0)
                break
            except BufferError:
                producer.poll(0.001)  # the client's queue is full: let it drain
    if producer.flush(120) != 0:
        raise BenchError(f"{topic}: records still unacknowledged after 120 s")
    return time.perf_counter() - start, errors


def _measure(
    scenario: str,
    bootstrap: str,
    topic: str,
    records: int,
    acks: str,
    pids: Mapping[str, int],
) -> Throughput:
    before = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
    own = own_cpu_seconds()
    seconds, errors = _produce(bootstrap, topic, records, acks)
    if errors:
        raise BenchError(f"{scenario}: delivery errors {errors[:3]}")
    cpu: dict[str, float | None] = {
        "producer": 100 * (own_cpu_seconds() - own) / seconds
    }
    for name, pid in pids.items():
        after, was = process_cpu_seconds(pid), before[name]
        cpu[name] = (
            None if after is None or was is None else 100 * (after - was) / seconds
        )
    rate = records / seconds
    return Throughput(scenario, records, seconds, rate, rate * VALUE_BYTES / 1e6, cpu)


@contextmanager
def three_brokers(root: Path) -> Iterator[ProcessCluster]:
    """A controller and three broker-only nodes (``min.insync.replicas=1``), stopped at
    the end."""
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        root,
        3,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides={"min.insync.replicas": "1"},
    )
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def _latency_run(
    scratch: Path, producer: str, settings: Mapping[str, str], rate: int, seconds: float
) -> e2e_latency.Run:
    """``e2e_latency``'s paced run, acks=all, on a fresh three-broker cluster."""
    slug = "idempotent" if "enable.idempotence" in settings else "defaults"
    with three_brokers(scratch / f"cluster-latency-{slug}-{rate}") as cluster:
        topic = f"rf3-latency-{slug}-{rate}"
        _create(cluster.bootstrap, topic, 3)
        wait_in_sync(cluster.bootstrap, topic)
        return e2e_latency._one_run(
            cluster.bootstrap,
            _leader_pid(cluster, topic),
            e2e_latency.Scenario(rate, "all"),
            seconds,
            topic,
            create=False,
            producer_settings=settings,
        )


def producer_name(run: e2e_latency.Run) -> str:
    """Which of :data:`PRODUCERS` made ``run``."""
    return next(name for name, s in PRODUCERS.items() if s == run.producer)


def _create(bootstrap: str, topic: str, replication_factor: int) -> None:
    e2e_latency._create_topic(bootstrap, topic, replication_factor)


def _leader_pid(cluster: ProcessCluster, topic: str) -> int:
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(
        topic, timeout=30
    )
    leader = metadata.topics[topic].partitions[0].leader
    pid = cluster.pid(leader)
    if pid is None:
        raise BenchError(f"{topic}: leader {leader} is not running")
    return pid


def wait_in_sync(bootstrap: str, topic: str) -> int:
    """Partition 0's leader, once its three replicas are in sync."""
    deadline = time.monotonic() + 60
    admin = AdminClient({"bootstrap.servers": bootstrap})
    while True:
        found = admin.list_topics(topic, timeout=30).topics[topic]
        if found.error is None and len(found.partitions[0].isrs) == 3:
            return int(found.partitions[0].leader)
        if time.monotonic() > deadline:
            raise BenchError(f"{topic}: not in sync after 60 s")
        time.sleep(0.1)  # polling the cluster's metadata, inside the deadline


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    records = QUICK_RECORDS if quick else RECORDS
    seconds = e2e_latency.QUICK_SECONDS if quick else e2e_latency.SECONDS
    repeats = 1 if quick else REPEATS
    runs: dict[str, list[Throughput]] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-cluster-") as scratch:
        # interleaved, fresh nodes each time: the median is quoted
        for r in range(repeats):
            with spawned_broker(Path(scratch) / f"single-{r}") as broker:
                bootstrap = f"{broker.host}:{broker.port}"
                _create(bootstrap, "single", 1)
                done = _measure(
                    "single node, acks=1",
                    bootstrap,
                    "single",
                    records,
                    "1",
                    {"node": broker.pid},
                )
                runs.setdefault(done.scenario, []).append(done)
                broker.check_alive()
            for acks in ("all", "1"):
                with three_brokers(
                    Path(scratch) / f"cluster-acks-{acks}-{r}"
                ) as cluster:
                    topic = f"rf3-acks-{acks}"
                    _create(cluster.bootstrap, topic, 3)
                    wait_in_sync(cluster.bootstrap, topic)
                    pids = {f"node-{n}": cluster.pid(n) for n in cluster.node_ids}
                    done = _measure(
                        f"3 brokers, RF 3, acks={acks}",
                        cluster.bootstrap,
                        topic,
                        records,
                        acks,
                        {name: pid for name, pid in pids.items() if pid is not None},
                    )
                    runs.setdefault(done.scenario, []).append(done)
            so_far = ", ".join(
                f"{name} {x[-1].records_per_s:,.0f}/s" for name, x in runs.items()
            )
            print(f"  run {r + 1}/{repeats}: {so_far}", flush=True)
        results = [
            median_run(done, lambda t: t.records_per_s) for done in runs.values()
        ]
        latencies: list[e2e_latency.Run] = []
        for producer, settings in PRODUCERS.items():
            for rate in LATENCY_RATES:
                # librdkafka's defaults at 10,000/s build a backlog that takes many
                # times the sending time to drain: one second of it shows the rate.
                sending = (
                    min(seconds, 1.0)
                    if "enable.idempotence" not in settings and rate > 1_000
                    else seconds
                )
                latencies.append(
                    _latency_run(Path(scratch), producer, settings, rate, sending)
                )
    for median in results:
        print(
            f"  {median.scenario:<28} {median.records_per_s:>10,.0f} rec/s  "
            f"{median.mb_per_s:6.1f} MB/s (median)"
        )
    for latency in latencies:
        print(
            f"  e2e {latency.rate:,}/s acks=all RF 3, {producer_name(latency)}: "
            f"p50 {latency.latency['p50_ms']:.2f} ms  "
            f"p99 {latency.latency['p99_ms']:.2f} ms  max {latency.latency['max_ms']:.2f} ms"
        )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "records": records,
        "value_bytes": VALUE_BYTES,
        "producer": {
            "linger.ms": 5,
            "compression.type": "none",
            "other": "librdkafka defaults",
        },
        "goal": {
            "rf3_acks_all_over_single": GOAL_RATIO,
            "p99_ms": {str(rate): bound for rate, bound in GOAL_P99_MS.items()},
        },
        "machine": machine_facts(),
        "throughput": [attrs.asdict(r) for r in results],
        "throughput_runs": {
            name: [attrs.asdict(x) for x in done] for name, done in runs.items()
        },
        "latency": [attrs.asdict(x) for x in latencies],
    }
    return Report(NAME, document, _table(results, latencies, runs), _chart(results))


def _table(
    results: list[Throughput],
    latencies: list[e2e_latency.Run],
    runs: Mapping[str, list[Throughput]],
) -> str:
    ceiling = results[0].records_per_s
    header = ["scenario", "records/s", "MB/s", "x single node", "CPU (% of a core)"]
    rows = []
    for r in results:
        cpu = ", ".join(
            f"{k} {v:.0f}" for k, v in r.cpu_percent.items() if v is not None
        )
        rates = [x.records_per_s for x in runs[r.scenario]]
        spread = f" ({min(rates):,.0f}-{max(rates):,.0f})" if len(rates) > 1 else ""
        rows.append(
            [
                r.scenario,
                f"{r.records_per_s:,.0f}{spread}",
                f"{r.mb_per_s:.1f}",
                f"{r.records_per_s / ceiling:.2f}",
                cpu,
            ]
        )
    for latency in latencies:
        lat = latency.latency
        rows.append(
            [
                f"e2e latency, {latency.rate:,}/s, acks=all, RF 3, linger.ms=0, "
                f"{producer_name(latency)}",
                f"{latency.achieved_rate_per_s:,.0f} sent",
                "",
                f"p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms, "
                f"max {lat['max_ms']:.2f} ms",
                f"leader {format_percent(latency.broker_cpu_percent)}",
            ]
        )
    rf3_all = results[1].records_per_s / ceiling
    goals = [
        f"RF 3 acks=all >= {GOAL_RATIO:g}x the single node (measured {rf3_all:.2f}x: "
        f"{'met' if rf3_all >= GOAL_RATIO else 'not met'})"
    ]
    for latency in latencies:
        p99, bound = latency.latency["p99_ms"], GOAL_P99_MS[latency.rate]
        goals.append(
            f"p99 <= {bound:g} ms at {latency.rate:,}/s, {producer_name(latency)} "
            f"(measured {p99:.2f} ms: {'met' if p99 <= bound else 'not met'})"
        )
    return (
        markdown_table(header, rows)
        + "\nceiling: the single node in the same run. Goals: "
        + "; ".join(goals)
        + "."
    )


def _chart(results: list[Throughput]) -> str:
    return bar_chart_svg(
        "minikafka produce throughput: single node vs three brokers (RF 3)",
        "records/s",
        [(r.scenario, [("records/s", r.records_per_s)]) for r in results],
    )
