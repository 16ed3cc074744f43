"""Produce over the wire: the leader's record checks and recompression.

The bad batches here have valid CRCs: the broker must look inside them. Each refused
batch leaves the log end offset where it was (the next good batch gets offset 0) and the
partition keeps working. Recompression is checked with unmodified clients reading back
what a topic with ``compression.type=zstd`` stored.
"""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from kio.schema.create_topics.v4.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.describe_configs.v3.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse
from kio.schema.errors import ErrorCode
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import TopicName
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta

from minikafka.broker.testing import BrokerProcess, running_broker, single_node_config
from minikafka.log import (
    LOG_CONFIG,
    NO_EFFECT,
    CompressionType,
    build_batch,
    compress,
    iter_batches,
    make_records,
)
from minikafka.log._batch import CRC_OFFSET, HEADER, LOG_OVERHEAD, MAGIC, compute_crc
from minikafka.net import NetworkClient, Node

DEADLINE = 30.0
TS = 1_700_000_000_000


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def lying_batch(payload: bytes, codec: CompressionType, record_count: int) -> bytes:
    """A batch with a valid CRC around ``payload`` under a header claiming ``record_count``."""
    size = HEADER.size + len(payload)
    buf = bytearray(size)
    HEADER.pack_into(
        buf, 0, 0, size - LOG_OVERHEAD, -1, MAGIC, 0, codec.value, record_count - 1,
        TS, TS, -1, -1, -1, record_count,
    )  # fmt: skip
    buf[HEADER.size :] = payload
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return bytes(buf)


def good(key: bytes | None = b"k") -> bytes:
    return build_batch(make_records([(key, b"v1"), (key, b"v2")], timestamp_ms=TS))


class Client:
    def __init__(self, client: NetworkClient, node: Node) -> None:
        self.client, self.node = client, node

    async def call(self, body: object) -> object:
        with trio.fail_after(DEADLINE):
            return await self.client.send(self.node, body)  # type: ignore[arg-type]

    async def create_topic(self, name: str, configs: Mapping[str, str]) -> ErrorCode:
        body = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v)
                        for k, v in configs.items()
                    ),
                ),
            ),
            timeout=ms(30_000),
            validate_only=False,
        )
        response = await self.call(body)
        assert isinstance(response, CreateTopicsResponse)
        return response.topics[0].error_code

    async def produce(self, topic: str, data: bytes) -> tuple[ErrorCode, int]:
        body = ProduceRequest(
            transactional_id=None,
            acks=i16(1),
            timeout=ms(10_000),
            topic_data=(
                TopicProduceData(
                    name=TopicName(topic),
                    partition_data=(
                        PartitionProduceData(index=i32(0), records=Records(data)),
                    ),
                ),
            ),
        )
        response = await self.call(body)
        assert isinstance(response, ProduceResponse)
        result = response.responses[0].partition_responses[0]
        return result.error_code, result.base_offset

    async def describe(self, topic: str) -> dict[str, tuple[str | None, str | None]]:
        body = DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(2), resource_name=topic, configuration_keys=None
                ),
            ),
            include_synonyms=False,
            include_documentation=True,
        )
        response = await self.call(body)
        assert isinstance(response, DescribeConfigsResponse)
        return {c.name: (c.value, c.documentation) for c in response.results[0].configs}


@asynccontextmanager
async def broker(tmp_path: Path) -> AsyncIterator[Client]:
    config = single_node_config(tmp_path / "data")
    async with (
        running_broker(config) as server,
        NetworkClient.open(client_id="tests") as client,
    ):
        host, port = server.bound_address()
        yield Client(client, Node(config.node_id, host, port))


