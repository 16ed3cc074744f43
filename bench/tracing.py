"""What tracing costs: one emit into the JSON Lines tracer, and the broker traced or not.

Tracing's benchmark (ARCHITECTURE.md, "Traces and labs": tracing is "cheap enough to leave on
(measured in bench/)"). Two parts, in one run:

- ``emit``: in this process, ``EMITS`` events through each of: the guard a hot path uses
  with tracing off (``if tracer.enabled: tracer.emit(...)`` on a ``NullTracer``), an
  unguarded ``NullTracer.emit``, ``JsonLinesTracer.emit`` of one ready-made
  ``RequestCompleted`` (the ``net.request`` event, 16 fields), and the Processor's own
  path: build a ``RequestCompleted`` from a request's values, then emit it. A JSON Lines
  run ends with ``flush()``, so the time covers every line encoded (``emit`` queues the
  event; the tracer's writer thread, or that ``flush()``, encodes it) and handed to the
  operating system. The loop itself
  (``for _ in range(n): pass``) is timed too, and included in every figure.
- ``encode``: one ``net.request`` line, written four ways over the same 1,000 pre-built
  events (timings with the 16-17 significant digits real ones have) and timestamps: the
  ceiling, a ``%`` template per event class applied to tuples of values extracted (strings
  escaped) before the clock starts, so only the floats' fixed-point digits, the ints'
  digits and the join are timed; ``encode_line`` and ``encode_fields_line``, the encoders
  registration generates for the class; and ``reference_line``, the line's definition
  value by value. All are checked to write the same bytes first; the table gives each
  over the ceiling, beside a dict through ``json.dumps`` (shortest floats), the spelling
  and the cost of the lines before they had fixed decimals.
- ``produce``: two single-node brokers (``BrokerProcess``, default configuration), one
  started with ``--trace-dir`` and one without, both running throughout; confluent-kafka
  produces 100-byte values to a fresh one-partition topic on each in turn (alternating
  which goes first). Three workloads, all ``acks=1``: one record per Produce request
  (``batch.num.messages=1``: a ``net.request`` line per 100-byte record, the worst case),
  ``linger.ms=0`` (librdkafka sends as soon as it can, so there are many small Produce
  requests, each a ``net.request`` line) and the batched one of ``broker_clients``
  (``linger.ms=10``, ``batch.size`` 1 MiB). A run ends when ``flush()`` returned and
  counts only if the partition's end offset is then the number of records sent. Every
  producer has its own ``client.id``, so the traced broker's ``net.request`` lines say
  how many Produce requests each run took.

Each case runs ``REPEATS`` times; the median run is quoted, with the range. With two or
more CPUs the brokers run on the second half of them and this process (and librdkafka's
threads) on the first.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerFailed, BrokerProcess
from minikafka.net import RequestCompleted
from minikafka.trace import (
    TRACE_DIR_ENV,
    JsonLinesTracer,
    NullTracer,
    Tracer,
    encode_fields_line,
    encode_line,
    read_trace,
    reference_line,
    spark_schema,
    trace_files,
)
from minikafka.trace._encode import decimals_for, json_value

from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    command_line,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    own_cpu_seconds,
    process_cpu_seconds,
    split_cpus,
)

NAME = "tracing"

EMITS = 200_000
QUICK_EMITS = 20_000
SMALL_RECORDS = 100_000
SINGLE_RECORDS = 20_000
"""One record per request is the worst case for tracing (a line per 100-byte record), and
slow: a few thousand requests per second, so fewer records."""
BATCHED_RECORDS = 1_000_000
QUICK_RECORDS = 20_000
QUICK_SINGLE_RECORDS = 2_000
REPEATS = 3
VALUE_BYTES = 100
MIB = 1024 * 1024
RUN_TIMEOUT = 300.0
BUSY_MACHINE_PERCENT = 20.0
_FILLER = b"minikafka-bench-tracing-" * 5


@attrs.frozen
class Settings:
    emits: int
    single_records: int
    small_records: int
    batched_records: int
    repeats: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                QUICK_EMITS, QUICK_SINGLE_RECORDS, QUICK_RECORDS, QUICK_RECORDS, 1
            )
        return cls(EMITS, SINGLE_RECORDS, SMALL_RECORDS, BATCHED_RECORDS, REPEATS)


# --- emit ---------------------------------------------------------------------------------


_T0 = 8123.456789
"""A ``time.perf_counter()`` reading: the Processor's durations are differences of two."""
_TS0 = 1_718_000_000.123456


