"""Every client's consumer reading across Fetch responses that end inside a record batch
(KIP-74).

A broker answers a Fetch with at most ``max.partition.fetch.bytes`` of a partition and
``fetch.max.bytes`` in all, cutting the log wherever the limit falls, inside a batch
too, as Kafka does; the first batch comes back whole even when it is larger than the
limits, so a consumer always makes progress. A client drops the partial batch at the end
of a response and asks for it again from its start. Here one partition holds record
batches of about 100 KB (``batch.size``) of records of mixed sizes, a few records larger
than a batch among them, and each real client of the compatibility suite (confluent-kafka,
kafka-python, aiokafka, kcat and minikafka's own) reads it from the start with limits:

- ``below-a-batch``: both limits far below a batch: most responses are one batch larger
  than the limits, a few (after a small batch) end inside the next;
- ``cuts-a-batch``: limits of 1.5 batches: most responses are a batch and part of the
  next;
- ``total-cuts``: ``fetch.max.bytes`` alone cuts, at an odd size.

Each reads every record exactly once, in order, at its offset, byte for byte. Values are
seeded hex text (kcat's JSON carries them as strings) and never compressed. A first test
reads the partition with raw Fetch requests to show the premise: with each of the
limits, some of the broker's answers do end inside a batch.
"""

from __future__ import annotations

import datetime
import json
import random
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import BrokerProcess, WireClient, request_class
from minikafka.client import Consumer as MinikafkaConsumer
from minikafka.client import TopicPartition as MinikafkaTopicPartition
from minikafka.net import ApiKey, NetworkClient, Node, build, nested
from tests.compat._clients import AsyncioThread, stored_batches

TOPIC = "cut-fetches"
BATCH = 100_000  # the producer's batch.size: record batches of about 100 KB
READ = 60.0  # seconds a client has to read the partition (a few MB)

# (key, value) of a record, offsets from 0.
Written = list[tuple[bytes, bytes]]
# (offset, key, value) of a record read back.
Read = list[tuple[int, bytes | None, bytes | None]]


@attrs.frozen
class Limits:
    partition: int  # max.partition.fetch.bytes
    total: int  # fetch.max.bytes


LIMITS = {
    "below-a-batch": Limits(20_000, 20_000),
    "cuts-a-batch": Limits(BATCH * 3 // 2, BATCH * 3 // 2),
    "total-cuts": Limits(1_048_576, 123_457),
}


def seeded_records(rng: random.Random) -> Written:
    """About 3 MB: mostly records of 1 B to 40 KB, and a few of 150 KB (larger than a
    batch: each is a batch of its own, larger than every limit)."""
    sizes = [1, 7, 60, 700, 3000, 12_000, 40_000]
    records = []
    for i in range(420):
        size = 150_000 if i % 97 == 50 else rng.choice(sizes)
        value = rng.randbytes((size + 1) // 2).hex()[:size].encode()
        records.append((f"key-{i}".encode(), value))
    return records


@pytest.fixture(scope="module")
def written(broker: BrokerProcess) -> Written:
    """The partition, written once for every client: batches of ~100 KB."""
    records = seeded_records(random.Random(TOPIC))
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "batch.size": BATCH,
            "linger.ms": 100,  # everything is queued at once: batches fill up
            "compression.type": "none",
            "log_level": 0,
        }
    )
    failed: list[object] = []
    for key, value in records:
        producer.produce(
            TOPIC,
            value,
            key,
            partition=0,
            on_delivery=lambda error, _m: failed.append(error) if error else None,
        )
    assert producer.flush(READ) == 0, "a broker answers every record written to it"
    assert not failed, f"a broker takes every record within its limits: {failed[:5]}"
    batches = stored_batches(broker.data_dir, TOPIC)
    assert sum(b.count for b in batches) == len(records), (
        "the partition holds every record written"
    )
    # The batches the limits cut: many of several records, the largest near 100 KB.
    sizes = [
        sum(len(k) + len(v) for k, v in records[b.base_offset : b.last_offset + 1])
        for b in batches
    ]
    assert sum(b.count > 1 for b in batches) >= 10, (
        f"librdkafka packs records into batches: {[b.count for b in batches]}"
    )
    assert (
        max(s for s, b in zip(sizes, batches, strict=True) if b.count > 1) > 80_000
    ), f"batches of several records fill up toward batch.size {BATCH}: {sizes}"
    return records


