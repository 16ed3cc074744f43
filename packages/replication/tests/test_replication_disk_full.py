"""A failing disk under the ReplicaManager: KAFKA_STORAGE_ERROR, never a raise.

A full disk's refused write is answered KAFKA_STORAGE_ERROR and undone, and the next
produce succeeds (an idempotent producer's batches pipelined behind the refused one are
answered KAFKA_STORAGE_ERROR too, as Kafka's offline partition answers them, not
OUT_OF_ORDER_SEQUENCE_NUMBER); a failure the log cannot undo (or a failed fsync) takes the log dir
offline: produce and fetch answer KAFKA_STORAGE_ERROR, and an acks=all produce waiting
on the high watermark is answered at once. Failures are injected by wrapping os.write.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log.testing import keyed_batch, value_batch
from minikafka.replication import FetchPartition
from minikafka.replication.testing import (
    OTHER,
    TP,
    Answers,
    ProduceAnswers,
    consumer_params,
    lead,
    partition_state,
    replica_manager,
)


@contextmanager
def refused_writes(monkeypatch: pytest.MonkeyPatch, err: int) -> Iterator[None]:
    """Every write to a segment file fails with ``err`` after a short write of 7 bytes."""
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if path.endswith(".log") and len(data) > 7:
            real_write(fd, bytes(data[:7]))  # torn bytes the log must cut off
            raise OSError(err, os.strerror(err))
        return real_write(fd, data)

    with monkeypatch.context() as m:
        m.setattr(os, "write", write)
        yield


def produce(
    manager: Any, acks: Acks = Acks.LEADER, tp: TopicPartition = TP
) -> ProduceAnswers:
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, acks, {tp: value_batch(2)}, answers, now=0.0)
    return answers


def test_a_full_disk_answers_storage_error_and_writes_resume_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC: KAFKA_STORAGE_ERROR (not an exception), the HW stays, the next write works."""
    manager = replica_manager(tmp_path)
    partition = lead(manager, TP)
    assert produce(manager).only[TP].error_code is ErrorCode.none
    with refused_writes(monkeypatch, errno.ENOSPC):
        result = produce(manager, acks=Acks.ALL).only[TP]
    assert result.error_code is ErrorCode.kafka_storage_error
    assert "No space left" in (result.error_message or "")
    assert (partition.log.log_end_offset, partition.log.high_watermark) == (2, 2)
    assert partition.offline_reason is None
    assert manager.core.log_manager.offline_dirs == {}
    again = produce(manager, acks=Acks.ALL).only[TP]
    assert (again.error_code, again.base_offset) == (ErrorCode.none, 2)


