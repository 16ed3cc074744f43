"""aiokafka (0.14) against a real minikafka broker: admin, produce, consume by assign.

ARCHITECTURE.md, "Tests": each real client drives the broker the way a user does. Consumers
use ``assign`` without a group (groups are in ``test_groups_aiokafka.py``). Records are
read back byte for byte: keys, values, headers, timestamps and their order within a
partition; every wait has a deadline. The produce and consume scenarios are those of
``_clients.py``, shared with kafka-python; this module is their adapter
(:class:`Aiokafka`), and adds aiokafka's admin client and its hand-built batches.

aiokafka is asyncio while the repository runs pytest under trio: each test's coroutines
run on an asyncio event loop in a thread of its own (``_clients.AsyncioThread``), and the
adapter hands them over and waits for the answers, so the scenarios stay plain functions.
A few checks read aiokafka's internals, where it keeps no public view: the versions each
connection learned from ApiVersions, a Metadata request without auto-creation, and the
idempotent producer's id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, TypeVar

import attrs
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
from minikafka.net import ApiKey
from tests.compat import _clients as scenarios
from tests.compat._clients import WAIT, AsyncioThread, Record, Stamps, content, read

T = TypeVar("T")

# API -> (min, max): the versions the broker advertises at least.
_ADVERTISED = {
    ApiKey.PRODUCE: (3, 8),
    ApiKey.FETCH: (4, 11),
    ApiKey.LIST_OFFSETS: (1, 5),
    ApiKey.METADATA: (1, 8),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 4),
    ApiKey.DELETE_TOPICS: (1, 3),
    ApiKey.INIT_PRODUCER_ID: (0, 1),
    ApiKey.DESCRIBE_CONFIGS: (1, 3),
    ApiKey.CREATE_PARTITIONS: (0, 1),
}


# --- aiokafka's clients, on the event loop ---------------------------------------------------


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
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, client_id="compat-producer", **config
    )
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
    # aiokafka's admin client does not wait for the partitions' leaders: ask for them.
    deadline = time.monotonic() + WAIT
    while True:
        (described,) = await admin.describe_topics([name])
        ready = [
            p
            for p in described["partitions"]
            if p["error_code"] == 0 and p["leader"] >= 0
        ]
        if described["error_code"] == 0 and len(ready) == partitions:
            return
        assert time.monotonic() < deadline, f"{name} not ready: {described}"
        await asyncio.sleep(0.05)


# --- the adapter ---------------------------------------------------------------------------


@attrs.frozen
class _Producer:
    """An AIOKafkaProducer, driven from the test's thread."""

    loop: AsyncioThread
    producer: Any

    def send_all(
        self,
        topic: str,
        records: Sequence[Record],
        partition: int | None = 0,
        at: Stamps = None,
    ) -> list[Any]:
        times: Sequence[int | None] = at or [None] * len(records)
        return self.loop.run(self._send_all(topic, records, partition, times))

    async def _send_all(
        self,
        topic: str,
        records: Sequence[Record],
        partition: int | None,
        times: Sequence[int | None],
    ) -> list[Any]:
        futures = [
            await self.producer.send(
                topic,
                value,
                key=key,
                headers=list(headers),
                partition=partition,
                timestamp_ms=stamp,
            )
            for (key, value, headers), stamp in zip(records, times, strict=True)
        ]
        return list(await asyncio.wait_for(asyncio.gather(*futures), WAIT))

    def send_batch(self, topic: str, records: Sequence[Record]) -> Any:
        """``records`` in one batch built by hand (``create_batch``, ``send_batch``) to
        partition 0: one record batch on the wire."""

        async def send() -> Any:
            batch = self.producer.create_batch()
            for key, value, _ in records:
                assert batch.append(key=key, value=value, timestamp=None)
            batch.close()
            sent = await self.producer.send_batch(batch, topic, partition=0)
            return await asyncio.wait_for(sent, WAIT)

        return self.loop.run(send())

    def producer_id(self) -> int:
        producer_id: int = self.producer._txn_manager.producer_id  # no public view
        return producer_id


