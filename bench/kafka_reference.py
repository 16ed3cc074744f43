"""minikafka beside Apache Kafka: the same tools and clients against both brokers.

The anchor for every other figure in ``bench/``: the real broker (Apache Kafka, the
release ``reference/pom.xml`` pins, a KRaft combined node, ``reference.kafka.KafkaNode``:
heap ``-Xms512m -Xmx768m``, otherwise Kafka's defaults) and a minikafka single node
(``minikafka.broker.testing.BrokerProcess``: ``python -m minikafka.broker broker``,
defaults), in the same run, on the same machine, driven by the same programs:

- **Idle RSS**: ``VmRSS`` of the broker after it started and one topic was created,
  sampled every ``RSS_INTERVAL`` s until ``RSS_WINDOW`` consecutive samples agree within
  ``RSS_TOLERANCE`` (settled), at most ``RSS_DEADLINE`` s.
- **kafka-producer-perf-test** (Kafka's ``ProducerPerformance``, the Java producer):
  ``RECORDS`` 100-byte records (``--record-size 100 --throughput -1``) to a new
  one-partition topic, ``acks=1`` and then ``acks=all``, the producer's defaults otherwise
  (``linger.ms=5``, ``batch.size=16384``, no compression). Its summary line gives
  records/s, MB/s and its send-to-acknowledgement latencies (at ``--throughput -1`` those
  are mostly time in the producer's own buffer, so they are kept, not compared).
- **kafka-consumer-perf-test** (``ConsumerPerformance``, the Java consumer in a group)
  reads the ``acks=1`` topic's records back; its ``fetch.*`` figures leave out the group
  join (``rebalance.time.ms``, which ``group.initial.rebalance.delay.ms`` dominates).
- **CPU per process**: the broker's user+system seconds from ``/proc/<pid>/stat`` before
  and after each tool run, and the tool's (a child JVM) from ``RUSAGE_CHILDREN`` around it;
  divided by the records, µs of CPU per record.
- **End-to-end latency**: ``e2e_latency``'s scenario (librdkafka producer and consumer in
  this process, ``linger.ms=0``, 100-byte stamped records, every record checked in order)
  at 1,000 and 10,000 records/s, acks=1 and acks=all, each run on a new topic.

Both brokers run side by side for the whole benchmark (the one not being measured is
idle; its CPU shows in the "rest of the machine" figures), and every measurement is
taken against one and then the other, so both see the same moments of a machine that
may be shared: each started, one topic created and its idle RSS read; then
``WARMUP_ROUNDS`` unmeasured rounds (figures kept as ``warmup``: a JVM compiles its hot
code in its first few million records, and a broker's steady state is what a
comparison should see) and ``REPEATS`` measured ones, each round a producer run acks=1,
a consumer run over its records and a producer run acks=all; then one unmeasured
end-to-end run of each scenario and ``REPEATS`` measured ones, interleaved. The run with
the median primary figure (records/s, p99) is quoted whole, the range beside it.

CPUs: with two or more, both brokers run on the second half of them (every thread,
pinned after start, so the JVM chose its collector and thread counts seeing the whole
machine, as it would on a server) and this process and the tools it starts on the first
half (a tool's JVM, started there, sees one CPU on a 2-CPU machine: the same tool,
settings and core for both brokers). The table gives each figure for both brokers and
minikafka / Kafka: above 1 means more (of time, memory, CPU), below 1 less.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import Literal

import attrs
import confluent_kafka

from minikafka.broker.testing import BrokerFailed, BrokerProcess
from reference.kafka import (
    KafkaFailed,
    KafkaNode,
    ReferenceMissing,
    kafka_version,
    run_tool,
)

from . import e2e_latency
from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    cpu_percent,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    own_cpu_seconds,
    pinned_client,
    process_cpu_seconds,
    report_header,
    split_cpus,
)
from ._wire import rss_kib

NAME = "kafka_reference"
RECORDS = 1_000_000
"""Records per perf-test run; at about 180,000 records/s here, 5-6 s a run."""
QUICK_RECORDS = 50_000
RECORD_BYTES = 100
REPEATS = 3
WARMUP_ROUNDS = 2
"""Unmeasured rounds first: Kafka's broker reached its steady CPU per record only
after about four million records here (its JIT compiling the hot paths)."""
TOOL_HEAP = "512m"
TOOL_TIMEOUT = 600.0
"""Seconds a perf-test run may take before the benchmark fails (about 6 s normally)."""
RATES = e2e_latency.RATES
ACKS = e2e_latency.ACKS
RSS_INTERVAL = 0.5
RSS_WINDOW = 6
RSS_TOLERANCE = 0.01
RSS_DEADLINE = 30.0

BrokerKind = Literal["kafka", "minikafka"]
BROKERS: tuple[BrokerKind, ...] = ("kafka", "minikafka")
LABELS: dict[BrokerKind, str] = {"kafka": "Kafka", "minikafka": "minikafka"}


# --- the tools' summary lines -----------------------------------------------------------


@attrs.frozen
class ProducerSummary:
    """The last line kafka-producer-perf-test prints: the whole run's figures."""

    records: int
    records_per_s: float
    mb_per_s: float
    avg_latency_ms: float
    max_latency_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float


