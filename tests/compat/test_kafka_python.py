"""kafka-python (3.x) against a real minikafka broker: admin, produce, consume by assign.

ARCHITECTURE.md, "Tests": each real client drives the broker the way a user does. These tests
use kafka-python's API (``KafkaAdminClient``, ``KafkaProducer``, ``KafkaConsumer`` with
``assign``; groups are in ``test_groups_kafka_python.py``) and check the records read back
byte for byte: keys, values, headers, timestamps and their order within a partition.
Every wait is a poll loop with a deadline. Two places reach inside the client, each says
why: the idempotent producer's id, and retried Produce requests built by hand.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from typing import Any

import kafka.errors as errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from minikafka.broker.testing import BrokerProcess

# (key, value, headers) as kafka-python hands them back.
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]

WAIT = 20.0  # seconds a test waits for something that normally takes milliseconds


@pytest.fixture
def admin(broker: BrokerProcess) -> Iterator[Any]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="compat-admin")
    try:
        yield client
    finally:
        client.close()


def _producer(bootstrap: str, **config: Any) -> Any:
    return KafkaProducer(bootstrap_servers=bootstrap, client_id="compat-producer", **config)


def _consumer(bootstrap: str, **config: Any) -> Any:
    # No group here (test_groups_kafka_python.py has them): assign() and no commits.
    config.setdefault("auto_offset_reset", "none")
    return KafkaConsumer(
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
        {name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}},
        wait_for_metadata=True,
    )


def _records(rng: random.Random, count: int, prefix: str) -> list[Record]:
    """Seeded records: keys, values of varied size (some compressible), headers."""
    records: list[Record] = []
    for i in range(count):
        size = rng.choice([0, 1, 17, 300, 2000])
        if i % 2:
            value = rng.randbytes(size)
        else:
            value = (f"{prefix}-{i}-".encode() * (size // 8 + 1))[:size]
        headers = [("seq", str(i).encode()), ("src", prefix.encode())][: i % 3]
        records.append((f"{prefix}-key-{i}".encode(), value, headers))
    return records


def _send_all(
    producer: Any, topic: str, records: Sequence[Record], partition: int = 0
) -> list[Any]:
    futures = [
        producer.send(topic, key=key, value=value, headers=headers, partition=partition)
        for key, value, headers in records
    ]
    producer.flush(timeout=WAIT)
    return [future.get(timeout=WAIT) for future in futures]


def _poll(consumer: Any, count: int, timeout: float = WAIT) -> list[Any]:
    """Poll until ``count`` records arrived (fail at the deadline); the records in order."""
    deadline = time.monotonic() + timeout
    got: list[Any] = []
    while len(got) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{len(got)} of {count} records within {timeout}s")
        for batch in consumer.poll(timeout_ms=int(min(remaining, 1.0) * 1000)).values():
            got.extend(batch)
    return got


def _read(bootstrap: str, tp: Any, start: int, count: int, **config: Any) -> list[Any]:
    consumer = _consumer(bootstrap, **config)
    try:
        consumer.assign([tp])
        consumer.seek(tp, start)
        records = _poll(consumer, count)
        # Exactly what was asked for, from the start offset on, nothing past it.
        assert [r.offset for r in records] == list(range(start, start + count))
        assert consumer.end_offsets([tp])[tp] == start + count
        # The high watermark the Fetch response carried.
        assert consumer.highwater(tp) == start + count
        return records
    finally:
        consumer.close()


def _content(records: Sequence[Any]) -> list[Record]:
    return [(r.key, r.value, list(r.headers)) for r in records]


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
def test_metadata_describes_topics_and_auto_creates(broker: BrokerProcess, admin: Any) -> None:
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
    producer = _producer(broker.bootstrap)
    try:
        metadata = producer.send("kp-metadata-auto", key=b"k", value=b"auto").get(timeout=WAIT)
    finally:
        producer.close()
    assert (metadata.topic, metadata.offset) == ("kp-metadata-auto", 0)
    assert "kp-metadata-auto" in admin.list_topics()
    # The admin client's Metadata asks for no auto-creation: unknown stays unknown.
    (missing,) = admin.describe_topics(["kp-metadata-missing"])
    assert missing["error_code"] == errors.UnknownTopicOrPartitionError.errno
    assert "kp-metadata-missing" not in admin.list_topics()
    records = _read(broker.bootstrap, TopicPartition("kp-metadata-auto", metadata.partition), 0, 1)
    assert _content(records) == [(b"k", b"auto", [])]


# --- Admin: CreateTopics, DescribeConfigs, CreatePartitions, DeleteTopics --------------


@pytest.mark.compat("CreateTopics", "kafka-python")
@pytest.mark.compat("Metadata", "kafka-python")
def test_create_topics(admin: Any) -> None:
    result = admin.create_topics(
        {"kp-create": {"num_partitions": 4, "replication_factor": 1}}, wait_for_metadata=True
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
        admin.create_topics({"kp-create": {"num_partitions": 1, "replication_factor": 1}})
    with pytest.raises(errors.InvalidReplicationFactorError):
        admin.create_topics({"kp-create-rf3": {"num_partitions": 1, "replication_factor": 3}})
    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_topics({"kp-create-p0": {"num_partitions": 0, "replication_factor": 1}})
    with pytest.raises(errors.InvalidTopicError):
        admin.create_topics({"kp/create bad": {"num_partitions": 1, "replication_factor": 1}})
    # validate_only checks and creates nothing.
    admin.create_topics(
        {"kp-create-dry": {"num_partitions": 2, "replication_factor": 1}}, validate_only=True
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
    every = admin.describe_configs([resource], config_filter="all")["topic"]["kp-configs"]
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
    static = admin.describe_configs([resource], config_filter="all")["broker"][broker_id]
    assert static["log.dirs"]["value"] == str(broker.data_dir)
    assert static["log.dirs"]["config_source"] == "STATIC_BROKER_CONFIG"


@pytest.mark.compat("CreatePartitions", "kafka-python")
def test_create_partitions(broker: BrokerProcess, admin: Any) -> None:
    _create_topic(admin, "kp-partitions", partitions=2)
    response = admin.create_partitions({"kp-partitions": 5})
    assert [(r.name, r.error_code) for r in response.results] == [("kp-partitions", 0)]
    admin.wait_for_topics(["kp-partitions"])
    (described,) = admin.describe_topics(["kp-partitions"])
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2, 3, 4]

    # The new partitions take records.
    producer = _producer(broker.bootstrap)
    try:
        assert producer.partitions_for("kp-partitions") == {0, 1, 2, 3, 4}
        sent = _send_all(producer, "kp-partitions", [(b"k", b"in partition 4", [])], partition=4)
    finally:
        producer.close()
    assert sent[0].offset == 0
    records = _read(broker.bootstrap, TopicPartition("kp-partitions", 4), 0, 1)
    assert _content(records) == [(b"k", b"in partition 4", [])]

    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_partitions({"kp-partitions": 3})  # fewer than it has
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.create_partitions({"kp-partitions-missing": 3})
    admin.create_partitions({"kp-partitions": 8}, validate_only=True)
    (unchanged,) = admin.describe_topics(["kp-partitions"])
    assert len(unchanged["partitions"]) == 5


@pytest.mark.compat("DeleteTopics", "kafka-python")
def test_delete_topics(broker: BrokerProcess, admin: Any) -> None:
    _create_topic(admin, "kp-delete", partitions=2)
    producer = _producer(broker.bootstrap)
    try:
        _send_all(producer, "kp-delete", [(b"old", b"gone after delete", [])])
    finally:
        producer.close()

    result = admin.delete_topics(["kp-delete"])
    assert result["topics"] == [{"name": "kp-delete", "error_code": 0}]
    deadline = time.monotonic() + WAIT
    while "kp-delete" in admin.list_topics():
        assert time.monotonic() < deadline, "deleted topic still listed"
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.delete_topics(["kp-delete"])

    # A topic created again under the same name starts empty.
    _create_topic(admin, "kp-delete", partitions=1)
    consumer = _consumer(broker.bootstrap)
    try:
        tp = TopicPartition("kp-delete", 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 0}
    finally:
        consumer.close()


# --- Produce -------------------------------------------------------------------------


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_acks(broker: BrokerProcess, acks: int | str) -> None:
    topic = f"kp-acks-{acks}"
    records = _records(random.Random(f"acks-{acks}"), 50, topic)
    # Idempotence needs acks=all; ask for it off explicitly with 0 and 1.
    producer = _producer(broker.bootstrap, acks=acks, enable_idempotence=acks == "all", linger_ms=5)
    try:
        sent = _send_all(producer, topic, records)
    finally:
        producer.close()
    if acks != 0:  # acks=0 gets no response, so no offsets
        assert [m.offset for m in sent] == list(range(50))
    tp = TopicPartition(topic, 0)
    # With acks=0 the records were only written to the socket: wait for them to land.
    consumer = _consumer(broker.bootstrap)
    try:
        deadline = time.monotonic() + WAIT
        while consumer.end_offsets([tp])[tp] < 50:
            assert time.monotonic() < deadline, "acks=0 records never landed"
    finally:
        consumer.close()
    assert _content(_read(broker.bootstrap, tp, 0, 50)) == records


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_compression(broker: BrokerProcess, codec: str | None) -> None:
    topic = f"kp-codec-{codec or 'none'}"
    records = _records(random.Random(f"codec-{codec}"), 200, topic)
    # Lingering packs many records into each (compressed) batch.
    producer = _producer(
        broker.bootstrap, compression_type=codec, linger_ms=50, batch_size=16 * 1024
    )
    try:
        sent = _send_all(producer, topic, records)
    finally:
        producer.close()
    assert [m.offset for m in sent] == list(range(200))
    tp = TopicPartition(topic, 0)
    assert _content(_read(broker.bootstrap, tp, 0, 200)) == records
    # From the middle of a batch: the broker hands the whole batch, the client skips.
    assert _content(_read(broker.bootstrap, tp, 137, 63)) == records[137:]


@pytest.mark.compat("InitProducerId", "kafka-python")
@pytest.mark.compat("Produce", "kafka-python")
def test_idempotent_producer(broker: BrokerProcess) -> None:
    topic = "kp-idempotent"
    records = _records(random.Random("idempotent"), 100, topic)
    producer = _producer(broker.bootstrap, enable_idempotence=True, linger_ms=5)
    try:
        sent = _send_all(producer, topic, records)
        # InitProducerId gave the producer an id; its batches carry it and sequences.
        producer_id = producer._transaction_manager.producer_id_and_epoch.producer_id
        assert producer_id >= 0
    finally:
        producer.close()
    assert [m.offset for m in sent] == list(range(100))
    # A second producer gets another id.
    other = _producer(broker.bootstrap, enable_idempotence=True)
    try:
        _send_all(other, topic, [(b"second", b"producer", [])])
        assert other._transaction_manager.producer_id_and_epoch.producer_id != producer_id
    finally:
        other.close()
    read = _content(_read(broker.bootstrap, TopicPartition(topic, 0), 0, 101))
    assert read == [*records, (b"second", b"producer", [])]


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
def test_keyed_records_keep_partition_and_order(broker: BrokerProcess, admin: Any) -> None:
    topic = "kp-keyed"
    _create_topic(admin, topic, partitions=4)
    rng = random.Random("keyed")
    keys = [f"key-{i}".encode() for i in range(10)]
    sent_order: list[tuple[bytes, bytes]] = []
    producer = _producer(broker.bootstrap, linger_ms=5)
    try:
        futures = []
        for i in range(300):
            key = rng.choice(keys)
            value = f"{key.decode()}#{i}".encode()
            sent_order.append((key, value))
            futures.append(producer.send(topic, key=key, value=value))
        producer.flush(timeout=WAIT)
        placed = [future.get(timeout=WAIT) for future in futures]
    finally:
        producer.close()
    partition_of: dict[bytes, int] = {}
    for (key, _), metadata in zip(sent_order, placed, strict=True):
        assert partition_of.setdefault(key, metadata.partition) == metadata.partition
    assert len(set(partition_of.values())) > 1  # ten keys spread over four partitions

    consumer = _consumer(broker.bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in range(4)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        got = _poll(consumer, 300)
    finally:
        consumer.close()
    for p in range(4):
        in_partition = [(r.key, r.value) for r in got if r.partition == p]
        expected = [kv for kv in sent_order if partition_of[kv[0]] == p]
        assert in_partition == expected
        assert [r.offset for r in got if r.partition == p] == list(range(len(expected)))


@pytest.mark.compat("Produce", "kafka-python")
def test_record_too_large(broker: BrokerProcess) -> None:
    topic = "kp-too-large"
    # The client would refuse it itself; raise its limit so the broker is the one to say no.
    producer = _producer(
        broker.bootstrap, max_request_size=4 * 1024 * 1024, enable_idempotence=False
    )
    try:
        with pytest.raises(errors.MessageSizeTooLargeError):
            producer.send(topic, key=b"big", value=b"x" * 2_000_000, partition=0).get(WAIT)
        fits = producer.send(topic, key=b"ok", value=b"y" * 900_000, partition=0).get(WAIT)
    finally:
        producer.close()
    assert fits.offset == 0  # the rejected batch took no offset
    (record,) = _read(broker.bootstrap, TopicPartition(topic, 0), 0, 1)
    assert (record.key, record.value) == (b"ok", b"y" * 900_000)


# --- Consume by assign ---------------------------------------------------------------


def _fill(broker: BrokerProcess, topic: str, records: Sequence[Record]) -> None:
    producer = _producer(broker.bootstrap, linger_ms=5)
    try:
        _send_all(producer, topic, records)
    finally:
        producer.close()


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_consume_from_earliest(broker: BrokerProcess) -> None:
    topic = "kp-earliest"
    records = _records(random.Random("earliest"), 60, topic)
    _fill(broker, topic, records)
    tp = TopicPartition(topic, 0)
    consumer = _consumer(broker.bootstrap)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert consumer.position(tp) == 0
        got = _poll(consumer, 60)
    finally:
        consumer.close()
    assert [r.offset for r in got] == list(range(60))
    assert _content(got) == records
    assert all(r.topic == topic and r.partition == 0 for r in got)


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_consume_from_latest(broker: BrokerProcess) -> None:
    topic = "kp-latest"
    old = _records(random.Random("latest-old"), 20, "old")
    new = _records(random.Random("latest-new"), 5, "new")
    _fill(broker, topic, old)
    tp = TopicPartition(topic, 0)
    # A long fetch.max.wait: the broker must answer when data arrives, not at the timeout.
    # (Kept short: a broker stopping later waits out a pending long poll, see
    # test_stop_with_pending_long_poll.)
    consumer = _consumer(broker.bootstrap, fetch_max_wait_ms=5000)
    try:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 20
        started = time.monotonic()  # the first fetch goes out in this poll
        assert consumer.poll(timeout_ms=200) == {}
        _fill(broker, topic, new)
        got = _poll(consumer, 5)
        waited = time.monotonic() - started
    finally:
        consumer.close()
    assert [r.offset for r in got] == list(range(20, 25))
    assert _content(got) == new
    assert waited < 4.0, f"fetch waited {waited:.1f}s although records had arrived"


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_log_append_time(broker: BrokerProcess, admin: Any, codec: str | None) -> None:
    """message.timestamp.type=LogAppendTime: the broker stamps the batches it appends."""
    topic = f"kp-log-append-time-{codec or 'none'}"
    _create_topic(admin, topic, configs={"message.timestamp.type": "LogAppendTime"})
    producer = _producer(broker.bootstrap, compression_type=codec, linger_ms=20)
    try:
        before = int(time.time() * 1000)
        futures = [
            producer.send(
                topic, key=b"%d" % i, value=b"v%d" % i, partition=0, timestamp_ms=1000 + i
            )
            for i in range(10)
        ]
        producer.flush(timeout=WAIT)
        sent = [future.get(timeout=WAIT) for future in futures]
        after = int(time.time() * 1000)
    finally:
        producer.close()
    # The Produce response carries the append time; the producer's own stamps are gone.
    for metadata in sent:
        assert before - 1000 <= metadata.timestamp <= after + 1000
    got = _read(broker.bootstrap, TopicPartition(topic, 0), 0, 10)
    assert [(r.key, r.value) for r in got] == [(b"%d" % i, b"v%d" % i) for i in range(10)]
    assert [r.timestamp for r in got] == [m.timestamp for m in sent]
    assert all(r.timestamp_type == 1 for r in got)  # LogAppendTime


@pytest.mark.compat("Fetch", "kafka-python")
def test_consume_from_offset(broker: BrokerProcess) -> None:
    topic = "kp-offset"
    records = _records(random.Random("offset"), 40, topic)
    _fill(broker, topic, records)
    tp = TopicPartition(topic, 0)
    consumer = _consumer(broker.bootstrap)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 25)
        got = _poll(consumer, 15)
        assert [r.offset for r in got] == list(range(25, 40))
        assert _content(got) == records[25:]
        # Seek back: the same records again.
        consumer.seek(tp, 3)
        again = _poll(consumer, 37)
    finally:
        consumer.close()
    assert _content(again) == records[3:]


@pytest.mark.compat("ListOffsets", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
def test_consume_from_timestamp(broker: BrokerProcess) -> None:
    topic = "kp-timestamp"
    base = 1_700_000_000_000
    producer = _producer(broker.bootstrap, linger_ms=5)
    try:
        futures = [
            producer.send(
                topic, key=b"%d" % i, value=b"at %d" % i, partition=0, timestamp_ms=base + 1000 * i
            )
            for i in range(10)
        ]
        producer.flush(timeout=WAIT)
        for future in futures:
            future.get(timeout=WAIT)
    finally:
        producer.close()
    tp = TopicPartition(topic, 0)
    consumer = _consumer(broker.bootstrap)
    try:
        found = consumer.offsets_for_times({tp: base + 4500})[tp]
        assert (found.offset, found.timestamp) == (5, base + 5000)
        exact = consumer.offsets_for_times({tp: base + 3000})[tp]
        assert (exact.offset, exact.timestamp) == (3, base + 3000)
        first = consumer.offsets_for_times({tp: 0})[tp]
        assert (first.offset, first.timestamp) == (0, base)
        assert consumer.offsets_for_times({tp: base + 60_000}) == {tp: None}
        consumer.assign([tp])
        consumer.seek(tp, found.offset)
        got = _poll(consumer, 5)
    finally:
        consumer.close()
    assert [(r.offset, r.timestamp, r.value) for r in got] == [
        (i, base + 1000 * i, b"at %d" % i) for i in range(5, 10)
    ]
    assert all(r.timestamp_type == 0 for r in got)  # CreateTime


@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_read_committed(broker: BrokerProcess) -> None:
    """isolation_level=read_committed: without transactions everything is committed."""
    topic = "kp-read-committed"
    records = _records(random.Random("read-committed"), 30, topic)
    _fill(broker, topic, records)
    tp = TopicPartition(topic, 0)
    got = _read(broker.bootstrap, tp, 0, 30, isolation_level="read_committed")
    assert _content(got) == records


@pytest.mark.compat("ListOffsets", "kafka-python")
def test_beginning_and_end_offsets(broker: BrokerProcess, admin: Any) -> None:
    topic = "kp-offsets"
    _create_topic(admin, topic, partitions=3)
    producer = _producer(broker.bootstrap, linger_ms=5)
    try:
        for partition, count in [(0, 7), (1, 0), (2, 13)]:
            if count:
                _send_all(producer, topic, [(b"k", b"v", [])] * count, partition=partition)
    finally:
        producer.close()
    tps = [TopicPartition(topic, p) for p in range(3)]
    consumer = _consumer(broker.bootstrap)
    try:
        assert consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert consumer.end_offsets(tps) == dict(zip(tps, [7, 0, 13], strict=True))
    finally:
        consumer.close()


@pytest.mark.compat("Fetch", "kafka-python")
def test_fetch_returns_record_larger_than_fetch_size(broker: BrokerProcess) -> None:
    # KIP-74: a record batch bigger than the fetch limits still comes back (alone).
    topic = "kp-fetch-size"
    records: list[Record] = [(b"%d" % i, bytes([i]) * 5000, []) for i in range(30)]
    _fill(broker, topic, records)
    got = _read(
        broker.bootstrap,
        TopicPartition(topic, 0),
        0,
        30,
        max_partition_fetch_bytes=1024,
        fetch_max_bytes=2048,
    )
    assert _content(got) == records


@pytest.mark.compat("Fetch", "kafka-python")
def test_fetch_out_of_range(broker: BrokerProcess) -> None:
    topic = "kp-out-of-range"
    records = _records(random.Random("out-of-range"), 5, topic)
    _fill(broker, topic, records)
    tp = TopicPartition(topic, 0)
    consumer = _consumer(broker.bootstrap)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        deadline = time.monotonic() + WAIT
        with pytest.raises(errors.OffsetOutOfRangeError):  # noqa: PT012
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()
    # With a reset policy the client falls back to the earliest offset.
    resetting = _consumer(broker.bootstrap, auto_offset_reset="earliest")
    try:
        resetting.assign([tp])
        resetting.seek(tp, 1000)
        got = _poll(resetting, 5)
    finally:
        resetting.close()
    assert _content(got) == records


@pytest.mark.compat("Produce", "kafka-python")
@pytest.mark.compat("Fetch", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
@pytest.mark.compat("Metadata", "kafka-python")
@pytest.mark.parametrize("version", [(0, 11), (1, 0), (2, 0), (2, 1)], ids=str)
def test_older_protocol_versions(broker: BrokerProcess, version: tuple[int, int]) -> None:
    """kafka-python clamped to an older broker's versions: lower request versions."""
    topic = "kp-version-" + "-".join(map(str, version))
    records = _records(random.Random(topic), 30, topic)
    producer = _producer(broker.bootstrap, api_version=version, linger_ms=5)
    try:
        assert producer.config["api_version"] == version
        sent = _send_all(producer, topic, records)
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
        got = _poll(consumer, 30)
    finally:
        consumer.close()
    assert _content(got) == records


