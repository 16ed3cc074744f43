"""confluent-kafka (librdkafka) against the real broker: admin, produce, consume by assign.

Each test proves cells of COMPAT.md's compatibility matrix (``@pytest.mark.compat``).
Consumers here only ``assign`` and never commit; consumer groups have their own tests in
``test_groups_confluent.py``. confluent-kafka insists on a ``group.id`` even for a
consumer that only assigns; with ``enable.auto.commit`` off it only looks the
coordinator up.

What is read back is compared with what was written: keys, values, headers, timestamps,
offsets and the order within each partition. Where the client's choice is invisible on
the wire to a reader (the compression codec, the idempotent producer's id), the batch
headers in the broker's segment files are read directly (record batch v2 layout, KIP-98),
with the questions ``_clients.py`` asks of kcat's batches too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
    libversion,
)

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from minikafka.broker.testing import BrokerProcess
from tests.compat._clients import (
    CODECS,
    assert_codec_stored,
    assert_one_idempotent_producer,
    stored_batches,
)
from tests.compat._groups import unique_name

TIMEOUT = 20.0  # seconds any one client operation may take before the test fails
LIBRDKAFKA = tuple(int(part) for part in libversion()[0].split(".")[:3])


HeaderList = tuple[tuple[str, bytes | None], ...]


@attrs.frozen
class Outgoing:
    """One record to produce; ``partition`` None lets the partitioner choose."""

    value: bytes | None
    key: bytes | None = None
    headers: HeaderList = ()
    partition: int | None = None
    timestamp: int | None = None


@attrs.frozen
class Delivered:
    partition: int
    offset: int


@attrs.frozen
class Received:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: HeaderList
    timestamp: tuple[int, int]


# --- helpers -----------------------------------------------------------------------------


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name of this test alone, so one broker serves the whole module."""
    return unique_name(request, "cf-")


@pytest.fixture
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def result_of(futures: Mapping[Any, Any]) -> dict[Any, object]:
    """Each future's result, or the name of the Kafka error it failed with."""
    out: dict[Any, object] = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout=TIMEOUT)
        except KafkaException as exc:
            error = exc.args[0]
            assert isinstance(error, KafkaError)
            out[key] = error.name()
    return out


