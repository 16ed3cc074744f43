"""The client latency benchmark: produce to consume through one broker, each client at
both ends, at a fixed rate.

One broker (defaults, on the second half of the CPUs when there are two or more). For
each client, a fresh one-partition topic, its consumer assigned from the start and
polling in a thread (aiokafka: a task on the same asyncio loop), and its producer
sending ``RATE`` 100-byte records a second for ``SECONDS`` with ``linger.ms=0`` and
``acks=all``; each value carries ``time.monotonic_ns()`` at ``produce``. A record's
latency is the time from its ``produce`` to the ``poll`` that hands it to the
application. The first ``WARMUP`` seconds are not counted. Every record must arrive,
once, in order. Runs are interleaved, ``REPEATS`` per client; the run with the median
p99 is quoted.

Clients: minikafka (``Producer``/``Consumer``, each with its trio thread, beside the
application's thread and the reader's), minikafka's async API (``AsyncProducer``/
``AsyncConsumer`` in one trio thread, as aiokafka runs on one asyncio thread),
kafka-python, aiokafka (as installed: its record codec is Cython; and again without its
C extensions, pure Python, in a child process that sends back its latencies:
``_clients.py``), and confluent-kafka (librdkafka, C) as the reference.
"""

from __future__ import annotations

import asyncio
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.client import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from ._clients import PURE_PYTHON, child_main, in_child
from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    latency_summary,
    machine_facts,
    markdown_table,
    now_utc,
    pinned_client,
    report_header,
)
from ._wire import spawned_broker

NAME = "client_latency"
RATE = 1_000
SECONDS = 4.0
WARMUP = 1.0
REPEATS = 3
_STAMP = struct.Struct(">qq")  # sequence, monotonic ns at produce
PAD = b"p" * (100 - _STAMP.size)


def _value(sequence: int) -> bytes:
    return _STAMP.pack(sequence, time.monotonic_ns()) + PAD


@attrs.define
class _Receiver:
    """Checks order and collects latencies (ns) of the timed records."""

    total: int
    warmup: int
    next_sequence: int = 0
    latencies_ns: list[int] = attrs.field(factory=list)
    done: threading.Event = attrs.field(factory=threading.Event)

    def got(self, value: bytes | None) -> None:
        assert value is not None
        sequence, sent = _STAMP.unpack_from(value)
        if sequence != self.next_sequence:
            raise BenchError(
                f"record {sequence} arrived, {self.next_sequence} expected"
            )
        if sequence >= self.warmup:
            self.latencies_ns.append(time.monotonic_ns() - sent)
        self.next_sequence += 1
        if self.next_sequence == self.total:
            self.done.set()


def _paced(
    produce: Callable[[int], object], serve: Callable[[], object], total: int
) -> None:
    """``produce(i)`` at ``RATE`` a second, ``serve()`` (delivery reports) in between."""
    start = time.perf_counter()
    for i in range(total):
        while (wait := start + i / RATE - time.perf_counter()) > 0:
            serve()
            time.sleep(min(wait, 0.0005))
        produce(i)


def _minikafka(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "fetch.max.wait.ms": 500})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

    def read() -> None:
        while not receiver.done.is_set():
            for message in consumer.consume(500, 0.1):
                receiver.got(message.value())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"}
    ) as producer:
        _paced(
            lambda i: producer.produce(topic, _value(i), partition=0),
            lambda: None,
            receiver.total,
        )
        producer.flush(60)
    reader.join(60)
    consumer.close()


def _minikafka_trio(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    """The async API: producer and consumer on one trio thread, as aiokafka's on asyncio."""
    import trio

    from minikafka.client import AsyncConsumer, AsyncProducer

    async def main() -> None:
        async with (
            AsyncConsumer.open({"bootstrap.servers": bootstrap}) as consumer,
            AsyncProducer.open(
                {"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"}
            ) as producer,
            trio.open_nursery() as nursery,
        ):
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

            finished = trio.Event()

            async def read() -> None:
                while not receiver.done.is_set():
                    for message in await consumer.getmany():
                        receiver.got(message.value())
                finished.set()

            nursery.start_soon(read)
            start = time.perf_counter()
            for i in range(receiver.total):
                await trio.sleep_until(
                    trio.current_time() + start + i / RATE - time.perf_counter()
                )
                await producer.produce(topic, _value(i), partition=0)
            await producer.flush()
            with trio.fail_after(60):
                await finished.wait()
            nursery.cancel_scope.cancel()

    trio.run(main)


def _confluent(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    consumer = RdConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-latency",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, 0, 0)])

    def read() -> None:
        while not receiver.done.is_set():
            for message in consumer.consume(500, 0.1):
                if message.error() is None:
                    receiver.got(message.value())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = RdProducer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"}
    )
    _paced(
        lambda i: producer.produce(topic, _value(i), partition=0),
        lambda: producer.poll(0),
        receiver.total,
    )
    producer.flush(60)
    reader.join(60)
    consumer.close()


def _kafka_python(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partition = KpTopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)

    def read() -> None:
        while not receiver.done.is_set():
            for records in consumer.poll(100).values():
                for r in records:
                    receiver.got(r.value)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks="all")
    _paced(
        lambda i: producer.send(topic, _value(i), partition=0),
        lambda: None,
        receiver.total,
    )
    producer.flush(60)
    reader.join(60)
    producer.close()
    consumer.close()


