"""Transactions (KIP-98) on minikafka and on Apache Kafka, each beside its own ceiling.

The same records, 100 bytes each, written by confluent-kafka (librdkafka) in this
process to a new one-partition topic, against a minikafka single node
(``minikafka.broker.testing.BrokerProcess``, defaults) and Apache Kafka's own broker
(``reference.kafka.KafkaNode``, the release ``reference/pom.xml`` pins), both running for
the whole benchmark and measured one after the other, as ``kafka_reference`` does:

- **idempotent produce**, the ceiling of transactional produce: ``enable.idempotence``
  (so ``acks=all``), ``linger.ms=5``, librdkafka's defaults otherwise; records/s from the
  first ``produce()`` to the end of ``flush()``. Every record must be acknowledged.
- **transactional produce**, the same records and producer settings with a
  ``transactional.id``: ``begin_transaction()``, ``TXN_SIZES`` records (100, or 10,000),
  ``flush()``, ``commit_transaction()``, over and over; records/s over the same span
  (``init_transactions()`` comes before it). **Commit latency** is the time of one
  ``commit_transaction()`` after the flush: the records are acknowledged already, so it
  is EndTxn's round trip through the transaction coordinator, which answers once
  ``PrepareCommit`` is in ``__transaction_state``.
- **read_committed consume** against its ceiling **read_uncommitted**: a consumer
  (``assign`` from the beginning, no group, librdkafka's default fetch settings) reads a
  topic of transactions of 100 to its end; records/s from ``assign`` to the last record.
  Two topics of ``CONSUME_RECORDS``, written once per broker before the rounds: one of
  committed transactions only (the two levels read the same records) and one where one
  transaction in ``ABORT_EVERY`` was aborted (read_committed must skip the aborted
  records, so reads fewer; every record's value says whether it was aborted, and each
  is checked).

CPU: the broker's (``/proc/<pid>/stat``) and this process's over each run, as µs per
record, and the rest of the machine's as a percentage of a core; the brokers on the
second half of the CPUs, this process on the first (as ``kafka_reference``).
``WARMUP_ROUNDS`` unmeasured rounds first (a JVM compiles its hot code early), then
``REPEATS`` measured ones, alternating the brokers; the run with the median records/s is
quoted, the range beside it; commit latencies are pooled over the measured runs.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path

import attrs
import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from reference.kafka import ReferenceMissing, kafka_version

from . import e2e_latency
from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    latency_summary,
    machine_busy_seconds,
    machine_facts,
    median_run,
    now_utc,
    own_cpu_seconds,
    pinned_client,
    process_cpu_seconds,
    report_header,
    split_cpus,
)
from .kafka_reference import (
    BROKERS,
    LABELS,
    BrokerKind,
    Row,
    RunningBroker,
    _busy,
    _java_version,
    _spread,
    ratio,
    ratio_table,
    started_broker,
)

NAME = "transactions"
RECORDS = 100_000
"""Records per produce run: a multiple of every transaction size."""
QUICK_RECORDS = 20_000
CONSUME_RECORDS = 200_000
"""Records of each consume topic (transactions of 100), written once per broker."""
QUICK_CONSUME_RECORDS = 20_000
WARM_TOPIC = "bench-txn-warm-up"
"""Each idempotent producer writes one record here before its run: librdkafka's, finding
no broker connection up when it starts, asks for its producer id when a 500 ms timer
fires, which would otherwise be timed (a transactional producer has its id from
``init_transactions()``)."""
RECORD_BYTES = 100
TXN_SIZES = (100, 10_000)
ABORT_EVERY = 10
"""On the consume benchmark's second topic, one transaction in this many is aborted."""
REPEATS = 3
WARMUP_ROUNDS = 1
RUN_TIMEOUT = 300.0
"""Seconds a produce or consume run may take before the benchmark fails."""
LINGER_MS = "5"

COMMITTED = b"c" * RECORD_BYTES
ABORTED = b"a" * RECORD_BYTES
_ids = itertools.count()