_PRODUCER_SUMMARY = re.compile(
    r"^(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec "
    r"\((?P<mb>[\d.]+) MB/sec\), (?P<avg>[\d.]+) ms avg latency, "
    r"(?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, (?P<p95>\d+) ms 95th, "
    r"(?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th\.$",
    re.MULTILINE,
)


def parse_producer_summary(stdout: str, expected: int) -> ProducerSummary:
    """The figures of kafka-producer-perf-test's final line (the interim lines, every
    5 s, have no percentiles); :class:`BenchError` if there is none or if it counts
    another number of records than ``expected``."""
    matches = list(_PRODUCER_SUMMARY.finditer(stdout))
    if not matches:
        raise BenchError(
            "kafka-producer-perf-test printed no summary line "
            f"('N records sent, ... ms 99.9th.'); its output ended:\n{_tail(stdout)}"
        )
    m = matches[-1]
    summary = ProducerSummary(
        records=int(m["records"]),
        records_per_s=float(m["rate"]),
        mb_per_s=float(m["mb"]),
        avg_latency_ms=float(m["avg"]),
        max_latency_ms=float(m["max"]),
        p50_ms=float(m["p50"]),
        p95_ms=float(m["p95"]),
        p99_ms=float(m["p99"]),
        p999_ms=float(m["p999"]),
    )
    if summary.records != expected:
        raise BenchError(
            f"kafka-producer-perf-test sent {summary.records:,} records, not {expected:,}"
        )
    return summary


@attrs.frozen
class ConsumerSummary:
    """kafka-consumer-perf-test's data line, by the names of its header line."""

    records: int
    mb: float
    mb_per_s: float
    records_per_s: float
    rebalance_ms: float
    fetch_ms: float
    fetch_mb_per_s: float
    fetch_records_per_s: float


_CONSUMER_FIELDS = {
    "data.consumed.in.nMsg": "records",
    "data.consumed.in.MB": "mb",
    "MB.sec": "mb_per_s",
    "nMsg.sec": "records_per_s",
    "rebalance.time.ms": "rebalance_ms",
    "fetch.time.ms": "fetch_ms",
    "fetch.MB.sec": "fetch_mb_per_s",
    "fetch.nMsg.sec": "fetch_records_per_s",
}


def parse_consumer_summary(stdout: str, expected: int) -> ConsumerSummary:
    """The figures of kafka-consumer-perf-test's header and data lines (the last line
    with as many comma-separated fields as the header); :class:`BenchError` if either
    is missing, a field is not a number, or it read another number of records than
    ``expected`` (the tool gives up after ``--timeout`` without a record and says so
    on stdout, exiting 0)."""
    lines = stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("start.time, ")]
    if not heads:
        raise BenchError(
            "kafka-consumer-perf-test printed no header line ('start.time, end.time, "
            f"...'); its output ended:\n{_tail(stdout)}"
        )
    names = [name.strip() for name in lines[heads[-1]].split(",")]
    missing = [name for name in _CONSUMER_FIELDS if name not in names]
    if missing:
        raise BenchError(
            f"kafka-consumer-perf-test's header has no {', '.join(missing)}: "
            f"{lines[heads[-1]]!r}"
        )
    rows = [
        line.split(",")
        for line in lines[heads[-1] + 1 :]
        if len(line.split(",")) == len(names)
    ]
    if not rows:
        raise BenchError(
            "kafka-consumer-perf-test printed its header but no figures; its output "
            f"ended:\n{_tail(stdout)}"
        )
    values: dict[str, float] = {}
    for name, cell in zip(names, rows[-1], strict=True):
        if name in _CONSUMER_FIELDS:
            try:
                values[_CONSUMER_FIELDS[name]] = float(cell)
            except ValueError:
                raise BenchError(
                    f"kafka-consumer-perf-test's {name} is {cell.strip()!r}, not a number"
                ) from None
    records = int(values.pop("records"))
    if records != expected:
        warning = [line for line in lines if line.startswith("WARNING")]
        raise BenchError(
            f"kafka-consumer-perf-test read {records:,} records, not {expected:,}"
            + (f": {warning[0]}" if warning else "")
        )
    return ConsumerSummary(records=records, **values)