def test_a_write_the_log_cannot_undo_takes_the_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EIO: the dir goes offline; every partition in it answers KAFKA_STORAGE_ERROR."""
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    lead(manager, OTHER)
    with refused_writes(monkeypatch, errno.EIO):
        assert produce(manager).only[TP].error_code is ErrorCode.kafka_storage_error
    assert list(manager.core.log_manager.offline_dirs) == [tmp_path]
    for tp in (TP, OTHER):
        assert (
            produce(manager, tp=tp).only[tp].error_code is ErrorCode.kafka_storage_error
        )
        answers: Answers[Any] = Answers()
        manager.fetch_messages(
            consumer_params(), [FetchPartition(tp, 0, 1 << 20)], answers, 0.0
        )
        [(_, fetched)] = answers.only
        assert fetched.error_code is ErrorCode.kafka_storage_error


def test_a_waiting_acks_all_produce_is_answered_when_its_dir_goes_offline(
    tmp_path: Path,
) -> None:
    """An acks=all produce parked on the HW hears KAFKA_STORAGE_ERROR at once, not a timeout.

    (The flusher takes the dir offline after a failed fsync through the same call; the
    shell takes the dir from the LogManager's queue and tells the core.)
    """
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))  # the follower never fetches: the HW stays
    answers = produce(manager, acks=Acks.ALL)
    assert not answers.answered
    assert manager.core.produce_purgatory.delayed == 1
    manager.core.log_manager.mark_dir_offline(tmp_path, "fsync failed: [Errno 5] EIO")
    manager.answer_offline_dirs()
    assert answers.only[TP].error_code is ErrorCode.kafka_storage_error
    assert manager.core.produce_purgatory.delayed == 0


def test_a_log_that_cannot_be_created_leaves_the_partition_offline_not_the_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Becoming leader of a new partition on a full disk: that partition is offline, the
    call returns (it runs inside the controller's metadata publisher), others go on."""
    manager = replica_manager(tmp_path)
    lead(manager, OTHER)

    def no_space(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    state = partition_state((1,), leader=1)
    with monkeypatch.context() as m:
        m.setattr(Path, "mkdir", no_space)
        manager.become_leader_or_follower({TP: (uuid.uuid4(), state)}, {}, 0.0)
    assert TP in manager.core.offline_partitions
    assert produce(manager).only[TP].error_code is ErrorCode.kafka_storage_error
    assert produce(manager, tp=OTHER).only[OTHER].error_code is ErrorCode.none


def sequenced(manager: Any, sequence: int) -> tuple[ErrorCode, int]:
    """Producer 1000's one-record batch at ``sequence`` (epoch 7), acks=1: the answer's
    error and base offset."""
    batch = keyed_batch(
        [(None, b"seq %d" % sequence)],
        producer_id=1000,
        producer_epoch=7,
        base_sequence=sequence,
    )
    answers: ProduceAnswers = Answers()
    manager.append_records(30_000, Acks.LEADER, {TP: batch}, answers, now=0.0)
    result = answers.only[TP]
    return result.error_code, result.base_offset


def test_batches_pipelined_behind_one_a_full_disk_refused_are_not_a_sequence_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer's batch refused by a full disk leaves a gap its next batches, already
    in flight, would fall into: they are answered KAFKA_STORAGE_ERROR (retried as not
    written), as Kafka's partition, offline after the failed write, answers them, not
    OUT_OF_ORDER_SEQUENCE_NUMBER, on which librdkafka bumps its producer epoch and
    re-sends every unacknowledged record (a chaos run's duplicates). A duplicate retry
    meanwhile writes nothing and changes nothing; once the disk has room the retried
    batches are written in order, and a real gap is OUT_OF_ORDER_SEQUENCE_NUMBER."""
    manager = replica_manager(tmp_path)
    partition = lead(manager, TP)
    assert sequenced(manager, 0) == (ErrorCode.none, 0)
    with refused_writes(monkeypatch, errno.ENOSPC):
        assert sequenced(manager, 1)[0] is ErrorCode.kafka_storage_error
        assert sequenced(manager, 2)[0] is ErrorCode.kafka_storage_error
        assert sequenced(manager, 0) == (ErrorCode.none, 0)  # the duplicate
        assert sequenced(manager, 3)[0] is ErrorCode.kafka_storage_error
    assert partition.log.log_end_offset == 1
    assert partition.offline_reason is None
    assert [sequenced(manager, s) for s in (1, 2, 3)] == [
        (ErrorCode.none, 1),
        (ErrorCode.none, 2),
        (ErrorCode.none, 3),
    ]
    assert sequenced(manager, 5)[0] is ErrorCode.out_of_order_sequence_number


def test_a_new_leadership_forgets_a_refusal_by_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal belongs to the leadership it happened in: led again at a new epoch,
    a gap is OUT_OF_ORDER_SEQUENCE_NUMBER again."""
    manager = replica_manager(tmp_path)
    partition = lead(manager, TP)
    assert sequenced(manager, 0) == (ErrorCode.none, 0)
    with refused_writes(monkeypatch, errno.ENOSPC):
        assert sequenced(manager, 1)[0] is ErrorCode.kafka_storage_error
    assert "No space left" in (partition.refused_by_disk or "")
    again = partition_state((1,), leader=1, leader_epoch=1, partition_epoch=1)
    manager.become_leader_or_follower({TP: (partition.topic_id, again)}, {}, now=1.0)
    assert partition.refused_by_disk is None
    assert sequenced(manager, 2)[0] is ErrorCode.out_of_order_sequence_number
