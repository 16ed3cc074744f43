"""The hand-written Produce and Heartbeat response encoders against kio's, byte for byte.

``encode_produce_response`` writes the fields with ``struct``; the reference is the
response built as kio objects (one per topic and partition) and encoded by kio's
generated writer, for every version the broker advertises and for results of every
shape: errors with and without messages, record errors, LogAppendTime set or not,
non-ASCII topic names and messages, a topic whose partitions are interleaved with
another's, leader hints and endpoints (v10+), topic ids (v13).
"""

from __future__ import annotations

import datetime
import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker import KafkaApis
from minikafka.broker._groups import encode_heartbeat_response
from minikafka.broker._metadata_cache import AliveBroker, MetadataCache
from minikafka.broker._produce import encode_produce_response, leader_hints
from minikafka.broker._wire import uvarint
from minikafka.common import TopicPartition
from minikafka.controller import (
    BrokerEndpoint,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minikafka.net import ApiKey, build, encode_entity, nested, response_schema
from minikafka.replication import ProducePartitionResult

LOW, HIGH = KafkaApis.SUPPORTED[ApiKey.PRODUCE]
VERSIONS = range(LOW, HIGH + 1)


def reference(
    version: int,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
    ids: dict[str, uuid.UUID] | None = None,
    leaders: dict[TopicPartition, tuple[int, int]] | None = None,
    endpoints: list[AliveBroker] | None = None,
) -> bytes:
    """The response as kio objects, encoded by kio."""
    cls = response_schema(ApiKey.PRODUCE, version)
    assert cls is not None
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partition_responses")
    by_topic: dict[str, list[object]] = {}
    for tp in order:
        result = results[tp]
        append_time = (
            datetime.datetime.fromtimestamp(result.log_append_time / 1000, datetime.UTC)
            if result.log_append_time >= 0
            else None
        )
        extra = {}
        if version >= 10 and tp in (leaders or {}):
            leader_id, epoch = (leaders or {})[tp]
            extra["current_leader"] = build(
                nested(partition_cls, "current_leader"),
                leader_id=leader_id,
                leader_epoch=epoch,
            )
        by_topic.setdefault(tp.topic, []).append(
            build(
                partition_cls,
                index=tp.partition,
                error_code=result.error_code,
                base_offset=result.base_offset,
                log_append_time=append_time,
                log_start_offset=result.log_start_offset,
                record_errors=tuple(
                    build(
                        nested(partition_cls, "record_errors"),
                        batch_index=i,
                        batch_index_error_message=m,
                    )
                    for i, m in result.record_errors
                ),
                error_message=result.error_message,
                **extra,
            )
        )
    response = build(
        cls,
        responses=tuple(
            build(
                topic_cls,
                name=name,
                topic_id=(ids or {}).get(name),
                partition_responses=tuple(parts),
            )
            for name, parts in by_topic.items()
        ),
        throttle_time=datetime.timedelta(0),
        node_endpoints=tuple(
            build(
                nested(cls, "node_endpoints"),
                node_id=n.node_id,
                host=n.host,
                port=n.port,
                rack=n.rack,
            )
            for n in (endpoints or [])
        )
        if version >= 10
        else (),
    )
    return encode_entity(response)


def test_served_versions_are_the_ones_encoded() -> None:
    # The encoder knows v3-v13; a wider table needs a wider encoder.
    assert (LOW, HIGH) == (3, 13)


@pytest.mark.parametrize("version", VERSIONS)
def test_one_partition_appended(version: int) -> None:
    tp = TopicPartition("t", 0)
    results = {
        tp: ProducePartitionResult(ErrorCode.none, base_offset=41, log_start_offset=0)
    }
    ids = {"t": uuid.UUID(int=1)}
    assert encode_produce_response(version, [tp], results, ids) == reference(
        version, [tp], results, ids
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_no_partitions(version: int) -> None:
    assert encode_produce_response(version, [], {}) == reference(version, [], {})


@pytest.mark.parametrize("version", VERSIONS)
def test_interleaved_topics_errors_and_append_times(version: int) -> None:
    a0, b0, a1, b1 = (
        TopicPartition("a", 0),
        TopicPartition("bé", 0),
        TopicPartition("a", 1),
        TopicPartition("bé", 1),
    )
    order = [a0, b0, a1, b1]
    results = {
        a0: ProducePartitionResult(ErrorCode.none, 0, 1_700_000_000_123, 0),
        b0: ProducePartitionResult(
            ErrorCode.invalid_record,
            error_message="a partition's records must be … one",
        ),
        a1: ProducePartitionResult(ErrorCode.unknown_topic_or_partition),
        b1: ProducePartitionResult(
            ErrorCode.not_enough_replicas_after_append, 7, -1, 3, error_message=""
        ),
    }
    ids = {"a": uuid.UUID(int=1), "bé": uuid.UUID(int=2)}
    assert encode_produce_response(version, order, results, ids) == reference(
        version, order, results, ids
    )


@pytest.mark.parametrize("seed", range(60))
def test_random_results(seed: int) -> None:
    # Record errors (KIP-467, v8+), leader hints for NOT_LEADER_OR_FOLLOWER and the
    # leaders' endpoints (KIP-951, v10+), topic ids (KIP-516, v13): each where its
    # version has it.
    rng = random.Random(seed)
    version = rng.choice(VERSIONS)
    topics = [f"topic-{i}" for i in range(rng.randint(1, 4))]
    ids = {t: uuid.UUID(int=rng.getrandbits(128)) for t in topics}
    order = [
        TopicPartition(rng.choice(topics), rng.randint(0, 2**31 - 1))
        for _ in range(rng.randint(1, 12))
    ]
    errors = [
        ErrorCode.none,
        ErrorCode.invalid_record,
        ErrorCode.not_leader_or_follower,
    ]
    results = {
        tp: ProducePartitionResult(
            rng.choice(errors),
            base_offset=rng.randint(-1, 2**63 - 1),
            log_append_time=rng.choice([-1, rng.randint(0, 2**42)]),
            log_start_offset=rng.randint(-1, 2**40),
            error_message=rng.choice([None, "", "boom", "ünïcode ✓"]),
            record_errors=tuple(
                (rng.randint(0, 99), rng.choice(["", "bad ✗", "x" * 300]))
                for _ in range(rng.choice([0, 0, 1, 3]))
            )
            if version >= 8
            else (),
        )
        for tp in order
    }
    leaders = {
        tp: (rng.choice([-1, 1, 2]), rng.randint(0, 9))
        for tp, r in results.items()
        if r.error_code is ErrorCode.not_leader_or_follower
    }
    endpoints = [
        AliveBroker(n, f"host-{n}.example", 9092 + n, rng.choice([None, "rack-a"]))
        for n in sorted({leader for leader, _ in leaders.values() if leader >= 0})
    ]
    assert encode_produce_response(
        version, order, results, ids, leaders, endpoints
    ) == reference(version, order, results, ids, leaders, endpoints)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_partition_whose_leader_is_unknown_carries_no_hint(version: int) -> None:
    # Kafka writes current_leader only when it differs from its default (-1, -1).
    tp = TopicPartition("t", 0)
    results = {tp: ProducePartitionResult(ErrorCode.not_leader_or_follower)}
    ids = {"t": uuid.UUID(int=7)}
    assert encode_produce_response(
        version, [tp], results, ids, {tp: (-1, -1)}, []
    ) == reference(version, [tp], results, ids, {}, [])


HEARTBEAT_LOW, HEARTBEAT_HIGH = KafkaApis.SUPPORTED[ApiKey.HEARTBEAT]


def test_heartbeat_versions_are_the_ones_encoded() -> None:
    # v4 is the first flexible version; a v5 would need its encoder looked at again.
    assert (HEARTBEAT_LOW, HEARTBEAT_HIGH) == (0, 4)


@pytest.mark.parametrize("version", range(HEARTBEAT_LOW, HEARTBEAT_HIGH + 1))
@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.none,
        ErrorCode.rebalance_in_progress,
        ErrorCode.unknown_member_id,
        ErrorCode.illegal_generation,
        ErrorCode.fenced_instance_id,
        ErrorCode.coordinator_not_available,
    ],
)
def test_heartbeat(version: int, error: ErrorCode) -> None:
    cls = response_schema(ApiKey.HEARTBEAT, version)
    assert cls is not None
    expected = encode_entity(
        build(cls, throttle_time=datetime.timedelta(0), error_code=error)
    )
    assert encode_heartbeat_response(version, error) == expected