@attrs.frozen
class _Consumer:
    """An AIOKafkaConsumer, driven from the test's thread."""

    loop: AsyncioThread
    consumer: Any

    def _call(self, method: Callable[..., T], *args: Any) -> T:
        """A plain method of the consumer, called on the loop's thread (aiokafka's
        state belongs to its loop)."""

        async def call() -> T:
            return method(*args)

        return self.loop.run(call())

    def assign(self, tps: Sequence[Any]) -> None:
        self._call(self.consumer.assign, list(tps))

    def seek(self, tp: Any, offset: int) -> None:
        self._call(self.consumer.seek, tp, offset)

    def seek_to_beginning(self, *tps: Any) -> None:
        self.loop.run(self.consumer.seek_to_beginning(*tps))

    def seek_to_end(self, tp: Any) -> None:
        self.loop.run(self.consumer.seek_to_end(tp))

    def position(self, tp: Any) -> int:
        position: int = self.loop.run(self.consumer.position(tp))
        return position

    def poll_once(self, timeout_ms: int) -> dict[Any, list[Any]]:
        batches: dict[Any, list[Any]] = self.loop.run(
            self.consumer.getmany(timeout_ms=timeout_ms)
        )
        return batches

    def records(self, count: int) -> list[Any]:
        return self.loop.run(self._records(count))

    async def _records(self, count: int) -> list[Any]:
        deadline = time.monotonic() + WAIT
        got: list[Any] = []
        while len(got) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{len(got)} of {count} records within {WAIT}s")
            batches = await self.consumer.getmany(
                timeout_ms=int(min(remaining, 1.0) * 1000)
            )
            for batch in batches.values():
                got.extend(batch)
        return got

    def fails_out_of_range(self) -> bool:
        try:
            self.loop.run(asyncio.wait_for(self.consumer.getone(), WAIT))
        except OffsetOutOfRangeError:
            return True
        except TimeoutError:
            return False
        return False  # a record from an out-of-range offset

    def beginning_offsets(self, tps: Sequence[Any]) -> dict[Any, int]:
        offsets: dict[Any, int] = self.loop.run(self.consumer.beginning_offsets(tps))
        return offsets

    def end_offsets(self, tps: Sequence[Any]) -> dict[Any, int]:
        offsets: dict[Any, int] = self.loop.run(self.consumer.end_offsets(tps))
        return offsets

    def offsets_for_times(self, times: Mapping[Any, int]) -> dict[Any, Any]:
        found: dict[Any, Any] = self.loop.run(
            self.consumer.offsets_for_times(dict(times))
        )
        return found

    def highwater(self, tp: Any) -> int | None:
        offset: int | None = self._call(self.consumer.highwater, tp)
        return offset

    def last_stable_offset(self, tp: Any) -> int | None:
        offset: int | None = self._call(self.consumer.last_stable_offset, tp)
        return offset


