"""ReplicaManager.fetch_messages: reads within the byte limits, followers' positions, and
DelayedFetch (long polling) completing on data, on a new segment, on expiry, on errors."""

from __future__ import annotations

from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import AbortedTxn, FileSlice
from minikafka.log.testing import value_batch
from minikafka.replication import FetchParams, FetchPartition, FetchPartitionResult
from minikafka.replication.testing import (
    Answers,
    FetchAnswer,
    ManualShell,
    consumer_params,
    discard,
    follower_fetch,
    lead,
    partition_state,
    replica_manager,
)

A = TopicPartition("clicks", 0)
B = TopicPartition("clicks", 1)
BATCH = len(value_batch(9, value_bytes=100))  # every batch below has this size
BIG = 1 << 20


def filled(
    tmp_path: Path, batches: int = 3, tps: tuple[TopicPartition, ...] = (A, B)
) -> ManualShell:
    """A manager leading ``tps`` alone (HW = LEO), each with ``batches`` batches of 9."""
    manager = replica_manager(tmp_path)
    for tp in tps:
        lead(manager, tp)
        for _ in range(batches):
            manager.append_records(
                30_000, Acks.LEADER, {tp: value_batch(9, 100)}, discard, 0.0
            )
    return manager


def fetch_now(
    manager: ManualShell,
    fetches: list[FetchPartition],
    params: FetchParams | None = None,
    now: float = 0.0,
) -> FetchAnswer:
    answers: Answers[FetchAnswer] = Answers()
    manager.fetch_messages(params or consumer_params(), fetches, answers, now)
    return answers.only


def sizes(answer: FetchAnswer) -> list[int]:
    return [result.size for _, result in answer]


def append(
    manager: ManualShell, tp: TopicPartition, count: int = 1, value_bytes: int = 100
) -> int:
    batch = value_batch(count, value_bytes)
    manager.append_records(30_000, Acks.LEADER, {tp: batch}, discard, 0.0)
    return len(batch)


# --- read_from_local_log: max_bytes, partition max_bytes, min_one_message -----------------


def test_everything_fits_within_generous_limits(tmp_path: Path) -> None:
    manager = filled(tmp_path)
    answer = fetch_now(manager, [FetchPartition(A, 0, BIG), FetchPartition(B, 0, BIG)])
    assert sizes(answer) == [3 * BATCH, 3 * BATCH]
    for _, result in answer:
        assert result.error_code is ErrorCode.none
        assert (
            result.high_watermark,
            result.last_stable_offset,
            result.log_start_offset,
        ) == (
            27,
            27,
            0,
        )
        assert result.records is not None
        assert result.records.position == 0


def test_partition_max_bytes_cuts_each_partition_exactly(tmp_path: Path) -> None:
    manager = filled(tmp_path)
    # a whole batch and the start of the next: the client drops the rest
    limit = BATCH + 100
    answer = fetch_now(
        manager, [FetchPartition(A, 0, limit), FetchPartition(B, 0, limit)]
    )
    assert sizes(answer) == [limit, limit]


def test_max_bytes_is_shared_in_request_order(tmp_path: Path) -> None:
    manager = filled(tmp_path)
    params = consumer_params(max_bytes=BATCH * 2 + 50)
    answer = fetch_now(
        manager, [FetchPartition(A, 0, BIG), FetchPartition(B, 0, BIG)], params
    )
    assert sizes(answer) == [BATCH * 2 + 50, 0]
    assert answer[1][1].records is None
    assert answer[1][1].error_code is ErrorCode.none
    params = consumer_params(max_bytes=BATCH * 4)
    answer = fetch_now(
        manager, [FetchPartition(A, 0, BIG), FetchPartition(B, 0, BIG)], params
    )
    assert sizes(answer) == [BATCH * 3, BATCH]


def test_a_first_batch_larger_than_the_limits_is_still_returned_whole(
    tmp_path: Path,
) -> None:
    manager = filled(tmp_path)
    params = consumer_params(max_bytes=100)
    answer = fetch_now(
        manager, [FetchPartition(A, 0, 100), FetchPartition(B, 0, 100)], params
    )
    # min_one_message: the consumer can always make progress; after that the limit holds.
    assert sizes(answer) == [BATCH, 0]


