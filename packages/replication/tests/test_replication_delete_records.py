"""DeleteRecords (KIP-107): the leader moves its log start at once, and answers once the
low watermark (the in-sync replicas' smallest log start) reaches the offset."""

from __future__ import annotations

from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import LogConfig
from minikafka.log.testing import value_batch
from minikafka.replication import (
    DeleteRecordsPartitionResult,
    FetchParams,
    FetchPartition,
    TopicSettings,
)
from minikafka.replication.testing import (
    Answers,
    FetchAnswer,
    ManualShell,
    SettingsTable,
    discard,
    lead,
    partition_state,
    replica_manager,
)

A = TopicPartition("clicks", 0)
Results = dict[TopicPartition, DeleteRecordsPartitionResult]


def leader(tmp_path: Path) -> ManualShell:
    """Broker 1 leads A on 1, 2 (in sync), 10 records, both replicas at offset 10."""
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2))
    manager.append_records(30_000, Acks.LEADER, {A: value_batch(10, 10)}, discard, 0.0)
    follower(manager, 10, log_start=0)
    return manager


def follower(
    manager: ManualShell, offset: int, log_start: int, now: float = 0.0
) -> None:
    """Follower 2 fetches from ``offset``, saying its log start is ``log_start``."""
    answers: Answers[FetchAnswer] = Answers()
    fetch = FetchPartition(A, offset, 1 << 20, -1, log_start)
    manager.fetch_messages(FetchParams(2, 0, 1, 1 << 20), [fetch], answers, now)
    [(_, result)] = answers.only
    assert result.error_code is ErrorCode.none


def delete(
    manager: ManualShell, offset: int, timeout_ms: int = 5000, tp: TopicPartition = A
) -> Answers[Results]:
    answers: Answers[Results] = Answers()
    manager.delete_records(timeout_ms, {tp: offset}, answers, 0.0)
    return answers


def test_the_answer_waits_for_the_followers_log_start(tmp_path: Path) -> None:
    manager = leader(tmp_path)
    answers = delete(manager, 6)
    partition = manager.core.get_partition(A)
    assert partition is not None
    assert partition.log.log_start_offset == 6  # moved at once on the leader
    assert not answers.answered  # follower 2 still starts at 0
    follower(manager, 10, log_start=6)
    assert answers.only[A] == DeleteRecordsPartitionResult(ErrorCode.none, 6)


def test_minus_one_is_the_high_watermark(tmp_path: Path) -> None:
    manager = leader(tmp_path)
    delete(manager, -1)
    partition = manager.core.get_partition(A)
    assert partition is not None
    assert partition.log.log_start_offset == 10


def test_past_the_high_watermark_is_out_of_range(tmp_path: Path) -> None:
    manager = leader(tmp_path)
    [result] = delete(manager, 11).only.values()
    assert result.error_code is ErrorCode.offset_out_of_range


def test_a_follower_that_never_follows_times_the_request_out(tmp_path: Path) -> None:
    manager = leader(tmp_path)
    answers = delete(manager, 4, timeout_ms=1000)
    manager.callbacks.deliver(manager.core.on_timer(1.0).replies)
    [result] = answers.only.values()
    assert result.error_code is ErrorCode.request_timed_out


def test_a_deletion_below_the_start_waits_only_for_its_own_offset(
    tmp_path: Path,
) -> None:
    # Guarantee: a deletion below the log start moves nothing and is answered as soon
    # as the low watermark reaches the offset it asked (not the leader's start, as
    # Kafka's DelayedDeleteRecords), with the low watermark reached.
    manager = leader(tmp_path)
    delete(manager, 5)
    follower(manager, 10, log_start=3)  # the follower has not caught up with 5 yet
    [result] = delete(manager, 2).only.values()
    assert (result.error_code, result.low_watermark) == (ErrorCode.none, 3)
    partition = manager.core.get_partition(A)
    assert partition is not None
    assert partition.log.log_start_offset == 5