@attrs.frozen
class Run:
    """One produce or consume run against one broker."""

    workload: str
    """``idempotent``, ``txn-100``, ``read_committed``, ...: what :func:`table_rows` picks."""
    topic: str
    records: int
    wall_s: float
    broker_cpu_s: float | None
    client_cpu_s: float
    other_cpu_percent: float | None
    commit_s: tuple[float, ...] = ()
    """Each ``commit_transaction()``'s seconds, in order (transactional runs only)."""

    @property
    def records_per_s(self) -> float:
        return self.records / self.wall_s

    @property
    def broker_us_per_record(self) -> float | None:
        if self.broker_cpu_s is None:
            return None
        return self.broker_cpu_s / self.records * 1e6

    @property
    def client_us_per_record(self) -> float:
        return self.client_cpu_s / self.records * 1e6


class _Meter:
    """The broker's, this process's and the machine's CPU over one run."""

    def __init__(self, broker: RunningBroker) -> None:
        self.broker = broker
        self.broker_before = process_cpu_seconds(broker.pid)
        self.own_before = own_cpu_seconds()
        self.busy_before = machine_busy_seconds()
        self.started = time.perf_counter()

    def stop(self) -> tuple[float, float | None, float, float | None]:
        """(wall s, broker CPU s, this process's CPU s, the rest of the machine's %)."""
        wall = time.perf_counter() - self.started
        broker_after = process_cpu_seconds(self.broker.pid)
        if broker_after is None:
            raise BenchError(f"the {LABELS[self.broker.kind]} broker died")
        own = own_cpu_seconds() - self.own_before
        broker = (
            None if self.broker_before is None else broker_after - self.broker_before
        )
        busy_after = machine_busy_seconds()
        other = None
        if (
            self.busy_before is not None
            and busy_after is not None
            and broker is not None
        ):
            other = max(
                0.0, 100 * (busy_after - self.busy_before - broker - own) / wall
            )
        return wall, broker, own, other


def _ready(client: Producer | Consumer, topic: str, what: str) -> None:
    """Until ``client``'s Metadata names a leader of ``topic``'s partition: the new
    topic's leader election and the client's first look-up stay out of the timing."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while True:
        found = client.list_topics(topic, timeout=RUN_TIMEOUT).topics.get(topic)
        if (
            found is not None
            and found.error is None
            and 0 in found.partitions
            and found.partitions[0].leader >= 0
        ):
            return
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: no leader for {topic} in {RUN_TIMEOUT:g} s")
        time.sleep(0.05)


def _producer(broker: RunningBroker, transactional: bool) -> tuple[Producer, list[str]]:
    errors: list[str] = []

    def report(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    config: dict[str, object] = {
        "bootstrap.servers": broker.bootstrap,
        "enable.idempotence": True,
        "linger.ms": LINGER_MS,
        "delivery.report.only.error": True,
        "on_delivery": report,
    }
    if transactional:
        config["transactional.id"] = f"bench-txn-{next(_ids)}"
    return Producer(config), errors


def _send(producer: Producer, topic: str, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.005)


def _flush(producer: Producer, what: str) -> None:
    if producer.flush(RUN_TIMEOUT) != 0:
        raise BenchError(
            f"{what}: records still unacknowledged after {RUN_TIMEOUT:g} s"
        )


def produce(
    broker: RunningBroker,
    topic: str,
    records: int,
    txn_size: int | None,
    abort_every: int = 0,
) -> Run:
    """``records`` records to a new ``topic``: idempotent (``txn_size`` None) or in
    transactions of ``txn_size``, every ``abort_every``-th aborted (0: none)."""
    e2e_latency._create_topic(broker.bootstrap, topic)
    producer, errors = _producer(broker, txn_size is not None)
    what = f"{LABELS[broker.kind]} {topic}"
    _ready(producer, topic, what)
    commits: list[float] = []
    if txn_size is None:
        _send(producer, WARM_TOPIC, COMMITTED)
        _flush(producer, what)
        meter = _Meter(broker)
        for _ in range(records):
            _send(producer, topic, COMMITTED)
        _flush(producer, what)
    else:
        producer.init_transactions(RUN_TIMEOUT)
        meter = _Meter(broker)
        for number in range(records // txn_size):
            aborting = abort_every > 0 and number % abort_every == abort_every - 1
            producer.begin_transaction()
            for _ in range(txn_size):
                _send(producer, topic, ABORTED if aborting else COMMITTED)
            _flush(producer, what)
            started = time.perf_counter()
            if aborting:
                producer.abort_transaction(RUN_TIMEOUT)
            else:
                producer.commit_transaction(RUN_TIMEOUT)
                commits.append(time.perf_counter() - started)
    wall, broker_cpu, own, other = meter.stop()
    if errors:
        raise BenchError(f"{what}: {len(errors)} records failed, first: {errors[0]}")
    workload = "idempotent" if txn_size is None else f"txn-{txn_size}"
    return Run(workload, topic, records, wall, broker_cpu, own, other, tuple(commits))


def consume(
    broker: RunningBroker, topic: str, isolation: str, expected: int, aborted: int
) -> Run:
    """Read ``topic`` from the beginning with ``isolation.level=isolation`` until
    ``expected`` records came; exactly ``aborted`` of them may carry an aborted
    transaction's value (0 under read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"bench-{next(_ids)}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    what = f"{LABELS[broker.kind]} {topic} {isolation}"
    try:
        _ready(consumer, topic, what)
        meter = _Meter(broker)
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        count = seen_aborted = 0
        deadline = time.monotonic() + RUN_TIMEOUT
        while count < expected:
            if time.monotonic() > deadline:
                raise BenchError(f"{what}: {count:,} of {expected:,} records read")
            # A batch returns when it holds as many as asked or its timeout passes:
            # never ask for more than are left, or the last batch waits out the timeout.
            for message in consumer.consume(min(10_000, expected - count), 0.5):
                if message.error() is not None:
                    raise BenchError(f"{what}: {message.error()}")
                count += 1
                if message.value() == ABORTED:
                    seen_aborted += 1
        wall, broker_cpu, own, other = meter.stop()
    finally:
        consumer.close()
    if count != expected or seen_aborted != aborted:
        raise BenchError(
            f"{what}: {count:,} records ({seen_aborted:,} aborted), not {expected:,} "
            f"({aborted:,} aborted)"
        )
    return Run(isolation, topic, count, wall, broker_cpu, own, other)