def _aiokafka(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # type: ignore[import-untyped]
    from aiokafka import TopicPartition as AioTopicPartition

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False
        )
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, linger_ms=0, acks="all"
        )
        await consumer.start()
        await producer.start()
        try:
            partition = AioTopicPartition(topic, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)

            async def read() -> None:
                while not receiver.done.is_set():
                    for rs in (await consumer.getmany(timeout_ms=100)).values():
                        for r in rs:
                            receiver.got(r.value)

            reader = asyncio.create_task(read())
            start = time.perf_counter()
            for i in range(receiver.total):
                wait = start + i / RATE - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                await producer.send(topic, _value(i), partition=0)
            await producer.flush()
            await asyncio.wait_for(reader, 60)
        finally:
            await producer.stop()
            await consumer.stop()

    asyncio.run(main())


def _aiokafka_pure(bootstrap: str, topic: str, receiver: _Receiver) -> None:
    """aiokafka without its C extensions, in a child process (``_clients.in_child``),
    which sends back the latencies it measured."""
    args = [bootstrap, topic, str(receiver.total), str(receiver.warmup)]
    result, _, _ = in_child(NAME, args)
    assert isinstance(result, dict)
    receiver.next_sequence = int(result["received"])
    receiver.latencies_ns[:] = [int(ns) for ns in result["latencies_ns"]]
    if receiver.next_sequence == receiver.total:
        receiver.done.set()


def _child(bootstrap: str, topic: str, total: int, warmup: int) -> dict[str, object]:
    receiver = _Receiver(total, warmup)
    _aiokafka(bootstrap, topic, receiver)
    return {"received": receiver.next_sequence, "latencies_ns": receiver.latencies_ns}


CLIENTS: dict[str, Callable[[str, str, _Receiver], None]] = {
    "minikafka": _minikafka,
    "minikafka, async on trio": _minikafka_trio,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "aiokafka, pure Python": _aiokafka_pure,
    "confluent-kafka (C)": _confluent,
}


@attrs.frozen
class Run:
    client: str
    latency: dict[str, float]


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    repeats = 1 if quick else REPEATS
    seconds = 2.0 if quick else SECONDS
    total, warmup = round(RATE * seconds), round(RATE * WARMUP)
    runs: list[Run] = []
    with (
        pinned_client() as pinning,
        tempfile.TemporaryDirectory(prefix="minikafka-bench-latency-") as scratch,
        spawned_broker(Path(scratch) / "data", pinning.servers) as broker,
    ):
        bootstrap = f"{broker.host}:{broker.port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for repeat in range(repeats):
            for i, client in enumerate(CLIENTS):
                topic = f"latency-{repeat}-{i}"
                for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                    future.result(30)
                receiver = _Receiver(total, warmup)
                CLIENTS[client](bootstrap, topic, receiver)
                if not receiver.done.is_set():
                    raise BenchError(
                        f"{client}: {receiver.next_sequence} of {total} records"
                    )
                summary = latency_summary([ns / 1e9 for ns in receiver.latencies_ns])
                runs.append(Run(client, summary))
                print(
                    f"  run {repeat + 1}/{repeats}  {client:<20} p50 {summary['p50_ms']:.2f} ms"
                    f"  p99 {summary['p99_ms']:.2f} ms",
                    flush=True,
                )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "rate_per_s": RATE,
        "seconds": seconds,
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "runs": [attrs.asdict(r) for r in runs],
    }
    return Report(NAME, document, _table(runs), _chart(runs))


def _median(runs: Sequence[Run], client: str) -> Run:
    mine = sorted(
        (r for r in runs if r.client == client), key=lambda r: r.latency["p99_ms"]
    )
    return mine[len(mine) // 2]


def _table(runs: Sequence[Run]) -> str:
    rows = []
    for client in CLIENTS:
        median = _median(runs, client)
        p99s = [r.latency["p99_ms"] for r in runs if r.client == client]
        rows.append(
            [
                client,
                f"{median.latency['p50_ms']:.2f}",
                f"{median.latency['p99_ms']:.2f}",
                f"{min(p99s):.2f}-{max(p99s):.2f}",
                f"{median.latency['max_ms']:.2f}",
            ]
        )
    verdict = "; ".join(
        f"{ours}: "
        + ", ".join(
            f"{_median(runs, c).latency['p99_ms'] / _median(runs, ours).latency['p99_ms']:.2f}x"
            f" {c}'s"
            for c in PURE_PYTHON
        )
        for ours in ("minikafka", "minikafka, async on trio")
    )
    return (
        markdown_table(
            [
                f"produce to consume, {RATE:,} records/s, linger.ms=0, acks=all",
                "p50 ms",
                "p99 ms (median run)",
                "p99 range",
                "max ms",
            ],
            rows,
        )
        + "\np99 lower than the pure-Python clients' by (goal: above 1x each; aiokafka as"
        + f" installed has a compiled record codec): {verdict}"
    )


def _chart(runs: Sequence[Run]) -> str:
    return bar_chart_svg(
        f"Produce to consume at {RATE:,} records/s: p99 ms of the median run",
        "ms",
        [("p99", [(c, _median(runs, c).latency["p99_ms"]) for c in CLIENTS])],
    )


# the pure-Python aiokafka child: --child BOOTSTRAP TOPIC TOTAL WARMUP
if __name__ == "__main__":
    _, bootstrap, topic, total, warmup = sys.argv[1:]
    sys.exit(child_main(lambda: _child(bootstrap, topic, int(total), int(warmup))))