def described(admin: AdminClient, topic: str) -> dict[str, Any]:
    """The topic's configuration, as DescribeConfigs tells it."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = result_of(admin.describe_configs([resource]))[resource]
    assert isinstance(configs, dict)
    return configs


def created_and_described(admin: AdminClient, new_topic: NewTopic) -> dict[str, Any]:
    assert result_of(admin.create_topics([new_topic])) == {new_topic.topic: None}
    return described(admin, new_topic.topic)


def produce(
    bootstrap: str, topic: str, records: Sequence[Outgoing], **conf: object
) -> list[Delivered]:
    """Produce ``records`` in order, flush, and return where each one landed, in order."""
    landed: dict[int, Delivered] = {}
    errors: list[KafkaError] = []

    def reporter(index: int) -> Callable[[KafkaError | None, Message], None]:
        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                errors.append(error)
            partition, offset = message.partition(), message.offset()
            assert partition is not None
            # acks=0: the producer is told nothing, not even an offset.
            landed[index] = Delivered(
                partition, OFFSET_INVALID if offset is None else offset
            )

        return on_delivery

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for index, record in enumerate(records):
        kwargs: dict[str, Any] = {}
        if record.partition is not None:
            kwargs["partition"] = record.partition
        if record.timestamp is not None:
            kwargs["timestamp"] = record.timestamp
        producer.produce(
            topic,
            value=record.value,
            key=record.key,
            headers=list(record.headers),
            on_delivery=reporter(index),
            **kwargs,
        )
    assert producer.flush(TIMEOUT) == 0, "records still undelivered after the deadline"
    assert errors == []
    assert sorted(landed) == list(range(len(records)))
    return [landed[index] for index in range(len(records))]


def new_consumer(bootstrap: str, **conf: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "minikafka-compat-assign-only",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 100,  # reach end-of-partition quickly
            **conf,
        }
    )


def received(message: Message) -> Received:
    partition, offset = message.partition(), message.offset()
    assert partition is not None
    assert offset is not None
    pairs = message.headers() or []
    assert isinstance(pairs, list)  # a consumed record's headers: a list of pairs
    headers: list[tuple[str, bytes | None]] = []
    for name, value in pairs:
        assert value is None or isinstance(value, bytes)
        headers.append((name, value))
    return Received(
        partition,
        offset,
        message.key(),
        message.value(),
        tuple(headers),
        message.timestamp(),
    )


def poll_until(
    consumer: Consumer, done: Callable[[list[Received], set[int]], bool], what: str
) -> list[Received]:
    """Poll until ``done(records, partitions at their end)``; fail at the deadline."""
    records: list[Received] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    while not done(records, at_end):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not done after {TIMEOUT}s; got {records!r}")
        message = consumer.poll(0.2)
        if message is None:
            continue
        error = message.error()
        partition = message.partition()
        if error is not None and error.code() == KafkaError._PARTITION_EOF:
            assert partition is not None
            at_end.add(partition)
        elif error is not None:
            raise AssertionError(f"{what}: consumer error {error}")
        else:
            assert partition is not None
            at_end.discard(partition)
            records.append(received(message))
    return records


def read_all(
    bootstrap: str, assignment: Iterable[TopicPartition], **conf: object
) -> list[Received]:
    """Everything from the assigned positions up to the end of every partition."""
    partitions = list(assignment)
    consumer = new_consumer(bootstrap, **conf)
    try:
        consumer.assign(partitions)
        wanted = {tp.partition for tp in partitions}
        return poll_until(
            consumer, lambda _, at_end: at_end >= wanted, "read to the end"
        )
    finally:
        consumer.close()


def from_beginning(
    topic: str, partitions: Iterable[int] = (0,)
) -> list[TopicPartition]:
    return [TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions]


def keyed_records(count: int, prefix: str = "") -> list[Outgoing]:
    return [
        Outgoing(
            key=f"key-{i % 4}".encode(),
            value=f"{prefix}value-{i}".encode(),
            headers=(("index", str(i).encode()), ("source", b"confluent-kafka")),
        )
        for i in range(count)
    ]


def assert_read_back(
    got: Sequence[Received], sent: Sequence[Outgoing], delivered: Sequence[Delivered]
) -> None:
    """``got`` is exactly ``sent``, in order, at the offsets the producer was told."""
    assert [(r.key, r.value, r.headers) for r in got] == [
        (s.key, s.value, s.headers) for s in sent
    ]
    assert [r.offset for r in got] == list(range(len(sent)))
    known = [d.offset for d in delivered if d.offset >= 0]
    if known:  # acks=0 tells the producer nothing
        assert known == [r.offset for r in got]
    assert all(r.timestamp[0] == TIMESTAMP_CREATE_TIME for r in got)


# --- admin -------------------------------------------------------------------------------


@pytest.mark.compat("ApiVersions", "confluent-kafka")
@pytest.mark.compat("CreateTopics", "confluent-kafka")
@pytest.mark.compat("Metadata", "confluent-kafka")
def test_create_topics_and_list_topics(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    futures = admin.create_topics(
        [
            NewTopic(topic, 3, 1),
            NewTopic(topic + "-assigned", 2, replica_assignment=[[1], [1]]),
        ],
        operation_timeout=TIMEOUT,
    )
    assert result_of(futures) == {topic: None, topic + "-assigned": None}

    metadata = admin.list_topics(timeout=TIMEOUT)
    assert metadata.controller_id == 1
    assert [(b.id, f"{b.host}:{b.port}") for b in metadata.brokers.values()] == [
        (1, broker.bootstrap)
    ]
    for name, count in ((topic, 3), (topic + "-assigned", 2)):
        described = metadata.topics[name]
        assert described.error is None
        assert sorted(described.partitions) == list(range(count))
        for partition in described.partitions.values():
            assert (partition.leader, partition.replicas, partition.isrs) == (
                1,
                [1],
                [1],
            )

    one = admin.list_topics(topic, timeout=TIMEOUT)
    assert list(one.topics) == [topic]


@pytest.mark.compat("CreateTopics", "confluent-kafka")
def test_create_topics_errors(admin: AdminClient, topic: str) -> None:
    assert result_of(admin.create_topics([NewTopic(topic, 1, 1)])) == {topic: None}
    futures = admin.create_topics(
        [
            NewTopic(topic, 1, 1),  # exists
            NewTopic(topic + "-rf3", 1, 3),  # one broker
            NewTopic(topic + "-zero", 0, 1),
            NewTopic("bad name!", 1, 1),
        ]
    )
    assert result_of(futures) == {
        topic: "TOPIC_ALREADY_EXISTS",
        topic + "-rf3": "INVALID_REPLICATION_FACTOR",
        topic + "-zero": "INVALID_PARTITIONS",
        "bad name!": "TOPIC_EXCEPTION",
    }

    # validate_only checks and answers, and creates nothing.
    futures = admin.create_topics([NewTopic(topic + "-dry", 2, 1)], validate_only=True)
    assert result_of(futures) == {topic + "-dry": None}
    topics = admin.list_topics(timeout=TIMEOUT).topics
    assert topic in topics
    assert not {topic + "-rf3", topic + "-zero", topic + "-dry"} & set(topics)


@pytest.mark.compat("DescribeConfigs", "confluent-kafka")
def test_describe_configs(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    overrides = {"retention.ms": "3600000", "cleanup.policy": "compact"}
    configs = created_and_described(admin, NewTopic(topic, 1, 1, config=overrides))
    for name, value in overrides.items():
        assert configs[name].value == value
        assert configs[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        assert not configs[name].is_default
    # Kafka's own defaults for the keys not set.
    defaults = {
        "segment.bytes": "1073741824",
        "min.insync.replicas": "1",
        "message.timestamp.type": "CreateTime",
        "max.message.bytes": "1048588",
    }
    for name, value in defaults.items():
        assert configs[name].value == value
        assert configs[name].source == ConfigSource.DEFAULT_CONFIG.value
        assert configs[name].is_default

    # The broker itself: the keys it was started with are static broker config.
    broker_resource = ConfigResource(ResourceType.BROKER, "1")
    broker_configs = result_of(admin.describe_configs([broker_resource]))[
        broker_resource
    ]
    assert isinstance(broker_configs, dict)
    assert broker_configs["log.dirs"].value == str(broker.data_dir)
    assert broker_configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value

    missing = ConfigResource(ResourceType.TOPIC, topic + "-missing")
    assert result_of(admin.describe_configs([missing])) == {
        missing: "UNKNOWN_TOPIC_OR_PART"
    }


@pytest.mark.compat("DescribeConfigs", "confluent-kafka")
def test_describe_configs_topic_keys_are_not_read_only(
    admin: AdminClient, topic: str
) -> None:
    configs = created_and_described(admin, NewTopic(topic, 1, 1))
    assert {name for name, entry in configs.items() if entry.is_read_only} == set()


@pytest.mark.compat("CreateTopics", "confluent-kafka")
def test_create_topics_accepts_compression_type_producer(
    admin: AdminClient, topic: str
) -> None:
    new_topic = NewTopic(topic, 1, 1, config={"compression.type": "producer"})
    configs = created_and_described(admin, new_topic)
    assert configs["compression.type"].value == "producer"


@pytest.mark.compat("DescribeConfigs", "confluent-kafka")
def test_describe_configs_lists_synonyms(admin: AdminClient, topic: str) -> None:
    new_topic = NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})
    configs = created_and_described(admin, new_topic)
    override = configs["retention.ms"].synonyms
    assert override["retention.ms"].value == "3600000"
    assert override["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    default = configs["segment.bytes"].synonyms
    assert default["log.segment.bytes"].value == "1073741824"
    assert default["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


@pytest.mark.compat("CreatePartitions", "confluent-kafka")
@pytest.mark.compat("Metadata", "confluent-kafka")
def test_create_partitions(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    assert result_of(admin.create_topics([NewTopic(topic, 2, 1)])) == {topic: None}
    dry = admin.create_partitions([NewPartitions(topic, 6)], validate_only=True)
    assert result_of(dry) == {topic: None}
    assert len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions) == 2

    assert result_of(admin.create_partitions([NewPartitions(topic, 5)])) == {
        topic: None
    }
    assert result_of(admin.create_partitions([NewPartitions(topic, 4)])) == {
        topic: "INVALID_PARTITIONS"
    }
    assert result_of(
        admin.create_partitions([NewPartitions(topic + "-missing", 4)])
    ) == {topic + "-missing": "UNKNOWN_TOPIC_OR_PART"}
    described = admin.list_topics(topic, timeout=TIMEOUT).topics[topic]
    assert sorted(described.partitions) == [0, 1, 2, 3, 4]

    # The new partitions take records like the old ones.
    sent = [Outgoing(value=f"p{p}".encode(), partition=p) for p in range(5)]
    delivered = produce(broker.bootstrap, topic, sent)
    assert sorted((d.partition, d.offset) for d in delivered) == [
        (p, 0) for p in range(5)
    ]
    got = read_all(broker.bootstrap, from_beginning(topic, range(5)))
    assert sorted((r.partition, r.value) for r in got) == [
        (p, f"p{p}".encode()) for p in range(5)
    ]


@pytest.mark.compat("DeleteTopics", "confluent-kafka")
def test_delete_topics(broker: BrokerProcess, admin: AdminClient, topic: str) -> None:
    produce(
        broker.bootstrap, topic, [Outgoing(value=b"old-0"), Outgoing(value=b"old-1")]
    )
    assert topic in admin.list_topics(timeout=TIMEOUT).topics

    assert result_of(admin.delete_topics([topic], operation_timeout=TIMEOUT)) == {
        topic: None
    }
    assert topic not in admin.list_topics(timeout=TIMEOUT).topics
    assert result_of(admin.delete_topics([topic + "-missing"])) == {
        topic + "-missing": "UNKNOWN_TOPIC_OR_PART"
    }

    # A topic created again under the name starts empty: nothing of the old one is served.
    assert result_of(admin.create_topics([NewTopic(topic, 1, 1)])) == {topic: None}
    consumer = new_consumer(broker.bootstrap)
    try:
        low_high = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT, cached=False
        )
        assert low_high == (0, 0)
    finally:
        consumer.close()
    produce(broker.bootstrap, topic, [Outgoing(value=b"new-0")])
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert [(r.offset, r.value) for r in got] == [(0, b"new-0")]


@pytest.mark.compat("CreateTopics", "confluent-kafka")
def test_create_topics_refuses_cluster_metadata(own_broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": own_broker.bootstrap})
    futures = admin.create_topics([NewTopic("__cluster_metadata", 1, 1)])
    assert result_of(futures) == {"__cluster_metadata": "INVALID_REQUEST"}
    assert "__cluster_metadata" not in admin.list_topics(timeout=TIMEOUT).topics
    own_broker.restart()


# --- produce -----------------------------------------------------------------------------


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_acks(broker: BrokerProcess, topic: str, acks: str) -> None:
    sent = keyed_records(50)
    delivered = produce(broker.bootstrap, topic, sent, acks=acks)
    if acks == "0":
        assert {d.offset for d in delivered} == {OFFSET_INVALID}
    else:
        assert [d.offset for d in delivered] == list(range(50))
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert_read_back(got, sent, delivered)


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.parametrize("codec", list(CODECS))
def test_produce_compression(broker: BrokerProcess, topic: str, codec: str) -> None:
    sent = [
        Outgoing(key=f"k{i}".encode(), value=f"compressible {i} ".encode() * 20)
        for i in range(300)
    ]
    delivered = produce(
        broker.bootstrap, topic, sent, **{"compression.type": codec, "linger.ms": 50}
    )
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert_read_back(got, sent, delivered)
    assert_codec_stored(broker, topic, 300, codec, LIBRDKAFKA)


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("InitProducerId", "confluent-kafka")
def test_idempotent_producer(broker: BrokerProcess, topic: str) -> None:
    sent = keyed_records(100)
    delivered = produce(
        broker.bootstrap,
        topic,
        sent,
        **{"enable.idempotence": True, "max.in.flight.requests.per.connection": 5},
    )
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert_read_back(got, sent, delivered)
    assert_one_idempotent_producer(stored_batches(broker.data_dir, topic))


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.compat("CreateTopics", "confluent-kafka")
def test_keys_headers_and_order_per_partition(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    assert result_of(admin.create_topics([NewTopic(topic, 3, 1)])) == {topic: None}
    special = [
        Outgoing(key=bytes(range(256)), value=bytes(range(255, -1, -1))),
        Outgoing(key=b"tombstone", value=None),
        Outgoing(key=b"", value=b""),
        Outgoing(key=None, value=b"no key", partition=1),
        Outgoing(
            key=b"headers",
            value="ünïcode ✓".encode(),
            headers=(("dup", b"1"), ("dup", b"2"), ("null", None), ("empty", b"")),
        ),
    ]
    sent = keyed_records(60) + special
    delivered = produce(broker.bootstrap, topic, sent)
    got = read_all(broker.bootstrap, from_beginning(topic, range(3)))

    landed = {(d.partition, d.offset): s for d, s in zip(delivered, sent, strict=True)}
    assert len(got) == len(sent)
    for record in got:
        source = landed[(record.partition, record.offset)]
        assert (record.key, record.value, record.headers) == (
            source.key,
            source.value,
            source.headers,
        )
    for partition in range(3):
        in_partition = [r for r in got if r.partition == partition]
        produced_order = [
            s for d, s in zip(delivered, sent, strict=True) if d.partition == partition
        ]
        assert [r.value for r in in_partition] == [s.value for s in produced_order]
        assert [r.offset for r in in_partition] == list(range(len(in_partition)))
    # The same key always lands in the same partition.
    partitions_of_key: dict[bytes | None, set[int]] = {}
    for d, s in zip(delivered, sent, strict=True):
        partitions_of_key.setdefault(s.key, set()).add(d.partition)
    assert all(len(partitions_of_key[f"key-{k}".encode()]) == 1 for k in range(4))


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("CreateTopics", "confluent-kafka")
def test_log_append_time_topic(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    config = {"message.timestamp.type": "LogAppendTime"}
    assert result_of(admin.create_topics([NewTopic(topic, 1, 1, config=config)])) == {
        topic: None
    }
    before = int(time.time() * 1000)
    sent = [Outgoing(value=f"v{i}".encode(), timestamp=1_000 + i) for i in range(5)]
    produce(
        broker.bootstrap, topic, sent, **{"compression.type": "gzip", "linger.ms": 20}
    )
    after = int(time.time() * 1000)
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert [r.value for r in got] == [s.value for s in sent]
    # The broker's clock replaces the producer's timestamps (KIP-32).
    assert {r.timestamp[0] for r in got} == {TIMESTAMP_LOG_APPEND_TIME}
    assert all(before <= r.timestamp[1] <= after for r in got)


@pytest.mark.compat("Produce", "confluent-kafka")
def test_acks_all_needs_min_insync_replicas(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    config = {"min.insync.replicas": "2"}  # one broker: the ISR is 1
    assert result_of(admin.create_topics([NewTopic(topic, 1, 1, config=config)])) == {
        topic: None
    }
    reports: list[tuple[str | None, int | None]] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        reports.append((None if error is None else error.name(), message.offset()))

    for acks in ("all", "1"):
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap, "acks": acks, "retries": 0}
        )
        producer.produce(topic, value=f"acks={acks}".encode(), on_delivery=on_delivery)
        assert producer.flush(TIMEOUT) == 0
    # acks=all is refused before anything is written; acks=1 does not ask for the ISR.
    assert reports == [("NOT_ENOUGH_REPLICAS", None), (None, 0)]
    got = read_all(broker.bootstrap, from_beginning(topic))
    assert [(r.offset, r.value) for r in got] == [(0, b"acks=1")]


# --- consume by assign -------------------------------------------------------------------


@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.compat("ListOffsets", "confluent-kafka")
def test_consume_from_earliest(broker: BrokerProcess, topic: str) -> None:
    sent = keyed_records(20)
    delivered = produce(broker.bootstrap, topic, sent)
    got = read_all(broker.bootstrap, [TopicPartition(topic, 0, OFFSET_BEGINNING)])
    assert_read_back(got, sent, delivered)


@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.compat("ListOffsets", "confluent-kafka")
def test_consume_from_latest_sees_only_new_records(
    broker: BrokerProcess, topic: str
) -> None:
    produce(broker.bootstrap, topic, keyed_records(10, "old-"))
    consumer = new_consumer(broker.bootstrap)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        # End-of-partition means the consumer resolved "latest" and is waiting there.
        before = poll_until(
            consumer, lambda _, at_end: 0 in at_end, "position at the end"
        )
        assert before == []
        new = keyed_records(5, "new-")
        produce(broker.bootstrap, topic, new)
        got = poll_until(
            consumer, lambda records, _: len(records) >= 5, "the new records"
        )
        got += poll_until(consumer, lambda _, at_end: 0 in at_end, "the end again")
    finally:
        consumer.close()
    assert [(r.offset, r.value) for r in got] == [
        (10 + i, n.value) for i, n in enumerate(new)
    ]


@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_consume_from_an_offset(broker: BrokerProcess, topic: str, codec: str) -> None:
    # With gzip the offset falls inside a compressed batch, which the broker serves whole
    # and the client trims.
    sent = keyed_records(100)
    produce(
        broker.bootstrap, topic, sent, **{"compression.type": codec, "linger.ms": 50}
    )
    start = 37
    if codec != "none":
        # Inside a batch of several records, wherever the producer's linger cut them
        # (a loaded machine may cut at any record).
        batches = [
            b
            for b in stored_batches(broker.data_dir, topic)
            if b.last_offset > b.base_offset
        ]
        assert batches, "the producer put several records in one batch"
        batch = batches[0]
        start = batch.base_offset + max(1, (batch.last_offset - batch.base_offset) // 2)
        assert batch.base_offset < start <= batch.last_offset
    got = read_all(broker.bootstrap, [TopicPartition(topic, 0, start)])
    assert [(r.offset, r.value) for r in got] == [
        (i, sent[i].value) for i in range(start, 100)
    ]


@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.compat("ListOffsets", "confluent-kafka")
def test_consume_out_of_range_offset_resets(broker: BrokerProcess, topic: str) -> None:
    sent = keyed_records(10)
    produce(broker.bootstrap, topic, sent)
    # The broker answers OFFSET_OUT_OF_RANGE; the client resets to the earliest offset.
    got = read_all(
        broker.bootstrap,
        [TopicPartition(topic, 0, 500)],
        **{"auto.offset.reset": "earliest"},
    )
    assert [r.value for r in got] == [s.value for s in sent]
    # ... or reports the error when told not to reset.
    consumer = new_consumer(broker.bootstrap, **{"auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition(topic, 0, 500)])
        deadline = time.monotonic() + TIMEOUT
        error = None
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is not None, (
                    "a record from an out-of-range offset"
                )
                error = message.error()
        assert error is not None
        assert error.code() == KafkaError._AUTO_OFFSET_RESET
    finally:
        consumer.close()


@pytest.mark.compat("ListOffsets", "confluent-kafka")
@pytest.mark.compat("Fetch", "confluent-kafka")
def test_consume_from_a_timestamp(broker: BrokerProcess, topic: str) -> None:
    base = (int(time.time()) - 120) * 1000  # recent, so retention never touches it
    sent = [
        Outgoing(value=f"t{i}".encode(), timestamp=base + i * 1000) for i in range(10)
    ]
    # A long linger: on a loaded machine 100 ms was not always enough to put all ten in
    # one batch, and the lookups below are about records inside a batch.
    produce(
        broker.bootstrap, topic, sent, **{"linger.ms": 1000, "compression.type": "gzip"}
    )
    # The lookups below land inside a compressed batch: the broker must find the record,
    # not just the batch (Kafka's LogSegment.findOffsetByTimestamp).
    batches = stored_batches(broker.data_dir, topic)
    assert any(b.base_offset < 3 and b.last_offset > 4 for b in batches), batches

    consumer = new_consumer(broker.bootstrap)
    try:
        queries = {base - 1: 0, base: 0, base + 3000: 3, base + 3500: 4, base + 9000: 9}
        for timestamp, expected in queries.items():
            [found] = consumer.offsets_for_times(
                [TopicPartition(topic, 0, timestamp)], timeout=TIMEOUT
            )
            assert (found.error, found.offset) == (None, expected), timestamp
        [after_last] = consumer.offsets_for_times(
            [TopicPartition(topic, 0, base + 10_000)], timeout=TIMEOUT
        )
        assert after_last.offset == OFFSET_END  # no record that late: -1, the end
    finally:
        consumer.close()

    got = read_all(broker.bootstrap, [TopicPartition(topic, 0, 4)])
    assert [(r.offset, r.value, r.timestamp) for r in got] == [
        (i, f"t{i}".encode(), (TIMESTAMP_CREATE_TIME, base + i * 1000))
        for i in range(4, 10)
    ]


@pytest.mark.compat("ListOffsets", "confluent-kafka")
def test_watermarks_and_list_offsets(
    broker: BrokerProcess, admin: AdminClient, topic: str
) -> None:
    base = (int(time.time()) - 120) * 1000
    # The largest timestamp is in the middle: max_timestamp must find it there.
    stamps = [base, base + 5000, base + 9000, base + 2000, base + 3000]
    produce(
        broker.bootstrap,
        topic,
        [Outgoing(value=b"v", timestamp=t) for t in stamps],
        **{"linger.ms": 0},
    )
    partition = TopicPartition(topic, 0)
    consumer = new_consumer(broker.bootstrap)
    try:
        assert consumer.get_watermark_offsets(
            partition, timeout=TIMEOUT, cached=False
        ) == (0, 5)
    finally:
        consumer.close()

    specs = {
        "earliest": OffsetSpec.earliest(),  # type: ignore[no-untyped-call]
        "latest": OffsetSpec.latest(),  # type: ignore[no-untyped-call]
        "for_timestamp": OffsetSpec.for_timestamp(base + 4000),
        "max_timestamp": OffsetSpec.max_timestamp(),  # type: ignore[no-untyped-call]
    }
    answers = {}
    for name, spec in specs.items():
        [(_, result)] = result_of(admin.list_offsets({partition: spec})).items()
        assert not isinstance(result, str), f"{name}: {result}"
        answers[name] = (result.offset, result.timestamp)  # type: ignore[attr-defined]
    assert answers == {
        "earliest": (0, -1),
        "latest": (5, -1),
        "for_timestamp": (1, base + 5000),
        "max_timestamp": (2, base + 9000),
    }


# --- across a restart --------------------------------------------------------------------


@pytest.mark.compat("Produce", "confluent-kafka")
@pytest.mark.compat("Fetch", "confluent-kafka")
@pytest.mark.compat("InitProducerId", "confluent-kafka")
def test_read_back_across_restart(own_broker: BrokerProcess) -> None:
    topic = "cf-restart"
    admin = AdminClient({"bootstrap.servers": own_broker.bootstrap})
    new_topic = NewTopic(topic, 3, 1, config={"retention.ms": "7200000"})
    assert result_of(admin.create_topics([new_topic])) == {topic: None}

    reports: list[tuple[KafkaError | None, int, int]] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        reports.append((error, message.partition() or 0, message.offset() or 0))

    # One idempotent producer lives through the restart: the broker must rebuild its
    # sequence state from the log and accept the records that follow.
    producer = Producer(
        {
            "bootstrap.servers": own_broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    sent: list[tuple[int, bytes]] = []
    for phase in ("before", "after"):
        for i in range(45):
            value = f"{phase}-{i}".encode()
            producer.produce(
                topic, value=value, partition=i % 3, on_delivery=on_delivery
            )
            sent.append((i % 3, value))
        assert producer.flush(TIMEOUT) == 0
        if phase == "before":
            own_broker.restart()
    assert [r for r in reports if r[0] is not None] == []

    got = read_all(own_broker.bootstrap, from_beginning(topic, range(3)))
    for partition in range(3):
        values = [r.value for r in got if r.partition == partition]
        assert values == [v for p, v in sent if p == partition]
        offsets = [r.offset for r in got if r.partition == partition]
        assert offsets == list(range(30))
        batches = stored_batches(own_broker.data_dir, topic, partition)
        assert len({(b.producer_id, b.producer_epoch) for b in batches}) == 1

    # The topic's shape and configuration survived too.
    assert len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions) == 3
    assert described(admin, topic)["retention.ms"].value == "7200000"