@attrs.frozen
class Aiokafka:
    """aiokafka, as the produce and consume scenarios use it: its coroutines run on
    ``loop``, which the fixture closes at the end of the test."""

    bootstrap: str
    loop: AsyncioThread
    prefix = "aio"
    too_large = MessageSizeTooLargeError
    keeps_last_stable_offset = True

    def tp(self, topic: str, partition: int) -> Any:
        return TopicPartition(topic, partition)

    def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> None:
        async def create() -> None:
            async with _admin(self.bootstrap) as admin:
                await _create_topic(admin, name, partitions, configs)

        self.loop.run(create())

    @contextmanager
    def _entered(self, manager: AbstractAsyncContextManager[T]) -> Iterator[T]:
        """An async context manager of the loop, entered and left from the test's thread."""
        entered = self.loop.run(manager.__aenter__())
        try:
            yield entered
        finally:
            self.loop.run(manager.__aexit__(None, None, None))

    @contextmanager
    def producer(self, **config: Any) -> Iterator[_Producer]:
        with self._entered(_producer(self.bootstrap, **config)) as producer:
            yield _Producer(self.loop, producer)

    @contextmanager
    def consumer(self, **config: Any) -> Iterator[_Consumer]:
        with self._entered(_consumer(self.bootstrap, **config)) as consumer:
            yield _Consumer(self.loop, consumer)

    def acks_config(self, acks: int | str) -> dict[str, Any]:
        return {"acks": acks}

    def batch_config(self, codec: str | None, batch_bytes: int) -> dict[str, Any]:
        return {"compression_type": codec, "max_batch_size": batch_bytes}

    def too_large_config(self) -> dict[str, Any]:
        # The client would refuse it itself; raise its limit so the broker is the one to say no.
        return {"max_request_size": 4 * 1024 * 1024}

    def reconnect_config(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"retry_backoff_ms": 50}, {"retry_backoff_ms": 50}


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[Aiokafka]:
    with AsyncioThread() as loop:
        yield Aiokafka(broker.bootstrap, loop)


# --- ApiVersions and Metadata ----------------------------------------------------------


@pytest.mark.compat("ApiVersions", "aiokafka")
@pytest.mark.compat("Metadata", "aiokafka")
def test_bootstrap_and_metadata(broker: BrokerProcess, client: Aiokafka) -> None:
    async def run() -> None:
        async with _admin(client.bootstrap) as admin:
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
            request = MetadataRequest(
                ["aio-metadata-missing"], allow_auto_topic_creation=False
            )
            response = (await admin._send_request(request)).to_object()
            (missing,) = response["topics"]
            assert for_code(missing["error_code"]) is UnknownTopicOrPartitionError
            assert "aio-metadata-missing" not in await admin.list_topics()
            # aiokafka's admin asks with allow_auto_topic_creation=true (its default).
            (created,) = await admin.describe_topics(["aio-metadata-created"])
            assert created["error_code"] == 0
            assert "aio-metadata-created" in await admin.list_topics()

    client.loop.run(run())
    # auto.create.topics.enable: the producer's Metadata request creates the topic.
    with client.producer() as producer:
        (metadata,) = producer.send_all(
            "aio-metadata-auto", [(b"k", b"auto", ())], None
        )
    assert (metadata.topic, metadata.offset) == ("aio-metadata-auto", 0)
    tp = TopicPartition("aio-metadata-auto", metadata.partition)
    assert content(read(client, tp, 0, 1)) == [(b"k", b"auto", ())]


# --- Admin: CreateTopics, DescribeConfigs, CreatePartitions, DeleteTopics --------------


@pytest.mark.compat("CreateTopics", "aiokafka")
def test_create_topics(client: Aiokafka) -> None:
    async def run() -> None:
        async with _admin(client.bootstrap) as admin:
            await _create_topic(admin, "aio-create", partitions=4)
            assert "aio-create" in await admin.list_topics()

            async def error(topic: NewTopic, **kwargs: Any) -> type[Exception]:
                response = await admin.create_topics([topic], **kwargs)
                return _errors(response)[topic.name]

            assert await error(NewTopic("aio-create", 1, 1)) is TopicAlreadyExistsError
            assert (
                await error(NewTopic("aio-create-rf3", 1, 3))
                is InvalidReplicationFactorError
            )
            assert (
                await error(NewTopic("aio-create-p0", 0, 1)) is InvalidPartitionsError
            )
            assert await error(NewTopic("aio/create bad", 1, 1)) is InvalidTopicError
            # validate_only checks and creates nothing.
            dry = NewTopic("aio-create-dry", 2, 1)
            assert await error(dry, validate_only=True) is NoError
            topics = await admin.list_topics()
            for absent in (
                "aio-create-rf3",
                "aio-create-p0",
                "aio/create bad",
                "aio-create-dry",
            ):
                assert absent not in topics
            # One request, one good and one bad topic: each gets its own result.
            response = await admin.create_topics(
                [NewTopic("aio-create-mixed", 1, 1), NewTopic("aio-create", 1, 1)]
            )
            assert _errors(response) == {
                "aio-create-mixed": NoError,
                "aio-create": TopicAlreadyExistsError,
            }

    client.loop.run(run())