def test_min_one_message_goes_to_the_first_partition_that_has_data(
    tmp_path: Path,
) -> None:
    manager = filled(tmp_path)
    params = consumer_params(max_bytes=100)
    at_end = FetchPartition(A, 27, 100)  # A has nothing beyond offset 27
    answer = fetch_now(
        manager, [at_end, FetchPartition(B, 9, 100), FetchPartition(A, 0, 100)], params
    )
    assert sizes(answer) == [0, BATCH, 0]


def test_a_fetch_offset_inside_a_batch_reads_from_the_batch_that_holds_it(
    tmp_path: Path,
) -> None:
    manager = filled(tmp_path, tps=(A,))
    [(_, result)] = fetch_now(manager, [FetchPartition(A, 13, BIG)])
    assert result.records is not None
    assert (result.records.position, result.size) == (BATCH, 2 * BATCH)


def test_an_offset_out_of_range_is_an_error_with_the_offsets(tmp_path: Path) -> None:
    manager = filled(tmp_path, tps=(A,))
    [(_, result)] = fetch_now(manager, [FetchPartition(A, 28, BIG)])
    assert result.error_code is ErrorCode.offset_out_of_range
    assert (result.high_watermark, result.log_start_offset) == (27, 0)
    assert result.records is None


def test_a_consumer_reads_only_below_the_hw(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2), isr=(1, 2))
    append(manager, A, 9)
    follower_fetch(manager, 2, A, 9)
    append(manager, A, 9)
    [(_, consumer)] = fetch_now(manager, [FetchPartition(A, 0, BIG)])
    assert consumer.size == BATCH
    assert consumer.high_watermark == 9
    follower = follower_fetch(manager, 2, A, 9)
    assert follower.size == BATCH  # the follower reads past the HW, to the log end


# --- the followers' positions ----------------------------------------------------------


def test_a_follower_fetch_past_the_log_end_is_refused_and_not_recorded(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, A, (1, 2), isr=(1, 2))
    append(manager, A, 2)
    result = follower_fetch(manager, 2, A, 10)
    assert result.error_code is ErrorCode.offset_out_of_range
    assert partition.remote_replicas[2].log_end_offset == -1
    append(manager, A, 10)  # the log now reaches past offset 10 ...
    assert partition.log.high_watermark == 0  # ... but broker 2 never had offsets 2-9


def test_a_fenced_follower_fetch_is_refused_and_not_recorded(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, A, (1, 2), isr=(1, 2), leader_epoch=3)
    append(manager, A, 2)
    result = follower_fetch(manager, 2, A, 2, current_leader_epoch=2)
    assert result.error_code is ErrorCode.fenced_leader_epoch
    assert partition.remote_replicas[2].log_end_offset == -1
    assert partition.log.high_watermark == 0
    ok = follower_fetch(manager, 2, A, 2, current_leader_epoch=3)
    assert ok.error_code is ErrorCode.none
    assert partition.log.high_watermark == 2


def test_a_fetch_from_a_broker_that_is_not_a_replica_gets_no_data(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, A, (1, 2), isr=(1, 2))
    append(manager, A, 2)
    result = follower_fetch(manager, 9, A, 0)
    assert result.error_code is ErrorCode.not_leader_or_follower
    assert result.records is None
    assert 9 not in partition.remote_replicas


def test_a_follower_fetch_from_a_follower_replica_is_refused(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2))
    partition = manager.core.get_partition(A)
    assert partition is not None
    follower = partition_state((2, 1), leader=2, leader_epoch=1)
    manager.become_leader_or_follower({}, {A: (partition.topic_id, follower)}, now=0.0)
    result = follower_fetch(manager, 3, A, 0)
    assert result.error_code is ErrorCode.not_leader_or_follower


# --- DelayedFetch ---------------------------------------------------------------------


