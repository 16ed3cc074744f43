"""kafka-python (3.x) against a real minikafka broker: admin, produce, consume by assign.

ARCHITECTURE.md, "Tests": each real client drives the broker the way a user does. These tests
use kafka-python's API (``KafkaAdminClient``, ``KafkaProducer``, ``KafkaConsumer`` with
``assign``; groups are in ``test_groups_kafka_python.py``) and check the records read back
byte for byte: keys, values, headers, timestamps and their order within a partition.
The produce and consume scenarios are those of ``_clients.py``, shared with aiokafka; this
module is their adapter (:class:`KafkaPython`), and adds what only kafka-python can show:
its admin client, older protocol versions it can be clamped to, and retried Produce
requests. Every wait is a poll loop with a deadline. Two places reach inside the client,
each says why: the idempotent producer's id, and retried Produce requests built by hand.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, closing
from typing import Any

import attrs
import kafka.errors as errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from minikafka.broker.testing import BrokerProcess
from tests.compat import _clients as scenarios
from tests.compat._clients import WAIT, Record, Stamps, content, read, seeded_records

# --- the adapter ---------------------------------------------------------------------------


class _Producer(KafkaProducer):  # type: ignore[misc]
    def send_all(
        self,
        topic: str,
        records: Sequence[Record],
        partition: int | None = 0,
        at: Stamps = None,
    ) -> list[Any]:
        times: Sequence[int | None] = at or [None] * len(records)
        futures = [
            self.send(
                topic,
                key=key,
                value=value,
                headers=list(headers),
                partition=partition,
                timestamp_ms=stamp,
            )
            for (key, value, headers), stamp in zip(records, times, strict=True)
        ]
        self.flush(timeout=WAIT)
        return [future.get(timeout=WAIT) for future in futures]

    def producer_id(self) -> int:
        # kafka-python keeps no public view of the id InitProducerId gave it.
        producer_id: int = self._transaction_manager.producer_id_and_epoch.producer_id
        return producer_id


class _Consumer(KafkaConsumer):  # type: ignore[misc]
    def poll_once(self, timeout_ms: int) -> dict[Any, list[Any]]:
        batches: dict[Any, list[Any]] = self.poll(timeout_ms=timeout_ms)
        return batches

    def records(self, count: int) -> list[Any]:
        deadline = time.monotonic() + WAIT
        got: list[Any] = []
        while len(got) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{len(got)} of {count} records within {WAIT}s")
            for batch in self.poll(timeout_ms=int(min(remaining, 1.0) * 1000)).values():
                got.extend(batch)
        return got

    def fails_out_of_range(self) -> bool:
        deadline = time.monotonic() + WAIT
        try:
            while time.monotonic() < deadline:
                self.poll(timeout_ms=500)
        except errors.OffsetOutOfRangeError:
            return True
        return False

    def last_stable_offset(self, tp: Any) -> int | None:
        return None  # kafka-python keeps only the high watermark


def _producer(bootstrap: str, **config: Any) -> _Producer:
    return _Producer(bootstrap_servers=bootstrap, client_id="compat-producer", **config)


def _consumer(bootstrap: str, **config: Any) -> _Consumer:
    # No group here (test_groups_kafka_python.py has them): assign() and no commits.
    config.setdefault("auto_offset_reset", "none")
    return _Consumer(
        bootstrap_servers=bootstrap,
        client_id="compat-consumer",
        group_id=None,
        enable_auto_commit=False,
        **config,
    )


def _create_topic(
    admin: Any, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    admin.create_topics(
        {
            name: {
                "num_partitions": partitions,
                "replication_factor": 1,
                "configs": configs or {},
            }
        },
        wait_for_metadata=True,
    )


@attrs.frozen
class KafkaPython:
    """kafka-python, as the produce and consume scenarios use it."""

    bootstrap: str
    prefix = "kp"
    too_large = errors.MessageSizeTooLargeError
    keeps_last_stable_offset = False

    def tp(self, topic: str, partition: int) -> Any:
        return TopicPartition(topic, partition)

    def admin(self) -> AbstractContextManager[Any]:
        return closing(
            KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="compat-admin")
        )

    def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> None:
        with self.admin() as admin:
            _create_topic(admin, name, partitions, configs)

    def producer(self, **config: Any) -> AbstractContextManager[_Producer]:
        return closing(_producer(self.bootstrap, **config))

    def consumer(self, **config: Any) -> AbstractContextManager[_Consumer]:
        return closing(_consumer(self.bootstrap, **config))

    def acks_config(self, acks: int | str) -> dict[str, Any]:
        # Idempotence needs acks=all; ask for it off explicitly with 0 and 1.
        return {"acks": acks, "enable_idempotence": acks == "all"}

    def batch_config(self, codec: str | None, batch_bytes: int) -> dict[str, Any]:
        return {"compression_type": codec, "batch_size": batch_bytes}

    def too_large_config(self) -> dict[str, Any]:
        # The client would refuse it itself; raise its limit so the broker is the one to
        # say no; idempotence off (kafka-python 3 turns it on by default).
        return {"max_request_size": 4 * 1024 * 1024, "enable_idempotence": False}

    def reconnect_config(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"reconnect_backoff_max_ms": 500}, {"reconnect_backoff_max_ms": 500}


@pytest.fixture
def client(broker: BrokerProcess) -> KafkaPython:
    return KafkaPython(broker.bootstrap)


@pytest.fixture
def admin(client: KafkaPython) -> Iterator[Any]:
    with client.admin() as admin:
        yield admin


# --- ApiVersions and Metadata ----------------------------------------------------------


@pytest.mark.compat("ApiVersions", "kafka-python")
def test_api_versions_negotiated(admin: Any) -> None:
    versions = {key.name: value for key, value in admin.api_versions().items()}
    # The ranges the broker must at least advertise (Kafka 4's floors, minikafka's ceilings).
    for api, (low, high) in {
        "Produce": (3, 8),
        "Fetch": (4, 11),
        "ListOffsets": (1, 5),
        "Metadata": (1, 8),
        "ApiVersions": (0, 4),
        "CreateTopics": (2, 4),
        "DeleteTopics": (1, 3),
        "InitProducerId": (0, 1),
        "DescribeConfigs": (1, 3),
        "CreatePartitions": (0, 1),
    }.items():
        advertised_low, advertised_high = versions[api]
        assert advertised_low <= low <= high <= advertised_high, (api, versions[api])
    # ApiVersions v3 (KIP-511, flexible) with its feature fields, not only the fallback v0.
    assert isinstance(admin.describe_features(), dict)


@pytest.mark.compat("Metadata", "kafka-python")
def test_metadata_describes_topics_and_auto_creates(
    client: KafkaPython, admin: Any
) -> None:
    _create_topic(admin, "kp-metadata", partitions=3)
    (described,) = admin.describe_topics(["kp-metadata"])
    assert described["error_code"] == 0
    assert described["name"] == "kp-metadata"
    assert not described["is_internal"]
    partitions = sorted(described["partitions"], key=lambda p: p["partition_index"])
    assert [p["partition_index"] for p in partitions] == [0, 1, 2]
    leaders = {p["leader_id"] for p in partitions}
    assert len(leaders) == 1
    (leader,) = leaders
    assert leader >= 0
    for p in partitions:
        assert p["replica_nodes"] == [leader]
        assert p["isr_nodes"] == [leader]

    # auto.create.topics.enable: the producer's Metadata request creates the topic.
    with client.producer() as producer:
        metadata = producer.send("kp-metadata-auto", key=b"k", value=b"auto").get(
            timeout=WAIT
        )
    assert (metadata.topic, metadata.offset) == ("kp-metadata-auto", 0)
    assert "kp-metadata-auto" in admin.list_topics()
    # The admin client's Metadata asks for no auto-creation: unknown stays unknown.
    (missing,) = admin.describe_topics(["kp-metadata-missing"])
    assert missing["error_code"] == errors.UnknownTopicOrPartitionError.errno
    assert "kp-metadata-missing" not in admin.list_topics()
    records = read(client, TopicPartition("kp-metadata-auto", metadata.partition), 0, 1)
    assert content(records) == [(b"k", b"auto", ())]


# --- Admin: CreateTopics, DescribeConfigs, CreatePartitions, DeleteTopics --------------


@pytest.mark.compat("CreateTopics", "kafka-python")
@pytest.mark.compat("Metadata", "kafka-python")
def test_create_topics(admin: Any) -> None:
    result = admin.create_topics(
        {"kp-create": {"num_partitions": 4, "replication_factor": 1}},
        wait_for_metadata=True,
    )
    assert result["topics"][0]["name"] == "kp-create"
    assert result["topics"][0]["error_code"] == 0
    assert "kp-create" in admin.list_topics()
    (described,) = admin.describe_topics(["kp-create"])
    assert len(described["partitions"]) == 4

    # Broker defaults: -1 partitions and replication factor (CreateTopics v4, KIP-464).
    admin.create_topics(["kp-create-defaults"], wait_for_metadata=True)
    (defaults,) = admin.describe_topics(["kp-create-defaults"])
    assert len(defaults["partitions"]) >= 1

    with pytest.raises(errors.TopicAlreadyExistsError):
        admin.create_topics(
            {"kp-create": {"num_partitions": 1, "replication_factor": 1}}
        )
    with pytest.raises(errors.InvalidReplicationFactorError):
        admin.create_topics(
            {"kp-create-rf3": {"num_partitions": 1, "replication_factor": 3}}
        )
    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_topics(
            {"kp-create-p0": {"num_partitions": 0, "replication_factor": 1}}
        )
    with pytest.raises(errors.InvalidTopicError):
        admin.create_topics(
            {"kp/create bad": {"num_partitions": 1, "replication_factor": 1}}
        )
    # validate_only checks and creates nothing.
    admin.create_topics(
        {"kp-create-dry": {"num_partitions": 2, "replication_factor": 1}},
        validate_only=True,
    )
    topics = admin.list_topics()
    for absent in ("kp-create-rf3", "kp-create-p0", "kp/create bad", "kp-create-dry"):
        assert absent not in topics

    # One request, one good and one bad topic: each gets its own result.
    mixed = admin.create_topics(
        {
            "kp-create-mixed": {"num_partitions": 1, "replication_factor": 1},
            "kp-create": {"num_partitions": 1, "replication_factor": 1},
        },
        raise_errors=False,
    )
    codes = {t["name"]: t["error_code"] for t in mixed["topics"]}
    assert codes == {
        "kp-create-mixed": 0,
        "kp-create": errors.TopicAlreadyExistsError.errno,
    }


@pytest.mark.compat("DescribeConfigs", "kafka-python")
def test_describe_configs(broker: BrokerProcess, admin: Any) -> None:
    _create_topic(admin, "kp-configs", configs={"retention.ms": "3600000"})
    resource = ConfigResource(ConfigResourceType.TOPIC, "kp-configs")
    every = admin.describe_configs([resource], config_filter="all")["topic"][
        "kp-configs"
    ]
    assert every["retention.ms"]["value"] == "3600000"
    assert every["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert every["cleanup.policy"]["value"] == "delete"
    assert every["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    assert every["max.message.bytes"]["value"] == "1048588"
    # The default filter keeps what was set on the topic only.
    modified = admin.describe_configs([resource])["topic"]["kp-configs"]
    assert set(modified) == {"retention.ms"}
    # Asking for named keys returns those keys.
    named = ConfigResource(
        ConfigResourceType.TOPIC, "kp-configs", ["segment.bytes", "retention.ms"]
    )
    some = admin.describe_configs([named], config_filter="all")["topic"]["kp-configs"]
    assert set(some) == {"segment.bytes", "retention.ms"}
    assert some["segment.bytes"]["value"] == "1073741824"

    # A broker resource, sent to that broker: its static configuration.
    (described,) = admin.describe_topics(["kp-configs"])
    broker_id = str(described["partitions"][0]["leader_id"])
    resource = ConfigResource(ConfigResourceType.BROKER, broker_id)
    static = admin.describe_configs([resource], config_filter="all")["broker"][
        broker_id
    ]
    assert static["log.dirs"]["value"] == str(broker.data_dir)
    assert static["log.dirs"]["config_source"] == "STATIC_BROKER_CONFIG"


@pytest.mark.compat("CreatePartitions", "kafka-python")
def test_create_partitions(client: KafkaPython, admin: Any) -> None:
    _create_topic(admin, "kp-partitions", partitions=2)
    response = admin.create_partitions({"kp-partitions": 5})
    assert [(r.name, r.error_code) for r in response.results] == [("kp-partitions", 0)]
    admin.wait_for_topics(["kp-partitions"])
    (described,) = admin.describe_topics(["kp-partitions"])
    assert sorted(p["partition_index"] for p in described["partitions"]) == [
        0,
        1,
        2,
        3,
        4,
    ]

    # The new partitions take records.
    with client.producer() as producer:
        assert producer.partitions_for("kp-partitions") == {0, 1, 2, 3, 4}
        sent = producer.send_all(
            "kp-partitions", [(b"k", b"in partition 4", ())], partition=4
        )
    assert sent[0].offset == 0
    records = read(client, TopicPartition("kp-partitions", 4), 0, 1)
    assert content(records) == [(b"k", b"in partition 4", ())]

    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_partitions({"kp-partitions": 3})  # fewer than it has
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.create_partitions({"kp-partitions-missing": 3})
    admin.create_partitions({"kp-partitions": 8}, validate_only=True)
    (unchanged,) = admin.describe_topics(["kp-partitions"])
    assert len(unchanged["partitions"]) == 5


@pytest.mark.compat("DeleteTopics", "kafka-python")
def test_delete_topics(client: KafkaPython, admin: Any) -> None:
    _create_topic(admin, "kp-delete", partitions=2)
    scenarios.fill(client, "kp-delete", [(b"old", b"gone after delete", ())])

    result = admin.delete_topics(["kp-delete"])
    # kafka-python asks with DeleteTopics v6, whose answer carries an error message and
    # the deleted topic's id (KIP-516), though it named the topic by name.
    [deleted] = result["topics"]
    topic_id = deleted.pop("topic_id")
    assert deleted == {"name": "kp-delete", "error_code": 0, "error_message": None}
    assert topic_id not in ("", str(uuid.UUID(int=0)))
    deadline = time.monotonic() + WAIT
    while "kp-delete" in admin.list_topics():
        assert time.monotonic() < deadline, "deleted topic still listed"
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.delete_topics(["kp-delete"])

    # A topic created again under the same name starts empty.
    _create_topic(admin, "kp-delete", partitions=1)
    with client.consumer() as consumer:
        tp = TopicPartition("kp-delete", 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 0}


# --- Produce -------------------------------------------------------------------------


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_acks(client: KafkaPython, acks: int | str) -> None:
    scenarios.produce_with_acks(client, acks)


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_compression(client: KafkaPython, codec: str | None) -> None:
    scenarios.produce_compressed(client, codec)


@pytest.mark.compat("InitProducerId", "kafka-python")
@pytest.mark.compat("Produce", "kafka-python")
def test_idempotent_producer(client: KafkaPython) -> None:
    scenarios.idempotent_producer(client)


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
def test_keyed_records_keep_partition_and_order(client: KafkaPython) -> None:
    scenarios.keyed_records_keep_partition_and_order(client)


@pytest.mark.compat("Produce", "kafka-python")
def test_record_too_large(client: KafkaPython) -> None:
    scenarios.record_too_large(client)


# --- Consume by assign ---------------------------------------------------------------


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_consume_from_earliest(client: KafkaPython) -> None:
    scenarios.consume_from_earliest(client)


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_consume_from_latest(client: KafkaPython) -> None:
    scenarios.consume_from_latest(client)


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_log_append_time(client: KafkaPython, codec: str | None) -> None:
    scenarios.log_append_time(client, codec)


@pytest.mark.compat("Fetch", "kafka-python")
def test_consume_from_offset(client: KafkaPython) -> None:
    scenarios.consume_from_offset(client)


@pytest.mark.compat("ListOffsets", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
def test_consume_from_timestamp(client: KafkaPython) -> None:
    scenarios.consume_from_timestamp(client)


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_read_committed(client: KafkaPython) -> None:
    scenarios.read_committed(client)


@pytest.mark.compat("ListOffsets", "kafka-python")
def test_beginning_and_end_offsets(client: KafkaPython) -> None:
    scenarios.beginning_and_end_offsets(client)


@pytest.mark.compat("Fetch", "kafka-python")
def test_fetch_returns_record_larger_than_fetch_size(client: KafkaPython) -> None:
    scenarios.fetch_returns_record_larger_than_fetch_size(client)


@pytest.mark.compat("Fetch", "kafka-python")
def test_fetch_out_of_range(client: KafkaPython) -> None:
    scenarios.fetch_out_of_range(client)


# --- Other protocol versions, retried batches ------------------------------------------


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
@pytest.mark.compat("Metadata", "kafka-python")
@pytest.mark.parametrize("version", [(0, 11), (1, 0), (2, 0), (2, 1)], ids=str)
def test_older_protocol_versions(
    broker: BrokerProcess, version: tuple[int, int]
) -> None:
    """kafka-python clamped to an older broker's versions: lower request versions."""
    topic = "kp-version-" + "-".join(map(str, version))
    records = seeded_records(random.Random(topic), 30, topic)
    producer = _producer(broker.bootstrap, api_version=version, linger_ms=5)
    try:
        assert producer.config["api_version"] == version
        sent = producer.send_all(topic, records)
    finally:
        producer.close()
    assert [m.offset for m in sent] == list(range(30))
    tp = TopicPartition(topic, 0)
    consumer = _consumer(broker.bootstrap, api_version=version)
    try:
        assert consumer.config["api_version"] == version  # clamped, not negotiated up
        assert consumer.end_offsets([tp]) == {tp: 30}
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = consumer.records(30)
    finally:
        consumer.close()
    assert content(got) == records