@pytest.mark.parametrize(
    ("name", "data", "error"),
    [
        *[
            (
                f"garbage-{c.name.lower()}",
                lying_batch(b"\x13" * 64, c, 1),
                ErrorCode.corrupt_message,
            )
            for c in (
                CompressionType.GZIP,
                CompressionType.SNAPPY,
                CompressionType.LZ4,
                CompressionType.ZSTD,
            )
        ],
        (
            "zstd-2-31-records",
            lying_batch(
                compress(CompressionType.ZSTD, good()[HEADER.size :]),
                CompressionType.ZSTD,
                2**31 - 1,
            ),
            ErrorCode.invalid_record,
        ),
        (
            "garbage-records",
            lying_batch(b"\x7f" * 40, CompressionType.NONE, 2),
            ErrorCode.invalid_record,
        ),
    ],
)
async def test_a_batch_no_consumer_could_read_is_refused(
    tmp_path: Path, name: str, data: bytes, error: ErrorCode
) -> None:
    """Garbage codec payloads get CORRUPT_MESSAGE, lying counts and garbage records
    INVALID_RECORD; nothing is appended and the next good batch gets offset 0."""
    async with broker(tmp_path) as kafka:
        assert await kafka.create_topic(name, {}) is ErrorCode.none
        assert await kafka.produce(name, data) == (error, -1)
        assert await kafka.produce(name, good()) == (ErrorCode.none, 0)


async def test_a_compacted_topic_refuses_keyless_records_over_the_wire(
    tmp_path: Path,
) -> None:
    """INVALID_RECORD for a record without a key on cleanup.policy=compact."""
    async with broker(tmp_path) as kafka:
        assert (
            await kafka.create_topic("c", {"cleanup.policy": "compact"})
            is ErrorCode.none
        )
        assert await kafka.produce("c", good(key=None)) == (
            ErrorCode.invalid_record,
            -1,
        )
        assert await kafka.produce("c", good()) == (ErrorCode.none, 0)


async def test_every_kafka_topic_config_is_accepted_and_described(
    tmp_path: Path,
) -> None:
    """CreateTopics takes Kafka's topic configs (max.compaction.lag.ms, compression.type=zstd
    among them); DescribeConfigs lists every one, with the reason for those stored without
    effect; remote.storage.enable=true is refused with INVALID_CONFIG."""
    configs = {
        "max.compaction.lag.ms": "60000",
        "compression.type": "zstd",
        "preallocate": "true",
    }
    async with broker(tmp_path) as kafka:
        assert await kafka.create_topic("t", configs) is ErrorCode.none
        described = await kafka.describe("t")
        every = LOG_CONFIG.names()
        assert every <= set(described)
        assert described["max.compaction.lag.ms"][0] == "60000"
        assert described["compression.type"][0] == "zstd"
        for key in NO_EFFECT:
            assert "no effect" in (described[key][1] or ""), key
        refused = await kafka.create_topic("tiered", {"remote.storage.enable": "true"})
        assert refused is ErrorCode.invalid_config


def test_a_zstd_topic_stores_zstd_and_real_clients_read_it(tmp_path: Path) -> None:
    """compression.type=zstd: gzip and uncompressed batches from confluent-kafka are stored
    as zstd (read from the segment file), and confluent-kafka and kafka-python consume them."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka_python = pytest.importorskip("kafka")
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        topic = f"zstd-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        admin.create_topics(
            [NewTopic(topic, 1, 1, config={"compression.type": "zstd"})]
        )[topic].result(DEADLINE)
        sent = []
        for codec in ("gzip", "none"):
            producer = confluent_kafka.Producer(
                {
                    "bootstrap.servers": process.bootstrap,
                    "compression.type": codec,
                    "linger.ms": 20,
                }
            )
            for i in range(50):
                value = b"%s-%d " % (codec.encode(), i) * 10
                sent.append(value)
                producer.produce(topic, value=value, key=b"k%d" % i)
            assert producer.flush(DEADLINE) == 0
        segment = tmp_path / "data" / f"{topic}-0" / "00000000000000000000.log"
        codecs = {
            header.compression for _, header in iter_batches(segment.read_bytes())
        }
        assert codecs == {CompressionType.ZSTD}

        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": process.bootstrap,
                "group.id": "g",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        received: list[bytes] = []
        end = time.monotonic() + DEADLINE
        while len(received) < len(sent) and time.monotonic() < end:
            message = consumer.poll(1.0)
            if message is not None:
                assert message.error() is None, message.error()
                received.append(message.value())
        consumer.close()
        assert received == sent

        reader = kafka_python.KafkaConsumer(
            bootstrap_servers=process.bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=int(DEADLINE * 1000),
        )
        reader.assign([kafka_python.TopicPartition(topic, 0)])
        values = []
        for record in reader:
            values.append(record.value)
            if len(values) == len(sent):
                break
        reader.close()
        assert values == sent
    finally:
        process.kill()