@pytest.mark.compat("Metadata", "kafka-python")
@pytest.mark.compat("ListOffsets", "kafka-python")
def test_oldest_metadata_and_list_offsets_versions(broker: BrokerProcess, admin: Any) -> None:
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

    old_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, api_version=(0, 10, 0))
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
def test_idempotent_produce_deduplicates_retries(broker: BrokerProcess, admin: Any) -> None:
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
                builder.append(i, timestamp=1000 + i, key=tag + b"%d" % i, value=b"v", headers=[])
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
                transactional_id=None,
                acks=-1,
                timeout_ms=10_000,
                topic_data=[
                    topic_data(
                        name=topic, partition_data=[partition_data(index=0, records=records)]
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
    _fill(own_broker, tp.topic, [(b"k", b"v", [])])
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
    """Acknowledged records survive a clean restart and a SIGKILL; clients reconnect."""
    topic = "kp-restart"
    before = _records(random.Random("restart-before"), 80, "before")
    after = _records(random.Random("restart-after"), 20, "after")
    tp = TopicPartition(topic, 0)
    # The same producer and consumer live through the restart and reconnect.
    producer = _producer(own_broker.bootstrap, linger_ms=5, reconnect_backoff_max_ms=500)
    consumer = _consumer(own_broker.bootstrap, reconnect_backoff_max_ms=500)
    try:
        _send_all(producer, topic, before)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert _content(_poll(consumer, 80)) == before

        if how == "stop":
            own_broker.restart()
        else:
            own_broker.kill()
            own_broker.start()

        # The idempotent producer carries on with its producer id and sequences.
        sent = _send_all(producer, topic, after)
        assert [m.offset for m in sent] == list(range(80, 100))
        assert _content(_poll(consumer, 20)) == after
    finally:
        consumer.close()
        producer.close()
    # A fresh consumer after the restart reads it all, in order.
    assert _content(_read(own_broker.bootstrap, tp, 0, 100)) == before + after
