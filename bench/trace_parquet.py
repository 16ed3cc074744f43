"""Parquet traces: a large trace converted once, and the labs reading either form.

Large traces are converted once to Parquet, partitioned by node and event type, and the
labs read either form. This benchmark measures both halves on one
synthetic trace of a three-broker cluster:

- ``generate``: three processes, one per broker (nodes 1, 2 and 3, node 1 also the
  active controller), each writing its share of the events through its own
  ``JsonLinesTracer`` into one directory, as a cluster run does (64 MiB files, rotated).
  The lines are therefore byte for byte what a broker writes. The traffic is real event
  types in a steady produce-consume load's proportions, drawn from a seeded generator:
  about 60% ``net.request`` (``RequestCompleted``: Produce, followers' and consumers'
  Fetch, Metadata, group heartbeats, offset commits), 20% ``replication.follower_fetch``,
  10% ``replication.hw_advance``, 9% ``replication.delayed_op``, and the rare ones a
  cluster run also has (connections opened and closed, segment rolls, ISR changes,
  leader elections, broker registrations: about 0.5% together). Timings have the 16-17
  significant digits real ones have; timestamps spread the events over an hour.
- ``convert``: ``minikafka.labs.to_parquet``: one read of the lines as text, each staged
  unparsed under its event type (taken from the line's first bytes), then per event type
  one JSON parse of that type's staged lines with its schema and a write partitioned by
  ``node``: every line parsed once. (Until this benchmark found it 16x its ceiling, it
  read the JSON once for the types present and then once more per type.)
  **Its ceiling** is the least work a Spark job could do to turn the same files into
  Parquet: ``spark.read.text(files).write.parquet(...)``, one read of the bytes that
  splits lines and writes each as a string column, parsing nothing.
- ``query``: three lab-like queries through ``minikafka.labs.read_events``, each on the
  JSON Lines directory and on the converted one: ``RequestCompleted`` grouped by node and
  ``api_name`` with a count and the p99 of ``total_ms`` (the common type); one node's
  ``FollowerFetched`` grouped by follower, with a count and the largest lag (a filter on
  ``node``); and ``PartitionLeaderElected`` counted by reason (a rare type). **Their
  ceiling** is the least any query of the JSON Lines could do: ``spark.read.text(files)
  .count()``, reading every byte and finding the line ends, parsing no JSON. A query of
  the Parquet can beat it, since it reads only one event type's files (and one node's).

Every query's counts are checked against what the generator wrote (a wrong answer is an
error, not a figure), as is the list of event types ``to_parquet`` converted. One Spark
session throughout, ``minikafka.labs.spark_session`` (``local[2]`` unless
``SPARK_MASTER`` says otherwise), with a 4 GiB driver heap (``PYSPARK_SUBMIT_ARGS``,
unless set); a warm-up job on one file runs before any clock. The conversion and its
ceiling run once each (on the full trace they take minutes); each query and the
ceiling run ``QUERY_REPEATS`` times, alternating, and the median is quoted. Each step's
CPU is reported as the Spark JVM's, this process's (and the generators') and the rest
of the machine's, as percentages of one core.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from functools import partial
from importlib import metadata
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypeVar

import attrs

import minikafka.broker  # noqa: F401  (first: registers every trace event type)
from minikafka.controller import BrokerRegistrationChanged, PartitionLeaderElected
from minikafka.log import SegmentRolled
from minikafka.net import ConnectionAccepted, ConnectionClosed, RequestCompleted
from minikafka.replication import (
    BecameFollower,
    BecameLeader,
    DelayedOperationCompleted,
    FollowerFetched,
    HighWatermarkAdvanced,
    IsrChanged,
    IsrChangeProposed,
)
from minikafka.trace import JsonLinesTracer, TraceEvent

from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    process_cpu_seconds,
    report_header,
)

NAME = "trace_parquet"

EVENTS = 10_000_000
"""The full run. A cluster's trace can hold tens of millions of events; 20
million were the aim, but generating and converting them takes this 2-core machine, shared
with other work, well over the 10 minutes a benchmark here may take (bench/README.md)."""
QUICK_EVENTS = 200_000
QUERY_REPEATS = 3
QUICK_QUERY_REPEATS = 1
DRIVER_MEMORY = "4g"
BUSY_MACHINE_PERCENT = 20.0

NODES = (1, 2, 3)
CONTROLLER = 1
QUERIED_NODE = 2
TOPICS = ("orders", "payments", "clicks")
PARTITIONS = 6
TS0 = 1_795_000_000.0
RUN_SECONDS = 3600.0
CHUNK = 50_000
"""Events whose kinds are drawn at once (``random.choices``) in a generator."""

T = TypeVar("T")


@attrs.frozen
class Settings:
    events: int
    query_repeats: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        if quick:
            return cls(QUICK_EVENTS, QUICK_QUERY_REPEATS)
        return cls(EVENTS, QUERY_REPEATS)


# --- the synthetic cluster's traffic ------------------------------------------------------

# (kind, weight): per broker; the controller's kinds only on CONTROLLER.
_KINDS: tuple[tuple[str, float], ...] = (
    ("produce", 0.20),
    ("replica_fetch", 0.22),
    ("consumer_fetch", 0.12),
    ("metadata", 0.02),
    ("heartbeat", 0.02),
    ("offset_commit", 0.01),
    ("api_versions", 0.004),
    ("list_offsets", 0.003),
    ("find_coordinator", 0.003),
    ("follower_fetch", 0.20),
    ("hw_advance", 0.10),
    ("delayed_produce", 0.06),
    ("delayed_fetch", 0.03),
    ("connection_accepted", 0.0015),
    ("connection_closed", 0.0015),
    ("segment_roll", 0.001),
    ("isr_propose", 0.0002),
    ("isr_change", 0.0002),
    ("become_leader", 0.0001),
    ("become_follower", 0.0002),
    ("election", 0.0003),
    ("broker_registration", 0.0001),
)
_CONTROLLER_KINDS = frozenset({"election", "broker_registration"})

# kind -> (api_key, api_name, api_version) of the RequestCompleted it makes.
_APIS: dict[str, tuple[int, str, int]] = {
    "produce": (0, "Produce", 9),
    "replica_fetch": (1, "Fetch", 13),
    "consumer_fetch": (1, "Fetch", 13),
    "metadata": (3, "Metadata", 12),
    "heartbeat": (12, "Heartbeat", 4),
    "offset_commit": (8, "OffsetCommit", 8),
    "api_versions": (18, "ApiVersions", 3),
    "list_offsets": (2, "ListOffsets", 7),
    "find_coordinator": (10, "FindCoordinator", 4),
}
_ELECTION_REASONS = ("broker_fenced", "broker_unfenced", "preferred")


@attrs.frozen
class NodeTrace:
    """What one broker's generator wrote: the checks' expected answers."""

    node: int
    events: int
    by_type: dict[str, int]
    requests_by_api: dict[str, int]
    follower_fetches_by_follower: dict[int, int]
    elections_by_reason: dict[str, int]
    cpu_seconds: float
    """The generator process's user+system CPU time while it wrote."""