def park(
    manager: ManualShell,
    fetches: list[FetchPartition],
    *,
    min_bytes: int,
    max_wait_ms: int = 500,
    replica_id: int = -1,
    now: float = 0.0,
) -> Answers[FetchAnswer]:
    params = FetchParams(replica_id, max_wait_ms, min_bytes, BIG)
    answers: Answers[FetchAnswer] = Answers()
    manager.fetch_messages(params, fetches, answers, now)
    assert not answers.answered
    assert manager.core.fetch_purgatory.delayed >= 1
    return answers


def test_enough_data_at_once_is_answered_without_waiting(tmp_path: Path) -> None:
    manager = filled(tmp_path, tps=(A,))
    params = consumer_params(max_wait_ms=500, min_bytes=BATCH * 3)
    answer = fetch_now(manager, [FetchPartition(A, 0, BIG)], params)
    assert sizes(answer) == [BATCH * 3]
    assert manager.core.fetch_purgatory.delayed == 0


def test_max_wait_0_is_answered_at_once_even_without_data(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=0, tps=(A,))
    answer = fetch_now(
        manager, [FetchPartition(A, 0, BIG)], consumer_params(min_bytes=1000)
    )
    assert sizes(answer) == [0]
    assert manager.core.fetch_purgatory.delayed == 0


def test_a_long_poll_completes_when_enough_bytes_arrive(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=0, tps=(A,))
    answers = park(manager, [FetchPartition(A, 0, BIG)], min_bytes=500)
    assert manager.core.next_deadline() == 0.5
    small = append(manager, A, 1, value_bytes=10)
    assert small < 500
    assert not answers.answered
    large = append(manager, A, 1, value_bytes=600)
    [(fetch, result)] = answers.only
    assert fetch.topic_partition == A
    # read again at completion: everything there now
    assert result.size == small + large
    assert result.high_watermark == 2
    assert manager.core.fetch_purgatory.delayed == 0
    assert manager.on_timer(1.0) == 0


def test_bytes_on_several_partitions_add_up(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=0)
    fetches = [FetchPartition(A, 0, BIG), FetchPartition(B, 0, BIG)]
    answers = park(manager, fetches, min_bytes=2 * BATCH - 1)
    append(manager, A, 9)
    assert not answers.answered
    append(manager, B, 9)
    assert sizes(answers.only) == [BATCH, BATCH]


def test_only_partition_max_bytes_counts_toward_min_bytes(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=0, tps=(A,))
    answers = park(manager, [FetchPartition(A, 0, 100)], min_bytes=150)
    append(manager, A, 9)  # BATCH bytes arrive, but at most 100 of them would be sent
    assert not answers.answered
    assert manager.on_timer(0.5) == 1
    assert sizes(answers.only) == [BATCH]  # min_one_message at completion


def test_a_consumer_long_poll_waits_for_the_hw_not_the_log_end(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, A, (1, 2), isr=(1, 2))
    answers = park(manager, [FetchPartition(A, 0, BIG)], min_bytes=1)
    append(manager, A, 9)
    assert not answers.answered  # there, but not yet on every in-sync replica
    follower_fetch(manager, 2, A, 9, now=0.1)
    assert sizes(answers.only) == [BATCH]


def test_a_follower_long_poll_completes_on_an_append(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, A, (1, 2), isr=(1, 2))
    answers = park(manager, [FetchPartition(A, 0, BIG)], min_bytes=1, replica_id=2)
    append(manager, A, 9)
    [(_, result)] = answers.only
    assert result.size == BATCH
    assert partition.log.high_watermark == 0  # followers read past the HW


def test_a_long_poll_completes_when_a_new_segment_is_rolled(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=1, tps=(A,))
    answers = park(manager, [FetchPartition(A, 9, BIG)], min_bytes=1_000_000)
    partition = manager.core.get_partition(A)
    assert partition is not None
    partition.log.roll()
    manager.core.fetch_purgatory.check_and_complete(A)
    assert not answers.answered  # a new, empty segment: nothing to send yet
    size = append(manager, A, 1, value_bytes=10)
    [(_, result)] = answers.only  # far below min_bytes, but in a newer segment
    assert result.size == size
    assert result.records is not None
    assert result.records.position == 0