def _ms(i: int, start: float, length: float) -> float:
    # A difference of two perf_counter readings, in ms, as RequestMetrics computes it: the
    # subtraction leaves 16-17 significant digits, and their shortest repr is what the
    # encoder must write (0.041 would flatter it: short floats format 2-3x faster).
    begin = _T0 + i * 0.000317 + start
    return (begin + length - begin) * 1000.0


_TIMINGS = [
    (
        _ms(i, 0.0, 0.000041),
        _ms(i, 0.000041, 0.000318),
        _ms(i, 0.000359, 0.000002),
        _ms(i, 0.000361, 0.000057),
        _ms(i, 0.000418, 0.000031),
        _ms(i, 0.0, 0.000449),
    )
    for i in range(1000)
]
"""Computed once, so that building an event costs what the Processor's does."""


def _event(correlation_id: int = 7) -> RequestCompleted:
    """A Produce request's line, with values of a real one's sizes and precision."""
    queue, local, remote, response_queue, send, total = _TIMINGS[correlation_id % 1000]
    return RequestCompleted(
        listener="PLAINTEXT",
        connection_id="127.0.0.1:9092-127.0.0.1:53412-0",
        processor_id=0,
        client_id="rdkafka",
        api_key=0,
        api_name="Produce",
        api_version=8,
        correlation_id=correlation_id,
        request_bytes=191,
        response_bytes=54,
        request_queue_ms=queue,
        local_ms=local,
        remote_ms=remote,
        response_queue_ms=response_queue,
        response_send_ms=send,
        total_ms=total,
    )


def _loop(n: int) -> None:
    for _ in range(n):
        pass


def _guarded(tracer: Tracer, n: int) -> None:
    # What Processor.request_completed does: check, build the event, emit. With tracing
    # off the event is never built; with it on, this is the whole cost per request.
    for i in range(n):
        if tracer.enabled:
            tracer.emit(_event(i))


def _fields(correlation_id: int = 7) -> tuple[object, ...]:
    """:func:`_event`'s values in its field order, built as the Processor builds them."""
    timings = _TIMINGS[correlation_id % 1000]
    return (
        "PLAINTEXT",
        "127.0.0.1:9092-127.0.0.1:53412-0",
        0,
        "rdkafka",
        0,
        "Produce",
        8,
        correlation_id,
        191,
        54,
        *timings,
    )


def _guarded_fields(tracer: Tracer, n: int) -> None:
    # What Processor.request_completed does now: ask, then hand over the field values.
    for i in range(n):
        if tracer.wants(RequestCompleted):
            tracer.emit_fields(RequestCompleted, _fields(i))


def _emit_ready(tracer: Tracer, n: int) -> None:
    event = _event()
    emit = tracer.emit
    for _ in range(n):
        emit(event)


@attrs.frozen
class EmitCase:
    name: str
    tracer: str  # "none", "null" or "jsonl"
    body: Callable[[Tracer, int], None]


EMIT_CASES = (
    EmitCase(
        "the loop alone (for _ in range(n): pass)", "none", lambda _t, n: _loop(n)
    ),
    EmitCase("off: if tracer.enabled: emit(build())", "null", _guarded),
    EmitCase("off: NullTracer.emit(event)", "null", _emit_ready),
    EmitCase("on: JsonLinesTracer.emit(event)", "jsonl", _emit_ready),
    EmitCase("on: build RequestCompleted + emit", "jsonl", _guarded),
    EmitCase(
        "on: wants + emit_fields(RequestCompleted, values)", "jsonl", _guarded_fields
    ),
)