@attrs.define
class _Connection:
    connection_id: str
    processor_id: int
    client_id: str
    correlation_id: int = 0


class _Traffic:
    """One broker's events, made from a seeded generator and a little state (log end
    offsets, high watermarks, epochs, correlation ids), so that the values vary as a
    real run's do: what Parquet's encodings and compression meet."""

    def __init__(self, node: int, rng: random.Random) -> None:
        self.node = node
        self.rng = rng
        self.others = tuple(n for n in NODES if n != node)
        self.led = [
            (topic, p)
            for t, topic in enumerate(TOPICS)
            for p in range(PARTITIONS)
            if NODES[(t * PARTITIONS + p) % len(NODES)] == node
        ]
        self.leo = dict.fromkeys(self.led, 0)
        self.hw = dict.fromkeys(self.led, 0)
        self.epoch = dict.fromkeys(self.led, 3)
        self.follower_fetches: Counter[int] = Counter()
        self.elections: Counter[str] = Counter()
        port = 9091 + node
        self.next_port = 40_000
        self.producers = [self._connect(port, f"producer-{i}") for i in range(8)]
        self.consumers = [self._connect(port, f"consumer-{i}") for i in range(6)]
        self.fetchers = {
            f: self._connect(port, f"broker-{f}-fetcher-0") for f in self.others
        }
        self.admin = [self._connect(port, f"admin-{i}") for i in range(2)]

    def _connect(self, port: int, client_id: str) -> _Connection:
        self.next_port += 1
        index = self.next_port - 40_000
        processor = index % 3
        return _Connection(
            f"10.0.0.{self.node}:{port}-10.0.1.{index % 200}:{self.next_port}"
            f"-{processor}-{index}",
            processor,
            client_id,
        )

    def make(self, kind: str) -> TraceEvent:
        rng = self.rng
        api = _APIS.get(kind)
        if api is not None:
            return self._request(kind, api)
        if kind == "follower_fetch":
            tp = rng.choice(self.led)
            follower = rng.choice(self.others)
            self.follower_fetches[follower] += 1
            leo = self.leo[tp]
            lag = 0 if rng.random() < 0.8 else rng.randrange(1, 2_000)
            fetch = max(0, leo - lag)
            return FollowerFetched(
                tp[0],
                tp[1],
                follower,
                fetch,
                leo,
                self.hw[tp],
                leo - fetch,
                rng.expovariate(1 / 4.0),
            )
        if kind == "hw_advance":
            tp = rng.choice(self.led)
            previous = self.hw[tp]
            self.hw[tp] = self.leo[tp]
            return HighWatermarkAdvanced(
                tp[0], tp[1], previous, self.hw[tp], self.epoch[tp]
            )
        if kind == "delayed_produce":
            return DelayedOperationCompleted(
                "produce", "completed", rng.expovariate(1 / 2.5), 1
            )
        if kind == "delayed_fetch":
            expired = rng.random() < 0.4
            waited = 500.0 + rng.random() if expired else rng.expovariate(1 / 30.0)
            outcome = "expired" if expired else "completed"
            return DelayedOperationCompleted(
                "fetch", outcome, waited, rng.randrange(1, 7)
            )
        return self._rare(kind)

    def _request(self, kind: str, api: tuple[int, str, int]) -> RequestCompleted:
        rng = self.rng
        expo = rng.expovariate
        remote = 0.0
        response_bytes = 40 + rng.randrange(200)
        request_bytes = 30 + rng.randrange(120)
        if kind == "produce":
            connection = rng.choice(self.producers)
            tp = rng.choice(self.led)
            records = rng.randrange(1, 120)
            self.leo[tp] += records
            request_bytes = 200 + records * 110
            remote = expo(1 / 2.5)
        elif kind == "replica_fetch":
            connection = self.fetchers[rng.choice(self.others)]
            response_bytes = 120 + rng.randrange(40_000)
            remote = 500.0 + rng.random() if rng.random() < 0.1 else expo(1 / 3.0)
        elif kind == "consumer_fetch":
            connection = rng.choice(self.consumers)
            response_bytes = 120 + rng.randrange(200_000)
            remote = expo(1 / 40.0)
        else:
            connection = rng.choice(
                self.admin if kind == "metadata" else self.consumers
            )
        connection.correlation_id += 1
        queue = expo(1 / 0.08)
        local = 0.05 + expo(1 / 0.3)
        response_queue = expo(1 / 0.04)
        send = 0.01 + expo(1 / 0.03)
        return RequestCompleted(
            listener="PLAINTEXT",
            connection_id=connection.connection_id,
            processor_id=connection.processor_id,
            client_id=connection.client_id,
            api_key=api[0],
            api_name=api[1],
            api_version=api[2],
            correlation_id=connection.correlation_id,
            request_bytes=request_bytes,
            response_bytes=response_bytes,
            request_queue_ms=queue,
            local_ms=local,
            remote_ms=remote,
            response_queue_ms=response_queue,
            response_send_ms=send,
            total_ms=queue + local + remote + response_queue + send,
        )

    def _rare(self, kind: str) -> TraceEvent:
        rng = self.rng
        tp = rng.choice(self.led)
        replicas = (self.node, *self.others)
        if kind == "connection_accepted":
            c = rng.choice(self.consumers)
            return ConnectionAccepted("PLAINTEXT", c.connection_id, c.processor_id)
        if kind == "connection_closed":
            c = rng.choice(self.consumers)
            return ConnectionClosed(
                c.connection_id, c.processor_id, "closed by client", c.correlation_id
            )
        if kind == "segment_roll":
            return SegmentRolled(
                tp[0], tp[1], self.leo[tp], "segment.bytes", 1_073_741_000
            )
        if kind in ("isr_propose", "isr_change"):
            out = rng.choice(self.others)
            shrunk = tuple(n for n in replicas if n != out)
            if kind == "isr_change":
                return IsrChanged(
                    tp[0], tp[1], self.epoch[tp], self.epoch[tp] + 1, replicas, shrunk
                )
            return IsrChangeProposed(
                tp[0],
                tp[1],
                "shrink",
                self.epoch[tp],
                self.epoch[tp],
                replicas,
                shrunk,
                (out,),
                (30_000.0 + rng.random() * 1000,),
                self.hw[tp],
            )
        if kind == "become_leader":
            self.epoch[tp] += 1
            return BecameLeader(
                tp[0],
                tp[1],
                self.epoch[tp],
                self.epoch[tp],
                replicas,
                replicas,
                self.leo[tp],
            )
        if kind == "become_follower":
            return BecameFollower(
                tp[0], tp[1], rng.choice(self.others), self.epoch[tp], self.epoch[tp]
            )
        if kind == "election":
            reason = rng.choice(_ELECTION_REASONS)
            self.elections[reason] += 1
            topic = rng.choice(TOPICS)
            leader, previous = rng.sample(NODES, 2)
            return PartitionLeaderElected(
                topic,
                rng.randrange(PARTITIONS),
                leader,
                previous,
                rng.randrange(1, 50),
                tuple(sorted(NODES)),
                reason,
            )
        if kind == "broker_registration":
            broker = rng.choice(NODES)
            fenced = rng.random() < 0.5
            reason = "controlled_shutdown" if fenced else "caught_up"
            return BrokerRegistrationChanged(
                broker, rng.randrange(1, 1_000), fenced, reason
            )
        raise AssertionError(kind)