def test_a_long_poll_expires_with_an_empty_answer(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=1, tps=(A,))
    answers = park(
        manager, [FetchPartition(A, 9, BIG)], min_bytes=1, max_wait_ms=250, now=4.0
    )
    assert manager.core.next_deadline() == 4.25
    assert manager.on_timer(4.2499) == 0
    assert manager.on_timer(4.25) == 1
    [(_, result)] = answers.only
    assert result.error_code is ErrorCode.none
    assert result.records is None
    assert result.high_watermark == 9
    assert manager.core.fetch_purgatory.delayed == 0


def test_a_long_poll_on_a_deleted_partition_is_answered_at_once(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=1)
    fetches = [FetchPartition(A, 9, BIG), FetchPartition(B, 9, BIG)]
    answers = park(manager, fetches, min_bytes=1)
    manager.stop_replicas([A])
    codes = [result.error_code for _, result in answers.only]
    assert codes == [ErrorCode.unknown_topic_or_partition, ErrorCode.none]


def test_a_long_poll_on_a_partition_that_moved_away_answers_not_leader(
    tmp_path: Path,
) -> None:
    manager = filled(tmp_path, batches=1, tps=(A,))
    answers = park(manager, [FetchPartition(A, 9, BIG)], min_bytes=1)
    partition = manager.core.get_partition(A)
    assert partition is not None
    follower = partition_state((2, 1), leader=2, leader_epoch=1)
    manager.become_leader_or_follower({}, {A: (partition.topic_id, follower)}, now=0.1)
    [(_, result)] = answers.only
    assert result.error_code is ErrorCode.not_leader_or_follower


def test_a_long_poll_naming_an_old_leader_epoch_is_answered_when_the_epoch_changes(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, A, leader_epoch=1)
    answers = park(
        manager, [FetchPartition(A, 0, BIG, current_leader_epoch=1)], min_bytes=1
    )
    # re-elected: a new epoch
    lead(manager, A, leader_epoch=2, partition_epoch=1, now=0.1)
    # not at the deadline: KIP-320 says the client is behind
    [(_, result)] = answers.only
    assert result.error_code is ErrorCode.fenced_leader_epoch


def test_an_error_in_any_partition_answers_at_once(tmp_path: Path) -> None:
    manager = filled(tmp_path, batches=0, tps=(A,))
    missing = TopicPartition("gone", 0)
    params = consumer_params(max_wait_ms=500, min_bytes=1000)
    answer = fetch_now(
        manager, [FetchPartition(A, 0, BIG), FetchPartition(missing, 0, BIG)], params
    )
    codes = [result.error_code for _, result in answer]
    assert codes == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    assert manager.core.fetch_purgatory.delayed == 0


def test_a_fetch_of_no_partitions_is_answered_at_once(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    assert fetch_now(manager, [], consumer_params(max_wait_ms=500, min_bytes=10)) == []
    assert manager.core.fetch_purgatory.delayed == 0


def test_a_result_given_the_offsets_a_follower_moved_keeps_every_other_field() -> None:
    """``with_offsets`` (the HW and LSO a follower's own fetch moved) copies every other
    field of the result, as ``attrs.evolve`` would: each field is set to a value other
    than its default here, so a field added to the class fails until it is set here and
    copied there."""
    result = FetchPartitionResult(
        ErrorCode.none,
        high_watermark=5,
        last_stable_offset=4,
        log_start_offset=2,
        records=FileSlice(7, Path("00000000000000000000.log"), 61, 83),
        error_message="a message",
        diverging_epoch=(3, 9),
        aborted_transactions=(AbortedTxn(11, 2, 4, 2),),
    )
    fields = attrs.fields(FetchPartitionResult)
    unset = [f.name for f in fields[1:] if getattr(result, f.name) == f.default]
    assert unset == [], "set these here, and copy them in with_offsets"

    moved = result.with_offsets(8, 7)

    assert moved == attrs.evolve(result, high_watermark=8, last_stable_offset=7)