@pytest.mark.compat("Metadata", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_oldest_metadata_and_list_offsets_versions(
    broker: BrokerProcess, admin: Any
) -> None:
    """Metadata v1 (as Kafka 0.10.0 spoke it) and ListOffsets v1 (0.10.1)."""
    topic = "kp-oldest-versions"
    _create_topic(admin, topic, partitions=2)
    producer = _producer(broker.bootstrap, linger_ms=5)
    try:
        futures = [
            producer.send(topic, value=b"%d" % i, partition=1, timestamp_ms=5000 + i)
            for i in range(4)
        ]
        producer.flush(timeout=WAIT)
        for future in futures:
            future.get(timeout=WAIT)
    finally:
        producer.close()

    old_admin = KafkaAdminClient(
        bootstrap_servers=broker.bootstrap, api_version=(0, 10, 0)
    )
    try:
        assert topic in old_admin.list_topics()
        (described,) = old_admin.describe_topics([topic])
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1]
    finally:
        old_admin.close()

    tp = TopicPartition(topic, 1)
    consumer = _consumer(broker.bootstrap, api_version=(0, 10, 1))
    try:
        assert consumer.config["api_version"] == (0, 10, 1)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 4}
        found = consumer.offsets_for_times({tp: 5002})[tp]
        assert (found.offset, found.timestamp) == (2, 5002)
        assert consumer.offsets_for_times({tp: 6000}) == {tp: None}
    finally:
        consumer.close()


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("InitProducerId", "kafka-python")
def test_idempotent_produce_deduplicates_retries(
    broker: BrokerProcess, admin: Any
) -> None:
    """A retried batch (same producer id, epoch, sequence) is written once (KIP-98).

    The producer only resends after a lost response, which a test cannot arrange through
    KafkaProducer; so the requests are built with kafka-python's own protocol classes and
    record batch builder and sent on the admin client's connection.
    """
    topic = "kp-dedup"
    _create_topic(admin, topic)
    manager = admin._manager  # kafka-python 3's connection manager: no public raw send
    results: list[tuple[str, int, int]] = []

    async def run() -> None:
        init = await manager.send(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
        )
        assert init.error_code == 0
        producer_id, epoch = init.producer_id, init.producer_epoch

        def batch(sequence: int, count: int, tag: bytes) -> bytes:
            builder = DefaultRecordBatchBuilder(
                magic=2,
                compression_type=0,
                is_transactional=False,
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=sequence,
                batch_size=1 << 20,
            )
            for i in range(count):
                builder.append(
                    i, timestamp=1000 + i, key=tag + b"%d" % i, value=b"v", headers=[]
                )
            return bytes(builder.build())

        topic_data = ProduceRequest.TopicProduceData
        partition_data = topic_data.PartitionProduceData
        for label, records in [
            ("first", batch(0, 3, b"a")),
            ("retry of first", batch(0, 3, b"a")),
            ("second", batch(3, 2, b"b")),
            ("retry of second", batch(3, 2, b"b")),
            ("late retry of first", batch(0, 3, b"a")),
            ("gap", batch(10, 1, b"c")),
        ]:
            request = ProduceRequest(
                # v12, the newest that names topics by name (v13 names them by id).
                version=12,
                transactional_id=None,
                acks=-1,
                timeout_ms=10_000,
                topic_data=[
                    topic_data(
                        name=topic,
                        partition_data=[partition_data(index=0, records=records)],
                    )
                ],
            )
            response = await manager.send(request)
            answer = response.responses[0].partition_responses[0]
            results.append((label, answer.error_code, answer.base_offset))

    manager.run(run)
    assert results == [
        ("first", 0, 0),
        ("retry of first", 0, 0),  # a duplicate: the offset it was written at
        ("second", 0, 3),
        ("retry of second", 0, 3),
        ("late retry of first", 0, 0),  # still among the last five batches
        ("gap", errors.OutOfOrderSequenceNumberError.errno, -1),
    ]
    consumer = _consumer(broker.bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        assert consumer.end_offsets([tp]) == {tp: 5}
    finally:
        consumer.close()


# --- Across a broker restart ---------------------------------------------------------


def test_stop_with_pending_long_poll(own_broker: BrokerProcess) -> None:
    """A clean shutdown does not wait for the delayed fetches of gone clients."""
    tp = TopicPartition("kp-long-poll", 0)
    scenarios.fill(KafkaPython(own_broker.bootstrap), tp.topic, [(b"k", b"v", ())])
    consumer = _consumer(own_broker.bootstrap, fetch_max_wait_ms=6000)
    try:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        assert consumer.poll(timeout_ms=300) == {}  # a fetch now waits at the broker
    finally:
        consumer.close()
    started = time.monotonic()
    own_broker.stop()
    took = time.monotonic() - started
    assert took < 3.0, f"broker took {took:.1f}s to stop"


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("InitProducerId", "kafka-python")
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_read_back_across_restart(own_broker: BrokerProcess, how: str) -> None:
    scenarios.read_back_across_restart(
        KafkaPython(own_broker.bootstrap), own_broker, how
    )