# --- the whole run --------------------------------------------------------------------


def _progress(kind: BrokerKind, label: str, run: Run) -> None:
    broker = "-" if run.broker_cpu_s is None else f"{run.broker_cpu_s:.2f}"
    other = "-" if run.other_cpu_percent is None else f"{run.other_cpu_percent:.0f}%"
    commits = ""
    if run.commit_s:
        lat = latency_summary(run.commit_s)
        commits = f"  commit p50 {lat['p50_ms']:.2f} ms p99 {lat['p99_ms']:.2f} ms"
    print(
        f"  {LABELS[kind]:<9} {label}: {run.workload:<34} {run.records_per_s:>9,.0f} "
        f"rec/s  broker CPU {broker} s{commits}  ({run.wall_s:.1f} s; rest of machine "
        f"{other})",
        flush=True,
    )


def consume_workloads(records: int) -> list[tuple[str, str, int, int]]:
    """(workload, isolation, records expected, aborted among them), per round: the
    committed-only topic, then the topic with aborted transactions."""
    aborted = records // ABORT_EVERY
    return [
        ("read_uncommitted", "read_uncommitted", records, 0),
        ("read_committed", "read_committed", records, 0),
        ("aborts read_uncommitted", "read_uncommitted", records, aborted),
        ("aborts read_committed", "read_committed", records - aborted, 0),
    ]


def consume_topic(kind: BrokerKind, aborts: bool) -> str:
    return f"bench-txn-{'aborts' if aborts else 'committed'}-{kind}"


def _round(
    broker: RunningBroker,
    records: int,
    consume_records: int,
    label: str,
    runs: list[Run],
    flip: bool,
) -> None:
    """One round against ``broker``: idempotent, then each transaction size, then the
    four consume runs (the isolation levels in the other order when ``flip``)."""
    name = label.replace(" ", "-")
    found = [produce(broker, f"bench-txn-{name}-idempotent", records, None)]
    for size in TXN_SIZES:
        found.append(produce(broker, f"bench-txn-{name}-{size}", records, size))
    reads = consume_workloads(consume_records)
    if flip:
        reads = [reads[1], reads[0], reads[3], reads[2]]
    for workload, isolation, expected, aborted in reads:
        topic = consume_topic(broker.kind, workload.startswith("aborts"))
        one = consume(broker, topic, isolation, expected, aborted)
        found.append(attrs.evolve(one, workload=workload))
    for run in found:
        _progress(broker.kind, label, run)
    runs += found


