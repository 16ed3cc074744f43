"""A fetch that names its last fetched epoch (Fetch v12+): the leader answers a log that
diverged there with the epoch to truncate to, reads nothing, and records nothing.

The leader's log here: offsets 0-1 written in leader epoch 0, offsets 2-3 in epoch 3
(log end 4). A fetcher whose last record is from epoch E and who reads from offset F
diverged if this log's largest epoch at most E is older than E, or ends before F
(Kafka's ``Partition.readRecords``); an epoch this log cannot place, or an offset below
its start, is OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log.testing import value_batch
from minikafka.replication import FetchParams, FetchPartition, FetchPartitionResult
from minikafka.replication.testing import (
    Answers,
    FetchAnswer,
    ManualShell,
    discard,
    lead,
    replica_manager,
)

A = TopicPartition("clicks", 0)


def two_epochs(tmp_path: Path, replicas: tuple[int, ...] = (1,)) -> ManualShell:
    manager = replica_manager(tmp_path)
    lead(manager, A, replicas, isr=replicas, leader_epoch=0)
    manager.append_records(30_000, Acks.LEADER, {A: value_batch(2, 10)}, discard, 0.0)
    lead(manager, A, replicas, isr=replicas, leader_epoch=3, partition_epoch=1)
    manager.append_records(30_000, Acks.LEADER, {A: value_batch(2, 10)}, discard, 0.0)
    return manager


def fetch(
    manager: ManualShell,
    offset: int,
    last_fetched_epoch: int,
    *,
    replica_id: int = -1,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
) -> tuple[FetchPartitionResult, bool]:
    """The result of a fetch from ``offset``, and whether it was answered at once."""
    params = FetchParams(replica_id, max_wait_ms, min_bytes, 1 << 20)
    answers: Answers[FetchAnswer] = Answers()
    wanted = FetchPartition(A, offset, 1 << 20, last_fetched_epoch=last_fetched_epoch)
    manager.fetch_messages(params, [wanted], answers, 0.0)
    if not answers.answered:
        return FetchPartitionResult(ErrorCode.none), False
    [(_, result)] = answers.only
    return result, True


@pytest.mark.parametrize(
    ("offset", "epoch"),
    [(4, 3), (2, 3), (2, 0), (0, 0)],
    ids=["at-the-end-of-the-latest", "inside-the-latest", "end-of-0", "start-of-0"],
)
def test_a_fetcher_whose_log_agrees_reads_as_usual(
    tmp_path: Path, offset: int, epoch: int
) -> None:
    manager = two_epochs(tmp_path)
    result, _ = fetch(manager, offset, epoch)
    assert result.error_code is ErrorCode.none
    assert result.diverging_epoch is None
    assert (result.records is not None and result.size > 0) == (offset < 4)


@pytest.mark.parametrize(
    ("offset", "epoch", "truncate_to"),
    [(3, 0, (0, 2)), (2, 2, (0, 2)), (3, 1, (0, 2))],
    ids=["past-the-end-of-0", "an-epoch-this-log-skipped", "past-a-skipped-one"],
)
def test_a_fetcher_whose_log_diverged_is_told_where_to_truncate(
    tmp_path: Path, offset: int, epoch: int, truncate_to: tuple[int, int]
) -> None:
    """No records, no error, the offsets as a read would give them, at once even for a
    long poll."""
    manager = two_epochs(tmp_path)
    result, at_once = fetch(manager, offset, epoch, max_wait_ms=5000, min_bytes=1 << 20)
    assert at_once
    assert result.error_code is ErrorCode.none
    assert result.diverging_epoch == truncate_to
    assert result.records is None
    assert (result.high_watermark, result.log_start_offset) == (4, 0)


def test_an_epoch_newer_than_the_log_knows_is_out_of_range(tmp_path: Path) -> None:
    manager = two_epochs(tmp_path)
    result, _ = fetch(manager, 4, 5)
    assert result.error_code is ErrorCode.offset_out_of_range
    assert result.diverging_epoch is None


def test_a_diverged_follower_s_fetch_is_not_its_position(tmp_path: Path) -> None:
    """Its fetch offset is not where the leader's log and its own agree: counting it
    would move the high watermark over records the follower does not have."""
    manager = two_epochs(tmp_path, replicas=(1, 2))
    partition = manager.core.get_partition(A)
    assert partition is not None
    result, _ = fetch(manager, 3, 0, replica_id=2)
    assert result.diverging_epoch == (0, 2)
    assert partition.remote_replicas[2].log_end_offset == -1
    assert partition.log.high_watermark == 0
    agreed, _ = fetch(manager, 2, 0, replica_id=2)
    assert agreed.diverging_epoch is None
    assert partition.remote_replicas[2].log_end_offset == 2