def _tail(text: str, lines: int = 10) -> str:
    return "\n".join(text.splitlines()[-lines:]) or "(nothing)"


# --- the table ------------------------------------------------------------------------


def format_ratio(value: float | None) -> str:
    """A ratio for the table: three significant digits, whole numbers from 1,000."""
    if value is None:
        return "-"
    return f"{value:,.0f}x" if value >= 1000 else f"{value:.3g}x"


def ratio(minikafka: float | None, kafka: float | None) -> float | None:
    """minikafka / Kafka, or None where either is missing or Kafka's is zero."""
    if minikafka is None or kafka is None or kafka == 0:
        return None
    return minikafka / kafka


@attrs.frozen
class Row:
    """One figure for both brokers: values in ``fmt``, ranges over the repeats beside
    them; a ``note`` stands in for a value that could not be measured (a stall)."""

    scenario: str
    figure: str
    kafka: float | None
    minikafka: float | None
    fmt: str = "{:,.0f}"
    kafka_range: tuple[float, float] | None = None
    minikafka_range: tuple[float, float] | None = None
    kafka_note: str = "-"
    minikafka_note: str = "-"

    def cell(self, kind: BrokerKind) -> str:
        value = self.kafka if kind == "kafka" else self.minikafka
        spread = self.kafka_range if kind == "kafka" else self.minikafka_range
        if value is None:
            return self.kafka_note if kind == "kafka" else self.minikafka_note
        text = self.fmt.format(value)
        if spread is not None and spread[0] != spread[1]:
            text += f" ({self.fmt.format(spread[0])}-{self.fmt.format(spread[1])})"
        return text

    @property
    def ratio(self) -> float | None:
        return ratio(self.minikafka, self.kafka)


def ratio_table(rows: Sequence[Row]) -> str:
    """The Markdown table: scenario, figure, Kafka, minikafka, minikafka / Kafka."""
    header = ["scenario", "figure", "Kafka", "minikafka", "minikafka / Kafka"]
    cells = []
    for row in rows:
        cells.append(
            [
                row.scenario,
                row.figure,
                row.cell("kafka"),
                row.cell("minikafka"),
                format_ratio(row.ratio),
            ]
        )
    return markdown_table(header, cells)


# --- the brokers ----------------------------------------------------------------------


@attrs.frozen
class RunningBroker:
    kind: BrokerKind
    bootstrap: str
    pid: int