def _type_name(kind: str) -> str:
    if kind in _APIS:
        return "net.request"
    return {
        "follower_fetch": "replication.follower_fetch",
        "hw_advance": "replication.hw_advance",
        "delayed_produce": "replication.delayed_op",
        "delayed_fetch": "replication.delayed_op",
        "connection_accepted": "net.connection_accepted",
        "connection_closed": "net.connection_closed",
        "segment_roll": "log.segment_roll",
        "isr_propose": "replication.isr_propose",
        "isr_change": "replication.isr_change",
        "become_leader": "replication.become_leader",
        "become_follower": "replication.become_follower",
        "election": "controller.election",
        "broker_registration": "controller.broker_registration",
    }[kind]


def write_node(directory: str, node: int, events: int, seed: int) -> NodeTrace:
    """One broker's process: ``events`` events through its own ``JsonLinesTracer``."""
    cpu = _python_cpu()
    rng = random.Random(seed)
    traffic = _Traffic(node, rng)
    kinds = [k for k, _ in _KINDS if node == CONTROLLER or k not in _CONTROLLER_KINDS]
    weights = [w for k, w in _KINDS if k in kinds]
    drawn: Counter[str] = Counter()
    step = RUN_SECONDS / max(1, events)
    tracer = JsonLinesTracer.open(Path(directory), node)
    make, emit, jitter = traffic.make, tracer.emit, rng.random
    try:
        done = 0
        while done < events:
            chunk = rng.choices(kinds, weights, k=min(CHUNK, events - done))
            drawn.update(chunk)
            for i, kind in enumerate(chunk, done):
                # Evenly spread, with a jitter: a real ts has all its digits.
                emit(make(kind), TS0 + (i + jitter()) * step)
            done += len(chunk)
    finally:
        tracer.close()
    by_type: Counter[str] = Counter()
    requests: Counter[str] = Counter()
    for kind, n in drawn.items():
        by_type[_type_name(kind)] += n
        if kind in _APIS:
            requests[_APIS[kind][1]] += n
    return NodeTrace(
        node,
        events,
        dict(by_type),
        dict(requests),
        dict(traffic.follower_fetches),
        dict(traffic.elections),
        _python_cpu() - cpu,
    )