@attrs.frozen
class EmitRun:
    events: int
    seconds: float
    ns_per_event: float
    events_per_s: float
    file_bytes: int | None


@attrs.frozen
class EmitOutcome:
    case: str
    runs: list[EmitRun]

    @property
    def median(self) -> EmitRun:
        return sorted(self.runs, key=lambda r: r.ns_per_event)[
            (len(self.runs) - 1) // 2
        ]


def _emit_run(case: EmitCase, n: int, scratch: Path, run: int) -> EmitRun:
    directory = scratch / f"emit-{run}"
    tracer: Tracer = NullTracer(1)
    if case.tracer == "jsonl":
        tracer = JsonLinesTracer.open(directory, node=1)
    case.body(tracer, min(n, 1000))  # warm-up: the first buffer, the file opened
    tracer.flush()
    before = (
        sum(p.stat().st_size for p in trace_files(directory))
        if directory.exists()
        else 0
    )
    started = time.perf_counter()
    case.body(tracer, n)
    tracer.flush()
    seconds = time.perf_counter() - started
    tracer.close()
    written = None
    if case.tracer == "jsonl":
        written = sum(p.stat().st_size for p in trace_files(directory)) - before
        shutil.rmtree(directory)
    return EmitRun(n, seconds, seconds / n * 1e9, n / seconds, written)


def _emit_bench(settings: Settings, scratch: Path) -> list[EmitOutcome]:
    outcomes = {case.name: EmitOutcome(case.name, []) for case in EMIT_CASES}
    for r in range(settings.repeats):
        for case in EMIT_CASES:
            run = _emit_run(case, settings.emits, scratch, r)
            outcomes[case.name].runs.append(run)
            print(
                f"  run {r + 1}/{settings.repeats}  emit  {case.name:<44} "
                f"{run.ns_per_event:>8,.0f} ns/event",
                flush=True,
            )
    return list(outcomes.values())


# --- encode --------------------------------------------------------------------------------

ENCODE_DISTINCT = 1000
"""Distinct pre-built events (and timestamps) the encode cases cycle through."""


def _encode_inputs() -> tuple[list[RequestCompleted], list[float]]:
    return [_event(i) for i in range(ENCODE_DISTINCT)], [
        _TS0 + i * 0.000317 for i in range(ENCODE_DISTINCT)
    ]


def _template_ceiling() -> tuple[str, list[tuple[object, ...]]]:
    """The least Python that can write the same lines: one ``%`` template per event class,
    applied to tuples of the values extracted and strings escaped before the clock starts.

    It does only what cannot be skipped (the floats' fixed-point digits, the ints' decimal
    digits, joining the text): no attribute reads, type checks or escaping.
    """
    schema = spark_schema(RequestCompleted)
    fields = schema["fields"]
    assert isinstance(fields, list)
    template = '{"ts":%.6f,"node":%d,"component":"net","event":"request"'
    names: list[str] = []
    for field in fields[4:]:
        decimals = decimals_for(field["name"])
        spelled = {"long": "%d", "string": "%s"}.get(field["type"], "%r")
        if field["type"] == "double" and decimals is not None:
            spelled = f"%.{decimals}f"
        template += f',"{field["name"]}":{spelled}'
        names.append(field["name"])
    template += "}\n"
    events, stamps = _encode_inputs()
    rows: list[tuple[object, ...]] = []
    for event, ts in zip(events, stamps, strict=True):
        values: list[object] = [ts, 1]
        for name in names:
            value = getattr(event, name)
            values.append(json.dumps(value) if isinstance(value, str) else value)
        rows.append(tuple(values))
    return template, rows


