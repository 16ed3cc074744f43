"""ReplicaManager.append_records: acks 0, 1 and all, and DelayedProduce in the purgatory."""

from __future__ import annotations

from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import LogConfig
from minikafka.log.testing import keyed_batch, value_batch
from minikafka.replication import ProducePartitionResult, TopicSettings
from minikafka.replication.testing import (
    OTHER,
    TP,
    Answers,
    ProduceAnswers,
    SettingsTable,
    discard,
    follower_fetch,
    lead,
    partition_state,
    replica_manager,
)


def test_acks_1_and_0_are_answered_once_the_leader_has_appended(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))  # the follower never fetches
    for acks in (Acks.LEADER, Acks.NONE):
        answers: ProduceAnswers = Answers()
        manager.append_records(30_000, acks, {TP: value_batch(3)}, answers, now=0.0)
        result = answers.only[TP]
        assert result.error_code is ErrorCode.none
        assert result.base_offset == (0 if acks == 1 else 3)
        assert result.log_start_offset == 0
    assert manager.core.produce_purgatory.delayed == 0
    partition = manager.core.get_partition(TP)
    assert partition is not None
    assert (partition.log.log_end_offset, partition.log.high_watermark) == (6, 0)


def test_acks_all_with_the_leader_alone_in_the_isr_is_answered_at_once(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(2)}, answers, now=0.0)
    assert answers.only[TP] == ProducePartitionResult(
        ErrorCode.none, base_offset=0, log_start_offset=0
    )
    assert manager.core.produce_purgatory.delayed == 0


def test_acks_all_completes_when_the_followers_fetch_moves_the_hw(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    manager.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, discard, now=0.0)
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(3)}, answers, now=0.0)
    assert not answers.answered
    assert manager.core.produce_purgatory.delayed == 1
    assert manager.core.produce_purgatory.watched(TP) == 1
    assert manager.core.next_deadline() == 30.0

    follower_fetch(manager, 2, TP, 4, now=1.0)  # has offsets 0-3: short of offset 4
    assert not answers.answered
    result = follower_fetch(manager, 2, TP, 5, now=2.0)  # the whole batch
    assert answers.only[TP].error_code is ErrorCode.none
    assert answers.only[TP].base_offset == 2
    assert result.high_watermark == 5  # the follower hears of the HW its fetch moved
    assert manager.core.produce_purgatory.delayed == 0
    assert manager.core.next_deadline() is None


def test_acks_all_over_two_partitions_waits_for_both(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    for tp in (TP, OTHER):
        lead(manager, tp, (1, 2), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    manager.append_records(
        30_000, Acks.ALL, {TP: value_batch(1), OTHER: value_batch(2)}, answers, now=0.0
    )
    follower_fetch(manager, 2, TP, 1, now=1.0)
    assert not answers.answered
    follower_fetch(manager, 2, OTHER, 2, now=1.0)
    assert {tp: r.error_code for tp, r in answers.only.items()} == {
        TP: ErrorCode.none,
        OTHER: ErrorCode.none,
    }


def test_acks_all_times_out_with_request_timed_out(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    manager.append_records(1_500, Acks.ALL, {TP: value_batch(1)}, answers, now=10.0)
    assert manager.core.next_deadline() == 11.5
    assert manager.on_timer(11.49) == 0
    assert manager.on_timer(11.5) == 1
    result = answers.only[TP]
    assert result.error_code is ErrorCode.request_timed_out
    assert result.error_message is not None
    partition = manager.core.get_partition(TP)
    assert partition is not None
    assert partition.log.log_end_offset == 1  # written all the same, only not confirmed
    follower_fetch(manager, 2, TP, 1, now=12.0)  # too late: answered once only
    assert len(answers.calls) == 1


def test_a_partition_that_is_deleted_while_waiting_answers_unknown_partition(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, answers, now=0.0)
    manager.stop_replicas([TP])
    assert answers.only[TP].error_code is ErrorCode.unknown_topic_or_partition
    assert manager.core.produce_purgatory.delayed == 0


def test_a_leader_that_becomes_follower_while_waiting_answers_not_leader(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, TP, (1, 2), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, answers, now=0.0)
    follower = partition_state((2, 1), leader=2, leader_epoch=1, partition_epoch=1)
    manager.become_leader_or_follower({}, {TP: (partition.topic_id, follower)}, now=1.0)
    assert answers.only[TP].error_code is ErrorCode.not_leader_or_follower


def test_an_isr_shrinking_below_the_minimum_while_waiting_answers_after_append(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path, min_insync_replicas=2)
    partition = lead(manager, TP, (1, 2, 3), isr=(1, 2))
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, answers, now=0.0)
    assert not answers.answered
    lead(manager, TP, (1, 2, 3), isr=(1,), partition_epoch=1, now=1.0)
    assert partition.log.high_watermark == 1
    assert answers.only[TP].error_code is ErrorCode.not_enough_replicas_after_append


def test_min_insync_replicas_refuses_acks_all_but_not_acks_1(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path, min_insync_replicas=2)
    lead(manager, TP, (1, 2, 3), isr=(1,))
    refused: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, refused, now=0.0)
    assert refused.only[TP].error_code is ErrorCode.not_enough_replicas
    assert manager.core.produce_purgatory.delayed == 0
    accepted: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.LEADER, {TP: value_batch(1)}, accepted, now=0.0)
    assert accepted.only[TP].error_code is ErrorCode.none
    assert accepted.only[TP].base_offset == 0  # the refused batch was never written


