"""Replication's trace events (ARCHITECTURE.md, "Traces and labs"): leadership, ISR changes, HW
moves and the answers of requests that waited in a purgatory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.common import Acks
from minikafka.log.testing import value_batch
from minikafka.replication import (
    BecameFollower,
    BecameLeader,
    DelayedOperationCompleted,
    FetchPartition,
    FollowerFetched,
    FollowerTruncated,
    HighWatermarkAdvanced,
    IsrChanged,
    IsrChangeProposed,
)
from minikafka.replication.testing import (
    OTHER,
    TP,
    Answers,
    FetchAnswer,
    ManualShell,
    ProduceAnswers,
    consumer_params,
    discard,
    follower_fetch,
    lead,
    open_partition,
    partition_state,
    replica_manager,
)
from minikafka.trace import event_types
from minikafka.trace.testing import RecordingTracer


def traced_manager(tmp_path: Path, broker_id: int = 1) -> ManualShell:
    """A manager whose core and partitions report to their own RecordingTracer."""
    return replica_manager(
        tmp_path, broker_id=broker_id, tracer=RecordingTracer(broker_id)
    )


@contextmanager
def recording(manager: ManualShell) -> Iterator[RecordingTracer]:
    """The manager's tracer, keeping only what is emitted inside the block."""
    tracer = manager.core.tracer
    assert isinstance(tracer, RecordingTracer)
    tracer.records.clear()
    yield tracer


def test_the_events_are_registered_under_replication() -> None:
    types = event_types()
    assert types["replication", "hw_advance"] is HighWatermarkAdvanced
    assert types["replication", "delayed_op"] is DelayedOperationCompleted
    assert types["replication", "become_leader"] is BecameLeader
    assert types["replication", "become_follower"] is BecameFollower
    assert types["replication", "isr_change"] is IsrChanged


def test_leadership_isr_changes_and_following_are_traced(tmp_path: Path) -> None:
    manager = traced_manager(tmp_path)
    with recording(manager) as tracer:
        lead(manager, TP, (1, 2, 3), isr=(1, 2, 3), leader_epoch=4, partition_epoch=7)
        # The controller shrinks the ISR (same leader epoch, next partition epoch).
        lead(manager, TP, (1, 2, 3), isr=(1, 3), leader_epoch=4, partition_epoch=8)
        # The same state again, and a stale one: nothing changes, nothing is traced.
        lead(manager, TP, (1, 2, 3), isr=(1, 3), leader_epoch=4, partition_epoch=8)
        partition = manager.core.get_partition(TP)
        assert partition is not None
        assert not partition.make_leader(
            partition_state((1, 2, 3), leader_epoch=3, partition_epoch=9), 0.0
        )
        # Broker 2 takes over.
        follower = partition_state(
            (1, 2, 3), leader=2, leader_epoch=5, partition_epoch=9
        )
        manager.become_leader_or_follower({}, {TP: (partition.topic_id, follower)}, 0.0)
    assert tracer.events == [
        BecameLeader("orders", 0, 4, 7, (1, 2, 3), (1, 2, 3), 0),
        IsrChanged("orders", 0, 4, 8, (1, 2, 3), (1, 3)),
        BecameFollower("orders", 0, 2, 5, 9),
    ]


def test_the_hw_is_traced_only_when_it_moves_up(tmp_path: Path) -> None:
    manager = traced_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2), leader_epoch=3)
    with recording(manager) as tracer:
        manager.append_records(
            30_000, Acks.LEADER, {TP: value_batch(5)}, discard, now=0.0
        )
        assert tracer.events == []  # the follower has not fetched: the HW stays at 0
        follower_fetch(manager, 2, TP, 2, now=1.0)
        follower_fetch(manager, 2, TP, 2, now=2.0)  # the same offset again: no move
        follower_fetch(manager, 2, TP, 5, now=3.0)
    assert tracer.of_type(HighWatermarkAdvanced) == [
        HighWatermarkAdvanced("orders", 0, 0, 2, 3),
        HighWatermarkAdvanced("orders", 0, 2, 5, 3),
    ]


def test_a_leader_alone_advances_on_every_append_and_answers_acks_all_at_once(
    tmp_path: Path,
) -> None:
    manager = traced_manager(tmp_path)
    lead(manager, TP)
    answers: ProduceAnswers = Answers()
    with recording(manager) as tracer:
        manager.append_records(30_000, Acks.ALL, {TP: value_batch(2)}, answers, now=0.0)
        manager.append_records(30_000, Acks.ALL, {TP: value_batch(3)}, answers, now=0.0)
    assert len(answers.calls) == 2
    assert tracer.events == [
        HighWatermarkAdvanced("orders", 0, 0, 2, 0),
        HighWatermarkAdvanced("orders", 0, 2, 5, 0),
    ]  # no delayed_op: neither produce waited


