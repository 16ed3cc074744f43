"""End-to-end latency through the broker: librdkafka produce to librdkafka consume, paced.

The latency benchmark: how long a record takes from ``Producer.produce()`` to the
``Consumer.poll()`` that hands it over, at a steady 1,000 and 10,000 records/s, with
``linger.ms=0`` (every record leaves the client as soon as it can: the broker's
per-request path, not the client's batching delay), ``acks=1`` and ``acks=all``. One
broker (``python -m minikafka.broker broker``, defaults, KRaft combined mode, a single
node, so its ISR is itself and ``acks=all`` differs from ``acks=1`` only by the
purgatory's DelayedProduce path), a fresh one-partition topic per run.

- **Producer**: confluent-kafka (librdkafka) in this process's main thread, ``linger.ms=0``,
  ``acks`` as the scenario says, otherwise librdkafka's defaults; and once more at
  10,000 records/s with ``acks=all`` as the idempotent producer (``enable.idempotence``:
  at most 5 requests in flight, Kafka's Java producer's default). The loop produces every
  record whose due time (``i / rate`` after the start) has come, then sleeps until the
  next one: at 10,000/s a sleep is about as long as the gap, so records leave in small
  bursts, as from any real producer. Each 100-byte value carries ``time.monotonic_ns()``
  taken just before its ``produce()`` and its sequence number.
- **Consumer**: confluent-kafka in a thread of this process (``assign`` to partition 0 from
  the beginning, no group membership, no commits, librdkafka's default fetch settings:
  a fetch waits at the broker until a record is appended or ``fetch.wait.max.ms``,
  500 ms, passes). Latency is ``time.monotonic_ns()`` when ``poll()`` returns a record
  minus the stamp in it. Every record must arrive, in order, exactly once: sequence
  numbers must come 0, 1, 2, ... with no gap and no repeat, or the run fails; so must a
  delivery error.
- A warm-up of ``WARMUP_SECONDS`` at the same rate comes first in every run; its records
  are checked but not timed.

There is no ceiling here: no second broker, and a loopback echo would measure nothing
of produce-to-consume. The table reports the figures against the goal instead
(p99 <= 5 ms at 10,000 records/s, acks=all, single node), its ratio the broker's p99 over
5 ms, with the goal applied to the other rows for reference. Each scenario runs
``REPEATS`` times, interleaved; the run with the median p99 is quoted. With two or more
CPUs the broker runs on the second half of them and this process (its librdkafka
threads included) on the first.
"""

from __future__ import annotations

import functools
import signal
import struct
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from ._common import (
    BenchError,
    CpuMeter,
    Report,
    bar_chart_svg,
    cpu_percent,
    latency_summary,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    pinned_client,
    process_cpu_seconds,
    report_header,
)
from ._wire import VALUE_BYTES, broker_argv, spawned_broker

NAME = "e2e_latency"
RATES = (1_000, 10_000)
ACKS = ("1", "all")
REPEATS = 3
SECONDS = 3.0
"""Timed seconds per run (``--quick``: ``QUICK_SECONDS``, one run per scenario)."""
QUICK_SECONDS = 1.0
WARMUP_SECONDS = 0.5
GOAL_P99_MS = 5.0
STALL_SECONDS = 5.0
"""A run in which neither the producer's acknowledgements nor the consumer's records
move for this long is stalled: reported as such, never waited out."""
STOP_SECONDS = 10.0
"""How long a broker has to exit on SIGTERM before it is killed."""
_STAMP = struct.Struct(">qq")  # time.monotonic_ns() at produce, sequence number
_FILLER = b"-minikafka-e2e-latency" * 5


@attrs.frozen
class Scenario:
    rate: int
    acks: str
    idempotent: bool = False
    """librdkafka's idempotent producer (at most 5 requests in flight, as Kafka's Java
    producer by default) instead of its defaults (no limit)."""

    @property
    def title(self) -> str:
        idempotent = ", idempotent" if self.idempotent else ""
        return f"{self.rate:,} records/s, linger.ms=0, acks={self.acks}{idempotent}"

    @property
    def producer_settings(self) -> dict[str, str]:
        return {"enable.idempotence": "true"} if self.idempotent else {}