@pytest.mark.compat("DescribeConfigs", "aiokafka")
def test_describe_configs(client: Aiokafka) -> None:
    async def run() -> None:
        async with _admin(client.bootstrap) as admin:
            await _create_topic(
                admin, "aio-configs", configs={"retention.ms": "3600000"}
            )
            (response,) = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "aio-configs")]
            )
            (resource,) = response.resources
            error_code, _, resource_type, name, entries = resource
            assert (error_code, resource_type, name) == (
                0,
                ConfigResourceType.TOPIC,
                "aio-configs",
            )
            # (name, value, read_only, config_source, is_sensitive, synonyms)
            by_name = {entry[0]: entry for entry in entries}
            assert by_name["retention.ms"][1] == "3600000"
            assert by_name["retention.ms"][3] == 1  # DYNAMIC_TOPIC_CONFIG
            assert by_name["cleanup.policy"][1] == "delete"
            assert by_name["cleanup.policy"][3] == 5  # DEFAULT_CONFIG
            # nothing sensitive in a topic
            assert not any(entry[4] for entry in entries)

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

    client.loop.run(run())


@pytest.mark.compat("CreatePartitions", "aiokafka")
def test_create_partitions(client: Aiokafka) -> None:
    async def grow() -> None:
        async with _admin(client.bootstrap) as admin:
            await _create_topic(admin, "aio-partitions", partitions=2)
            response = await admin.create_partitions(
                {"aio-partitions": NewPartitions(5)}
            )
            assert [(t[0], t[1]) for t in response.topic_errors] == [
                ("aio-partitions", 0)
            ]
            await _wait_for_leaders(admin, "aio-partitions", 5)

    async def refuse() -> None:
        async with _admin(client.bootstrap) as admin:
            with pytest.raises(InvalidPartitionsError):  # fewer than it has
                await admin.create_partitions({"aio-partitions": NewPartitions(3)})
            with pytest.raises(UnknownTopicOrPartitionError):
                await admin.create_partitions(
                    {"aio-partitions-missing": NewPartitions(3)}
                )
            await admin.create_partitions(
                {"aio-partitions": NewPartitions(8)}, validate_only=True
            )
            (unchanged,) = await admin.describe_topics(["aio-partitions"])
            assert len(unchanged["partitions"]) == 5

    client.loop.run(grow())
    with client.producer() as producer:
        partitions = client.loop.run(producer.producer.partitions_for("aio-partitions"))
        assert partitions == {0, 1, 2, 3, 4}
        (metadata,) = producer.send_all(
            "aio-partitions", [(b"k", b"in partition 4", ())], 4
        )
    assert (metadata.partition, metadata.offset) == (4, 0)
    records = read(client, TopicPartition("aio-partitions", 4), 0, 1)
    assert content(records) == [(b"k", b"in partition 4", ())]
    client.loop.run(refuse())


@pytest.mark.compat("DeleteTopics", "aiokafka")
def test_delete_topics(client: Aiokafka) -> None:
    async def run() -> None:
        async with _admin(client.bootstrap) as admin:
            await _create_topic(admin, "aio-delete", partitions=2)
            async with _producer(client.bootstrap) as producer:
                await producer.send_and_wait(
                    "aio-delete", b"gone after delete", partition=1
                )

            assert _errors(await admin.delete_topics(["aio-delete"])) == {
                "aio-delete": NoError
            }
            deadline = time.monotonic() + WAIT
            while "aio-delete" in await admin.list_topics():
                assert time.monotonic() < deadline, "deleted topic still listed"
                await asyncio.sleep(0.05)
            response = await admin.delete_topics(["aio-delete"])
            assert _errors(response) == {"aio-delete": UnknownTopicOrPartitionError}

            # A topic created again under the same name starts empty.
            await _create_topic(admin, "aio-delete", partitions=2)
        async with _consumer(client.bootstrap) as consumer:
            tps = [TopicPartition("aio-delete", p) for p in range(2)]
            assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
            assert await consumer.end_offsets(tps) == dict.fromkeys(tps, 0)

    client.loop.run(run())