# --- the premise: the broker's answers end inside batches --------------------------------

_BATCH_HEAD = struct.Struct(">qi")  # base offset, length (of what follows)
_LAST_DELTA = struct.Struct(">i")  # at byte 23 of a batch


def whole_batches(records: bytes) -> tuple[int, int | None, bool]:
    """How many whole batches ``records`` holds, the last offset of the last one, and
    whether a partial batch follows them (the answer ends inside a batch)."""
    position, count, last = 0, 0, None
    while position + _BATCH_HEAD.size <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, position)
        if position + _BATCH_HEAD.size + length > len(records):
            break
        last = base + _LAST_DELTA.unpack_from(records, position + 23)[0]
        position += _BATCH_HEAD.size + length
        count += 1
    return count, last, position < len(records)


async def fetch_records(client: WireClient, offset: int, limits: Limits) -> bytes:
    """One Fetch v11 of partition 0 from ``offset``, as a consumer sends it; the bytes
    of its records."""
    request = request_class(ApiKey.FETCH, 11)
    topic_cls = nested(request, "topics")
    partition_cls = nested(topic_cls, "partitions")
    partition = build(
        partition_cls,
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=offset,
        log_start_offset=-1,
        partition_max_bytes=limits.partition,
    )
    body = build(
        request,
        replica_id=-1,
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=limits.total,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(build(topic_cls, topic=TOPIC, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    response = await client.call(body)
    (answer,) = response.responses[0].partitions
    assert answer.error_code == 0, answer
    return bytes(answer.records or b"")


@pytest.mark.parametrize("limits", list(LIMITS), ids=list(LIMITS))
async def test_the_broker_ends_answers_inside_batches(
    broker: BrokerProcess, written: Written, limits: str
) -> None:
    """What the readers' test rests on: reading the partition as a consumer does, with
    each of the limits, the broker's answers end inside a batch, and each makes
    progress (at least one whole batch, however large)."""
    host, port = broker.bootstrap.rsplit(":", 1)
    cut = answers = 0
    async with NetworkClient.open(client_id="cut-fetches") as network:
        client = WireClient(network, Node(0, host, int(port)))
        offset = 0
        while offset < len(written):
            records = await fetch_records(client, offset, LIMITS[limits])
            _count, last, partial = whole_batches(records)
            assert last is not None, (
                f"an answer from offset {offset} holds a whole batch ({len(records)} "
                "bytes): a consumer always makes progress"
            )
            answers += 1
            cut += partial
            offset = last + 1
    assert cut > 0, (
        f"with limits {LIMITS[limits]}, some of the broker's {answers} answers end "
        "inside a batch"
    )


# --- one reader per client: partition 0 from offset 0, ``count`` records ------------------


def read_confluent(bootstrap: str, limits: Limits, count: int) -> Read:
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "cut-fetches",  # required; nothing is committed
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": limits.partition,
            "fetch.max.bytes": limits.total,
            # librdkafka wants fetch.max.bytes >= message.max.bytes (its own setting).
            "message.max.bytes": min(limits.total, 1_000_000),
            "log_level": 0,
        }
    )
    try:
        consumer.assign([ConfluentTopicPartition(TOPIC, 0, 0)])
        got: Read = []
        deadline = time.monotonic() + READ
        while len(got) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.5):
                error = message.error()
                assert error is None, (
                    f"reading offsets inside the log raises no error: {error}"
                )
                offset = message.offset()
                assert offset is not None
                got.append((offset, message.key(), message.value()))
        return got
    finally:
        consumer.close()


def read_kafka_python(bootstrap: str, limits: Limits, count: int) -> Read:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        max_partition_fetch_bytes=limits.partition,
        fetch_max_bytes=limits.total,
    )
    try:
        tp = KafkaTopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: Read = []
        deadline = time.monotonic() + READ
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.key, r.value) for r in records)
        return got
    finally:
        consumer.close()