# --- measuring ----------------------------------------------------------------------------


@attrs.frozen
class Timed:
    """One timed step: wall seconds and who used the CPU meanwhile (% of one core)."""

    seconds: float
    spark_cpu_percent: float | None
    """The Spark JVM (the driver and, in local mode, the executors)."""
    python_cpu_percent: float
    """This process and, while generating, the generator processes."""
    other_cpu_percent: float | None
    """The rest of the machine: high means the figures are disturbed."""


def _python_cpu() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def timed(
    body: Callable[[], T],
    jvm_pid: int | None,
    children_cpu: Callable[[T], float] | None = None,
) -> tuple[T, Timed]:
    """Run ``body`` and time it; ``children_cpu`` reads from its result the CPU seconds
    of processes that are still running when it returns (not yet in ``RUSAGE_CHILDREN``)."""

    def jvm() -> float | None:
        return None if jvm_pid is None else process_cpu_seconds(jvm_pid)

    spark0, python0, busy0 = jvm(), _python_cpu(), machine_busy_seconds()
    started = time.perf_counter()
    result = body()
    seconds = time.perf_counter() - started
    spark1, python1, busy1 = jvm(), _python_cpu(), machine_busy_seconds()
    spark = None if spark0 is None or spark1 is None else spark1 - spark0
    python = python1 - python0 + (0.0 if children_cpu is None else children_cpu(result))
    other = None
    if busy0 is not None and busy1 is not None:
        other = max(0.0, 100 * (busy1 - busy0 - python - (spark or 0.0)) / seconds)
    return result, Timed(
        seconds,
        None if spark is None else 100 * spark / seconds,
        100 * python / seconds,
        other,
    )


def _files(directory: Path, pattern: str) -> list[Path]:
    return sorted(p for p in directory.rglob(pattern) if p.is_file())


def _bytes(files: Sequence[Path]) -> int:
    return sum(p.stat().st_size for p in files)