@attrs.frozen
class Run:
    rate: int
    acks: str
    records: int
    warmup_records: int
    seconds: float
    achieved_rate_per_s: float
    latency: dict[str, float]
    broker_cpu_percent: float | None
    client_cpu_percent: float
    other_cpu_percent: float | None
    stall: str | None = None
    """Why the run stopped short (nothing moved for ``STALL_SECONDS``), or None."""
    producer: dict[str, str] = attrs.field(factory=dict)
    """The producer's settings beyond this module's (librdkafka's defaults otherwise)."""


@attrs.define(eq=False)
class _Receiver:
    """The consuming thread: checks order and counts, keeps the timed latencies (ns)."""

    config: dict[str, Any]
    topic: str
    total: int
    timed_from: int
    ready: threading.Event = attrs.field(factory=threading.Event)
    done: threading.Event = attrs.field(factory=threading.Event)
    stop: threading.Event = attrs.field(factory=threading.Event)
    next_sequence: int = 0
    latencies_ns: list[int] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)

    def run(self) -> None:
        consumer: Consumer | None = None
        try:
            consumer = Consumer(self.config)
            consumer.list_topics(self.topic, timeout=30)
            consumer.assign([KafkaTopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            self.ready.set()
            poll, clock, unpack = consumer.poll, time.monotonic_ns, _STAMP.unpack_from
            while self.next_sequence < self.total and not self.stop.is_set():
                message = poll(0.1)
                arrived = clock()
                if message is None:
                    continue
                if (error := message.error()) is not None:
                    self.errors.append(str(error))
                    return
                sent, sequence = unpack(message.value() or bytes(_STAMP.size))
                if sequence != self.next_sequence:
                    self.errors.append(
                        f"record {sequence} arrived where {self.next_sequence} was due "
                        f"(offset {message.offset()}): lost, duplicated or out of order"
                    )
                    return
                self.next_sequence += 1
                if sequence >= self.timed_from:
                    self.latencies_ns.append(arrived - sent)
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            self.ready.set()
            self.done.set()
            if consumer is not None:
                consumer.close()


def _value(sequence: int) -> bytes:
    head = _STAMP.pack(time.monotonic_ns(), sequence)
    return head + _FILLER[: VALUE_BYTES - len(head)]


def _create_topic(bootstrap: str, topic: str, replication_factor: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(topic, 1, replication_factor)]
    for name, future in admin.create_topics(new, operation_timeout=30).items():
        try:
            future.result()
        except Exception as e:
            raise BenchError(f"could not create topic {name}: {e}") from e


def _one_run(
    bootstrap: str,
    broker_pid: int,
    scenario: Scenario,
    seconds: float,
    topic: str,
    *,
    create: bool = True,
    producer_settings: Mapping[str, str] | None = None,
) -> Run:
    """One timed run on a new topic (``create``), or on one the caller made
    (``broker_pid``: the process of the partition's leader); ``producer_settings`` are
    added to the producer's configuration."""
    if create:
        _create_topic(bootstrap, topic)
    warmup = round(scenario.rate * WARMUP_SECONDS)
    timed = round(scenario.rate * seconds)
    receiver = _Receiver(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-e2e-{topic}",
            "enable.auto.commit": False,
        },
        topic,
        warmup + timed,
        warmup,
    )
    thread = threading.Thread(target=receiver.run, name="e2e-consumer", daemon=True)
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": scenario.acks,
            "linger.ms": 0,
            "compression.type": "none",
            "delivery.report.only.error": True,
            "on_delivery": on_delivery,
            **scenario.producer_settings,
            **(producer_settings or {}),
        }
    )
    # connected, leader known, before any record
    producer.list_topics(topic, timeout=30)
    thread.start()
    if not receiver.ready.wait(60):
        raise BenchError("the consumer did not start within 60 s")
    if receiver.errors:
        raise BenchError(f"consumer: {receiver.errors[0]}")
    interval = 1 / scenario.rate
    produce, poll, clock = producer.produce, producer.poll, time.perf_counter
    start = clock()
    timed_start = start + warmup * interval
    broker_cpu = functools.partial(process_cpu_seconds, broker_pid)
    meter = CpuMeter.start(broker_cpu)
    for i in range(warmup + timed):
        if i == warmup:
            meter = CpuMeter.start(broker_cpu)  # the timed records start here
        if (wait := start + i * interval - clock()) > 0:
            poll(0)  # serve delivery callbacks while ahead of the pace
            time.sleep(wait)
        produce(topic, _value(i), partition=0)
    sending = clock() - timed_start
    stall = _wait_for_delivery(producer, receiver, broker_pid)
    elapsed = clock() - timed_start
    use = meter.stop()
    if stall is not None:
        producer.purge()  # drop what the broker never answered, so the client can close
        producer.flush(1)
        receiver.stop.set()
    thread.join(10)
    if errors and stall is None:
        raise BenchError(f"{scenario.title}: delivery errors {errors[:3]}")
    if receiver.errors:
        raise BenchError(f"{scenario.title}: {receiver.errors[0]}")
    if stall is None and receiver.next_sequence != warmup + timed:
        raise BenchError(
            f"{scenario.title}: the consumer saw {receiver.next_sequence:,} of "
            f"{warmup + timed:,} records"
        )
    return Run(
        rate=scenario.rate,
        acks=scenario.acks,
        records=timed,
        warmup_records=warmup,
        seconds=elapsed,
        achieved_rate_per_s=timed / sending,
        latency=latency_summary([ns / 1e9 for ns in receiver.latencies_ns]),
        broker_cpu_percent=use.server_percent,
        client_cpu_percent=use.client_percent,
        other_cpu_percent=use.other_percent,
        stall=stall,
        producer={**scenario.producer_settings, **(producer_settings or {})},
    )


