"""The producer's trace events (``producer.batch``), in virtual time: the Sender and its
RecordAccumulator driven by hand, answered by a fake leader, traced into a
RecordingTracer given to the Sender (never installed process-wide)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from minikafka.client import (
    LEAVE_REASONS,
    ClientMetadata,
    PartitionResponse,
    PendingRecord,
    ProducePlan,
    ProducerBatchCompleted,
    ProducerConfig,
    RecordAccumulator,
    Sender,
    SenderResult,
    TopicInfo,
)
from minikafka.client._producer import producer_cores
from minikafka.common import TopicPartition
from minikafka.net import Node
from minikafka.trace import NullTracer, spark_schema
from minikafka.trace.testing import RecordingTracer, recording_tracer

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
CLIENT_ID = "trace-test"


def sender(
    tracer: RecordingTracer | None, linger_ms: int = 5, **settings: object
) -> Sender:
    """A non-idempotent Sender (no producer id to fetch) whose partitions both have
    broker 1 as leader; batch.size 1,000 bytes."""
    config = ProducerConfig.from_dict(
        {
            "bootstrap.servers": "127.0.0.1:9092",
            "client.id": CLIENT_ID,
            "enable.idempotence": False,
            "linger.ms": linger_ms,
            "batch.size": 1_000,
            "retry.backoff.ms": 10,
            **settings,
        }
    )
    accumulator = RecordAccumulator(1_000, 1 << 20, linger_ms, 10)
    metadata = ClientMetadata((Node(-1, "127.0.0.1", 9092),))
    metadata.nodes = {1: Node(1, "127.0.0.1", 9092)}
    metadata.topics["t"] = TopicInfo(0, (1, 1))
    if tracer is None:
        return Sender(config, accumulator, metadata)
    return Sender(config, accumulator, metadata, tracer=tracer)


def append(s: Sender, tp: TopicPartition, now: float, count: int = 1) -> None:
    for _ in range(count):
        # 100 bytes with the record's framing: nine fill a batch of 1,000
        record = PendingRecord("t", None, b"x" * 79, (), 0)
        s.accumulator.append(tp, record, now)


def answer(
    s: Sender, plan: ProducePlan, now: float, error: int = ErrorCode.none
) -> SenderResult:
    """The leader's answer: every batch appended at offset 100 (or ``error``)."""
    results = {
        b.topic_partition: PartitionResponse(error, 100 if error == 0 else -1)
        for b in plan.batches
    }
    return s.on_response(plan, results, now)


def events(tracer: RecordingTracer) -> list[ProducerBatchCompleted]:
    return tracer.of_type(ProducerBatchCompleted)


def test_a_full_batch_leaves_at_once_and_reports_its_records_and_bytes() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=1_000)
    append(s, TP0, now=10.0, count=12)  # nine in the first batch, three in a second
    [plan] = s.on_timer(now=10.0).messages
    [batch] = plan.batches
    payload = batch.build(s.accumulator.compression)
    assert events(tracer) == []  # nothing until the outcome is known
    answer(s, plan, now=10.004)
    [event] = events(tracer)
    assert event == ProducerBatchCompleted(
        CLIENT_ID,
        "t",
        0,
        records=9,
        size_bytes=len(payload),
        reason="full",
        queue_ms=0.0,
        in_flight_ms=pytest.approx(4.0),  # type: ignore[arg-type]
        retries=0,
        base_offset=100,
        error=None,
    )
    assert len(payload) <= 1_000


def test_a_batch_that_is_not_full_leaves_after_linger_ms() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=5)
    append(s, TP0, now=0.0, count=3)
    assert s.on_timer(now=0.004).messages == ()  # 4 ms: still lingering
    [plan] = s.on_timer(now=0.005).messages
    answer(s, plan, now=0.008)
    [event] = events(tracer)
    assert (event.records, event.reason) == (3, "linger")
    assert event.queue_ms == pytest.approx(5.0)
    assert event.in_flight_ms == pytest.approx(3.0)


def test_flush_takes_a_batch_before_its_linger_and_says_so() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=1_000)
    append(s, TP0, now=2.0, count=2)
    s.accumulator.begin_flush()
    [plan] = s.on_timer(now=2.001).messages
    s.accumulator.end_flush()
    answer(s, plan, now=2.002)
    [event] = events(tracer)
    assert (event.records, event.reason) == (2, "flush")
    assert event.queue_ms == pytest.approx(1.0)


