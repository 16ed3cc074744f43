"""The broker driven by real Kafka clients, beside a bare loopback TCP ceiling, in one run.

The single broker's benchmark (ARCHITECTURE.md, "Performance"). One single-node broker, ``python -m
minikafka.broker broker`` as a user runs it (``minikafka.broker.testing.BrokerProcess``,
default configuration, data in a fresh temporary directory), is driven by two clients
built on librdkafka: confluent-kafka (``confluent_kafka.Producer`` and ``Consumer``
from Python) and kcat (a C program, as a child process). Every record is a 100-byte
value, no key, no headers; every topic has one partition.

- ``produce``: the same records through each client, with ``acks=1`` and with
  ``acks=all``, ``batch.size=1048576``, ``linger.ms=10``, ``compression.type=none``
  (librdkafka's ``message.max.bytes``, 1,000,000 by default, caps a batch a little
  below 1 MiB; the JSON has the batches as they landed in the log). confluent-kafka is
  handed the values one ``produce()`` call each, kcat reads them from a pre-generated
  file of newline-separated values (``kcat -P ... < values``). A run ends when the
  producer has every acknowledgement (``flush()`` returned, or kcat exited), and counts
  only if the partition's end offset is then exactly the number of records sent.
- ``consume``: the records of the first ``acks=1`` topic, read from the beginning by a
  confluent-kafka Consumer (``assign``: no group membership, ``enable.auto.commit=false``;
  the loop looks at every message's error and value length) and by ``kcat -C -e -o
  beginning -q -c N`` (its standard output read in large chunks and its lines counted;
  ``-c`` so that it exits at the last record, not after the empty fetch that tells it
  of the end). A run ends at the last record (kcat: at its exit), and counts only if
  every record arrived, the last at the offset it should be.
- ``ceiling``: the same value bytes (the same total, in chunks of the batch size) sent
  with ``send_all`` over one loopback TCP connection from trio in this process to a bare
  trio server in another (``python -m bench.broker_clients --sink``) that reads and
  discards them, then answers the byte count once the sender half-closes.
- ``latency``: a producer stamps ``time.perf_counter_ns()`` into each value just before
  ``produce()``, at a fixed rate; a Consumer in another thread of this process (assign,
  ``fetch.wait.max.ms`` small) takes the clock again as ``poll()`` hands it the record.
  A warm-up at the same rate comes first and is left out.

Each throughput scenario runs ``REPEATS`` times, interleaved with the others (a fresh
topic for every produce run) so that a burst of load elsewhere lands on all of them;
the median run is quoted. MB/s counts value bytes (10^6 B/s) for every scenario alike;
the log holds some 10% more (record framing, batch headers). With two or more CPUs
the broker and the ceiling's sink run on the second half of them, this process, its
librdkafka threads and kcat on the first.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import attrs
import confluent_kafka
import trio
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerFailed, BrokerProcess

from ._common import (
    ROOT,
    BenchError,
    Report,
    ServerProcess,
    command_line,
    find_bench_error,
    latency_summary,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    own_cpu_seconds,
    process_cpu_seconds,
    spawned_server,
    split_cpus,
    write_results,
)

NAME = "broker_clients"

MIB = 1024 * 1024
VALUE_BYTES = 100
BATCH_BYTES = MIB
LINGER_MS = 10
RECORDS = 1_000_000
"""Records per throughput run (100 MB of values); ``--quick``: ``QUICK_RECORDS``."""
QUICK_RECORDS = 50_000
REPEATS = 3
"""Runs of every throughput scenario (``--quick``: one); the median run is quoted."""
LATENCY_RATE = 1_000
"""Records per second in the latency scenario: moderate for this broker (see below)."""
LATENCY_SECONDS = 3.0
LATENCY_WARMUP_SECONDS = 0.5
LATENCY_LINGER_MS = (0, 5)
"""The latency producer's ``linger.ms``, one run each: 0 sends every record in a
Produce request of its own at once (the broker's path, nothing of the client's
batching delay; at 1,000 records/s it keeps the broker's core 60-70% busy and at 4,000
it cannot keep up), 5 lets the client batch as the throughput runs do."""
LATENCY_FETCH_WAIT_MS = 10
"""The latency consumer's ``fetch.wait.max.ms``: a fetch waiting at the broker is
answered by a new append (DelayedFetch) or after this long, whichever comes first."""
STALL_SECONDS = 20.0
"""A client that makes no progress for this long fails the run (a stall is a finding)."""
RUN_TIMEOUT = 300.0
BUSY_MACHINE_PERCENT = 20.0
"""Other processes' CPU use during a run above which the table carries a warning."""
MIN_ACCOUNTED_SECONDS = 0.2
"""Runs shorter than this get no other-CPU figure (``/proc/stat`` counts 10 ms ticks)."""
SINK_ARGV = (sys.executable, "-m", "bench.broker_clients", "--sink")
KCAT = "kcat"
CONFLUENT = "confluent-kafka"
CEILING_CLIENT = "trio socket"
KCAT_READ_BYTES = MIB
CONSUMER_CONFIG: Mapping[str, str | int | bool] = {
    "group.id": "bench-consume",
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "fetch.queue.backoff.ms": 10,
}
"""The throughput Consumer's settings. ``fetch.queue.backoff.ms``: librdkafka stops
fetching a partition once ``queued.min.messages`` (100,000) records wait in its local
queue and then, by default, looks again only after 1,000 ms (confluentinc/librdkafka#2879).
The fetches are far quicker than the Python loop, so with the default a million-record
run took 5.5 s, five of them asleep in the client with the broker idle; with 10 ms it
took 0.76 s. kcat drains its queue faster than it fills and never hits the threshold."""