# --- Produce -------------------------------------------------------------------------


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_acks(client: Aiokafka, acks: int | str) -> None:
    scenarios.produce_with_acks(client, acks)


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_compression(client: Aiokafka, codec: str | None) -> None:
    records = scenarios.produce_compressed(client, codec)
    topic = f"aio-codec-{codec or 'none'}"
    # A batch built by hand (send_batch) goes out as one record batch.
    by_hand: list[Record] = [(b"b%d" % i, b"batch %d" % i, ()) for i in range(20)]
    with client.producer(**client.batch_config(codec, 16 * 1024)) as producer:
        whole = producer.send_batch(topic, by_hand)
    assert whole.offset == 200
    tp = TopicPartition(topic, 0)
    expected = records + by_hand
    assert content(read(client, tp, 0, 220)) == expected
    # From the middle of a batch: the broker hands the whole batch, the client skips.
    assert content(read(client, tp, 137, 83)) == expected[137:]
    assert content(read(client, tp, 210, 10)) == expected[210:]


@pytest.mark.compat("InitProducerId", "aiokafka")
@pytest.mark.compat("Produce", "aiokafka")
def test_idempotent_producer(client: Aiokafka) -> None:
    scenarios.idempotent_producer(client)


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
def test_keyed_records_keep_partition_and_order(client: Aiokafka) -> None:
    scenarios.keyed_records_keep_partition_and_order(client)


@pytest.mark.compat("Produce", "aiokafka")
def test_record_too_large(client: Aiokafka) -> None:
    scenarios.record_too_large(client)


# --- Consume by assign ---------------------------------------------------------------


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_consume_from_earliest(client: Aiokafka) -> None:
    scenarios.consume_from_earliest(client)


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_consume_from_latest(client: Aiokafka) -> None:
    scenarios.consume_from_latest(client)


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_log_append_time(client: Aiokafka, codec: str | None) -> None:
    sent = scenarios.log_append_time(client, codec)
    # aiokafka also says which kind of timestamp the Produce response carried.
    assert all(metadata.timestamp_type == 1 for metadata in sent)


@pytest.mark.compat("Fetch", "aiokafka")
def test_consume_from_offset(client: Aiokafka) -> None:
    scenarios.consume_from_offset(client)


@pytest.mark.compat("ListOffsets", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
def test_consume_from_timestamp(client: Aiokafka) -> None:
    scenarios.consume_from_timestamp(client)


@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("ListOffsets", "aiokafka")
def test_read_committed(client: Aiokafka) -> None:
    scenarios.read_committed(client)


@pytest.mark.compat("ListOffsets", "aiokafka")
def test_beginning_and_end_offsets(client: Aiokafka) -> None:
    scenarios.beginning_and_end_offsets(client)


@pytest.mark.compat("Fetch", "aiokafka")
def test_fetch_returns_record_larger_than_fetch_size(client: Aiokafka) -> None:
    scenarios.fetch_returns_record_larger_than_fetch_size(client)


@pytest.mark.compat("Fetch", "aiokafka")
def test_fetch_out_of_range(client: Aiokafka) -> None:
    scenarios.fetch_out_of_range(client)


# --- Across a broker restart ---------------------------------------------------------


@pytest.mark.compat("Produce", "aiokafka")
@pytest.mark.compat("Fetch", "aiokafka")
@pytest.mark.compat("InitProducerId", "aiokafka")
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_read_back_across_restart(own_broker: BrokerProcess, how: str) -> None:
    with AsyncioThread() as loop:
        scenarios.read_back_across_restart(
            Aiokafka(own_broker.bootstrap, loop), own_broker, how
        )