@attrs.frozen
class Generated:
    nodes: list[NodeTrace]
    events: int
    files: int
    bytes: int
    timed: Timed

    def by_type(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for n in self.nodes:
            total.update(n.by_type)
        return dict(sorted(total.items()))


def _generate(settings: Settings, trace_dir: Path) -> Generated:
    share, extra = divmod(settings.events, len(NODES))
    counts = [share + (1 if i < extra else 0) for i in range(len(NODES))]
    # One process per broker, as in a cluster run (each tracer names its files with its
    # pid); spawned, not forked, so the children start from a clean interpreter.
    with ProcessPoolExecutor(len(NODES), mp_context=get_context("spawn")) as pool:

        def run_all() -> list[NodeTrace]:
            futures = [
                pool.submit(write_node, str(trace_dir), node, n, 23_000 + node)
                for node, n in zip(NODES, counts, strict=True)
            ]
            return [f.result() for f in futures]

        # Start the workers (and their imports) before the clock.
        list(pool.map(_ready, NODES))
        nodes, took = timed(
            run_all, None, lambda nodes: sum(n.cpu_seconds for n in nodes)
        )
    files = _files(trace_dir, "*.jsonl")
    return Generated(nodes, settings.events, len(files), _bytes(files), took)


def _ready(node: int) -> int:
    return node


@attrs.frozen
class Query:
    name: str
    description: str
    run: Callable[[Any, Path], list[tuple[object, ...]]]
    expected: Callable[[Generated], dict[tuple[object, ...], int]]


def _requests_by_api(spark: Any, directory: Path) -> list[tuple[object, ...]]:
    from pyspark.sql import functions as F

    from minikafka.labs import read_events

    frame = read_events(spark, directory, RequestCompleted)
    rows = (
        frame.groupBy("node", "api_name")
        .agg(
            F.count("*").alias("requests"),
            F.percentile_approx("total_ms", 0.99).alias("p99_ms"),
        )
        .collect()
    )
    return [(r["node"], r["api_name"], r["requests"], r["p99_ms"]) for r in rows]


def _expected_requests(generated: Generated) -> dict[tuple[object, ...], int]:
    return {
        (n.node, api): count
        for n in generated.nodes
        for api, count in n.requests_by_api.items()
    }


def _follower_lag(spark: Any, directory: Path) -> list[tuple[object, ...]]:
    from pyspark.sql import functions as F

    from minikafka.labs import read_events

    frame = read_events(spark, directory, FollowerFetched)
    rows = (
        frame.where(F.col("node") == QUERIED_NODE)
        .groupBy("follower")
        .agg(F.count("*").alias("fetches"), F.max("lag").alias("max_lag"))
        .collect()
    )
    return [(r["follower"], r["fetches"], r["max_lag"]) for r in rows]


def _expected_follower(generated: Generated) -> dict[tuple[object, ...], int]:
    node = next(n for n in generated.nodes if n.node == QUERIED_NODE)
    return {(f,): count for f, count in node.follower_fetches_by_follower.items()}


def _elections(spark: Any, directory: Path) -> list[tuple[object, ...]]:
    from minikafka.labs import read_events

    frame = read_events(spark, directory, PartitionLeaderElected)
    return [
        (r["reason"], r["count"]) for r in frame.groupBy("reason").count().collect()
    ]


def _expected_elections(generated: Generated) -> dict[tuple[object, ...], int]:
    total: Counter[str] = Counter()
    for n in generated.nodes:
        total.update(n.elections_by_reason)
    return {(reason,): count for reason, count in total.items()}


QUERIES = (
    Query(
        "requests by node and API",
        "RequestCompleted grouped by node, api_name: count, p99 of total_ms",
        _requests_by_api,
        _expected_requests,
    ),
    Query(
        f"node {QUERIED_NODE}'s follower fetches",
        f"FollowerFetched where node = {QUERIED_NODE}, by follower: count, max lag",
        _follower_lag,
        _expected_follower,
    ),
    Query(
        "leader elections by reason",
        "PartitionLeaderElected grouped by reason: count",
        _elections,
        _expected_elections,
    ),
)


def _counts(
    rows: Sequence[tuple[object, ...]], key_width: int
) -> dict[tuple[object, ...], int]:
    out: dict[tuple[object, ...], int] = {}
    for row in rows:
        count = row[key_width]
        assert isinstance(count, int)
        out[tuple(row[:key_width])] = count
    return out


@attrs.frozen
class QueryOutcome:
    query: Query
    json_runs: list[Timed]
    parquet_runs: list[Timed]
    rows: list[tuple[object, ...]]

    @property
    def json(self) -> Timed:
        return _median(self.json_runs)

    @property
    def parquet(self) -> Timed:
        return _median(self.parquet_runs)


def _median(runs: Sequence[Timed]) -> Timed:
    return sorted(runs, key=lambda t: t.seconds)[(len(runs) - 1) // 2]


@attrs.frozen
class SparkResults:
    master: str
    jvm_pid: int | None
    warm_up: Timed
    ceiling: Timed
    ceiling_bytes: int
    ceiling_files: int
    conversion: Timed
    parquet_bytes: int
    parquet_files: int
    parquet_bytes_by_type: dict[str, int]
    types_written: list[str]
    queries: list[QueryOutcome]
    scan_runs: list[Timed]
    scanned_lines: int

    @property
    def scan(self) -> Timed:
        return _median(self.scan_runs)


def _jvm_pid(spark: Any) -> int | None:
    """The Spark JVM's pid: PySpark starts ``spark-submit``, which ``exec``s the JVM."""
    gateway = getattr(spark.sparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    pid = getattr(proc, "pid", None)
    if not isinstance(pid, int):
        return None
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    return pid if comm == "java" else None


@contextmanager
def _driver_memory() -> Iterator[str]:
    """A 4 GiB driver heap (in local mode the executors run in it too) unless the
    environment already says how to start Spark."""
    key = "PYSPARK_SUBMIT_ARGS"
    saved = os.environ.get(key)
    if saved is None:
        os.environ[key] = f"--driver-memory {DRIVER_MEMORY} pyspark-shell"
    try:
        yield os.environ[key]
    finally:
        if saved is None:
            os.environ.pop(key, None)


def _spark_part(
    settings: Settings, generated: Generated, trace_dir: Path, scratch: Path
) -> SparkResults:
    from minikafka.labs import spark_session, to_parquet

    spark = spark_session("minikafka-bench-trace-parquet")
    try:
        master = str(spark.sparkContext.master)
        jvm = _jvm_pid(spark)
        files = [str(p) for p in _files(trace_dir, "*.jsonl")]
        raw_dir, parquet_dir = scratch / "raw-lines.parquet", scratch / "parquet"

        def warm_up() -> None:
            # The JIT's first compilations of the text and JSON readers and the Parquet
            # writer, on one file, before any clock that is quoted.
            first = files[:1]
            spark.read.text(first).count()
            spark.read.text(first).write.mode("overwrite").parquet(
                str(scratch / "warm-up")
            )
            _requests_by_api(spark, _one_file_dir(trace_dir, scratch))

        _, warm = timed(warm_up, jvm)
        print(f"  warm-up {warm.seconds:.1f} s", flush=True)
        _, ceiling = timed(
            lambda: (
                spark.read.text(files).write.mode("overwrite").parquet(str(raw_dir))
            ),
            jvm,
        )
        print(f"  ceiling: text to Parquet {ceiling.seconds:.1f} s", flush=True)
        written, conversion = timed(
            lambda: to_parquet(spark, trace_dir, parquet_dir), jvm
        )
        print(f"  to_parquet {conversion.seconds:.1f} s", flush=True)
        types = [f"{c}.{e}" for c, e in written]
        if types != sorted(generated.by_type()):
            raise BenchError(
                f"to_parquet wrote {types}, the trace has {sorted(generated.by_type())}"
            )
        runs: dict[str, tuple[list[Timed], list[Timed]]] = {
            q.name: ([], []) for q in QUERIES
        }
        rows: dict[str, list[tuple[object, ...]]] = {}
        scans: list[Timed] = []
        lines = 0
        for r in range(settings.query_repeats):
            lines, scan = timed(lambda: int(spark.read.text(files).count()), jvm)
            scans.append(scan)
            print(
                f"  run {r + 1}: ceiling: text count {scan.seconds:.1f} s", flush=True
            )
            for q in QUERIES:
                forms = [("json", trace_dir), ("parquet", parquet_dir)]
                if r % 2:  # alternate which form goes first
                    forms.reverse()
                for form, directory in forms:
                    got, took = timed(partial(q.run, spark, directory), jvm)
                    _verify(q, form, got, generated)
                    runs[q.name][form == "parquet"].append(took)
                    if form == "parquet":
                        rows[q.name] = sorted(got, key=repr)
                    print(
                        f"  run {r + 1}: {q.name} on {form}: {took.seconds:.2f} s",
                        flush=True,
                    )
        if lines != generated.events:
            raise BenchError(
                f"{lines:,} lines in the trace, {generated.events:,} written"
            )
        raw_files = _files(raw_dir, "*.parquet")
        parquet_files = _files(parquet_dir, "*.parquet")
        by_type: Counter[str] = Counter()
        for p in parquet_files:
            parts = p.relative_to(parquet_dir).parts
            by_type[f"{parts[0].split('=')[1]}.{parts[1].split('=')[1]}"] += (
                p.stat().st_size
            )
        return SparkResults(
            master,
            jvm,
            warm,
            ceiling,
            _bytes(raw_files),
            len(raw_files),
            conversion,
            _bytes(parquet_files),
            len(parquet_files),
            dict(sorted(by_type.items())),
            types,
            [
                QueryOutcome(q, runs[q.name][0], runs[q.name][1], rows[q.name])
                for q in QUERIES
            ],
            scans,
            lines,
        )
    finally:
        spark.stop()


def _one_file_dir(trace_dir: Path, scratch: Path) -> Path:
    """A trace directory holding one of the trace's files (a link), for the warm-up."""
    directory = scratch / "warm-up-trace"
    directory.mkdir(exist_ok=True)
    first = _files(trace_dir, "*.jsonl")[0]
    link = directory / first.name
    if not link.exists():
        link.symlink_to(first)
    return directory


def _verify(
    query: Query, form: str, rows: Sequence[tuple[object, ...]], generated: Generated
) -> None:
    expected = query.expected(generated)
    width = len(next(iter(expected)))
    got = _counts(rows, width)
    if got != expected:
        raise BenchError(
            f"{query.name} on {form}: counts {sorted(got.items(), key=repr)[:6]}, "
            f"the generator wrote {sorted(expected.items(), key=repr)[:6]}"
        )


# --- the report ---------------------------------------------------------------------------


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="minikafka-bench-trace-parquet-"))
    try:
        trace_dir = scratch / "traces"
        trace_dir.mkdir()
        print(f"  generating {settings.events:,} events", flush=True)
        generated = _generate(settings, trace_dir)
        print(
            f"  generated {generated.bytes / 1e9:.2f} GB in {generated.files} files, "
            f"{generated.timed.seconds:.1f} s",
            flush=True,
        )
        with _driver_memory() as submit_args:
            spark = _spark_part(settings, generated, trace_dir, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    machine = machine_facts()
    packages = (
        dict(machine["packages"]) if isinstance(machine["packages"], dict) else {}
    )
    for dist in ("pyspark", "minikafka-labs", "minikafka-trace"):
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            packages[dist] = None
    machine["packages"] = packages
    document = report_header(
        NAME, __doc__, quick, settings.query_repeats, started, clock
    )
    document.update(_document(settings, generated, spark, submit_args, machine))
    table = _table(generated, spark)
    return Report(NAME, document, table, _chart(generated, spark))


def _document(
    settings: Settings,
    generated: Generated,
    spark: SparkResults,
    submit_args: str,
    machine: Mapping[str, object],
) -> dict[str, object]:
    events = generated.events
    return {
        "settings": attrs.asdict(settings),
        "units": {
            "seconds": "wall seconds",
            "*_cpu_percent": "CPU time over the wall time, % of one core",
            "bytes": "file sizes (st_size), the Parquet files only (no .crc, _SUCCESS)",
        },
        "spark": {
            "master": spark.master,
            "pyspark_submit_args": submit_args,
            "jvm_pid_found": spark.jvm_pid is not None,
        },
        "machine": dict(machine),
        "trace": {
            "nodes": list(NODES),
            "events": events,
            "files": generated.files,
            "bytes": generated.bytes,
            "bytes_per_event": generated.bytes / events,
            "by_type": generated.by_type(),
            "per_node": [attrs.asdict(n) for n in generated.nodes],
        },
        "generate": {
            **attrs.asdict(generated.timed),
            "events_per_s": events / generated.timed.seconds,
        },
        "warm_up": attrs.asdict(spark.warm_up),
        "convert": {
            "to_parquet": {
                **attrs.asdict(spark.conversion),
                "events_per_s": events / spark.conversion.seconds,
                "json_mb_per_s": generated.bytes / spark.conversion.seconds / 1e6,
                "bytes": spark.parquet_bytes,
                "files": spark.parquet_files,
                "bytes_by_type": spark.parquet_bytes_by_type,
                "types_written": spark.types_written,
                "json_bytes_over_parquet_bytes": generated.bytes / spark.parquet_bytes,
            },
            "ceiling_text_to_parquet": {
                **attrs.asdict(spark.ceiling),
                "events_per_s": events / spark.ceiling.seconds,
                "json_mb_per_s": generated.bytes / spark.ceiling.seconds / 1e6,
                "bytes": spark.ceiling_bytes,
                "files": spark.ceiling_files,
            },
            "to_parquet_seconds_over_ceiling": spark.conversion.seconds
            / spark.ceiling.seconds,
        },
        "query_ceiling_text_count": {
            "median": attrs.asdict(spark.scan),
            "lines": spark.scanned_lines,
            "runs": [attrs.asdict(t) for t in spark.scan_runs],
        },
        "queries": [
            {
                "query": o.query.name,
                "description": o.query.description,
                "json": attrs.asdict(o.json),
                "parquet": attrs.asdict(o.parquet),
                "json_runs": [attrs.asdict(t) for t in o.json_runs],
                "parquet_runs": [attrs.asdict(t) for t in o.parquet_runs],
                "json_over_ceiling": o.json.seconds / spark.scan.seconds,
                "parquet_over_ceiling": o.parquet.seconds / spark.scan.seconds,
                "json_over_parquet": o.json.seconds / o.parquet.seconds,
                "result": [list(row) for row in o.rows],
            }
            for o in spark.queries
        ],
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _cpu_cells(t: Timed) -> list[str]:
    return [
        _pct(t.spark_cpu_percent),
        _pct(t.python_cpu_percent),
        _pct(t.other_cpu_percent),
    ]


def _range(runs: Sequence[Timed]) -> str:
    if len(runs) < 2:
        return ""
    seconds = [t.seconds for t in runs]
    return f"{min(seconds):.2f}-{max(seconds):.2f}"


def _table(generated: Generated, spark: SparkResults) -> str:
    events = generated.events
    mb = 1e6
    step_rows = [
        [
            "generate: 3 JsonLinesTracer processes",
            "JSON Lines",
            f"{events:,}",
            f"{generated.timed.seconds:.1f}",
            f"{events / generated.timed.seconds:,.0f}",
            f"{generated.bytes / mb:,.0f}",
            "",
            *_cpu_cells(generated.timed),
        ],
        [
            "convert: to_parquet",
            "Parquet by type, node",
            f"{events:,}",
            f"{spark.conversion.seconds:.1f}",
            f"{events / spark.conversion.seconds:,.0f}",
            f"{spark.parquet_bytes / mb:,.0f}",
            f"{spark.conversion.seconds / spark.ceiling.seconds:.2f}x",
            *_cpu_cells(spark.conversion),
        ],
        [
            "ceiling: read.text().write.parquet()",
            "Parquet of raw lines",
            f"{events:,}",
            f"{spark.ceiling.seconds:.1f}",
            f"{events / spark.ceiling.seconds:,.0f}",
            f"{spark.ceiling_bytes / mb:,.0f}",
            "1.00x",
            *_cpu_cells(spark.ceiling),
        ],
    ]
    cpu = ["Spark CPU", "Python CPU", "other CPU"]
    table = markdown_table(
        ["step", "writes", "events", "seconds", "events/s", "MB", "over ceiling", *cpu],
        step_rows,
    )
    scan = spark.scan
    query_rows = [
        [
            "ceiling: read.text().count()",
            "JSON Lines",
            f"{scan.seconds:.2f}",
            _range(spark.scan_runs),
            "1.00x",
            *_cpu_cells(scan),
        ]
    ]
    for o in spark.queries:
        for form, median, runs in (
            ("JSON Lines", o.json, o.json_runs),
            ("Parquet", o.parquet, o.parquet_runs),
        ):
            query_rows.append(
                [
                    o.query.name if form == "JSON Lines" else "",
                    form,
                    f"{median.seconds:.2f}",
                    _range(runs),
                    f"{median.seconds / scan.seconds:.2f}x",
                    *_cpu_cells(median),
                ]
            )
        query_rows.append(
            [
                "",
                "JSON Lines / Parquet",
                f"{o.json.seconds / o.parquet.seconds:.1f}x",
                "",
                "",
                "",
                "",
                "",
            ]
        )
    table += "\n\n" + markdown_table(
        ["query (read_events)", "reads", "seconds", "range", "over ceiling", *cpu],
        query_rows,
    )
    table += (
        f"\ntrace: {events:,} events from {len(NODES)} nodes, {generated.files} files, "
        f"{generated.bytes / events:.0f} bytes/event; Parquet "
        f"{generated.bytes / spark.parquet_bytes:.1f}x smaller, in "
        f"{spark.parquet_files} files over {len(spark.types_written)} event types"
    )
    others = [
        t.other_cpu_percent or 0.0
        for t in (
            generated.timed,
            spark.conversion,
            spark.ceiling,
            *spark.scan_runs,
            *(r for o in spark.queries for r in (*o.json_runs, *o.parquet_runs)),
        )
    ]
    if max(others) > BUSY_MACHINE_PERCENT:
        table += (
            f"\nwarning: other processes used up to {max(others):.0f}% CPU during the "
            "steps; these figures are disturbed."
        )
    return table


def _chart(generated: Generated, spark: SparkResults) -> str:
    events = generated.events
    groups: list[tuple[str, Sequence[tuple[str, float]]]] = [
        (
            "convert: events/s",
            [
                ("to_parquet", events / spark.conversion.seconds),
                ("ceiling: text to Parquet", events / spark.ceiling.seconds),
            ],
        )
    ]
    for o in spark.queries:
        groups.append(
            (
                f"{o.query.name}: ms",
                [
                    ("JSON Lines", o.json.seconds * 1000),
                    ("Parquet", o.parquet.seconds * 1000),
                    ("ceiling: text count", spark.scan.seconds * 1000),
                ],
            )
        )
    return bar_chart_svg(
        f"minikafka traces: JSON Lines to Parquet, {events:,} events", "", groups
    )
