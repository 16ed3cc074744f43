"""The consumer benchmark: minikafka.client against the Python clients users pick.

One broker (defaults, on the second half of the CPUs when there are two or more) holds
one topic of one partition with ``RECORDS`` 100-byte records, produced once by
confluent-kafka before any clock starts. Four consumers then read all of it in turn,
each assigning itself the partition from offset 0 (no group, nothing committed), with
each client's default fetch settings:

- **minikafka** (``Consumer.consume(500)``);
- **kafka-python** (``KafkaConsumer.poll``);
- **aiokafka** (``AIOKafkaConsumer.getmany``), as installed (its record batch codec is
  compiled, Cython) and in a child process with ``AIOKAFKA_NO_EXTENSIONS=1``, pure Python;
- **confluent-kafka** (``Consumer.consume(500)``): the reference.

The clock runs from the ``assign`` to the last record handed to the application; a run
counts only if every record came back, in order. Runs are interleaved, ``REPEATS`` of
each; the median is quoted with the range.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.client import OFFSET_BEGINNING, Consumer, TopicPartition

from ._clients import Run, chart, child_main, in_child, table, timed
from ._common import (
    BenchError,
    CpuMeter,
    Report,
    machine_facts,
    now_utc,
    pinned_client,
    process_cpu_seconds,
    report_header,
)
from ._wire import spawned_broker

NAME = "client_consumer"
RECORDS = 200_000
QUICK_RECORDS = 20_000
REPEATS = 3
TOPIC = "bench-consume"
DEADLINE = 120.0


def _minikafka(bootstrap: str, records: int) -> int:
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        return _count(lambda: [m.offset() for m in consumer.consume(500, 1.0)], records)


def _confluent(bootstrap: str, records: int) -> int:
    consumer = RdConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([RdTopicPartition(TOPIC, 0, 0)])
        return _count(
            lambda: [m.offset() or 0 for m in consumer.consume(500, 1.0)], records
        )
    finally:
        consumer.close()


def _kafka_python(bootstrap: str, records: int) -> int:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partition = KpTopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)

        def batch() -> list[int]:
            return [r.offset for rs in consumer.poll(1000).values() for r in rs]

        return _count(batch, records)
    finally:
        consumer.close()


def _aiokafka(bootstrap: str, records: int) -> int:
    from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]
    from aiokafka import TopicPartition as AioTopicPartition

    async def main() -> int:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False
        )
        await consumer.start()
        try:
            partition = AioTopicPartition(TOPIC, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            seen, expected = 0, 0
            deadline = time.monotonic() + DEADLINE
            while seen < records and time.monotonic() < deadline:
                for rs in (await consumer.getmany(timeout_ms=1000)).values():
                    for r in rs:
                        if r.offset != expected:
                            raise BenchError(
                                f"aiokafka: offset {r.offset}, expected {expected}"
                            )
                        expected += 1
                        seen += 1
            return seen
        finally:
            await consumer.stop()

    return asyncio.run(main())


def _count(batch: Callable[[], list[int]], records: int) -> int:
    """Read batches until ``records`` offsets came back, each the next one."""
    expected = 0
    deadline = time.monotonic() + DEADLINE
    while expected < records and time.monotonic() < deadline:
        for offset in batch():
            if offset != expected:
                raise BenchError(f"offset {offset}, expected {expected}")
            expected += 1
    return expected


def _aiokafka_pure(bootstrap: str, records: int) -> int:
    raise AssertionError("runs in a child process: see run")


CLIENTS: dict[str, Callable[[str, int], int]] = {
    "minikafka": _minikafka,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "aiokafka, pure Python": _aiokafka_pure,
    "confluent-kafka (C)": _confluent,
}


def _fill(bootstrap: str, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(30)
    producer = RdProducer({"bootstrap.servers": bootstrap, "linger.ms": 10})
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, b"v" * 100)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120):
        raise BenchError("could not write the records to read")


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    records = QUICK_RECORDS if quick else RECORDS
    repeats = 1 if quick else REPEATS
    runs: list[Run] = []
    with (
        pinned_client() as pinning,
        tempfile.TemporaryDirectory(prefix="minikafka-bench-consume-") as scratch,
        spawned_broker(Path(scratch) / "data", pinning.servers) as broker,
    ):
        bootstrap = f"{broker.host}:{broker.port}"
        _fill(bootstrap, records)
        for repeat in range(repeats):
            for client in CLIENTS:
                meter = CpuMeter.start(lambda: process_cpu_seconds(broker.pid))
                if CLIENTS[client] is _aiokafka_pure:
                    read, seconds, cpu = in_child(NAME, [bootstrap, str(records)])
                else:
                    work = functools.partial(CLIENTS[client], bootstrap, records)
                    read, seconds, cpu = timed(work)
                use = meter.stop()
                if read != records:
                    raise BenchError(f"{client} read {read} of {records} records")
                one = Run(
                    client, records, seconds, 100 * cpu / seconds, use.server_percent
                )
                runs.append(one)
                print(
                    f"  run {repeat + 1}/{repeats}  {client:<20} {one.records_per_s:>10,.0f} "
                    f"records/s  client CPU {one.client_cpu_percent:.0f}%",
                    flush=True,
                )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "records": records,
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "runs": [{**attrs.asdict(r), "records_per_s": r.records_per_s} for r in runs],
    }
    return Report(NAME, document, _table(runs), _chart(runs))


def _table(runs: Sequence[Run]) -> str:
    return table(runs, list(CLIENTS), "consumer (100 B records, one partition)", 100)


def _chart(runs: Sequence[Run]) -> str:
    return chart(
        runs,
        list(CLIENTS),
        "Consuming 100-byte records from one partition: median records/s",
        "consume",
    )


if __name__ == "__main__":  # the pure-Python aiokafka child: --child BOOTSTRAP RECORDS
    _, bootstrap, count = sys.argv[1:]
    sys.exit(child_main(lambda: _aiokafka(bootstrap, int(count))))