def test_leader_hints_name_the_leader_and_epoch_the_metadata_knows() -> None:
    # KIP-951: only NOT_LEADER_OR_FOLLOWER gets a hint, and only from v10; a partition
    # with no leader names (-1, its epoch), which the encoder still writes (it is not
    # the default), but no endpoint; a fenced leader or one without the request's
    # listener has no endpoint either.
    def broker(node: int, fenced: bool = False) -> BrokerRegistration:
        endpoint = BrokerEndpoint("PLAINTEXT", f"host-{node}", 9090 + node)
        return BrokerRegistration(
            node, 1, uuid.UUID(int=node), (endpoint,), None, fenced
        )

    def partition(leader: int, epoch: int) -> PartitionRegistration:
        return PartitionRegistration(
            (1, 2, 3), (1, 2, 3), leader=leader, leader_epoch=epoch
        )

    topic_id = uuid.UUID(int=99)
    partitions = {0: partition(2, 4), 1: partition(-1, 7), 2: partition(3, 1)}
    image = MetadataImage(
        brokers={1: broker(1), 2: broker(2), 3: broker(3, fenced=True)},
        topics={topic_id: TopicImage("t", topic_id, partitions)},
        topic_ids={"t": topic_id},
    )
    cache = MetadataCache(1, image)
    refused = ProducePartitionResult(ErrorCode.not_leader_or_follower)
    results = {
        TopicPartition("t", 0): refused,
        TopicPartition("t", 1): refused,
        TopicPartition("t", 2): refused,
        TopicPartition("t", 9): refused,  # no such partition: no hint
        TopicPartition("gone", 0): refused,  # no such topic: no hint
        TopicPartition("t", 3): ProducePartitionResult(ErrorCode.none),
    }
    leaders, endpoints = leader_hints(10, "PLAINTEXT", cache, results)
    assert leaders == {
        TopicPartition("t", 0): (2, 4),
        TopicPartition("t", 1): (-1, 7),
        TopicPartition("t", 2): (3, 1),
    }
    assert endpoints == [AliveBroker(2, "host-2", 9092, None)]
    assert leader_hints(10, "OTHER", cache, results)[1] == []
    assert leader_hints(9, "PLAINTEXT", cache, results) == ({}, [])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16_383, b"\xff\x7f"),
        (16_384, b"\x80\x80\x01"),
        (2**31 - 1, b"\xff\xff\xff\xff\x07"),
    ],
)
def test_an_unsigned_varint_is_seven_bits_a_byte_low_first(
    value: int, expected: bytes
) -> None:
    """The encoders' unsigned varint (the protocol's, as protobuf's): one byte up to
    127, taken from a table, and seven bits a byte with the high bit set on all but the
    last above."""
    assert uvarint(value) == expected