_COUNT = struct.Struct(">q")
_STAMP = struct.Struct(">Bqq")  # kind, perf_counter_ns at send, sequence number
_WARMUP, _MEASURED = 0, 1
_FILLER = b"minikafka-bench-value-" * 5


@attrs.frozen
class Settings:
    records: int
    repeats: int
    latency_rate: int
    latency_seconds: float
    latency_warmup_seconds: float
    latency_linger_ms: tuple[int, ...] = LATENCY_LINGER_MS

    @classmethod
    def choose(cls, quick: bool, records: int | None = None) -> Settings:
        return cls(
            records=records
            if records is not None
            else QUICK_RECORDS
            if quick
            else RECORDS,
            repeats=1 if quick else REPEATS,
            latency_rate=LATENCY_RATE,
            latency_seconds=1.0 if quick else LATENCY_SECONDS,
            latency_warmup_seconds=LATENCY_WARMUP_SECONDS,
        )


@attrs.frozen
class Scenario:
    name: str
    kind: str  # "produce", "consume" or "ceiling"
    client: str
    acks: str | None = None

    @property
    def slug(self) -> str:
        parts = [self.kind, self.client.replace(" ", "-")]
        if self.acks is not None:
            parts.append(f"acks-{self.acks}")
        return ".".join(parts)


CEILING = Scenario(
    "ceiling: bare trio loopback TCP, 1 MiB chunks", "ceiling", CEILING_CLIENT
)


def scenarios(with_kcat: bool) -> list[Scenario]:
    clients = [CONFLUENT, KCAT] if with_kcat else [CONFLUENT]
    out = [CEILING]
    for client in clients:
        for acks in ("1", "all"):
            out.append(Scenario(f"produce acks={acks}", "produce", client, acks))
    for client in clients:
        out.append(Scenario("consume from the beginning", "consume", client))
    return out


def value(i: int) -> bytes:
    """Record ``i``'s value: its number and filler, 100 bytes, never a newline."""
    return (b"%010d" % i + _FILLER)[:VALUE_BYTES]


# --- measuring -------------------------------------------------------------------------


@attrs.frozen
class Timed:
    records: int
    value_bytes: int
    seconds: float
    first_record_s: float | None = None
    """Consume: from the start of the run to the first record."""


@attrs.frozen
class LogFacts:
    """A produce run's partition as it landed on disk."""

    log_bytes: int
    batches: int
    mean_batch_bytes: float
    max_batch_bytes: int


@attrs.frozen
class Measurement:
    scenario: str
    client: str
    records: int
    value_bytes: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    """Value bytes per second, in 10^6 bytes."""
    first_record_s: float | None
    server_cpu_percent: float | None
    """The broker's (the sink's, for the ceiling) user+system CPU, % of one core."""
    client_cpu_percent: float | None
    """This process (its librdkafka threads included) plus kcat, % of one core."""
    other_cpu_percent: float | None
    """CPU the rest of the machine used meanwhile: high means the figures are disturbed."""
    log: LogFacts | None = None


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measure(
    scenario: Scenario,
    server_pid: int,
    body: Callable[[], Timed],
    log_dir: Path | None = None,
) -> Measurement:
    client = own_cpu_seconds() + _children_cpu_seconds()
    server = process_cpu_seconds(server_pid)
    busy = machine_busy_seconds()
    timed = body()
    client_after = own_cpu_seconds() + _children_cpu_seconds()
    server_after = process_cpu_seconds(server_pid)
    busy_after = machine_busy_seconds()
    seconds = timed.seconds
    client_percent, server_percent, other = _cpu_percents(
        seconds, client, client_after, server, server_after, busy, busy_after
    )
    return Measurement(
        scenario=scenario.name,
        client=scenario.client,
        records=timed.records,
        value_bytes=timed.value_bytes,
        seconds=seconds,
        records_per_s=timed.records / seconds,
        mb_per_s=timed.value_bytes / seconds / 1e6,
        first_record_s=timed.first_record_s,
        server_cpu_percent=server_percent,
        client_cpu_percent=client_percent,
        other_cpu_percent=other,
        log=_log_facts(log_dir) if log_dir is not None else None,
    )


def _cpu_percents(
    wall: float,
    client: float,
    client_after: float,
    server: float | None,
    server_after: float | None,
    busy: float | None,
    busy_after: float | None,
) -> tuple[float | None, float | None, float | None]:
    """Client, server and other CPU use over ``wall`` seconds, as % of one core; all
    ``None`` for runs too short for the kernel's 10 ms ticks to say anything."""
    if wall < MIN_ACCOUNTED_SECONDS:
        return None, None, None
    client_percent = 100 * (client_after - client) / wall
    server_percent = (
        None
        if server is None or server_after is None
        else 100 * (server_after - server) / wall
    )
    other = None
    if busy is not None and busy_after is not None:
        machine = 100 * (busy_after - busy) / wall
        other = max(0.0, machine - client_percent - (server_percent or 0.0))
    return client_percent, server_percent, other