def read_aiokafka(bootstrap: str, limits: Limits, count: int) -> Read:
    async def read() -> Read:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="none",
            max_partition_fetch_bytes=limits.partition,
            fetch_max_bytes=limits.total,
        )
        await consumer.start()
        try:
            tp = AioTopicPartition(TOPIC, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got: Read = []
            deadline = time.monotonic() + READ
            while len(got) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    got.extend((r.offset, r.key, r.value) for r in records)
            return got
        finally:
            await consumer.stop()

    with AsyncioThread() as loop:
        return loop.run(read(), READ + 30)


def read_kcat(bootstrap: str, limits: Limits, count: int) -> Read:
    result = subprocess.run(
        [
            "kcat",
            "-b",
            bootstrap,
            "-C",
            "-t",
            TOPIC,
            "-p",
            "0",
            "-o",
            "beginning",
            "-c",
            str(count),
            "-e",
            "-J",
            "-q",
            "-X",
            f"max.partition.fetch.bytes={limits.partition}",
            "-X",
            f"fetch.max.bytes={limits.total}",
            "-X",
            f"message.max.bytes={min(limits.total, 1_000_000)}",
        ],
        capture_output=True,
        timeout=READ,
        check=False,
    )
    assert result.returncode == 0, (
        f"kcat reads the partition to its end: {result.stderr.decode(errors='replace')}"
    )
    got: Read = []
    for line in result.stdout.decode().splitlines():
        record: dict[str, Any] = json.loads(line)
        key, value = record["key"], record["payload"]
        got.append(
            (
                record["offset"],
                None if key is None else key.encode(),
                None if value is None else value.encode(),
            )
        )
    return got


def read_minikafka(bootstrap: str, limits: Limits, count: int) -> Read:
    consumer = MinikafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "max.partition.fetch.bytes": limits.partition,
            "fetch.max.bytes": limits.total,
        }
    )
    try:
        consumer.assign([MinikafkaTopicPartition(TOPIC, 0, 0)])
        got: Read = []
        deadline = time.monotonic() + READ
        while len(got) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.5):
                error = message.error()
                assert error is None, (
                    f"reading offsets inside the log raises no error: {error}"
                )
                got.append((message.offset(), message.key(), message.value()))
        return got
    finally:
        consumer.close()


READERS: dict[str, Callable[[str, Limits, int], Read]] = {
    "confluent-kafka": read_confluent,
    "kafka-python": read_kafka_python,
    "aiokafka": read_aiokafka,
    "kcat": read_kcat,
    "minikafka": read_minikafka,
}


def first_difference(got: Read, want: Read) -> Iterator[str]:
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            yield f"record {i}: read offset {g[0]} ({len(g[2] or b'')} bytes), "
            yield f"written offset {w[0]} ({len(w[2] or b'')} bytes)"
            return
    yield f"read {len(got)} records of {len(want)}"


@pytest.mark.external  # kcat among them
@pytest.mark.parametrize("limits", list(LIMITS), ids=list(LIMITS))
@pytest.mark.parametrize(
    "client",
    [  # each real client's cell of the matrix (minikafka's own client has none)
        pytest.param(
            "confluent-kafka", marks=pytest.mark.compat("Fetch", "confluent-kafka")
        ),
        pytest.param("kafka-python", marks=pytest.mark.compat("Fetch", "kafka-python")),
        pytest.param("aiokafka", marks=pytest.mark.compat("Fetch", "aiokafka")),
        pytest.param("kcat", marks=pytest.mark.compat("Fetch", "kcat")),
        "minikafka",
    ],
)
def test_consumers_read_every_record_once_across_cut_fetches(
    broker: BrokerProcess, written: Written, client: str, limits: str
) -> None:
    want: Read = [(i, key, value) for i, (key, value) in enumerate(written)]
    got = READERS[client](broker.bootstrap, LIMITS[limits], len(want))
    same = got == want
    assert same, (
        f"{client} with fetches cut at {LIMITS[limits]} reads every record exactly "
        f"once, in order, at its offset, byte for byte: "
        + "".join(first_difference(got, want))
    )
