"""aiokafka (0.14) against a real minikafka broker: admin, produce, consume by assign.

ARCHITECTURE.md, "Tests": each real client drives the broker the way a user does. aiokafka is
asyncio while the repository runs pytest under trio, so each test is a plain function
that runs its own coroutine with ``asyncio.run``. Consumers use ``assign`` without a group
(groups are in ``test_groups_aiokafka.py``). Records are read back byte for byte: keys,
values, headers, timestamps and their order within a partition; every wait has a deadline.
A few checks read aiokafka's internals, where it keeps no public view: the versions each
connection learned from ApiVersions, a Metadata request without auto-creation, and the
idempotent producer's id.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import (  # type: ignore[import-untyped]
    AIOKafkaConsumer,
    AIOKafkaProducer,
    TopicPartition,
)
from aiokafka.admin import (  # type: ignore[import-untyped]
    AIOKafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from aiokafka.admin.config_resource import (  # type: ignore[import-untyped]
    ConfigResource,
    ConfigResourceType,
)
from aiokafka.errors import (  # type: ignore[import-untyped]
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    MessageSizeTooLargeError,
    NoError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    for_code,
)
from aiokafka.protocol.metadata import MetadataRequest  # type: ignore[import-untyped]

from minikafka.broker.testing import BrokerProcess

# (key, value, headers) as aiokafka hands them back.
Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]

WAIT = 20.0  # seconds a test waits for something that normally takes milliseconds

# API key -> (min, max) versions the broker advertises at least: Produce, Fetch,
# ListOffsets, Metadata, ApiVersions, CreateTopics, DeleteTopics, InitProducerId,
# DescribeConfigs, CreatePartitions.
_ADVERTISED = {
    0: (3, 8),
    1: (4, 11),
    2: (1, 5),
    3: (1, 8),
    18: (0, 4),
    19: (2, 4),
    20: (1, 3),
    22: (0, 1),
    32: (1, 3),
    37: (0, 1),
}


@asynccontextmanager
async def _admin(bootstrap: str) -> AsyncIterator[Any]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-admin")
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


@asynccontextmanager
async def _producer(bootstrap: str, **config: Any) -> AsyncIterator[Any]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="compat-producer", **config)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()


@asynccontextmanager
async def _consumer(bootstrap: str, **config: Any) -> AsyncIterator[Any]:
    # No group here (test_groups_aiokafka.py has them): assign() and no commits.
    config.setdefault("auto_offset_reset", "none")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="compat-consumer",
        group_id=None,
        enable_auto_commit=False,
        **config,
    )
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()


def _errors(response: Any) -> dict[str, type[Exception]]:
    """topic -> error class of a CreateTopics/DeleteTopics response."""
    pairs = getattr(response, "topic_errors", None) or response.topic_error_codes
    return {entry[0]: for_code(entry[1]) for entry in pairs}


async def _create_topic(
    admin: Any, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    response = await admin.create_topics(
        [NewTopic(name, partitions, 1, topic_configs=configs or {})]
    )
    assert _errors(response) == {name: NoError}
    await _wait_for_leaders(admin, name, partitions)


async def _wait_for_leaders(admin: Any, name: str, partitions: int) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        (described,) = await admin.describe_topics([name])
        ready = [p for p in described["partitions"] if p["error_code"] == 0 and p["leader"] >= 0]
        if described["error_code"] == 0 and len(ready) == partitions:
            return
        assert time.monotonic() < deadline, f"{name} not ready: {described}"
        await asyncio.sleep(0.05)


def _records(rng: random.Random, count: int, prefix: str) -> list[Record]:
    """Seeded records: keys, values of varied size (some compressible), headers."""
    records: list[Record] = []
    for i in range(count):
        size = rng.choice([0, 1, 17, 300, 2000])
        if i % 2:
            value = rng.randbytes(size)
        else:
            value = (f"{prefix}-{i}-".encode() * (size // 8 + 1))[:size]
        headers = (("seq", str(i).encode()), ("src", prefix.encode()))[: i % 3]
        records.append((f"{prefix}-key-{i}".encode(), value, headers))
    return records


async def _send_all(
    producer: Any, topic: str, records: Sequence[Record], partition: int = 0
) -> list[Any]:
    futures = [
        await producer.send(topic, key=key, value=value, headers=list(headers), partition=partition)
        for key, value, headers in records
    ]
    return list(await asyncio.wait_for(asyncio.gather(*futures), WAIT))


async def _poll(consumer: Any, count: int) -> list[Any]:
    """getmany until ``count`` records arrived (fail at the deadline); them in order."""
    deadline = time.monotonic() + WAIT
    got: list[Any] = []
    while len(got) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{len(got)} of {count} records within {WAIT}s")
        batches = await consumer.getmany(timeout_ms=int(min(remaining, 1.0) * 1000))
        for batch in batches.values():
            got.extend(batch)
    return got


async def _read(bootstrap: str, tp: Any, start: int, count: int, **config: Any) -> list[Any]:
    async with _consumer(bootstrap, **config) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, start)
        records = await _poll(consumer, count)
        # Exactly what was asked for, from the start offset on, nothing past it.
        assert [r.offset for r in records] == list(range(start, start + count))
        assert (await consumer.end_offsets([tp]))[tp] == start + count
        # The high watermark the Fetch response carried.
        assert consumer.highwater(tp) == start + count
        return records


def _content(records: Sequence[Any]) -> list[Record]:
    return [(r.key, r.value, tuple(r.headers)) for r in records]


# --- ApiVersions and Metadata ----------------------------------------------------------


@pytest.mark.compat("ApiVersions", "aiokafka")
@pytest.mark.compat("Metadata", "aiokafka")
def test_bootstrap_and_metadata(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, "aio-metadata", partitions=3)
            cluster = await admin.describe_cluster()
            (node,) = cluster["brokers"]
            assert (node["host"], node["port"]) == (broker.host, broker.port)
            assert cluster["controller_id"] == node["node_id"]
            (described,) = await admin.describe_topics(["aio-metadata"])
            partitions = sorted(described["partitions"], key=lambda p: p["partition"])
            assert [p["partition"] for p in partitions] == [0, 1, 2]
            for p in partitions:
                assert (p["leader"], p["replicas"], p["isr"]) == (
                    node["node_id"],
                    [node["node_id"]],
                    [node["node_id"]],
                )
            # Every connection asked ApiVersions first; what the broker must at least
            # advertise (Kafka 4's floors, minikafka's ceilings), by API key.
            connections = list(admin._client._conns.values())
            assert connections
            for connection in connections:
                for api_key, (low, high) in _ADVERTISED.items():
                    advertised_low, advertised_high = connection._versions[api_key]
                    assert advertised_low <= low <= high <= advertised_high, api_key

            # Metadata v4+ allow_auto_topic_creation=false: unknown stays unknown.
            request = MetadataRequest(["aio-metadata-missing"], allow_auto_topic_creation=False)
            response = (await admin._send_request(request)).to_object()
            (missing,) = response["topics"]
            assert for_code(missing["error_code"]) is UnknownTopicOrPartitionError
            assert "aio-metadata-missing" not in await admin.list_topics()
            # aiokafka's admin asks with allow_auto_topic_creation=true (its default).
            (created,) = await admin.describe_topics(["aio-metadata-created"])
            assert created["error_code"] == 0
            assert "aio-metadata-created" in await admin.list_topics()

        # auto.create.topics.enable: the producer's Metadata request creates the topic.
        async with _producer(broker.bootstrap) as producer:
            metadata = await producer.send_and_wait("aio-metadata-auto", b"auto", key=b"k")
        assert (metadata.topic, metadata.offset) == ("aio-metadata-auto", 0)
        tp = TopicPartition("aio-metadata-auto", metadata.partition)
        assert _content(await _read(broker.bootstrap, tp, 0, 1)) == [(b"k", b"auto", ())]

    asyncio.run(run())


# --- Admin: CreateTopics, DescribeConfigs, CreatePartitions, DeleteTopics --------------


@pytest.mark.compat("CreateTopics", "aiokafka")
def test_create_topics(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, "aio-create", partitions=4)
            assert "aio-create" in await admin.list_topics()

            async def error(topic: NewTopic, **kwargs: Any) -> type[Exception]:
                response = await admin.create_topics([topic], **kwargs)
                return _errors(response)[topic.name]

            assert await error(NewTopic("aio-create", 1, 1)) is TopicAlreadyExistsError
            assert await error(NewTopic("aio-create-rf3", 1, 3)) is InvalidReplicationFactorError
            assert await error(NewTopic("aio-create-p0", 0, 1)) is InvalidPartitionsError
            assert await error(NewTopic("aio/create bad", 1, 1)) is InvalidTopicError
            # validate_only checks and creates nothing.
            dry = NewTopic("aio-create-dry", 2, 1)
            assert await error(dry, validate_only=True) is NoError
            topics = await admin.list_topics()
            for absent in ("aio-create-rf3", "aio-create-p0", "aio/create bad", "aio-create-dry"):
                assert absent not in topics
            # One request, one good and one bad topic: each gets its own result.
            response = await admin.create_topics(
                [NewTopic("aio-create-mixed", 1, 1), NewTopic("aio-create", 1, 1)]
            )
            assert _errors(response) == {
                "aio-create-mixed": NoError,
                "aio-create": TopicAlreadyExistsError,
            }

    asyncio.run(run())


@pytest.mark.compat("DescribeConfigs", "aiokafka")
def test_describe_configs(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, "aio-configs", configs={"retention.ms": "3600000"})
            (response,) = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "aio-configs")]
            )
            (resource,) = response.resources
            error_code, _, resource_type, name, entries = resource
            assert (error_code, resource_type, name) == (0, ConfigResourceType.TOPIC, "aio-configs")
            # (name, value, read_only, config_source, is_sensitive, synonyms)
            by_name = {entry[0]: entry for entry in entries}
            assert by_name["retention.ms"][1] == "3600000"
            assert by_name["retention.ms"][3] == 1  # DYNAMIC_TOPIC_CONFIG
            assert by_name["cleanup.policy"][1] == "delete"
            assert by_name["cleanup.policy"][3] == 5  # DEFAULT_CONFIG
            assert not any(entry[4] for entry in entries)  # nothing sensitive in a topic

            named = ConfigResource(
                ConfigResourceType.TOPIC,
                "aio-configs",
                configs={"segment.bytes": None, "retention.ms": None},
            )
            (response,) = await admin.describe_configs([named], include_synonyms=True)
            (resource,) = response.resources
            assert {entry[0]: entry[1] for entry in resource[4]} == {
                "segment.bytes": "1073741824",
                "retention.ms": "3600000",
            }

    asyncio.run(run())


@pytest.mark.compat("CreatePartitions", "aiokafka")
def test_create_partitions(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, "aio-partitions", partitions=2)
            response = await admin.create_partitions({"aio-partitions": NewPartitions(5)})
            assert [(t[0], t[1]) for t in response.topic_errors] == [("aio-partitions", 0)]
            await _wait_for_leaders(admin, "aio-partitions", 5)

            async with _producer(broker.bootstrap) as producer:
                assert await producer.partitions_for("aio-partitions") == {0, 1, 2, 3, 4}
                metadata = await producer.send_and_wait(
                    "aio-partitions", b"in partition 4", key=b"k", partition=4
                )
            assert (metadata.partition, metadata.offset) == (4, 0)
            records = await _read(broker.bootstrap, TopicPartition("aio-partitions", 4), 0, 1)
            assert _content(records) == [(b"k", b"in partition 4", ())]

            with pytest.raises(InvalidPartitionsError):  # fewer than it has
                await admin.create_partitions({"aio-partitions": NewPartitions(3)})
            with pytest.raises(UnknownTopicOrPartitionError):
                await admin.create_partitions({"aio-partitions-missing": NewPartitions(3)})
            await admin.create_partitions({"aio-partitions": NewPartitions(8)}, validate_only=True)
            (unchanged,) = await admin.describe_topics(["aio-partitions"])
            assert len(unchanged["partitions"]) == 5

    asyncio.run(run())


@pytest.mark.compat("DeleteTopics", "aiokafka")
def test_delete_topics(broker: BrokerProcess) -> None:
    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, "aio-delete", partitions=2)
            async with _producer(broker.bootstrap) as producer:
                await producer.send_and_wait("aio-delete", b"gone after delete", partition=1)

            assert _errors(await admin.delete_topics(["aio-delete"])) == {"aio-delete": NoError}
            deadline = time.monotonic() + WAIT
            while "aio-delete" in await admin.list_topics():
                assert time.monotonic() < deadline, "deleted topic still listed"
                await asyncio.sleep(0.05)
            response = await admin.delete_topics(["aio-delete"])
            assert _errors(response) == {"aio-delete": UnknownTopicOrPartitionError}

            # A topic created again under the same name starts empty.
            await _create_topic(admin, "aio-delete", partitions=2)
        async with _consumer(broker.bootstrap) as consumer:
            tps = [TopicPartition("aio-delete", p) for p in range(2)]
            assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
            assert await consumer.end_offsets(tps) == dict.fromkeys(tps, 0)

    asyncio.run(run())


# --- Produce -------------------------------------------------------------------------


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_acks(broker: BrokerProcess, acks: int | str) -> None:
    topic = f"aio-acks-{acks}"
    records = _records(random.Random(f"acks-{acks}"), 50, topic)

    async def run() -> None:
        async with _producer(broker.bootstrap, acks=acks, linger_ms=5) as producer:
            sent = await _send_all(producer, topic, records)
        if acks != 0:  # acks=0 gets no response, so no offsets
            assert [m.offset for m in sent] == list(range(50))
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap) as consumer:
            # With acks=0 the records were only written to the socket: wait for them.
            deadline = time.monotonic() + WAIT
            while (await consumer.end_offsets([tp]))[tp] < 50:
                assert time.monotonic() < deadline, "acks=0 records never landed"
                await asyncio.sleep(0.05)
        assert _content(await _read(broker.bootstrap, tp, 0, 50)) == records

    asyncio.run(run())


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_compression(broker: BrokerProcess, codec: str | None) -> None:
    topic = f"aio-codec-{codec or 'none'}"
    records = _records(random.Random(f"codec-{codec}"), 200, topic)

    async def run() -> None:
        # Lingering packs many records into each (compressed) batch.
        async with _producer(
            broker.bootstrap, compression_type=codec, linger_ms=50, max_batch_size=16 * 1024
        ) as producer:
            sent = await _send_all(producer, topic, records)
            # A batch built by hand (send_batch) goes out as one record batch.
            batch = producer.create_batch()
            for i in range(20):
                assert batch.append(key=b"b%d" % i, value=b"batch %d" % i, timestamp=None)
            batch.close()
            whole = await asyncio.wait_for(
                await producer.send_batch(batch, topic, partition=0), WAIT
            )
        assert [m.offset for m in sent] == list(range(200))
        assert whole.offset == 200
        tp = TopicPartition(topic, 0)
        expected = records + [(b"b%d" % i, b"batch %d" % i, ()) for i in range(20)]
        assert _content(await _read(broker.bootstrap, tp, 0, 220)) == expected
        # From the middle of a batch: the broker hands the whole batch, the client skips.
        assert _content(await _read(broker.bootstrap, tp, 137, 83)) == expected[137:]
        assert _content(await _read(broker.bootstrap, tp, 210, 10)) == expected[210:]

    asyncio.run(run())


@pytest.mark.compat("InitProducerId", "aiokafka")
@pytest.mark.compat("Produce", "aiokafka")
def test_idempotent_producer(broker: BrokerProcess) -> None:
    topic = "aio-idempotent"
    records = _records(random.Random("idempotent"), 100, topic)

    async def run() -> None:
        async with _producer(broker.bootstrap, enable_idempotence=True, linger_ms=5) as producer:
            sent = await _send_all(producer, topic, records)
            # InitProducerId gave the producer an id; its batches carry it and sequences.
            producer_id = producer._txn_manager.producer_id
            assert producer_id >= 0
        assert [m.offset for m in sent] == list(range(100))
        async with _producer(broker.bootstrap, enable_idempotence=True) as other:
            await other.send_and_wait(topic, b"producer", key=b"second", partition=0)
            assert other._txn_manager.producer_id != producer_id
        read = _content(await _read(broker.bootstrap, TopicPartition(topic, 0), 0, 101))
        assert read == [*records, (b"second", b"producer", ())]

    asyncio.run(run())


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
def test_keyed_records_keep_partition_and_order(broker: BrokerProcess) -> None:
    topic = "aio-keyed"
    rng = random.Random("keyed")
    keys = [f"key-{i}".encode() for i in range(10)]
    sent_order = [
        (key, f"{key.decode()}#{i}".encode()) for i, key in enumerate(rng.choices(keys, k=300))
    ]

    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, topic, partitions=4)
        async with _producer(broker.bootstrap, linger_ms=5) as producer:
            futures = [await producer.send(topic, value, key=key) for key, value in sent_order]
            placed = await asyncio.wait_for(asyncio.gather(*futures), WAIT)
        partition_of: dict[bytes, int] = {}
        for (key, _), metadata in zip(sent_order, placed, strict=True):
            assert partition_of.setdefault(key, metadata.partition) == metadata.partition
        assert len(set(partition_of.values())) > 1  # ten keys spread over four partitions

        async with _consumer(broker.bootstrap) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(4)])
            await consumer.seek_to_beginning()
            got = await _poll(consumer, 300)
        for p in range(4):
            in_partition = [(r.key, r.value) for r in got if r.partition == p]
            expected = [kv for kv in sent_order if partition_of[kv[0]] == p]
            assert in_partition == expected
            assert [r.offset for r in got if r.partition == p] == list(range(len(expected)))

    asyncio.run(run())


@pytest.mark.compat("Produce", "aiokafka")
def test_record_too_large(broker: BrokerProcess) -> None:
    topic = "aio-too-large"

    async def run() -> None:
        # The client would refuse it itself; raise its limit so the broker is the one to say no.
        async with _producer(broker.bootstrap, max_request_size=4 * 1024 * 1024) as producer:
            with pytest.raises(MessageSizeTooLargeError):
                await producer.send_and_wait(topic, b"x" * 2_000_000, key=b"big", partition=0)
            fits = await producer.send_and_wait(topic, b"y" * 900_000, key=b"ok", partition=0)
        assert fits.offset == 0  # the rejected batch took no offset
        (record,) = await _read(broker.bootstrap, TopicPartition(topic, 0), 0, 1)
        assert (record.key, record.value) == (b"ok", b"y" * 900_000)

    asyncio.run(run())


# --- Consume by assign ---------------------------------------------------------------


async def _fill(bootstrap: str, topic: str, records: Sequence[Record]) -> None:
    async with _producer(bootstrap, linger_ms=5) as producer:
        await _send_all(producer, topic, records)


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_consume_from_earliest(broker: BrokerProcess) -> None:
    topic = "aio-earliest"
    records = _records(random.Random("earliest"), 60, topic)

    async def run() -> None:
        await _fill(broker.bootstrap, topic, records)
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap) as consumer:
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            assert await consumer.position(tp) == 0
            got = await _poll(consumer, 60)
        assert [r.offset for r in got] == list(range(60))
        assert _content(got) == records
        assert all(r.topic == topic and r.partition == 0 for r in got)

    asyncio.run(run())


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_consume_from_latest(broker: BrokerProcess) -> None:
    topic = "aio-latest"
    old = _records(random.Random("latest-old"), 20, "old")
    new = _records(random.Random("latest-new"), 5, "new")

    async def run() -> None:
        await _fill(broker.bootstrap, topic, old)
        tp = TopicPartition(topic, 0)
        # A long fetch.max.wait: the broker must answer when data arrives, not at the timeout.
        async with _consumer(broker.bootstrap, fetch_max_wait_ms=5000) as consumer:
            consumer.assign([tp])
            await consumer.seek_to_end(tp)
            assert await consumer.position(tp) == 20
            started = time.monotonic()
            assert await consumer.getmany(timeout_ms=200) == {}
            await _fill(broker.bootstrap, topic, new)
            got = await _poll(consumer, 5)
            waited = time.monotonic() - started
        assert [r.offset for r in got] == list(range(20, 25))
        assert _content(got) == new
        assert waited < 4.0, f"fetch waited {waited:.1f}s although records had arrived"

    asyncio.run(run())


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_log_append_time(broker: BrokerProcess, codec: str | None) -> None:
    """message.timestamp.type=LogAppendTime: the broker stamps the batches it appends."""
    topic = f"aio-log-append-time-{codec or 'none'}"

    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, topic, configs={"message.timestamp.type": "LogAppendTime"})
        async with _producer(broker.bootstrap, compression_type=codec, linger_ms=20) as producer:
            before = int(time.time() * 1000)
            futures = [
                await producer.send(
                    topic, b"v%d" % i, key=b"%d" % i, partition=0, timestamp_ms=1000 + i
                )
                for i in range(10)
            ]
            sent = await asyncio.wait_for(asyncio.gather(*futures), WAIT)
            after = int(time.time() * 1000)
        # The Produce response carries the append time; the producer's own stamps are gone.
        for metadata in sent:
            assert metadata.timestamp_type == 1
            assert before - 1000 <= metadata.timestamp <= after + 1000
        got = await _read(broker.bootstrap, TopicPartition(topic, 0), 0, 10)
        assert [(r.key, r.value) for r in got] == [(b"%d" % i, b"v%d" % i) for i in range(10)]
        assert [r.timestamp for r in got] == [m.timestamp for m in sent]
        assert all(r.timestamp_type == 1 for r in got)  # LogAppendTime

    asyncio.run(run())


@pytest.mark.compat("Fetch", "aiokafka")
def test_consume_from_offset(broker: BrokerProcess) -> None:
    topic = "aio-offset"
    records = _records(random.Random("offset"), 40, topic)

    async def run() -> None:
        await _fill(broker.bootstrap, topic, records)
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 25)
            got = await _poll(consumer, 15)
            assert [r.offset for r in got] == list(range(25, 40))
            assert _content(got) == records[25:]
            # Seek back: the same records again.
            consumer.seek(tp, 3)
            again = await _poll(consumer, 37)
        assert _content(again) == records[3:]

    asyncio.run(run())


@pytest.mark.compat("ListOffsets", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
def test_consume_from_timestamp(broker: BrokerProcess) -> None:
    topic = "aio-timestamp"
    base = 1_700_000_000_000

    async def run() -> None:
        async with _producer(broker.bootstrap, linger_ms=5) as producer:
            futures = [
                await producer.send(
                    topic, b"at %d" % i, key=b"%d" % i, partition=0, timestamp_ms=base + 1000 * i
                )
                for i in range(10)
            ]
            await asyncio.wait_for(asyncio.gather(*futures), WAIT)
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap) as consumer:
            found = (await consumer.offsets_for_times({tp: base + 4500}))[tp]
            assert (found.offset, found.timestamp) == (5, base + 5000)
            exact = (await consumer.offsets_for_times({tp: base + 3000}))[tp]
            assert (exact.offset, exact.timestamp) == (3, base + 3000)
            first = (await consumer.offsets_for_times({tp: 0}))[tp]
            assert (first.offset, first.timestamp) == (0, base)
            assert await consumer.offsets_for_times({tp: base + 60_000}) == {tp: None}
            consumer.assign([tp])
            consumer.seek(tp, found.offset)
            got = await _poll(consumer, 5)
        assert [(r.offset, r.timestamp, r.value) for r in got] == [
            (i, base + 1000 * i, b"at %d" % i) for i in range(5, 10)
        ]
        assert all(r.timestamp_type == 0 for r in got)  # CreateTime

    asyncio.run(run())


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_read_committed(broker: BrokerProcess) -> None:
    """isolation_level=read_committed: without transactions everything is committed."""
    topic = "aio-read-committed"
    records = _records(random.Random("read-committed"), 30, topic)

    async def run() -> None:
        await _fill(broker.bootstrap, topic, records)
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap, isolation_level="read_committed") as consumer:
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = await _poll(consumer, 30)
            # The last stable offset the Fetch response carried: the high watermark.
            assert consumer.last_stable_offset(tp) == consumer.highwater(tp) == 30
            assert await consumer.end_offsets([tp]) == {tp: 30}
        assert _content(got) == records

    asyncio.run(run())


@pytest.mark.compat("ListOffsets", "aiokafka")
def test_beginning_and_end_offsets(broker: BrokerProcess) -> None:
    topic = "aio-offsets"

    async def run() -> None:
        async with _admin(broker.bootstrap) as admin:
            await _create_topic(admin, topic, partitions=3)
        async with _producer(broker.bootstrap, linger_ms=5) as producer:
            for partition, count in [(0, 7), (2, 13)]:
                await _send_all(producer, topic, [(b"k", b"v", ())] * count, partition=partition)
        tps = [TopicPartition(topic, p) for p in range(3)]
        async with _consumer(broker.bootstrap) as consumer:
            assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
            assert await consumer.end_offsets(tps) == dict(zip(tps, [7, 0, 13], strict=True))

    asyncio.run(run())


@pytest.mark.compat("Fetch", "aiokafka")
def test_fetch_returns_record_larger_than_fetch_size(broker: BrokerProcess) -> None:
    # KIP-74: a record batch bigger than the fetch limits still comes back (alone).
    topic = "aio-fetch-size"
    records: list[Record] = [(b"%d" % i, bytes([i]) * 5000, ()) for i in range(30)]

    async def run() -> None:
        await _fill(broker.bootstrap, topic, records)
        got = await _read(
            broker.bootstrap,
            TopicPartition(topic, 0),
            0,
            30,
            max_partition_fetch_bytes=1024,
            fetch_max_bytes=2048,
        )
        assert _content(got) == records

    asyncio.run(run())


@pytest.mark.compat("Fetch", "aiokafka")
def test_fetch_out_of_range(broker: BrokerProcess) -> None:
    topic = "aio-out-of-range"
    records = _records(random.Random("out-of-range"), 5, topic)

    async def run() -> None:
        await _fill(broker.bootstrap, topic, records)
        tp = TopicPartition(topic, 0)
        async with _consumer(broker.bootstrap) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 1000)
            with pytest.raises(OffsetOutOfRangeError):
                await asyncio.wait_for(consumer.getone(), WAIT)
        # With a reset policy the client falls back to the earliest offset.
        async with _consumer(broker.bootstrap, auto_offset_reset="earliest") as resetting:
            resetting.assign([tp])
            resetting.seek(tp, 1000)
            got = await _poll(resetting, 5)
        assert _content(got) == records

    asyncio.run(run())


# --- Across a broker restart ---------------------------------------------------------


def _bounce(broker: BrokerProcess, how: str) -> None:
    if how == "stop":
        broker.restart()
    else:
        broker.kill()
        broker.start()


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("InitProducerId", "aiokafka")
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_read_back_across_restart(own_broker: BrokerProcess, how: str) -> None:
    """Acknowledged records survive a clean restart and a SIGKILL; clients reconnect."""
    topic = "aio-restart"
    before = _records(random.Random("restart-before"), 80, "before")
    after = _records(random.Random("restart-after"), 20, "after")
    tp = TopicPartition(topic, 0)

    async def run() -> None:
        # The same producer and consumer live through the restart and reconnect.
        async with (
            _producer(
                own_broker.bootstrap, enable_idempotence=True, linger_ms=5, retry_backoff_ms=50
            ) as producer,
            _consumer(own_broker.bootstrap, retry_backoff_ms=50) as consumer,
        ):
            await _send_all(producer, topic, before)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            assert _content(await _poll(consumer, 80)) == before

            await asyncio.to_thread(_bounce, own_broker, how)

            sent = await _send_all(producer, topic, after)
            assert [m.offset for m in sent] == list(range(80, 100))
            assert _content(await _poll(consumer, 20)) == after
        # A fresh consumer after the restart reads it all, in order.
        assert _content(await _read(own_broker.bootstrap, tp, 0, 100)) == before + after

    asyncio.run(run())