# base offset, batch length (the bytes after this field)
_BATCH_HEAD = struct.Struct(">qi")


def _log_facts(partition_dir: Path) -> LogFacts:
    """Walk the record batch headers of every segment: what batches the client sent."""
    sizes: list[int] = []
    total = 0
    for segment in sorted(partition_dir.glob("*.log")):
        total += segment.stat().st_size
        with segment.open("rb") as f:
            while len(head := f.read(_BATCH_HEAD.size)) == _BATCH_HEAD.size:
                _, length = _BATCH_HEAD.unpack(head)
                if length <= 0:
                    break
                sizes.append(_BATCH_HEAD.size + length)
                f.seek(length, os.SEEK_CUR)
    return LogFacts(
        log_bytes=total,
        batches=len(sizes),
        mean_batch_bytes=sum(sizes) / len(sizes) if sizes else 0.0,
        max_batch_bytes=max(sizes, default=0),
    )


# --- librdkafka's log -------------------------------------------------------------------


class _Collected(logging.Handler):
    """librdkafka's log lines (delivered through confluent-kafka's ``logger``), kept."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


def _client_logger() -> tuple[logging.Logger, _Collected]:
    logger = logging.getLogger(f"{__name__}.librdkafka")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    collected = _Collected()
    logger.addHandler(collected)
    return logger, collected


# --- the clients --------------------------------------------------------------------------


@attrs.define(eq=False)
class Bench:
    """Everything a run needs: the broker, the sink, the records, the clients' settings."""

    broker: BrokerProcess
    sink: ServerProcess
    settings: Settings
    values: list[bytes]
    payload: bytes
    values_file: Path
    logger: logging.Logger
    inspector: Consumer
    kcat: str | None

    @property
    def broker_pid(self) -> int:
        assert self.broker.process is not None
        return self.broker.process.pid

    def base_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.broker.bootstrap, "logger": self.logger}

    def producer_config(self, acks: str, linger_ms: int = LINGER_MS) -> dict[str, str]:
        """What both clients get, confluent-kafka as a dict and kcat as ``-X`` flags."""
        return {
            "acks": acks,
            "batch.size": str(BATCH_BYTES),
            "linger.ms": str(linger_ms),
            "compression.type": "none",
        }

    def end_offset(self, topic: str) -> int:
        _, high = self.inspector.get_watermark_offsets(
            KafkaTopicPartition(topic, 0), timeout=30, cached=False
        )
        return int(high)

    def check_end_offset(self, topic: str, expected: int, what: str) -> None:
        end = self.end_offset(topic)
        if end != expected:
            raise BenchError(
                f"{what}: topic {topic} ends at offset {end} after {expected:,} records were "
                f"acknowledged (lost or duplicated records)"
            )

    def broker_alive(self) -> None:
        process = self.broker.process
        if process is None or process.poll() is not None:
            tail = "\n".join(self.broker.output[-30:])
            raise BenchError(f"the broker died; its last words:\n{tail}")


def _confluent_produce(bench: Bench, topic: str, acks: str) -> Timed:
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    config: dict[str, Any] = {
        **bench.base_config(),
        **bench.producer_config(acks),
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
    }
    producer = Producer(config)
    # connected, metadata known, before the clock
    producer.list_topics(topic, timeout=30)
    produce, poll = producer.produce, producer.poll
    started = time.perf_counter()
    for v in bench.values:
        while True:
            try:
                produce(topic, v, partition=0)
                break
            except BufferError:  # the client's queue is full: wait for acknowledgements
                poll(0.005)
    left = producer.flush(RUN_TIMEOUT)
    seconds = time.perf_counter() - started
    del producer
    if left:
        raise BenchError(
            f"produce to {topic}: {left:,} records unacknowledged after flush"
        )
    if errors:
        raise BenchError(
            f"produce to {topic}: {len(errors):,} delivery errors, first {errors[0]}"
        )
    records = len(bench.values)
    bench.check_end_offset(topic, records, f"confluent-kafka produce acks={acks}")
    return Timed(records, records * VALUE_BYTES, seconds)


def kcat_produce_argv(
    kcat: str, bootstrap: str, topic: str, config: Mapping[str, str]
) -> list[str]:
    argv = [kcat, "-P", "-b", bootstrap, "-t", topic, "-p", "0"]
    for key, setting in config.items():
        argv += ["-X", f"{key}={setting}"]
    return argv