def test_a_replica_outside_the_isr_does_not_hold_the_low_watermark(
    tmp_path: Path,
) -> None:
    # Guarantee: the low watermark is the smallest log start among the leader and its
    # in-sync followers; a follower out of the ISR (dead, or far behind) is not waited
    # for, as it cannot become leader without an unclean election.
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2, 3), isr=(1, 2))
    manager.append_records(30_000, Acks.LEADER, {A: value_batch(10, 10)}, discard, 0.0)
    follower(manager, 10, log_start=0)
    answers = delete(manager, 7)
    follower(manager, 10, log_start=7)
    assert answers.only[A] == DeleteRecordsPartitionResult(ErrorCode.none, 7)


def test_refusals_change_nothing(tmp_path: Path) -> None:
    # Guarantee: a refused deletion (past the high watermark, below -1, an unknown
    # partition, a compacted topic, a partition this broker follows) leaves every log
    # start where it was.
    settings = SettingsTable(
        topics={
            "keyed": TopicSettings(LogConfig(cleanup_policy=frozenset({"compact"})))
        }
    )
    manager = replica_manager(tmp_path, settings=settings)
    keyed, followed = TopicPartition("keyed", 0), TopicPartition("clicks", 1)
    for tp in (A, keyed):
        lead(manager, tp)
        manager.append_records(
            30_000, Acks.LEADER, {tp: value_batch(5, 10)}, discard, 0.0
        )
    # Broker 1 led ``followed`` and wrote 5 records; then broker 2 became its leader.
    lead(manager, followed)
    manager.append_records(
        30_000, Acks.LEADER, {followed: value_batch(5, 10)}, discard, 0.0
    )
    partition = manager.core.get_partition(followed)
    assert partition is not None
    state = partition_state((2, 1), leader=2, leader_epoch=1)
    manager.become_leader_or_follower({}, {followed: (partition.topic_id, state)}, 0.0)
    refusals = {
        (A, 11): ErrorCode.offset_out_of_range,
        (A, -2): ErrorCode.offset_out_of_range,
        (TopicPartition("clicks", 9), 3): ErrorCode.unknown_topic_or_partition,
        (keyed, 3): ErrorCode.policy_violation,
        (followed, 3): ErrorCode.not_leader_or_follower,
    }
    for (tp, offset), error in refusals.items():
        [result] = delete(manager, offset, tp=tp).only.values()
        assert result.error_code is error, (tp, offset)
    for tp in (A, keyed, followed):
        partition = manager.core.get_partition(tp)
        assert partition is not None
        assert partition.log.log_start_offset == 0


def test_a_follower_that_has_not_said_its_start_holds_the_answer(
    tmp_path: Path,
) -> None:
    # Guarantee: an in-sync follower whose log start the leader has not heard yet (-1:
    # its fetches did not say it) counts as holding every record: the answer waits for
    # its first fetch that says its start.
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2))
    manager.append_records(30_000, Acks.LEADER, {A: value_batch(10, 10)}, discard, 0.0)
    follower(manager, 10, log_start=-1)  # the high watermark is 10; the start unsaid
    answers = delete(manager, 4)
    assert not answers.answered
    follower(manager, 10, log_start=4)
    assert answers.only[A] == DeleteRecordsPartitionResult(ErrorCode.none, 4)


def test_a_waiting_deletion_is_refused_when_the_leadership_moves(
    tmp_path: Path,
) -> None:
    # Guarantee: a deletion waiting for the low watermark on a partition this broker no
    # longer leads is answered NOT_LEADER_OR_FOLLOWER (the client asks the new leader).
    manager = leader(tmp_path)
    answers = delete(manager, 6)
    assert not answers.answered
    partition = manager.core.get_partition(A)
    assert partition is not None
    state = partition_state((1, 2), leader=2, leader_epoch=1)
    manager.become_leader_or_follower({}, {A: (partition.topic_id, state)}, 1.0)
    [result] = answers.only.values()
    assert result.error_code is ErrorCode.not_leader_or_follower