def test_a_batch_that_is_not_ready_goes_along_with_its_leaders_ready_one() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=5)
    append(s, TP0, now=0.0)
    append(s, TP1, now=0.004)  # 1 ms old when TP0's linger runs out
    [plan] = s.on_timer(now=0.005).messages
    assert {b.topic_partition for b in plan.batches} == {TP0, TP1}
    answer(s, plan, now=0.006)
    reasons = {(e.partition, e.reason) for e in events(tracer)}
    assert reasons == {(0, "linger"), (1, "piggyback")}
    assert {e.reason for e in events(tracer)} <= set(LEAVE_REASONS)


def test_a_retried_batch_keeps_its_first_reason_and_counts_its_retries() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=0)
    append(s, TP0, now=0.0)
    [plan] = s.on_timer(now=0.0).messages
    answer(s, plan, now=0.002, error=ErrorCode.not_leader_or_follower)
    assert events(tracer) == []  # going back to its queue is not an outcome
    assert s.on_timer(now=0.005).messages == ()  # retry.backoff.ms
    [retry] = s.on_timer(now=0.013).messages
    answer(s, retry, now=0.015)
    [event] = events(tracer)
    assert (event.reason, event.retries, event.base_offset) == ("linger", 1, 100)
    assert event.queue_ms == 0.0
    # From the first drain: both attempts and the backoff between them.
    assert event.in_flight_ms == pytest.approx(15.0)


def test_a_failed_batch_reports_the_error_without_an_offset() -> None:
    tracer = RecordingTracer()
    s = sender(tracer, linger_ms=0, retries=0)
    append(s, TP0, now=0.0, count=4)
    [plan] = s.on_timer(now=0.0).messages
    answer(s, plan, now=0.001, error=ErrorCode.message_too_large)
    [event] = events(tracer)
    assert (event.records, event.base_offset, event.error) == (
        4,
        -1,
        "MESSAGE_TOO_LARGE",
    )


def test_a_batch_that_never_left_is_unsent_with_the_accumulators_estimate() -> None:
    tracer = RecordingTracer()
    timeouts = {"delivery.timeout.ms": 1_500, "request.timeout.ms": 500}
    s = sender(tracer, linger_ms=1_000, **timeouts)
    metadata = s.metadata
    metadata.topics["t"] = TopicInfo(0, (-1, -1))  # no leader: nothing can go
    append(s, TP0, now=0.0, count=2)
    assert s.on_timer(now=1.6).messages == ()
    [event] = events(tracer)
    assert (event.reason, event.records, event.size_bytes) == ("unsent", 2, 261)
    assert event.queue_ms == pytest.approx(1_600.0)
    assert (event.in_flight_ms, event.error) == (0.0, "_MSG_TIMED_OUT")


def test_with_tracing_off_no_event_is_even_built() -> None:
    # A closed tracer is disabled and raises on emit: the Sender must not call it.
    tracer = RecordingTracer()
    tracer.close()
    s = sender(tracer, linger_ms=0)
    append(s, TP0, now=0.0)
    [plan] = s.on_timer(now=0.0).messages
    answered = answer(s, plan, now=0.001)
    assert tracer.records == []
    assert answered.replies  # the batch was answered all the same
    assert isinstance(sender(None).tracer, NullTracer)


def test_a_producer_traces_to_its_tracer_or_else_the_process_default() -> None:
    config = ProducerConfig.from_dict({"bootstrap.servers": "127.0.0.1:9092"})
    mine = RecordingTracer()
    with recording_tracer() as default:
        assert producer_cores(config, None)[0].tracer is default
        assert producer_cores(config, None, mine)[0].tracer is mine
    assert isinstance(producer_cores(config, None)[0].tracer, NullTracer)


def test_the_event_has_a_spark_schema_for_the_labs() -> None:
    listed = spark_schema(ProducerBatchCompleted)["fields"]
    assert isinstance(listed, list)
    fields = {f["name"]: (f["type"], f["nullable"]) for f in listed}
    assert fields["reason"] == ("string", False)
    assert fields["queue_ms"] == ("double", False)
    assert fields["base_offset"] == ("long", False)
    assert fields["error"] == ("string", True)