def _kcat_produce(bench: Bench, topic: str, acks: str) -> Timed:
    assert bench.kcat is not None
    argv = kcat_produce_argv(
        bench.kcat, bench.broker.bootstrap, topic, bench.producer_config(acks)
    )
    with bench.values_file.open("rb") as values:
        started = time.perf_counter()
        done = subprocess.run(
            argv, stdin=values, capture_output=True, timeout=RUN_TIMEOUT, check=False
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0 or done.stderr.strip():
        raise BenchError(
            f"{shlex.join(argv)} exited with {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-2000:]}"
        )
    records = len(bench.values)
    bench.check_end_offset(topic, records, f"kcat produce acks={acks}")
    return Timed(records, records * VALUE_BYTES, seconds)


def _confluent_consume(bench: Bench, topic: str, expected: int) -> Timed:
    consumer = Consumer({**bench.base_config(), **CONSUMER_CONFIG})
    try:
        # connected, leader known, before the clock
        consumer.list_topics(topic, timeout=30)
        count = value_bytes = 0
        last_offset = -1
        first: float | None = None
        started = time.perf_counter()
        progress = started
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        while count < expected:
            # consume() waits until it has num_messages (or the timeout): never ask for
            # more than remain, or the last call would wait out its timeout.
            batch = consumer.consume(min(10_000, expected - count), 1.0)
            now = time.perf_counter()
            if not batch:
                if now - progress > STALL_SECONDS:
                    raise BenchError(
                        f"consume {topic}: no record for {STALL_SECONDS:.0f} s "
                        f"after {count:,} of {expected:,}"
                    )
                bench.broker_alive()
                continue
            if first is None:
                first = now - started
            progress = now
            for message in batch:
                if (error := message.error()) is not None:
                    raise BenchError(f"consume {topic}: {error}")
                value_bytes += len(message.value() or b"")
            count += len(batch)
            last_offset = batch[-1].offset() or 0
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    if count != expected or last_offset != expected - 1:
        raise BenchError(
            f"consume {topic}: {count:,} records, the last at offset {last_offset}; "
            f"expected {expected:,} ending at {expected - 1}"
        )
    return Timed(count, value_bytes, seconds, first)


def _kcat_consume(bench: Bench, topic: str, expected: int) -> Timed:
    assert bench.kcat is not None
    argv = [bench.kcat, "-C", "-b", bench.broker.bootstrap, "-t", topic, "-p", "0"]
    # -c: exit at the last record. With -e alone kcat would wait for librdkafka to learn
    # of the partition's end from a fetch that comes back empty, after the broker held it
    # for fetch.wait.max.ms (500 ms): as Kafka does, and not throughput.
    argv += ["-o", "beginning", "-e", "-q", "-c", str(expected)]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    assert process.stderr is not None
    lines = received = 0
    first: float | None = None
    try:
        fd = process.stdout.fileno()
        while chunk := os.read(fd, KCAT_READ_BYTES):
            now = time.perf_counter() - started
            if first is None:
                first = now
            lines += chunk.count(b"\n")
            received += len(chunk)
        stderr = process.stderr.read()
        returncode = process.wait(timeout=RUN_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    seconds = time.perf_counter() - started
    if returncode != 0 or stderr.strip():
        raise BenchError(
            f"{shlex.join(argv)} exited with {returncode}: {stderr.decode(errors='replace')}"
        )
    if lines != expected or received != expected * (VALUE_BYTES + 1):
        raise BenchError(
            f"{shlex.join(argv)}: {lines:,} lines, {received:,} bytes; "
            f"expected {expected:,} lines of {VALUE_BYTES} bytes"
        )
    return Timed(lines, received - lines, seconds, first)


# --- the ceiling ------------------------------------------------------------------------


async def _push(host: str, port: int, payload: bytes, chunk: int) -> float:
    """Send ``payload`` in ``chunk``-byte ``send_all`` calls, half-close, and wait for the
    sink's byte count: the clock stops when every byte has arrived."""
    with trio.fail_after(RUN_TIMEOUT):
        stream = await trio.open_tcp_stream(host, port)
    async with stream:
        view = memoryview(payload)
        started = time.perf_counter()
        with trio.fail_after(RUN_TIMEOUT):
            for start in range(0, len(view), chunk):
                await stream.send_all(view[start : start + chunk])
            await stream.send_eof()
            answer = b""
            while len(answer) < _COUNT.size:
                data = await stream.receive_some(_COUNT.size - len(answer))
                if not data:
                    raise BenchError(
                        "the sink closed the connection without its byte count"
                    )
                answer += data
        seconds = time.perf_counter() - started
    (received,) = _COUNT.unpack(answer)
    if received != len(payload):
        raise BenchError(f"the sink received {received:,} bytes of {len(payload):,}")
    return seconds


def _ceiling(bench: Bench) -> Timed:
    seconds = trio.run(
        _push, bench.sink.host, bench.sink.port, bench.payload, BATCH_BYTES
    )
    return Timed(len(bench.payload) // VALUE_BYTES, len(bench.payload), seconds)


SINK_RECEIVE_BYTES = 256 * 1024


async def _drain(stream: trio.SocketStream) -> None:
    """Read and discard until the peer half-closes, then answer the byte count."""
    total = 0
    async with stream:
        try:
            while data := await stream.receive_some(SINK_RECEIVE_BYTES):
                total += len(data)
            await stream.send_all(_COUNT.pack(total))
        except trio.BrokenResourceError:
            return


async def serve_sink() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    host, port = listeners[0].socket.getsockname()[:2]
    print(f"bench.broker_clients sink: listening on {host}:{port}", flush=True)
    await trio.serve_listeners(_drain, listeners)


# --- latency ------------------------------------------------------------------------------


@attrs.frozen
class LatencyOutcome:
    linger_ms: int
    rate_per_s: int
    records: int
    warmup_records: int
    seconds: float
    achieved_rate_per_s: float
    latency: dict[str, float]
    server_cpu_percent: float | None
    client_cpu_percent: float | None
    other_cpu_percent: float | None
    producer: dict[str, str]
    consumer: dict[str, str]


@attrs.define(eq=False)
class _LatencyConsumer:
    """The receiving side, in its own thread: every measured record's latency, in ns."""

    config: dict[str, Any]
    topic: str
    expected: int
    ready: threading.Event = attrs.field(factory=threading.Event)
    stop: threading.Event = attrs.field(factory=threading.Event)
    latencies_ns: list[int] = attrs.field(factory=list)
    sequences: set[int] = attrs.field(factory=set)
    errors: list[str] = attrs.field(factory=list)
    duplicates: int = 0

    def run(self) -> None:
        try:
            consumer = Consumer(self.config)
        except Exception as e:
            self.errors.append(repr(e))
            self.ready.set()
            return
        try:
            consumer.list_topics(self.topic, timeout=30)
            consumer.assign([KafkaTopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            self.ready.set()
            clock = time.perf_counter_ns
            while len(self.sequences) < self.expected and not self.stop.is_set():
                message = consumer.poll(0.05)
                arrived = clock()
                if message is None:
                    continue
                if (error := message.error()) is not None:
                    self.errors.append(str(error))
                    continue
                kind, sent, sequence = _STAMP.unpack_from(
                    message.value() or bytes(_STAMP.size)
                )
                if kind != _MEASURED:
                    continue
                if sequence in self.sequences:
                    self.duplicates += 1
                    continue
                self.sequences.add(sequence)
                self.latencies_ns.append(arrived - sent)
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            self.ready.set()
            consumer.close()


def _stamped(kind: int, sequence: int) -> bytes:
    head = _STAMP.pack(kind, time.perf_counter_ns(), sequence)
    return head + _FILLER[: VALUE_BYTES - len(head)]


def _latency(bench: Bench, topic: str, linger_ms: int) -> LatencyOutcome:
    s = bench.settings
    warmup = round(s.latency_rate * s.latency_warmup_seconds)
    measured = round(s.latency_rate * s.latency_seconds)
    consumer_config: dict[str, Any] = {
        **bench.base_config(),
        "group.id": "bench-latency",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": LATENCY_FETCH_WAIT_MS,
    }
    receiver = _LatencyConsumer(consumer_config, topic, measured)
    thread = threading.Thread(target=receiver.run, name="latency-consumer", daemon=True)
    producer_settings = bench.producer_config("all", linger_ms)
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    producer = Producer(
        {
            **bench.base_config(),
            **producer_settings,
            "delivery.report.only.error": True,
            "on_delivery": on_delivery,
        }
    )
    producer.list_topics(topic, timeout=30)
    thread.start()
    if not receiver.ready.wait(60):
        raise BenchError("the latency consumer did not start")
    client = own_cpu_seconds()
    server = process_cpu_seconds(bench.broker_pid)
    busy = machine_busy_seconds()
    interval = 1 / s.latency_rate
    started = measured_from = time.perf_counter()
    for i in range(warmup + measured):
        if i == warmup:
            measured_from = time.perf_counter()
            client = own_cpu_seconds()
            server = process_cpu_seconds(bench.broker_pid)
            busy = machine_busy_seconds()
        due = started + i * interval
        if (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)
        kind, sequence = (_WARMUP, i) if i < warmup else (_MEASURED, i - warmup)
        producer.produce(topic, _stamped(kind, sequence), partition=0)
        producer.poll(0)
    sending = time.perf_counter() - measured_from
    left = producer.flush(60)
    thread.join(STALL_SECONDS)
    if thread.is_alive():
        receiver.stop.set()
        thread.join(10)
    seconds = time.perf_counter() - measured_from
    client_after = own_cpu_seconds()
    server_after = process_cpu_seconds(bench.broker_pid)
    busy_after = machine_busy_seconds()
    del producer
    if left or errors:
        raise BenchError(
            f"latency producer: {left} unacknowledged, {len(errors)} errors {errors[:3]}"
        )
    if receiver.errors or receiver.duplicates or len(receiver.sequences) != measured:
        missing = sorted(set(range(measured)) - receiver.sequences)
        raise BenchError(
            f"latency consumer: {len(receiver.sequences):,} of {measured:,} records "
            f"(first missing: {missing[:10]}), {receiver.duplicates} duplicates, "
            f"errors {receiver.errors[:3]}"
        )
    client_percent, server_percent, other = _cpu_percents(
        seconds, client, client_after, server, server_after, busy, busy_after
    )
    return LatencyOutcome(
        linger_ms=linger_ms,
        rate_per_s=s.latency_rate,
        records=measured,
        warmup_records=warmup,
        seconds=seconds,
        achieved_rate_per_s=measured / sending,
        latency=latency_summary([ns / 1e9 for ns in receiver.latencies_ns]),
        server_cpu_percent=server_percent,
        client_cpu_percent=client_percent,
        other_cpu_percent=other,
        producer={**producer_settings, "client": CONFLUENT},
        consumer={
            "client": CONFLUENT,
            "fetch.wait.max.ms": str(LATENCY_FETCH_WAIT_MS),
            "enable.auto.commit": "false",
        },
    )


# --- the run ------------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """A scenario's runs; the figures quoted are the median run's."""

    scenario: Scenario
    runs: list[Measurement]

    @property
    def median(self) -> Measurement:
        """The run with the median record rate (the lower middle one of an even count)."""
        return sorted(self.runs, key=lambda m: m.records_per_s)[
            (len(self.runs) - 1) // 2
        ]


def run(quick: bool = False) -> Report:
    return run_with(Settings.choose(quick), quick)


def run_with(settings: Settings, quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    kcat = shutil.which(KCAT)
    pinned = split_cpus()
    client_cpus, server_cpus = pinned if pinned is not None else (None, None)
    original_cpus = os.sched_getaffinity(0) if pinned is not None else None
    logger, collected = _client_logger()
    broker_output: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="minikafka-bench-broker_clients-"))
    try:
        values = [value(i) for i in range(settings.records)]
        payload = b"".join(values)
        values_file = scratch / "values.txt"
        with values_file.open("wb") as f:
            f.write(b"\n".join(values))
            f.write(b"\n")
        with ExitStack() as stack:
            # The broker and the sink inherit the server CPUs (every thread they start
            # too); then this process moves to the client CPUs, before any client exists.
            if server_cpus is not None:
                os.sched_setaffinity(0, server_cpus)
            broker = BrokerProcess(scratch / "data")
            broker_output = broker.output
            try:
                broker.start()
            except BrokerFailed as e:
                raise BenchError(str(e)) from e
            stack.callback(_stop_broker, broker)
            sink = stack.enter_context(spawned_server(SINK_ARGV, server_cpus))
            if client_cpus is not None:
                os.sched_setaffinity(0, client_cpus)
            inspector = Consumer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "group.id": "bench-inspector",
                    "logger": logger,
                }
            )
            stack.callback(inspector.close)
            bench = Bench(
                broker,
                sink,
                settings,
                values,
                payload,
                values_file,
                logger,
                inspector,
                kcat,
            )
            outcomes, latencies = _run_scenarios(bench)
            del bench, values, payload
    finally:
        if original_cpus is not None:
            os.sched_setaffinity(0, original_cpus)
        shutil.rmtree(scratch, ignore_errors=True)
    duration = time.perf_counter() - clock
    machine = machine_facts()
    packages = (
        dict(machine["packages"]) if isinstance(machine["packages"], dict) else {}
    )
    for dist in ("minikafka-broker", "confluent-kafka"):
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            packages[dist] = None
    machine["packages"] = packages
    machine["clients"] = client_versions(kcat)
    machine["load_average"] = _load_average()
    warnings = [
        line
        for line in broker_output
        if any(word in line for word in ("WARNING", "ERROR", "CRITICAL", "Traceback"))
    ]
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": attrs.asdict(settings),
        "started_at": started,
        "duration_s": round(duration, 2),
        "units": {
            "mb_per_s": "10^6 value bytes per second (100 B per record)",
            "records_per_s": "records per second; for the ceiling, value bytes / 100",
            "latency": "milliseconds",
        },
        "broker": {
            "argv": "python -m minikafka.broker broker --override listeners=PLAINTEXT://"
            "127.0.0.1:0 --override log.dirs=<scratch>/data (otherwise the defaults)",
            "warnings": warnings[-50:],
        },
        "clients": {
            "value_bytes": VALUE_BYTES,
            "producer": {
                "batch.size": BATCH_BYTES,
                "linger.ms": LINGER_MS,
                "compression": "none",
            },
            "consumer": dict(CONSUMER_CONFIG),
            "kcat_produce": shlex.join(
                kcat_produce_argv(
                    "kcat",
                    "127.0.0.1:PORT",
                    "TOPIC",
                    {
                        "acks": "ACKS",
                        "batch.size": str(BATCH_BYTES),
                        "linger.ms": str(LINGER_MS),
                        "compression.type": "none",
                    },
                )
            )
            + " < values.txt",
            "kcat_consume": "kcat -C -b 127.0.0.1:PORT -t TOPIC -p 0 -o beginning -e -q -c N",
            "kcat": kcat,
            "librdkafka_log": collected.lines[-50:],
        },
        "ceiling": {
            "sink": " ".join(["python", *SINK_ARGV[1:]]),
            "chunk_bytes": BATCH_BYTES,
            "sink_receive_bytes": SINK_RECEIVE_BYTES,
        },
        "cpu_pinning": None
        if pinned is None
        else {"client": sorted(pinned[0]), "broker_and_sink": sorted(pinned[1])},
        "machine": machine,
        "scenarios": [_scenario_document(o, outcomes[0]) for o in outcomes],
        "latency": [attrs.asdict(latency) for latency in latencies],
    }
    return Report(NAME, document, _table(outcomes, latencies, kcat), _chart(outcomes))


def _stop_broker(broker: BrokerProcess) -> None:
    try:
        status = broker.stop()
    except BrokerFailed as e:
        raise BenchError(str(e)) from e
    if status != 0:
        tail = "\n".join(broker.output[-30:])
        raise BenchError(f"the broker exited with {status} on SIGTERM:\n{tail}")


def _run_scenarios(bench: Bench) -> tuple[list[Outcome], list[LatencyOutcome]]:
    all_scenarios = scenarios(bench.kcat is not None)
    produce = [s for s in all_scenarios if s.kind == "produce"]
    topics = {
        (s, r): f"bench.{s.slug}.run-{r}"
        for s in produce
        for r in range(bench.settings.repeats)
    }
    latency_topics = {
        linger: f"bench.latency.linger-{linger}"
        for linger in bench.settings.latency_linger_ms
    }
    admin = AdminClient({"bootstrap.servers": bench.broker.bootstrap})
    new = [NewTopic(t, 1, 1) for t in [*topics.values(), *latency_topics.values()]]
    for topic, future in admin.create_topics(new, operation_timeout=30).items():
        try:
            future.result()
        except Exception as e:
            raise BenchError(f"could not create topic {topic}: {e}") from e
    del admin
    consumed = topics[produce[0], 0]
    runs: dict[Scenario, list[Measurement]] = {s: [] for s in all_scenarios}
    records = bench.settings.records
    for r in range(bench.settings.repeats):
        for s in all_scenarios:
            bench.broker_alive()
            body: Callable[[], Timed]
            log_dir = None
            server = bench.broker_pid
            if s.kind == "ceiling":
                # An untimed push first: the first run after a pause was up to 3x slower
                # (the sink's buffers and this VM's pages: bench/README.md, "This VM hands
                # freed memory back to its host").
                _ceiling(bench)
                body, server = (lambda: _ceiling(bench)), bench.sink.pid
            elif s.kind == "produce":
                topic, acks = topics[s, r], s.acks or "1"
                producer = (
                    _confluent_produce if s.client == CONFLUENT else _kcat_produce
                )
                body = _bind_produce(producer, bench, topic, acks)
                log_dir = bench.broker.data_dir / f"{topic}-0"
            else:
                consumer = (
                    _confluent_consume if s.client == CONFLUENT else _kcat_consume
                )
                body = _bind_consume(consumer, bench, consumed, records)
            measurement = _measure(s, server, body, log_dir)
            runs[s].append(measurement)
            print(
                f"  run {r + 1}/{bench.settings.repeats}  {s.kind:<8} {s.client:<16} "
                f"{s.name:<48} {measurement.records_per_s:>12,.0f} rec/s "
                f"{measurement.mb_per_s:>9,.1f} MB/s",
                flush=True,
            )
    bench.broker_alive()
    latencies: list[LatencyOutcome] = []
    for linger, topic in latency_topics.items():
        latencies.append(latency := _latency(bench, topic, linger))
        lat = latency.latency
        print(
            f"  latency  linger.ms={linger}  {latency.achieved_rate_per_s:,.0f} rec/s  "
            f"p50 {lat['p50_ms']:.2f} ms  p99 {lat['p99_ms']:.2f} ms",
            flush=True,
        )
        bench.broker_alive()
    return [Outcome(s, runs[s]) for s in all_scenarios], latencies


def _bind_produce(
    producer: Callable[[Bench, str, str], Timed], bench: Bench, topic: str, acks: str
) -> Callable[[], Timed]:
    return lambda: producer(bench, topic, acks)


def _bind_consume(
    consumer: Callable[[Bench, str, int], Timed], bench: Bench, topic: str, records: int
) -> Callable[[], Timed]:
    return lambda: consumer(bench, topic, records)


def client_versions(kcat: str | None) -> dict[str, str | None]:
    versions: dict[str, str | None] = {
        "confluent-kafka": metadata.version("confluent-kafka"),
        "librdkafka (confluent-kafka)": confluent_kafka.libversion()[0],
        "kcat": None,
    }
    if kcat is not None:
        try:
            out = subprocess.run(
                [kcat, "-V"], capture_output=True, text=True, timeout=10, check=False
            )
            versions["kcat"] = next(
                (
                    line.strip()
                    for line in (out.stdout + out.stderr).splitlines()
                    if "Version" in line
                ),
                None,
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    return versions


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _scenario_document(outcome: Outcome, ceiling: Outcome) -> dict[str, object]:
    s = outcome.scenario
    return {
        "name": s.name,
        "kind": s.kind,
        "client": s.client,
        "acks": s.acks,
        "median": attrs.asdict(outcome.median),
        "over_ceiling": outcome.median.mb_per_s / ceiling.median.mb_per_s,
        "runs": [attrs.asdict(m) for m in outcome.runs],
    }


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _table(
    outcomes: Sequence[Outcome], latencies: Sequence[LatencyOutcome], kcat: str | None
) -> str:
    ceiling = outcomes[0].median
    header = [
        "scenario",
        "client",
        "records",
        "seconds",
        "records/s",
        "records/s range",
        "MB/s",
        "x ceiling",
        "server CPU",
        "client CPU",
        "other CPU",
    ]
    rows: list[list[str]] = []
    for outcome in outcomes:
        m = outcome.median
        rates = [run.records_per_s for run in outcome.runs]
        rows.append(
            [
                outcome.scenario.name,
                outcome.scenario.client,
                f"{m.records:,}",
                f"{m.seconds:.3f}",
                f"{m.records_per_s:,.0f}",
                f"{min(rates):,.0f}-{max(rates):,.0f}" if len(rates) > 1 else "",
                f"{m.mb_per_s:,.1f}",
                ""
                if outcome.scenario.kind == "ceiling"
                else f"{m.mb_per_s / ceiling.mb_per_s:.3g}x",
                _percent(m.server_cpu_percent),
                _percent(m.client_cpu_percent),
                _percent(m.other_cpu_percent),
            ]
        )
    table = markdown_table(header, rows)
    table += "\n\n" + markdown_table(
        [
            "end-to-end latency",
            "client",
            "records",
            "rate/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "server CPU",
            "client CPU",
            "other CPU",
        ],
        [
            [
                f"produce acks=all linger.ms={latency.linger_ms} -> poll",
                f"{CONFLUENT} (2 threads)",
                f"{latency.records:,}",
                f"{latency.achieved_rate_per_s:,.0f}",
                f"{latency.latency['p50_ms']:.2f}",
                f"{latency.latency['p90_ms']:.2f}",
                f"{latency.latency['p99_ms']:.2f}",
                f"{latency.latency['max_ms']:.2f}",
                _percent(latency.server_cpu_percent),
                _percent(latency.client_cpu_percent),
                _percent(latency.other_cpu_percent),
            ]
            for latency in latencies
        ],
    )
    if kcat is None:
        table += "\nnote: kcat is not installed; its scenarios were skipped."
    busiest = max(
        [m.other_cpu_percent or 0.0 for o in outcomes for m in o.runs]
        + [latency.other_cpu_percent or 0.0 for latency in latencies],
        default=0.0,
    )
    if busiest > BUSY_MACHINE_PERCENT:
        table += (
            f"\nwarning: other processes used up to {busiest:.0f}% CPU during the runs "
            f"(of {100 * (os.cpu_count() or 1)}%); these figures are disturbed, rerun when idle."
        )
    return table


_COLOURS = {"ceiling": "#8c8c8c", "produce": "#4c72b0", "consume": "#55a868"}


def _chart(outcomes: Sequence[Outcome]) -> str:
    """Each scenario's median MB/s beside the ceiling's, as a standalone SVG, on a log
    scale: the ceiling is one to two orders of magnitude above the rest."""
    ceiling = outcomes[0].median.mb_per_s
    rows = [
        (
            f"{o.scenario.name} ({o.scenario.client})"
            if o.scenario.kind != "ceiling"
            else o.scenario.name,
            o.scenario.kind,
            o.median.mb_per_s,
        )
        for o in outcomes
    ]
    positive = [v for _, _, v in rows if v > 0] or [1.0]
    lo = 10 ** math.floor(math.log10(min(positive)))
    hi = 10 ** math.ceil(math.log10(max(positive)))
    if hi <= lo:
        hi = lo * 10
    bar, label_width, plot_width, top = 24, 330, 440, 60
    height = top + bar * len(rows) + 50

    def x(v: float) -> float:
        v = max(v, lo)
        return label_width + plot_width * math.log10(v / lo) / math.log10(hi / lo)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + plot_width + 190}" '
        f'height="{height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="10" y="22" font-size="15" font-weight="bold">'
        "minikafka broker with librdkafka clients vs bare trio loopback TCP</text>",
        '<text x="10" y="42" fill="#555">MB/s of 100-byte values (10^6 B/s, log scale), '
        "median run; bar labels: MB/s (x ceiling)</text>",
    ]
    decade = lo
    while decade <= hi * 1.0001:
        gx = x(decade)
        out.append(
            f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{top + bar * len(rows)}" '
            'stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{gx:.1f}" y="{top + bar * len(rows) + 16}" text-anchor="middle" '
            f'fill="#555">{decade:,.0f}</text>'
        )
        decade *= 10
    for i, (label, kind, mb) in enumerate(rows):
        y = top + i * bar
        width = max(1.0, x(mb) - label_width)
        ratio = "" if kind == "ceiling" else f" ({mb / ceiling:.3g}x)"
        out.append(f'<text x="10" y="{y + 16}">{escape(label)}</text>')
        out.append(
            f'<rect x="{label_width}" y="{y + 3}" width="{width:.1f}" height="{bar - 6}" '
            f'fill="{_COLOURS.get(kind, "#c44e52")}"/>'
        )
        out.append(
            f'<text x="{label_width + width + 6:.1f}" y="{y + 16}">{mb:,.1f}{ratio}</text>'
        )
    out.append(
        f'<text x="{label_width + plot_width / 2:.1f}" y="{height - 10}" text-anchor="middle" '
        'fill="#555">MB/s</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- the command line ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.broker_clients",
        description="the broker driven by confluent-kafka and kcat, beside a loopback TCP "
        "ceiling (also run by python -m bench broker_clients)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small counts, for a smoke run"
    )
    parser.add_argument(
        "--records",
        type=int,
        metavar="N",
        help=f"records per throughput run (default {RECORDS:,}; --quick {QUICK_RECORDS:,})",
    )
    parser.add_argument(
        "--sink", action="store_true", help="run the ceiling's sink server"
    )
    args = parser.parse_args(argv)
    if args.sink:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        trio.run(serve_sink)
        return 0
    if args.records is not None and args.records < 1:
        parser.error("--records must be at least 1")
    started = time.perf_counter()
    try:
        report = run_with(Settings.choose(args.quick, args.records), args.quick)
    except Exception as e:
        error = find_bench_error(e)
        if error is None:
            raise
        print(f"{NAME} failed: {error}", file=sys.stderr)
        return 1
    print(report.table)
    stem = f"{NAME}.quick" if args.quick else NAME
    for path in write_results(report, stem):
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"({time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