def test_a_delayed_produce_is_traced_when_the_follower_catches_up(
    tmp_path: Path,
) -> None:
    manager = traced_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    lead(manager, OTHER, (1, 2), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    with recording(manager) as tracer:
        batches = {TP: value_batch(3), OTHER: value_batch(1)}
        manager.append_records(30_000, Acks.ALL, batches, answers, now=10.0)
        follower_fetch(manager, 2, TP, 3, now=10.25)
        assert not answers.answered
        follower_fetch(manager, 2, OTHER, 1, now=11.5)
    assert answers.only[TP].error_code is ErrorCode.none
    assert tracer.of_type(DelayedOperationCompleted) == [
        DelayedOperationCompleted("produce", "completed", 1500.0, 2)
    ]
    # Each follower fetch moves the HW, and the HW moves are what completes the
    # produce: in the trace, each fetch comes before the move it caused.
    assert [type(e).__name__ for e in tracer.events] == [
        "FollowerFetched",
        "HighWatermarkAdvanced",
        "FollowerFetched",
        "HighWatermarkAdvanced",
        "DelayedOperationCompleted",
    ]
    # The follower's lag, as the leader saw it at each fetch (caught up both times),
    # and the HW each fetch found, before it moved it.
    assert tracer.of_type(FollowerFetched) == [
        FollowerFetched(TP.topic, TP.partition, 2, 3, 3, 0, 0, 0.0),
        FollowerFetched(OTHER.topic, OTHER.partition, 2, 1, 1, 0, 0, 0.0),
    ]


def test_an_expired_produce_and_an_expired_fetch_are_traced(tmp_path: Path) -> None:
    manager = traced_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    produced: ProduceAnswers = Answers()
    fetched: Answers[FetchAnswer] = Answers()
    with recording(manager) as tracer:
        manager.append_records(2_000, Acks.ALL, {TP: value_batch(1)}, produced, now=1.0)
        params = consumer_params(max_wait_ms=500, min_bytes=1)
        manager.fetch_messages(
            params, [FetchPartition(TP, 0, 1 << 20)], fetched, now=2.0
        )
        assert manager.on_timer(2.5) == 1  # the fetch's fetch.max.wait.ms
        assert manager.on_timer(3.0) == 1  # the produce's timeout
    assert produced.only[TP].error_code is ErrorCode.request_timed_out
    assert fetched.answered
    assert tracer.of_type(DelayedOperationCompleted) == [
        DelayedOperationCompleted("fetch", "expired", 500.0, 1),
        DelayedOperationCompleted("produce", "expired", 2000.0, 1),
    ]


def test_a_long_poll_completed_by_new_data_is_traced(tmp_path: Path) -> None:
    manager = traced_manager(tmp_path)
    lead(manager, TP)
    fetched: Answers[FetchAnswer] = Answers()
    with recording(manager) as tracer:
        params = consumer_params(max_wait_ms=5_000, min_bytes=1)
        fetches = [FetchPartition(TP, 0, 1 << 20), FetchPartition(OTHER, 0, 1 << 20)]
        lead(manager, OTHER)
        manager.fetch_messages(params, fetches, fetched, now=4.0)
        assert not fetched.answered
        manager.append_records(
            30_000, Acks.LEADER, {TP: value_batch(2)}, discard, now=4.75
        )
    assert len(fetched.calls) == 1
    assert tracer.of_type(DelayedOperationCompleted) == [
        DelayedOperationCompleted("fetch", "completed", 750.0, 2)
    ]


def test_nothing_is_traced_when_tracing_is_off(tmp_path: Path) -> None:
    manager = traced_manager(tmp_path)
    with recording(manager) as tracer:
        tracer.close()
        lead(manager, TP, (1, 2), isr=(1, 2))
        answers: ProduceAnswers = Answers()
        manager.append_records(30_000, Acks.ALL, {TP: value_batch(2)}, answers, now=0.0)
        follower_fetch(manager, 2, TP, 2, now=1.0)
        assert answers.answered
    assert tracer.records == []


def test_two_brokers_in_one_process_trace_to_their_own_tracers(tmp_path: Path) -> None:
    """Tracing is injected: each manager, and its partitions, emit to the tracer
    it was built with, so brokers sharing a process write distinguishable streams."""
    one = traced_manager(tmp_path / "one", broker_id=1)
    two = traced_manager(tmp_path / "two", broker_id=2)
    with recording(one) as first, recording(two) as second:
        lead(one, TP)
        lead(two, OTHER)
        one.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, discard, now=0.0)
    assert (first.node, second.node) == (1, 2)
    assert first.events == [
        BecameLeader("orders", 0, 0, 0, (1,), (1,), 0),
        HighWatermarkAdvanced("orders", 0, 0, 2, 0),
    ]
    assert second.events == [BecameLeader("orders", 1, 0, 0, (2,), (2,), 0)]


def test_isr_proposals_carry_the_lag_and_truncations_are_traced(tmp_path: Path) -> None:
    # Seed 000's ISR episodes, as a lab reads them: who left and how far behind it was.
    tracer = RecordingTracer(1)
    partition = open_partition(tmp_path, TP, tracer=tracer)
    partition.make_leader(partition_state((1, 2, 3), isr=(1, 2, 3)), now=0.0)
    partition.append_records_to_leader(
        value_batch(2), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 2, now=1.0)
    tracer.records.clear()
    assert partition.maybe_shrink_isr(now=40.0, max_lag=30.0)
    assert partition.take_isr_change() is not None
    # Follower 2 was last caught up at t=1, follower 3 never since the epoch began (t=0).
    assert tracer.events == [
        IsrChangeProposed(
            TP.topic,
            TP.partition,
            "shrink",
            0,
            0,
            (1, 2, 3),
            (1,),
            (2, 3),
            (39_000.0, 40_000.0),
            0,
        )
    ]
    event_type = event_types()["replication", "isr_propose"]
    assert event_type is IsrChangeProposed
    # A follower truncating its tail (KIP-101) says from where to where.
    follower_log = open_partition(tmp_path / "follower", TP, broker_id=2, tracer=tracer)
    follower_log.make_follower(partition_state((1, 2), leader=1, isr=(1, 2)), now=0.0)
    follower_log.log.append_as_leader(value_batch(3), leader_epoch=0)
    tracer.records.clear()
    assert follower_log.truncate_to(1, now=0.0)
    assert tracer.events == [FollowerTruncated(TP.topic, TP.partition, 1, 0, 3, 1)]
    assert event_types()["replication", "follower_truncate"] is FollowerTruncated