def pin_threads(pid: int, cpus: set[int]) -> None:
    """Pin every thread of ``pid`` to ``cpus`` (``sched_setaffinity`` on a process pins
    only its first thread; threads started later inherit their creator's CPUs)."""
    for _ in range(2):  # a thread started during the first pass is caught by the second
        with suppress(FileNotFoundError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                with suppress(ProcessLookupError, FileNotFoundError):
                    os.sched_setaffinity(int(task.name), cpus)


@contextmanager
def started_broker(
    kind: BrokerKind, scratch: Path, cpus: set[int] | None
) -> Iterator[RunningBroker]:
    """A fresh broker of ``kind`` with its files in ``scratch``, pinned to ``cpus``;
    stopped (SIGTERM, a clean shutdown) when the block ends, however it ends."""
    # A tracing broker would be measured with its tracer (as _common.spawned_server has it).
    trace_dir = os.environ.pop("MINIKAFKA_TRACE_DIR", None)
    try:
        if kind == "kafka":
            node = KafkaNode(scratch / "kafka")
            try:
                node.start()
            except KafkaFailed as e:
                raise BenchError(f"the Kafka node did not start: {e}") from e
            try:
                assert node.process is not None
                if cpus is not None:
                    pin_threads(node.process.pid, cpus)
                yield RunningBroker(kind, node.bootstrap, node.process.pid)
            finally:
                node.stop()
        else:
            broker = BrokerProcess(scratch / "data")
            try:
                broker.start()
            except BrokerFailed as e:
                raise BenchError(f"the minikafka broker did not start: {e}") from e
            try:
                assert broker.process is not None
                if cpus is not None:
                    pin_threads(broker.process.pid, cpus)
                yield RunningBroker(kind, broker.bootstrap, broker.process.pid)
            finally:
                if broker.process is not None:
                    broker.stop()
    finally:
        if trace_dir is not None:
            os.environ["MINIKAFKA_TRACE_DIR"] = trace_dir


@attrs.frozen
class IdleRss:
    mib: float
    settled: bool
    seconds: float
    samples_mib: list[float]
    cpu_percent: float | None
    """The broker's CPU while its RSS settled (background threads, a JVM's compiler)."""


def idle_rss(pid: int) -> IdleRss:
    """The broker's RSS once ``RSS_WINDOW`` samples in a row agree within
    ``RSS_TOLERANCE`` (or the last sample at ``RSS_DEADLINE``, marked not settled)."""
    started = time.monotonic()
    cpu_before = process_cpu_seconds(pid)
    samples: list[float] = []
    while True:
        kib = rss_kib(pid)
        if kib is None:
            raise BenchError(f"no VmRSS for pid {pid} (this needs Linux /proc)")
        samples.append(kib / 1024)
        window = samples[-RSS_WINDOW:]
        settled = len(window) == RSS_WINDOW and max(window) - min(
            window
        ) <= RSS_TOLERANCE * max(window)
        elapsed = time.monotonic() - started
        if settled or elapsed > RSS_DEADLINE:
            cpu = cpu_percent(cpu_before, process_cpu_seconds(pid), elapsed)
            return IdleRss(samples[-1], settled, elapsed, samples, cpu)
        time.sleep(RSS_INTERVAL)


# --- the tools ------------------------------------------------------------------------


@attrs.frozen
class ToolRun:
    """One perf-test run: its figures, its CPU and the broker's, what the machine did."""

    tool: str
    topic: str
    acks: str | None
    records: int
    wall_s: float
    broker_cpu_s: float | None
    tool_cpu_s: float
    other_cpu_percent: float | None
    """The rest of the machine (other processes) as a percentage of one core."""
    producer: ProducerSummary | None
    consumer: ConsumerSummary | None
    stdout_tail: str

    @property
    def records_per_s(self) -> float:
        if self.producer is not None:
            return self.producer.records_per_s
        assert self.consumer is not None
        return self.consumer.fetch_records_per_s

    @property
    def broker_us_per_record(self) -> float | None:
        if self.broker_cpu_s is None:
            return None
        return self.broker_cpu_s / self.records * 1e6

    @property
    def tool_us_per_record(self) -> float:
        return self.tool_cpu_s / self.records * 1e6


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_perf_tool(
    broker: RunningBroker, tool: str, args: Sequence[str], topic: str
) -> tuple[str, float, float | None, float, float | None]:
    """Run ``tool``; (stdout, wall s, broker CPU s, tool CPU s, other CPU %)."""
    broker_before = process_cpu_seconds(broker.pid)
    children_before, own_before = _children_cpu_seconds(), own_cpu_seconds()
    busy_before, started = machine_busy_seconds(), time.perf_counter()
    try:
        done = run_tool(
            tool,
            *args,
            heap=TOOL_HEAP,
            quick_start=False,
            timeout=TOOL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise BenchError(
            f"{tool} against {LABELS[broker.kind]} on topic {topic} did not finish "
            f"within {TOOL_TIMEOUT:g} s"
        ) from None
    wall = time.perf_counter() - started
    broker_after = process_cpu_seconds(broker.pid)
    if broker_after is None:
        raise BenchError(f"the {LABELS[broker.kind]} broker died during {tool}")
    tool_cpu = _children_cpu_seconds() - children_before
    # The tool reports a failed send on stderr and may still exit 0.
    trouble = [
        line
        for line in done.stderr.splitlines()
        if "Exception" in line or " ERROR " in line
    ]
    if done.returncode != 0 or trouble:
        raise BenchError(
            f"{tool} against {LABELS[broker.kind]} exited {done.returncode}:\n"
            f"{_tail(done.stdout)}\n{_tail(done.stderr, 20)}"
        )
    broker_cpu = None if broker_before is None else broker_after - broker_before
    busy_after = machine_busy_seconds()
    other = None
    if busy_before is not None and busy_after is not None and broker_cpu is not None:
        used = busy_after - busy_before
        mine = broker_cpu + tool_cpu + own_cpu_seconds() - own_before
        other = max(0.0, 100 * (used - mine) / wall)
    return done.stdout, wall, broker_cpu, tool_cpu, other


def produce(broker: RunningBroker, topic: str, acks: str, records: int) -> ToolRun:
    """kafka-producer-perf-test: ``records`` x 100 B to a new one-partition ``topic``."""
    e2e_latency._create_topic(broker.bootstrap, topic)
    stdout, wall, broker_cpu, tool_cpu, other = _run_perf_tool(
        broker,
        "kafka-producer-perf-test",
        [
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            str(RECORD_BYTES),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={broker.bootstrap}",
            f"acks={acks}",
        ],
        topic,
    )
    summary = parse_producer_summary(stdout, records)
    return ToolRun(
        "kafka-producer-perf-test",
        topic,
        acks,
        records,
        wall,
        broker_cpu,
        tool_cpu,
        other,
        summary,
        None,
        _tail(stdout, 4),
    )


def consume(broker: RunningBroker, topic: str, records: int) -> ToolRun:
    """kafka-consumer-perf-test: read ``records`` back from ``topic`` in a new group."""
    stdout, wall, broker_cpu, tool_cpu, other = _run_perf_tool(
        broker,
        "kafka-consumer-perf-test",
        [
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--messages",
            str(records),
            "--group",
            f"bench-{topic}",
        ],
        topic,
    )
    summary = parse_consumer_summary(stdout, records)
    return ToolRun(
        "kafka-consumer-perf-test",
        topic,
        None,
        records,
        wall,
        broker_cpu,
        tool_cpu,
        other,
        None,
        summary,
        _tail(stdout, 4),
    )


# --- the whole run --------------------------------------------------------------------


@attrs.define
class BrokerResults:
    """Everything measured against one broker; ``warmup`` runs are kept, not compared."""

    kind: BrokerKind
    idle: IdleRss
    warmup: list[ToolRun] = attrs.field(factory=list)
    produce_acks_1: list[ToolRun] = attrs.field(factory=list)
    consume: list[ToolRun] = attrs.field(factory=list)
    produce_acks_all: list[ToolRun] = attrs.field(factory=list)
    e2e_warmup: list[e2e_latency.Run] = attrs.field(factory=list)
    e2e: dict[str, list[e2e_latency.Run]] = attrs.field(factory=dict)


def scenario_key(scenario: e2e_latency.Scenario) -> str:
    """How :attr:`BrokerResults.e2e` names a scenario: ``"10000/acks=all"``."""
    return f"{scenario.rate}/acks={scenario.acks}"


def _progress(kind: BrokerKind, what: str, run: ToolRun) -> None:
    broker = "-" if run.broker_cpu_s is None else f"{run.broker_cpu_s:.2f}"
    other = "-" if run.other_cpu_percent is None else f"{run.other_cpu_percent:.0f}%"
    print(
        f"  {LABELS[kind]:<9} {what:<30} {run.records_per_s:>10,.0f} rec/s  "
        f"broker CPU {broker} s  tool CPU {run.tool_cpu_s:.2f} s  "
        f"({run.wall_s:.1f} s; rest of machine {other})",
        flush=True,
    )


def _tool_round(
    broker: RunningBroker, results: BrokerResults, records: int, label: str
) -> None:
    """Producer acks=1, consumer reading those records, producer acks=all; a round
    named ``warm-up ...`` goes to ``results.warmup``."""
    topic = f"bench-{label.replace(' ', '-')}"
    first = produce(broker, f"{topic}-acks-1", "1", records)
    _progress(broker.kind, f"{label}: produce acks=1", first)
    second = consume(broker, f"{topic}-acks-1", records)
    _progress(broker.kind, f"{label}: consume", second)
    third = produce(broker, f"{topic}-acks-all", "all", records)
    _progress(broker.kind, f"{label}: produce acks=all", third)
    if label.startswith("warm-up"):
        results.warmup += [first, second, third]
    else:
        results.produce_acks_1.append(first)
        results.consume.append(second)
        results.produce_acks_all.append(third)


def _e2e_run(
    broker: RunningBroker, scenario: e2e_latency.Scenario, seconds: float, label: str
) -> e2e_latency.Run:
    topic = f"bench-e2e-{scenario.rate}-acks-{scenario.acks}-{label.replace(' ', '-')}"
    one = e2e_latency._one_run(broker.bootstrap, broker.pid, scenario, seconds, topic)
    lat = one.latency
    print(
        f"  {LABELS[broker.kind]:<9} {label}: e2e {scenario.title:<38} "
        f"p50 {lat['p50_ms']:.2f} ms  p99 {lat['p99_ms']:.2f} ms"
        + (f"  {one.stall}" if one.stall else ""),
        flush=True,
    )
    return one


def run_both(
    scratch: Path,
    records: int,
    repeats: int,
    warmup_rounds: int,
    e2e_seconds: float,
    cpus: set[int] | None,
) -> dict[BrokerKind, BrokerResults]:
    """Both brokers, running side by side (idle but for the one measured), each
    measurement taken against one and then the other, in the order the module
    docstring gives, so that both see the same moments of a shared machine."""
    scenarios = [e2e_latency.Scenario(rate, acks) for rate in RATES for acks in ACKS]
    results: dict[BrokerKind, BrokerResults] = {}
    brokers: dict[BrokerKind, RunningBroker] = {}
    with ExitStack() as stack:
        for kind in BROKERS:
            broker = stack.enter_context(started_broker(kind, scratch / kind, cpus))
            e2e_latency._create_topic(broker.bootstrap, "bench-idle")
            idle = idle_rss(broker.pid)
            print(
                f"  {LABELS[kind]:<9} idle RSS {idle.mib:.1f} MiB, CPU "
                f"{'-' if idle.cpu_percent is None else f'{idle.cpu_percent:.0f}%'} "
                f"over {idle.seconds:.1f} s"
                + ("" if idle.settled else f" (not settled in {RSS_DEADLINE:g} s)"),
                flush=True,
            )
            brokers[kind] = broker
            results[kind] = BrokerResults(
                kind, idle, e2e={scenario_key(s): [] for s in scenarios}
            )
        with pinned_client():
            for w in range(warmup_rounds):
                for kind in BROKERS:
                    _tool_round(brokers[kind], results[kind], records, f"warm-up {w}")
            for r in range(repeats):
                for kind in BROKERS:
                    _tool_round(brokers[kind], results[kind], records, f"round {r}")
            for s in scenarios:
                for kind in BROKERS:
                    one = _e2e_run(brokers[kind], s, e2e_seconds, "warm-up")
                    results[kind].e2e_warmup.append(one)
            for r in range(repeats):
                for s in scenarios:
                    for kind in BROKERS:
                        runs = results[kind].e2e[scenario_key(s)]
                        if any(x.stall for x in runs):
                            continue  # a stall is the finding; repeating it only costs
                        runs.append(
                            _e2e_run(brokers[kind], s, e2e_seconds, f"round {r}")
                        )
    return results


# --- the report -----------------------------------------------------------------------


def _median_tool(runs: Sequence[ToolRun]) -> ToolRun:
    return median_run(runs, lambda r: r.records_per_s)


def _spread(values: Sequence[float]) -> tuple[float, float] | None:
    return (min(values), max(values)) if len(values) > 1 else None


def _tool_rows(
    title: str,
    label: str,
    results: dict[BrokerKind, BrokerResults],
    pick: Callable[[BrokerResults], list[ToolRun]],
) -> list[Row]:
    med = {kind: _median_tool(pick(results[kind])) for kind in BROKERS}
    rates = {kind: [r.records_per_s for r in pick(results[kind])] for kind in BROKERS}
    count = len(pick(results["kafka"]))
    return [
        Row(
            title,
            f"{label} (median of {count})",
            med["kafka"].records_per_s,
            med["minikafka"].records_per_s,
            kafka_range=_spread(rates["kafka"]),
            minikafka_range=_spread(rates["minikafka"]),
        ),
        Row(
            "",
            "broker CPU µs/record",
            med["kafka"].broker_us_per_record,
            med["minikafka"].broker_us_per_record,
            "{:.2f}",
        ),
        Row(
            "",
            "tool CPU µs/record",
            med["kafka"].tool_us_per_record,
            med["minikafka"].tool_us_per_record,
            "{:.2f}",
        ),
    ]


def _e2e_rows(results: dict[BrokerKind, BrokerResults]) -> list[Row]:
    rows: list[Row] = []
    for rate in RATES:
        for acks in ACKS:
            key = scenario_key(e2e_latency.Scenario(rate, acks))
            rows += _e2e_scenario_rows(
                f"e2e {rate:,} records/s, acks={acks}",
                {kind: results[kind].e2e[key] for kind in BROKERS},
            )
    return rows


def _e2e_scenario_rows(
    title: str, runs: dict[BrokerKind, list[e2e_latency.Run]]
) -> list[Row]:
    med = {kind: e2e_latency._median_run(runs[kind]) for kind in BROKERS}

    def figure(kind: BrokerKind, name: str) -> float | None:
        m = med[kind]
        return None if m.stall is not None else m.latency[name]

    def p99s(kind: BrokerKind) -> tuple[float, float] | None:
        return _spread([x.latency["p99_ms"] for x in runs[kind] if x.stall is None])

    notes = {kind: "stalled" if med[kind].stall else "-" for kind in BROKERS}
    count = max(len(runs[kind]) for kind in BROKERS)
    return [
        Row(
            title,
            f"p99 ms (median of {count})",
            figure("kafka", "p99_ms"),
            figure("minikafka", "p99_ms"),
            "{:.2f}",
            p99s("kafka"),
            p99s("minikafka"),
            notes["kafka"],
            notes["minikafka"],
        ),
        Row(
            "",
            "p50 ms",
            figure("kafka", "p50_ms"),
            figure("minikafka", "p50_ms"),
            "{:.2f}",
            kafka_note=notes["kafka"],
            minikafka_note=notes["minikafka"],
        ),
        Row(
            "",
            "broker CPU %",
            med["kafka"].broker_cpu_percent,
            med["minikafka"].broker_cpu_percent,
            "{:.0f}",
        ),
    ]


def table_rows(results: dict[BrokerKind, BrokerResults], records: int) -> list[Row]:
    """Every row of the comparison, from both brokers' results."""
    perf = f"{records:,} x {RECORD_BYTES} B"
    rows = [
        Row(
            "idle, one topic",
            "RSS MiB",
            results["kafka"].idle.mib,
            results["minikafka"].idle.mib,
            "{:.1f}",
        )
    ]
    rows += _tool_rows(
        f"producer-perf-test acks=1, {perf}",
        "records/s",
        results,
        lambda r: r.produce_acks_1,
    )
    rows += _tool_rows(
        f"producer-perf-test acks=all, {perf}",
        "records/s",
        results,
        lambda r: r.produce_acks_all,
    )
    rows += _tool_rows(
        f"consumer-perf-test, {perf}",
        "fetch records/s",
        results,
        lambda r: r.consume,
    )
    return rows + _e2e_rows(results)


def _java_version() -> str | None:
    java = shutil.which("java")
    if java is None:
        return None
    done = subprocess.run(
        [java, "-version"], capture_output=True, text=True, check=False, timeout=60
    )
    first = (done.stderr or done.stdout).splitlines()
    return first[0] if first else None


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    records = QUICK_RECORDS if quick else RECORDS
    repeats = 1 if quick else REPEATS
    warmup_rounds = 1 if quick else WARMUP_ROUNDS
    e2e_seconds = e2e_latency.QUICK_SECONDS if quick else e2e_latency.SECONDS
    try:
        version = kafka_version()
    except (OSError, ReferenceMissing) as e:
        raise BenchError(f"Apache Kafka's release is not known: {e}") from e
    split = split_cpus()
    cpus = None if split is None else split[1]
    try:
        with tempfile.TemporaryDirectory(prefix="minikafka-bench-ref-") as scratch:
            results = run_both(
                Path(scratch), records, repeats, warmup_rounds, e2e_seconds, cpus
            )
    except ReferenceMissing as e:
        raise BenchError(str(e)) from e
    rows = table_rows(results, records)
    machine = machine_facts()
    machine["java"] = _java_version()
    machine["confluent_kafka"] = metadata.version("confluent-kafka")
    machine["librdkafka"] = confluent_kafka.libversion()[0]
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "kafka_version": version,
        "brokers": {
            "kafka": "reference.kafka.KafkaNode: KRaft combined node, -Xms512m "
            "-Xmx768m, Kafka's defaults otherwise",
            "minikafka": "minikafka.broker.testing.BrokerProcess: python -m "
            "minikafka.broker broker, defaults",
        },
        "records": records,
        "record_bytes": RECORD_BYTES,
        "warmup_rounds": warmup_rounds,
        "tool_heap": TOOL_HEAP,
        "e2e_seconds": e2e_seconds,
        "cpu_pinning": None
        if split is None
        else {"client_and_tools": sorted(split[0]), "brokers": sorted(split[1])},
        "machine": machine,
        "table": [
            {
                "scenario": row.scenario,
                "figure": row.figure,
                "kafka": row.kafka,
                "minikafka": row.minikafka,
                "minikafka_over_kafka": row.ratio,
            }
            for row in rows
        ],
        "results": {kind: _as_document(results[kind]) for kind in BROKERS},
    }
    table = ratio_table(rows) + "\n" + _footer(results)
    return Report(NAME, document, table, _chart(results))


def _busy(values: Sequence[float | None]) -> str:
    known = sorted(v for v in values if v is not None)
    if not known:
        return "not measured"
    median = known[(len(known) - 1) // 2]
    return f"{median:.0f}% ({known[0]:.0f}-{known[-1]:.0f}%)"


def _footer(results: dict[BrokerKind, BrokerResults]) -> str:
    """How to read the ratios, and how busy the rest of the machine was meanwhile."""
    lines = [
        "minikafka / Kafka: above 1 is more time, memory or CPU than Kafka's (better "
        "only for records/s), below 1 is less.",
        "the rest of the machine (other processes, the idle broker) meanwhile, median "
        "(range) in % of one core:",
    ]
    for kind in BROKERS:
        r = results[kind]
        tools = r.produce_acks_1 + r.consume + r.produce_acks_all
        e2e = [x for runs in r.e2e.values() for x in runs]
        lines.append(
            f"  {LABELS[kind]}'s perf-test runs {_busy([x.other_cpu_percent for x in tools])}"
            f", e2e runs {_busy([x.other_cpu_percent for x in e2e])}"
        )
    return "\n".join(lines)


def _as_document(results: BrokerResults) -> dict[str, object]:
    def tools(runs: Sequence[ToolRun]) -> list[dict[str, object]]:
        return [
            {
                **attrs.asdict(r),
                "broker_us_per_record": r.broker_us_per_record,
                "tool_us_per_record": r.tool_us_per_record,
            }
            for r in runs
        ]

    return {
        "idle_rss": attrs.asdict(results.idle),
        "warmup": tools(results.warmup),
        "produce_acks_1": tools(results.produce_acks_1),
        "consume": tools(results.consume),
        "produce_acks_all": tools(results.produce_acks_all),
        "e2e_warmup": [attrs.asdict(x) for x in results.e2e_warmup],
        "e2e": {
            key: {
                "median": attrs.asdict(e2e_latency._median_run(runs)),
                "runs": [attrs.asdict(x) for x in runs],
            }
            for key, runs in results.e2e.items()
        },
    }


def _chart(results: dict[BrokerKind, BrokerResults]) -> str:
    picks: list[tuple[str, Callable[[BrokerResults], list[ToolRun]]]] = [
        ("producer-perf-test acks=1", lambda r: r.produce_acks_1),
        ("producer-perf-test acks=all", lambda r: r.produce_acks_all),
        ("consumer-perf-test (fetch)", lambda r: r.consume),
    ]
    return bar_chart_svg(
        "Kafka's perf tools against Apache Kafka and minikafka, median run",
        "records/s",
        [
            (
                title,
                [
                    (LABELS[kind], _median_tool(pick(results[kind])).records_per_s)
                    for kind in BROKERS
                ],
            )
            for title, pick in picks
        ],
    )