def test_errors_and_waiting_partitions_are_answered_together(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    unknown = TopicPartition("nowhere", 0)
    corrupt = value_batch(1)
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    lead(manager, OTHER)
    answers: ProduceAnswers = Answers()
    manager.append_records(
        30_000,
        Acks.ALL,
        {TP: value_batch(1), unknown: value_batch(1), OTHER: corrupt},
        answers,
        now=0.0,
    )
    assert not answers.answered  # TP still waits for its follower
    follower_fetch(manager, 2, TP, 1, now=1.0)
    codes = {tp: r.error_code for tp, r in answers.only.items()}
    assert codes == {
        TP: ErrorCode.none,
        unknown: ErrorCode.unknown_topic_or_partition,
        OTHER: ErrorCode.corrupt_message,
    }
    other = manager.core.get_partition(OTHER)
    assert other is not None
    assert other.log.log_end_offset == 0


def test_acks_all_where_every_partition_failed_is_answered_at_once(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, answers, now=0.0)
    assert answers.only[TP].error_code is ErrorCode.unknown_topic_or_partition
    assert manager.core.produce_purgatory.delayed == 0


def test_a_too_large_batch_is_refused_with_message_too_large(tmp_path: Path) -> None:
    table = SettingsTable(TopicSettings(LogConfig(max_message_bytes=200)))
    manager = replica_manager(tmp_path, settings=table)
    lead(manager, TP)
    answers: ProduceAnswers = Answers()
    manager.append_records(
        30_000, Acks.LEADER, {TP: value_batch(5, value_bytes=100)}, answers, now=0.0
    )
    assert answers.only[TP].error_code is ErrorCode.message_too_large


def idempotent_batch(sequence: int) -> bytearray:
    """Producer 1000's one-record batch at ``sequence`` (epoch 0): a retry sends the
    same bytes again."""
    return keyed_batch(
        [(None, b"seq %d" % sequence)],
        producer_id=1000,
        producer_epoch=0,
        base_sequence=sequence,
    )


def test_a_leader_fenced_and_elected_again_answers_an_idempotent_retry_as_kafka(
    tmp_path: Path,
) -> None:
    """A leader whose answers were lost (paused), fenced (leader -1) and elected again at
    a new leader epoch with the ISR below min.insync.replicas keeps its producer state:
    the retry is refused NOT_ENOUGH_REPLICAS and appends nothing; once the ISR is back
    a batch after a gap is OUT_OF_ORDER_SEQUENCE_NUMBER and a retry of a written batch
    is the duplicate, answered with its original offset (Kafka's ProducerStateManager).
    The answers a librdkafka producer got in a chaos run, before it bumped its epoch."""
    manager = replica_manager(tmp_path, min_insync_replicas=2)
    partition = lead(manager, TP, (1, 2, 3), isr=(1,))
    for sequence in range(3):  # offsets 0-2; the producer never hears the answers
        manager.append_records(
            30_000, Acks.LEADER, {TP: idempotent_batch(sequence)}, discard, now=0.0
        )
    fenced = partition_state((1, 2, 3), leader=-1, leader_epoch=1, partition_epoch=1)
    manager.become_leader_or_follower({}, {TP: (partition.topic_id, fenced)}, now=1.0)
    lead(manager, TP, (1, 2, 3), isr=(1,), leader_epoch=2, partition_epoch=2, now=2.0)

    refused: ProduceAnswers = Answers()
    manager.append_records(
        30_000, Acks.ALL, {TP: idempotent_batch(1)}, refused, now=3.0
    )
    assert refused.only[TP].error_code is ErrorCode.not_enough_replicas
    assert partition.log.log_end_offset == 3

    lead(manager, TP, (1, 2, 3), isr=(1, 2), leader_epoch=2, partition_epoch=3, now=4.0)
    gap: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: idempotent_batch(4)}, gap, now=5.0)
    assert gap.only[TP].error_code is ErrorCode.out_of_order_sequence_number
    retry: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.ALL, {TP: idempotent_batch(1)}, retry, now=6.0)
    follower_fetch(manager, 2, TP, 3, now=7.0)  # the follower has offsets 0-2
    assert retry.only[TP].error_code is ErrorCode.none
    assert retry.only[TP].base_offset == 1
    assert partition.log.log_end_offset == 3  # nothing appended twice
    nxt: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.LEADER, {TP: idempotent_batch(3)}, nxt, now=8.0)
    assert nxt.only[TP].base_offset == 3