def _encode_ceiling() -> Callable[[int], None]:
    template, rows = _template_ceiling()

    def body(n: int) -> None:
        for _ in range(n // len(rows)):
            for values in rows:
                _ = template % values

    return body


def _encode_with(
    encode: Callable[[RequestCompleted, float, int], str],
) -> Callable[[], Callable[[int], None]]:
    def prepare() -> Callable[[int], None]:
        events, stamps = _encode_inputs()
        pairs = list(zip(events, stamps, strict=True))

        def body(n: int) -> None:
            for _ in range(n // len(pairs)):
                for event, ts in pairs:
                    encode(event, ts, 1)

        return body

    return prepare


@attrs.frozen
class EncodeCase:
    name: str
    prepare: Callable[[], Callable[[int], None]]
    """Builds the inputs (untimed) and returns the timed loop over ``n`` events."""


ENCODE_CEILING = "ceiling: a % template, values pre-extracted"


def _encode_fields() -> Callable[[int], None]:
    rows = [_fields(i) for i in range(ENCODE_DISTINCT)]
    _, stamps = _encode_inputs()
    pairs = list(zip(rows, stamps, strict=True))

    def body(n: int) -> None:
        for _ in range(n // len(pairs)):
            for fields, ts in pairs:
                encode_fields_line(RequestCompleted, fields, ts, 1)

    return body


def _dumps_line(event: RequestCompleted, ts: float, node: int) -> str:
    """The line as the writer spelled it before fixed decimals: a dict through json (what
    a line cost then, beside what it costs now; not the same bytes)."""
    record: dict[str, object] = {"ts": ts, "node": node}
    record.update(component="net", event="request", **attrs.asdict(event))
    return json_value(record) + "\n"


def _check_encoders() -> None:
    """All three write the same bytes, or the comparison means nothing."""
    template, rows = _template_ceiling()
    events, stamps = _encode_inputs()
    for event, ts, values in zip(events, stamps, rows, strict=True):
        line = encode_line(event, ts, 1)
        fields = _fields(event.correlation_id)
        if (
            line != reference_line(event, ts, 1)
            or line != template % values
            or line != encode_fields_line(RequestCompleted, fields, ts, 1)
        ):
            raise BenchError(
                f"the encoders disagree on {event!r}:\n{line}{template % values}"
            )


def _encode_bench(settings: Settings) -> list[EmitOutcome]:
    _check_encoders()
    n = max(ENCODE_DISTINCT, settings.emits // ENCODE_DISTINCT * ENCODE_DISTINCT)
    outcomes = {case.name: EmitOutcome(case.name, []) for case in ENCODE_CASES}
    for r in range(settings.repeats):
        for case in ENCODE_CASES:
            body = case.prepare()
            body(ENCODE_DISTINCT)  # warm-up
            started = time.perf_counter()
            body(n)
            seconds = time.perf_counter() - started
            run = EmitRun(n, seconds, seconds / n * 1e9, n / seconds, None)
            outcomes[case.name].runs.append(run)
            print(
                f"  run {r + 1}/{settings.repeats}  encode  {case.name:<44} "
                f"{run.ns_per_event:>8,.0f} ns/event",
                flush=True,
            )
    return list(outcomes.values())


# --- produce -------------------------------------------------------------------------------


@attrs.frozen
class Workload:
    name: str
    slug: str
    records: int
    config: dict[str, str]


def workloads(settings: Settings) -> list[Workload]:
    return [
        Workload(
            "one record per request: batch.num.messages=1, acks=1",
            "single",
            settings.single_records,
            {
                "acks": "1",
                "linger.ms": "0",
                "batch.num.messages": "1",
                "compression.type": "none",
            },
        ),
        Workload(
            "many small requests: linger.ms=0, acks=1",
            "small",
            settings.small_records,
            {"acks": "1", "linger.ms": "0", "compression.type": "none"},
        ),
        Workload(
            "batched: linger.ms=10, batch.size=1 MiB, acks=1",
            "batched",
            settings.batched_records,
            {
                "acks": "1",
                "linger.ms": "10",
                "batch.size": str(MIB),
                "compression.type": "none",
            },
        ),
    ]


@attrs.frozen
class ProduceRun:
    client_id: str
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    broker_cpu_percent: float | None
    broker_cpu_us_per_record: float | None
    other_cpu_percent: float | None
    produce_requests: int | None = None
    """From the traced broker's ``net.request`` lines (None for the untraced broker)."""


@attrs.frozen
class ProduceOutcome:
    workload: str
    traced: bool
    runs: list[ProduceRun]

    @property
    def median(self) -> ProduceRun:
        return sorted(self.runs, key=lambda r: r.records_per_s)[
            (len(self.runs) - 1) // 2
        ]


def _value(i: int) -> bytes:
    return (b"%010d" % i + _FILLER)[:VALUE_BYTES]


def _produce(
    broker: BrokerProcess,
    topic: str,
    client_id: str,
    workload: Workload,
    values: list[bytes],
) -> ProduceRun:
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    config: dict[str, Any] = {
        "bootstrap.servers": broker.bootstrap,
        "client.id": client_id,
        **workload.config,
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
    }
    producer = Producer(config)
    # connected, metadata known, before the clock
    producer.list_topics(topic, timeout=30)
    produce, poll = producer.produce, producer.poll
    assert broker.process is not None
    pid = broker.process.pid
    cpu, busy, own = process_cpu_seconds(pid), machine_busy_seconds(), own_cpu_seconds()
    started = time.perf_counter()
    for v in values:
        while True:
            try:
                produce(topic, v, partition=0)
                break
            except BufferError:  # the client's queue is full: wait for acknowledgements
                poll(0.005)
    left = producer.flush(RUN_TIMEOUT)
    seconds = time.perf_counter() - started
    cpu_after, busy_after, own_after = (
        process_cpu_seconds(pid),
        machine_busy_seconds(),
        own_cpu_seconds(),
    )
    del producer
    if left or errors:
        raise BenchError(
            f"produce to {topic}: {left:,} unacknowledged, errors {errors[:3]}"
        )
    _check_end_offset(broker, topic, len(values))
    records = len(values)
    broker_percent = other = per_record = None
    if cpu is not None and cpu_after is not None:
        broker_percent = 100 * (cpu_after - cpu) / seconds
        per_record = (cpu_after - cpu) / records * 1e6
    if busy is not None and busy_after is not None and broker_percent is not None:
        machine = 100 * (busy_after - busy) / seconds
        other = max(0.0, machine - broker_percent - 100 * (own_after - own) / seconds)
    return ProduceRun(
        client_id,
        records,
        seconds,
        records / seconds,
        records * VALUE_BYTES / seconds / 1e6,
        broker_percent,
        per_record,
        other,
    )


def _check_end_offset(broker: BrokerProcess, topic: str, expected: int) -> None:
    inspector = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "bench-tracing"}
    )
    try:
        _, high = inspector.get_watermark_offsets(
            KafkaTopicPartition(topic, 0), timeout=30, cached=False
        )
    finally:
        inspector.close()
    if high != expected:
        raise BenchError(
            f"{topic} ends at offset {high} after {expected:,} acknowledged records"
        )


def _create_topics(broker: BrokerProcess, topics: Sequence[str]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics(
        [NewTopic(t, 1, 1) for t in topics], operation_timeout=30
    )
    for topic, future in futures.items():
        try:
            future.result()
        except Exception as e:
            raise BenchError(f"could not create topic {topic}: {e}") from e


@contextmanager
def _without_trace_env() -> Iterator[None]:
    """The untraced broker must not trace because this process's environment says so."""
    saved = os.environ.pop(TRACE_DIR_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[TRACE_DIR_ENV] = saved


def _start(broker: BrokerProcess) -> None:
    try:
        broker.start()
    except BrokerFailed as e:
        raise BenchError(str(e)) from e


def _stop(broker: BrokerProcess) -> None:
    try:
        status = broker.stop()
    except BrokerFailed as e:
        raise BenchError(str(e)) from e
    if status != 0:
        tail = "\n".join(broker.output[-30:])
        raise BenchError(f"the broker exited with {status} on SIGTERM:\n{tail}")


@attrs.frozen
class TraceFacts:
    files: int
    bytes: int
    events: int
    bytes_per_event: float
    by_event: dict[str, int]


def _produce_bench(
    settings: Settings, scratch: Path, pinned: tuple[set[int], set[int]] | None
) -> tuple[list[ProduceOutcome], TraceFacts]:
    trace_dir = scratch / "traces"
    plain = BrokerProcess(scratch / "data-untraced")
    traced = BrokerProcess(scratch / "data-traced", trace_dir=trace_dir)
    loads = workloads(settings)
    values = {w.slug: [_value(i) for i in range(w.records)] for w in loads}
    outcomes = {
        (w.slug, t): ProduceOutcome(w.name, t, []) for w in loads for t in (False, True)
    }
    with ExitStack() as stack, _without_trace_env():
        # The brokers inherit the server CPUs; then this process moves to the client CPUs.
        if pinned is not None:
            os.sched_setaffinity(0, pinned[1])
        for broker in (plain, traced):
            _start(broker)
            stack.callback(_stop, broker)
        if pinned is not None:
            os.sched_setaffinity(0, pinned[0])
        runs = [
            (w, r, t)
            for r in range(settings.repeats)
            for w in loads
            for t in (False, True)
        ]
        for broker, flag in ((plain, False), (traced, True)):
            _create_topics(
                broker, [_topic(w, r, flag) for w, r, t in runs if t == flag]
            )
        for r in range(settings.repeats):
            for w in loads:
                # Alternate which broker goes first, so neither always follows the other.
                for flag in (False, True) if r % 2 == 0 else (True, False):
                    broker = traced if flag else plain
                    run = _produce(
                        broker,
                        _topic(w, r, flag),
                        _client_id(w, r, flag),
                        w,
                        values[w.slug],
                    )
                    outcomes[w.slug, flag].runs.append(run)
                    print(
                        f"  run {r + 1}/{settings.repeats}  produce  {w.slug:<8} "
                        f"{'traced' if flag else 'untraced':<9} {run.records_per_s:>10,.0f} rec/s",
                        flush=True,
                    )
    # Both brokers are stopped (SIGTERM): the traced one's files are complete.
    requests: Counter[str] = Counter()
    by_event: Counter[str] = Counter()
    for record in read_trace(trace_dir):
        by_event[f"{record['component']}.{record['event']}"] += 1
        if (record["component"], record["event"], record.get("api_name")) == (
            "net",
            "request",
            "Produce",
        ):
            requests[str(record.get("client_id"))] += 1
    for (_, flag), outcome in outcomes.items():
        if flag:
            outcome.runs[:] = [
                attrs.evolve(run, produce_requests=requests[run.client_id])
                for run in outcome.runs
            ]
    files = trace_files(trace_dir)
    size = sum(p.stat().st_size for p in files)
    events = sum(by_event.values())
    facts = TraceFacts(
        len(files), size, events, size / events if events else 0.0, dict(by_event)
    )
    return list(outcomes.values()), facts


def _topic(w: Workload, r: int, traced: bool) -> str:
    return f"bench.tracing.{w.slug}.{'traced' if traced else 'untraced'}.run-{r}"


def _client_id(w: Workload, r: int, traced: bool) -> str:
    return f"bench-tracing-{w.slug}-{'traced' if traced else 'untraced'}-{r}"


# --- the report -----------------------------------------------------------------------------


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    pinned = split_cpus()
    original_cpus = os.sched_getaffinity(0) if pinned is not None else None
    scratch = Path(tempfile.mkdtemp(prefix="minikafka-bench-tracing-"))
    try:
        if pinned is not None:
            os.sched_setaffinity(0, pinned[0])
        emits = _emit_bench(settings, scratch)
        encodes = _encode_bench(settings)
        produce, facts = _produce_bench(settings, scratch, pinned)
    finally:
        if original_cpus is not None:
            os.sched_setaffinity(0, original_cpus)
        shutil.rmtree(scratch, ignore_errors=True)
    machine = machine_facts()
    packages = (
        dict(machine["packages"]) if isinstance(machine["packages"], dict) else {}
    )
    for dist in ("minikafka-trace", "minikafka-broker", "confluent-kafka"):
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            packages[dist] = None
    machine["packages"] = packages
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": attrs.asdict(settings),
        "started_at": started,
        "duration_s": round(time.perf_counter() - clock, 2),
        "units": {
            "ns_per_event": "wall nanoseconds per event, loop included",
            "mb_per_s": "10^6 value bytes per second (100 B per record)",
            "broker_cpu_us_per_record": "the broker's user+system CPU microseconds per record",
        },
        "cpu_pinning": None
        if pinned is None
        else {"client": sorted(pinned[0]), "brokers": sorted(pinned[1])},
        "machine": machine,
        "emit": [
            {"case": o.case, "median": attrs.asdict(o.median), "runs": _runs(o.runs)}
            for o in emits
        ],
        "encode": [
            {
                "case": o.case,
                "median": attrs.asdict(o.median),
                "over_ceiling": o.median.ns_per_event / encodes[0].median.ns_per_event,
                "runs": _runs(o.runs),
            }
            for o in encodes
        ],
        "produce": [
            {
                "workload": o.workload,
                "traced": o.traced,
                "median": attrs.asdict(o.median),
                "runs": _runs(o.runs),
            }
            for o in produce
        ],
        "overhead": _overheads(produce),
        "trace_files": attrs.asdict(facts),
    }
    table = _table(emits, produce, facts)
    return Report(
        NAME, document, _encode_table(encodes) + "\n\n" + table, _chart(emits, produce)
    )


def _runs(runs: Sequence[EmitRun] | Sequence[ProduceRun]) -> list[dict[str, Any]]:
    return [attrs.asdict(run) for run in runs]


def _overheads(produce: Sequence[ProduceOutcome]) -> list[dict[str, object]]:
    """Per workload: the traced median over the untraced one."""
    out: list[dict[str, object]] = []
    for plain, traced in zip(produce[::2], produce[1::2], strict=True):
        p, t = plain.median, traced.median
        extra_cpu = None
        if (
            p.broker_cpu_us_per_record is not None
            and t.broker_cpu_us_per_record is not None
        ):
            extra_cpu = t.broker_cpu_us_per_record - p.broker_cpu_us_per_record
        out.append(
            {
                "workload": plain.workload,
                "traced_over_untraced_records_per_s": t.records_per_s / p.records_per_s,
                "extra_broker_cpu_us_per_record": extra_cpu,
                "produce_requests_traced": t.produce_requests,
            }
        )
    return out


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _table(
    emits: Sequence[EmitOutcome], produce: Sequence[ProduceOutcome], facts: TraceFacts
) -> str:
    emit_rows = []
    for o in emits:
        m = o.median
        spread = [r.ns_per_event for r in o.runs]
        emit_rows.append(
            [
                o.case,
                f"{m.events:,}",
                f"{m.ns_per_event:,.0f}",
                f"{min(spread):,.0f}-{max(spread):,.0f}" if len(spread) > 1 else "",
                f"{m.events_per_s:,.0f}",
                _fmt(None if m.file_bytes is None else m.file_bytes / m.events, ",.0f"),
            ]
        )
    header = ["emit (one RequestCompleted, net.request)", "events", "ns/event"]
    header += ["ns/event range", "events/s", "bytes/event"]
    table = markdown_table(
        header,
        emit_rows,
    )
    rows = []
    for outcome in produce:
        pm = outcome.median
        rates = [r.records_per_s for r in outcome.runs]
        rows.append(
            [
                outcome.workload,
                "--trace-dir" if outcome.traced else "no tracing",
                f"{pm.records:,}",
                f"{pm.seconds:.3f}",
                f"{pm.records_per_s:,.0f}",
                f"{min(rates):,.0f}-{max(rates):,.0f}" if len(rates) > 1 else "",
                f"{pm.mb_per_s:,.1f}",
                _fmt(pm.produce_requests, ","),
                _fmt(pm.broker_cpu_percent, ".0f", "%"),
                _fmt(pm.broker_cpu_us_per_record, ".2f"),
                _fmt(pm.other_cpu_percent, ".0f", "%"),
            ]
        )
    table += "\n\n" + markdown_table(
        [
            "produce (confluent-kafka)",
            "broker",
            "records",
            "seconds",
            "records/s",
            "records/s range",
            "MB/s",
            "Produce requests",
            "broker CPU",
            "broker CPU µs/record",
            "other CPU",
        ],
        rows,
    )
    for overhead in _overheads(produce):
        ratio = overhead["traced_over_untraced_records_per_s"]
        extra = overhead["extra_broker_cpu_us_per_record"]
        assert isinstance(ratio, float)
        table += (
            f"\n{overhead['workload']}: traced/untraced records/s {ratio:.3f}x, broker CPU "
            f"{'-' if not isinstance(extra, float) else f'{extra:+.2f}'} µs/record"
        )
    table += (
        f"\ntrace written by the traced broker: {facts.events:,} events, {facts.bytes:,} bytes "
        f"in {facts.files} file(s), {facts.bytes_per_event:.0f} bytes/event"
    )
    busiest = max(
        [r.other_cpu_percent or 0.0 for o in produce for r in o.runs],
        default=0.0,
    )
    if busiest > BUSY_MACHINE_PERCENT:
        table += (
            f"\nwarning: other processes used up to {busiest:.0f}% CPU during the runs; "
            "these figures are disturbed, rerun when idle."
        )
    return table


def _encode_table(encodes: Sequence[EmitOutcome]) -> str:
    ceiling = encodes[0].median.ns_per_event
    rows = []
    for o in encodes:
        spread = [r.ns_per_event for r in o.runs]
        rows.append(
            [
                o.case,
                f"{o.median.events:,}",
                f"{o.median.ns_per_event:,.0f}",
                f"{min(spread):,.0f}-{max(spread):,.0f}" if len(spread) > 1 else "",
                f"{o.median.ns_per_event / ceiling:.2f}x",
            ]
        )
    header = ["encode one net.request line (16 fields, 7 floats)", "events", "ns/event"]
    return markdown_table([*header, "ns/event range", "over the ceiling"], rows)


def _chart(emits: Sequence[EmitOutcome], produce: Sequence[ProduceOutcome]) -> str:
    groups: list[tuple[str, Sequence[tuple[str, float]]]] = [
        (
            "emit: events/s (median)",
            [(o.case[:38], o.median.events_per_s) for o in emits],
        )
    ]
    for plain, traced in zip(produce[::2], produce[1::2], strict=True):
        groups.append(
            (
                f"produce, {plain.workload}: records/s",
                [
                    ("no tracing", plain.median.records_per_s),
                    ("--trace-dir", traced.median.records_per_s),
                ],
            )
        )
    return bar_chart_svg(
        "minikafka tracing: emit cost and produce throughput", "/s", groups
    )


ENCODE_CASES = (
    EncodeCase(ENCODE_CEILING, _encode_ceiling),
    EncodeCase("generated: encode_line", _encode_with(encode_line)),
    EncodeCase("generated from field values: encode_fields", _encode_fields),
    EncodeCase(
        "reference: value by value (the definition)", _encode_with(reference_line)
    ),
    EncodeCase(
        "json.dumps of a dict (shortest floats: before)", _encode_with(_dumps_line)
    ),
)