def run_both(
    scratch: Path,
    records: int,
    consume_records: int,
    repeats: int,
    warmup_rounds: int,
    cpus: set[int] | None,
) -> tuple[dict[BrokerKind, list[Run]], dict[BrokerKind, list[Run]]]:
    """(measured runs, warm-up runs) per broker, in the module docstring's order."""
    measured: dict[BrokerKind, list[Run]] = {kind: [] for kind in BROKERS}
    warmup: dict[BrokerKind, list[Run]] = {kind: [] for kind in BROKERS}
    brokers: dict[BrokerKind, RunningBroker] = {}
    with ExitStack() as stack:
        for kind in BROKERS:
            brokers[kind] = stack.enter_context(
                started_broker(kind, scratch / kind, cpus)
            )
        with pinned_client():
            for kind in BROKERS:
                e2e_latency._create_topic(brokers[kind].bootstrap, WARM_TOPIC)
                for aborts in (False, True):
                    topic = consume_topic(kind, aborts)
                    every = ABORT_EVERY if aborts else 0
                    one = produce(
                        brokers[kind], topic, consume_records, TXN_SIZES[0], every
                    )
                    _progress(kind, "consume topic", attrs.evolve(one, workload=topic))
            for r in range(warmup_rounds + repeats):
                early = r < warmup_rounds
                label = f"warm-up {r}" if early else f"round {r - warmup_rounds}"
                for kind in BROKERS:
                    target = warmup if early else measured
                    _round(
                        brokers[kind],
                        records,
                        consume_records,
                        label,
                        target[kind],
                        flip=r % 2 == 1,
                    )
    return measured, warmup


# --- the report -----------------------------------------------------------------------


def _pick(runs: Sequence[Run], workload: str) -> list[Run]:
    return [run for run in runs if run.workload == workload]


def _median(runs: Sequence[Run]) -> Run:
    return median_run(runs, lambda r: r.records_per_s)


