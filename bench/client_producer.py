"""The producer benchmark: minikafka.client against the Python clients users pick.

One broker (``python -m minikafka.broker broker``, defaults, a fresh ``log.dirs``; on the
second half of the CPUs when there are two or more), and four producers run in this
process in turn, each to a fresh one-partition topic created before its clock starts:

- **minikafka** (``minikafka.client.Producer``, pure Python on trio);
- **kafka-python** (``kafka.KafkaProducer``, pure Python, threads);
- **aiokafka** (``aiokafka.AIOKafkaProducer``, on asyncio), as installed: its record
  batch codec is compiled (Cython); and again in a child process with
  ``AIOKAFKA_NO_EXTENSIONS=1``, pure Python (``_clients.py``);
- **confluent-kafka** (librdkafka, C): the reference, not a ceiling a Python client can
  be held to.

Each sends ``RECORDS`` 100-byte values without keys with the same settings: ``acks=all``,
``linger.ms=5``, ``batch.size=16384``, no compression; idempotence as each client ships
(minikafka on, as Kafka 3.0+ clients are; the others off). The clock runs from the
first ``produce``/``send`` to the moment every record is acknowledged (``flush``, or the
last future), and a run counts only if the partition's end offset is then
``RECORDS``. Runs are interleaved (one of each client, ``REPEATS`` times) and the
median is quoted with the range; CPU is this process's (the client's) and the
broker's, as percentages of one core.

Consuming is ``client_consumer``'s; end-to-end latency against the same clients is not
measured yet.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from confluent_kafka import Consumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.client import Producer as MiniProducer

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

NAME = "client_producer"
RECORDS = 100_000
QUICK_RECORDS = 10_000
REPEATS = 3
VALUE = b"v" * 100
SETTINGS = {"acks": "all", "linger.ms": 5, "batch.size": 16_384}


def _minikafka(bootstrap: str, topic: str, records: int) -> None:
    producer = MiniProducer({"bootstrap.servers": bootstrap, **SETTINGS})
    try:
        for i in range(records):
            producer.produce(topic, VALUE)
            if i % 10_000 == 0:
                producer.poll(0)
        if producer.flush(120):
            raise BenchError("minikafka: records left after flush")
    finally:
        producer.close()


def _confluent(bootstrap: str, topic: str, records: int) -> None:
    producer = RdProducer({"bootstrap.servers": bootstrap, **SETTINGS})
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120):
        raise BenchError("confluent-kafka: records left after flush")


def _kafka_python(bootstrap: str, topic: str, records: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=5, batch_size=16_384
    )
    try:
        for _ in range(records):
            producer.send(topic, VALUE)
        producer.flush(120)
    finally:
        producer.close()


def _aiokafka(bootstrap: str, topic: str, records: int) -> None:
    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=16_384
        )
        await producer.start()
        try:
            futures = [await producer.send(topic, VALUE) for _ in range(records)]
            await producer.flush()
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(main())


def _aiokafka_pure(bootstrap: str, topic: str, records: int) -> None:
    raise AssertionError("runs in a child process: see _one_run")


CLIENTS: dict[str, Callable[[str, str, int], None]] = {
    "minikafka": _minikafka,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "aiokafka, pure Python": _aiokafka_pure,
    "confluent-kafka (C)": _confluent,
}


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-client-producer"}
    )
    try:
        _, high = consumer.get_watermark_offsets(RdTopicPartition(topic, 0), timeout=30)
        return int(high)
    finally:
        consumer.close()


def _one_run(
    bootstrap: str, broker_pid: int, client: str, topic: str, records: int
) -> Run:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    meter = CpuMeter.start(lambda: process_cpu_seconds(broker_pid))
    if CLIENTS[client] is _aiokafka_pure:
        _, seconds, cpu = in_child(NAME, [bootstrap, topic, str(records)])
    else:
        _, seconds, cpu = timed(lambda: CLIENTS[client](bootstrap, topic, records))
    use = meter.stop()
    end = _end_offset(bootstrap, topic)
    if end != records:
        raise BenchError(f"{client}: the partition holds {end} records, not {records}")
    return Run(client, records, seconds, 100 * cpu / seconds, use.server_percent)


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    records = QUICK_RECORDS if quick else RECORDS
    repeats = 1 if quick else REPEATS
    runs: list[Run] = []
    with (
        pinned_client() as pinning,
        tempfile.TemporaryDirectory(prefix="minikafka-bench-client-") as scratch,
        spawned_broker(Path(scratch) / "data", pinning.servers) as broker,
    ):
        bootstrap = f"{broker.host}:{broker.port}"
        for repeat in range(repeats):
            for i, client in enumerate(CLIENTS):
                one = _one_run(
                    bootstrap, broker.pid, client, f"bench-{repeat}-{i}", records
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
        "value_bytes": len(VALUE),
        "settings": SETTINGS,
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "runs": [{**attrs.asdict(r), "records_per_s": r.records_per_s} for r in runs],
    }
    return Report(NAME, document, _table(runs), _chart(runs))


def _table(runs: Sequence[Run]) -> str:
    return table(
        runs,
        list(CLIENTS),
        "producer (100 B records, acks=all, linger.ms=5)",
        len(VALUE),
    )


def _chart(runs: Sequence[Run]) -> str:
    return chart(
        runs,
        list(CLIENTS),
        "Producing 100-byte records (acks=all, linger.ms=5): median records/s",
        "produce",
    )


# the pure-Python aiokafka child: --child BOOTSTRAP TOPIC RECORDS
if __name__ == "__main__":
    _, bootstrap, topic, count = sys.argv[1:]
    sys.exit(child_main(lambda: _aiokafka(bootstrap, topic, int(count))))