def _wait_for_delivery(
    producer: Producer, receiver: _Receiver, broker_pid: int
) -> str | None:
    """Serve the producer until every record is acknowledged and consumed; a description
    of the stall if neither side moves for ``STALL_SECONDS``."""
    last = (len(producer), receiver.next_sequence)
    moved = time.monotonic()
    broker_cpu = process_cpu_seconds(broker_pid)
    while len(producer) or not receiver.done.is_set():
        producer.poll(0.05)
        now = (len(producer), receiver.next_sequence)
        if now != last:
            last, moved = now, time.monotonic()
            broker_cpu = process_cpu_seconds(broker_pid)
        elif time.monotonic() - moved > STALL_SECONDS:
            idle = cpu_percent(
                broker_cpu, process_cpu_seconds(broker_pid), STALL_SECONDS
            )
            return (
                f"stalled: {now[0]:,} records unacknowledged, {now[1]:,} of "
                f"{receiver.total:,} consumed, nothing moved for {STALL_SECONDS:g} s "
                f"(broker CPU meanwhile {idle:.0f}%)"
                if idle is not None
                else f"stalled: {now[0]:,} records unacknowledged for {STALL_SECONDS:g} s"
            )
    return None


def _median_run(runs: Sequence[Run]) -> Run:
    finished = [r for r in runs if r.stall is None]
    if not finished:
        return runs[0]
    return median_run(finished, lambda r: r.latency["p99_ms"])


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    repeats = 1 if quick else REPEATS
    seconds = QUICK_SECONDS if quick else SECONDS
    all_scenarios = [Scenario(rate, acks) for rate in RATES for acks in ACKS]
    # The goal's rate again with the idempotent producer: records that come faster
    # than the broker answers wait in the producer and leave batched, not as requests
    # queued one record each in the socket.
    all_scenarios.append(Scenario(RATES[-1], "all", idempotent=True))
    runs: dict[Scenario, list[Run]] = {s: [] for s in all_scenarios}
    with pinned_client() as pinning:
        for r in range(repeats):
            for s in all_scenarios:
                if any(x.stall for x in runs[s]):
                    continue  # a stall is the finding; repeating it only costs time
                # A broker of its own for every run: no run inherits another's backlog.
                with (
                    tempfile.TemporaryDirectory(
                        prefix="minikafka-bench-e2e-"
                    ) as scratch,
                    spawned_broker(
                        Path(scratch) / "data",
                        pinning.servers,
                        stop_timeout=STOP_SECONDS,
                    ) as broker,
                ):
                    idempotent = "-idempotent" if s.idempotent else ""
                    topic = f"bench-e2e-{s.rate}-acks-{s.acks}{idempotent}-run-{r}"
                    done = _one_run(
                        f"{broker.host}:{broker.port}", broker.pid, s, seconds, topic
                    )
                    broker.check_alive()
                if (
                    done.stall is not None
                    and broker.process.returncode == -signal.SIGKILL
                ):
                    stall = (
                        f"{done.stall}; SIGTERM did not stop it in {STOP_SECONDS:g} s"
                    )
                    done = attrs.evolve(done, stall=stall)
                runs[s].append(done)
                lat = done.latency
                print(
                    f"  run {r + 1}/{repeats}  {s.title:<38} "
                    f"{done.achieved_rate_per_s:>8,.0f} rec/s  p50 {lat['p50_ms']:.2f} ms  "
                    f"p99 {lat['p99_ms']:.2f} ms  max {lat['max_ms']:.2f} ms"
                    + (f"  {done.stall}" if done.stall else ""),
                    flush=True,
                )
    machine = machine_facts()
    machine["confluent_kafka"] = metadata.version("confluent-kafka")
    machine["librdkafka"] = confluent_kafka.libversion()[0]
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "timed_seconds": seconds,
        "warmup_seconds": WARMUP_SECONDS,
        "goal_p99_ms": GOAL_P99_MS,
        "broker": " ".join(["python", *broker_argv(Path("<scratch>/data"))[1:]]),
        "producer": {
            "linger.ms": 0,
            "compression.type": "none",
            "other": "librdkafka defaults",
        },
        "consumer": {
            "assign": "partition 0 from the beginning",
            "other": "librdkafka defaults",
        },
        "cpu_pinning": pinning.document,
        "machine": machine,
        "scenarios": [
            {
                **attrs.asdict(s),
                "median": attrs.asdict(_median_run(runs[s])),
                "runs": [attrs.asdict(x) for x in runs[s]],
            }
            for s in all_scenarios
        ],
    }
    return Report(NAME, document, _table(runs), _chart(runs))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _table(runs: dict[Scenario, list[Run]]) -> str:
    header = ["scenario", "figure", "broker", "goal", "broker / goal"]
    rows: list[list[str]] = []
    for s, done in runs.items():
        m = _median_run(done)
        is_goal = s.rate == 10_000 and s.acks == "all"  # either producer
        goal = f"<= {GOAL_P99_MS:g} ms" + ("" if is_goal else " (reference)")
        if m.stall is not None:
            rows.append([s.title, "p99 ms", m.stall, goal, "-"])
            rows.append(["", "broker CPU", _percent(m.broker_cpu_percent), "", ""])
            continue
        p99s = [x.latency["p99_ms"] for x in done if x.stall is None]
        spread = f" ({min(p99s):.2f}-{max(p99s):.2f})" if len(p99s) > 1 else ""
        rows += [
            [
                s.title,
                f"p99 ms (median of {len(p99s)})",
                f"{m.latency['p99_ms']:.2f}{spread}",
                goal,
                f"{m.latency['p99_ms'] / GOAL_P99_MS:.3g}x",
            ],
            ["", "p50 ms", f"{m.latency['p50_ms']:.2f}", "", ""],
            ["", "max ms", f"{m.latency['max_ms']:.2f}", "", ""],
            ["", "records/s sent", f"{m.achieved_rate_per_s:,.0f}", f"{s.rate:,}", ""],
            ["", "broker CPU", _percent(m.broker_cpu_percent), "", ""],
            ["", "client CPU", _percent(m.client_cpu_percent), "", ""],
        ]
    table = markdown_table(header, rows)
    table += (
        "\nno ceiling: there is no second broker to compare with; "
        "the goal stands in for it (p99 <= 5 ms at 10,000 records/s, acks=all)."
    )
    return table


def _chart(runs: dict[Scenario, list[Run]]) -> str:
    return bar_chart_svg(
        "minikafka end-to-end latency (produce to poll), run with the median p99",
        "µs",
        [
            (
                s.title,
                [
                    ("p50", _median_run(done).latency["p50_ms"] * 1000),
                    ("p99", _median_run(done).latency["p99_ms"] * 1000),
                    ("goal p99", GOAL_P99_MS * 1000),
                ],
            )
            for s, done in runs.items()
            if _median_run(done).stall is None
        ],
    )
