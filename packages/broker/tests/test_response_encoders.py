"""The hand-written Produce and Heartbeat response encoders against kio's, byte for byte.

``encode_produce_response`` writes the fields with ``struct``; the reference is the
response built as kio objects (one per topic and partition) and encoded by kio's
generated writer, for every version the broker advertises and for results of every
shape: errors with and without messages, LogAppendTime set or not, non-ASCII topic
names and messages, a topic whose partitions are interleaved with another's.
"""

from __future__ import annotations

import datetime
import random

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker import KafkaApis
from minikafka.broker._groups import encode_heartbeat_response
from minikafka.broker._produce import encode_produce_response
from minikafka.common import TopicPartition
from minikafka.net import ApiKey, build, encode_entity, nested, response_schema
from minikafka.replication import ProducePartitionResult

LOW, HIGH = KafkaApis.SUPPORTED[ApiKey.PRODUCE]
VERSIONS = range(LOW, HIGH + 1)


def reference(
    version: int,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
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
        by_topic.setdefault(tp.topic, []).append(
            build(
                partition_cls,
                index=tp.partition,
                error_code=result.error_code,
                base_offset=result.base_offset,
                log_append_time=append_time,
                log_start_offset=result.log_start_offset,
                record_errors=(),
                error_message=result.error_message,
            )
        )
    response = build(
        cls,
        responses=tuple(
            build(topic_cls, name=name, partition_responses=tuple(parts))
            for name, parts in by_topic.items()
        ),
        throttle_time=datetime.timedelta(0),
    )
    return encode_entity(response)


def test_served_versions_are_the_ones_encoded() -> None:
    # The encoder knows v3-v8 (none flexible); a wider table needs a wider encoder.
    assert (LOW, HIGH) == (3, 8)


@pytest.mark.parametrize("version", VERSIONS)
def test_one_partition_appended(version: int) -> None:
    tp = TopicPartition("t", 0)
    results = {
        tp: ProducePartitionResult(ErrorCode.none, base_offset=41, log_start_offset=0)
    }
    assert encode_produce_response(version, [tp], results) == reference(
        version, [tp], results
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
    assert encode_produce_response(version, order, results) == reference(
        version, order, results
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_results(seed: int) -> None:
    rng = random.Random(seed)
    version = rng.choice(VERSIONS)
    topics = [f"topic-{i}" for i in range(rng.randint(1, 4))]
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
        )
        for tp in order
    }
    assert encode_produce_response(version, order, results) == reference(
        version, order, results
    )


HEARTBEAT_LOW, HEARTBEAT_HIGH = KafkaApis.SUPPORTED[ApiKey.HEARTBEAT]


def test_heartbeat_versions_are_the_ones_encoded() -> None:
    assert (HEARTBEAT_LOW, HEARTBEAT_HIGH) == (0, 3)  # v4 is flexible: a wider encoder


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