def _rate_rows(title: str, figure: str, runs: dict[BrokerKind, list[Run]]) -> list[Row]:
    med = {kind: _median(runs[kind]) for kind in BROKERS}
    rates = {kind: [r.records_per_s for r in runs[kind]] for kind in BROKERS}
    return [
        Row(
            title,
            f"{figure} (median of {len(runs['kafka'])})",
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
    ]


def _ratio_row(
    figure: str, runs: dict[BrokerKind, list[Run]], ceiling: dict[BrokerKind, list[Run]]
) -> Row:
    """The median run's records/s over the ceiling's median run's, per broker."""
    over = {
        kind: ratio(
            _median(runs[kind]).records_per_s, _median(ceiling[kind]).records_per_s
        )
        for kind in BROKERS
    }
    return Row("", figure, over["kafka"], over["minikafka"], "{:.3f}")


def _commit_rows(runs: dict[BrokerKind, list[Run]]) -> list[Row]:
    pooled = {
        kind: latency_summary([s for run in runs[kind] for s in run.commit_s])
        for kind in BROKERS
    }
    count = max(sum(len(run.commit_s) for run in runs[kind]) for kind in BROKERS)
    return [
        Row(
            "",
            f"commit p50 ms (of {count:,})",
            pooled["kafka"]["p50_ms"],
            pooled["minikafka"]["p50_ms"],
            "{:.2f}",
        ),
        Row(
            "",
            "commit p99 ms",
            pooled["kafka"]["p99_ms"],
            pooled["minikafka"]["p99_ms"],
            "{:.2f}",
        ),
    ]


def table_rows(
    measured: dict[BrokerKind, list[Run]], records: int, consume_records: int
) -> list[Row]:
    """Every row of the table, from both brokers' measured runs."""

    def pick(workload: str) -> dict[BrokerKind, list[Run]]:
        return {kind: _pick(measured[kind], workload) for kind in BROKERS}

    size = f"{records:,} x {RECORD_BYTES} B"
    idempotent = pick("idempotent")
    rows = _rate_rows(f"idempotent produce, {size}", "records/s", idempotent)
    for txn in TXN_SIZES:
        runs = pick(f"txn-{txn}")
        rows += _rate_rows(f"transactions of {txn:,}, {size}", "records/s", runs)
        rows.append(_ratio_row("records/s / idempotent", runs, idempotent))
        rows += _commit_rows(runs)
    aborted = consume_records // ABORT_EVERY
    read_size = f"{consume_records:,} x {RECORD_BYTES} B"
    for prefix, title in (
        ("", f"consume, transactions of {TXN_SIZES[0]}, {read_size}"),
        ("aborts ", f"consume, 1 in {ABORT_EVERY} aborted, {read_size}"),
    ):
        uncommitted = pick(f"{prefix}read_uncommitted")
        committed = pick(f"{prefix}read_committed")
        rows += _rate_rows(title, "read_uncommitted records/s", uncommitted)
        read = f" ({consume_records - aborted:,} read)" if prefix else ""
        rows += _rate_rows("", f"read_committed records/s{read}", committed)
        rows.append(
            _ratio_row("read_committed / read_uncommitted", committed, uncommitted)
        )
    return rows


def _footer(measured: dict[BrokerKind, list[Run]]) -> str:
    lines = [
        "minikafka / Kafka: above 1 is more time or CPU than Kafka's (better only for "
        "records/s and the ratios to a ceiling); the ratio rows are per broker.",
        "the rest of the machine meanwhile, median (range) in % of one core:",
    ]
    for kind in BROKERS:
        others = [run.other_cpu_percent for run in measured[kind]]
        lines.append(f"  {LABELS[kind]}'s runs {_busy(others)}")
    return "\n".join(lines)


def _as_document(runs: Sequence[Run]) -> list[dict[str, object]]:
    return [
        {
            **{k: v for k, v in attrs.asdict(run).items() if k != "commit_s"},
            "records_per_s": run.records_per_s,
            "broker_us_per_record": run.broker_us_per_record,
            "client_us_per_record": run.client_us_per_record,
            "commits": latency_summary(run.commit_s) if run.commit_s else None,
        }
        for run in runs
    ]


def _chart(rows: Sequence[Row]) -> str:
    rates = [row for row in rows if "records/s (median" in row.figure]
    return bar_chart_svg(
        "Transactions against Apache Kafka and minikafka, median run",
        "records/s",
        [
            (
                f"{row.scenario} {row.figure.split(' (')[0]}".strip(),
                [
                    (LABELS["kafka"], row.kafka or 0.0),
                    (LABELS["minikafka"], row.minikafka or 0.0),
                ],
            )
            for row in rates
        ],
    )


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    records = QUICK_RECORDS if quick else RECORDS
    consume_records = QUICK_CONSUME_RECORDS if quick else CONSUME_RECORDS
    repeats = 1 if quick else REPEATS
    warmup_rounds = 0 if quick else WARMUP_ROUNDS
    try:
        version = kafka_version()
    except (OSError, ReferenceMissing) as e:
        raise BenchError(f"Apache Kafka's release is not known: {e}") from e
    split = split_cpus()
    cpus = None if split is None else split[1]
    try:
        with tempfile.TemporaryDirectory(prefix="minikafka-bench-txn-") as scratch:
            measured, warmup = run_both(
                Path(scratch), records, consume_records, repeats, warmup_rounds, cpus
            )
    except ReferenceMissing as e:
        raise BenchError(str(e)) from e
    rows = table_rows(measured, records, consume_records)
    machine = machine_facts()
    machine["java"] = _java_version()
    machine["confluent_kafka"] = metadata.version("confluent-kafka")
    machine["librdkafka"] = confluent_kafka.libversion()[0]
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "kafka_version": version,
        "records": records,
        "consume_records": consume_records,
        "record_bytes": RECORD_BYTES,
        "txn_sizes": list(TXN_SIZES),
        "abort_every": ABORT_EVERY,
        "warmup_rounds": warmup_rounds,
        "cpu_pinning": None
        if split is None
        else {"client": sorted(split[0]), "brokers": sorted(split[1])},
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
        "results": {kind: _as_document(measured[kind]) for kind in BROKERS},
        "warmup": {kind: _as_document(warmup[kind]) for kind in BROKERS},
    }
    table = ratio_table(rows) + "\n" + _footer(measured)
    return Report(NAME, document, table, _chart(rows))
