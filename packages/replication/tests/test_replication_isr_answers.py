"""The controller's answers to a leader's ISR proposal (KIP-497; Kafka's
``Partition.handleAlterPartitionError`` and ``handleAlterPartitionUpdate``).

Guarantee tested: an answer that does not say "your proposal was not applied" never
takes the proposal's replica out of the ISR the HW is computed over. The controller may
have committed an expansion and, in the same step, completed a reassignment and elected
the replica just added, whose log ends at the old HW: if the old leader went back to its
committed ISR it could acknowledge acks=all writes the new leader never had (the chaos
run of seed 127 lost two that way, in ZooKeeper mode).

- ``NEW_LEADER_ELECTED``, ``FENCED_LEADER_EPOCH``, ``INVALID_UPDATE_VERSION``,
  ``UNKNOWN_TOPIC_OR_PARTITION``, ``UNKNOWN_TOPIC_ID``, ``INVALID_REQUEST``, and a
  success naming another leader epoch or an older partition epoch: the proposal stays
  pending (its maximal ISR counted) until the metadata replaces it;
- ``OPERATION_NOT_ATTEMPTED`` and ``INELIGIBLE_REPLICA`` (the controller says it applied
  nothing, on the partition epoch the leader knows): back to the committed ISR;
- a success on this leader epoch at the same or a newer partition epoch commits it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import Acks
from minikafka.log.testing import value_batch
from minikafka.replication import Partition
from minikafka.replication.testing import open_partition, partition_state

LEADER_EPOCH = 4
PARTITION_EPOCH = 5


def expanding_leader(tmp_path: Path) -> Partition:
    """Leader 1 of replicas (1, 2, 3) with ISR (1, 2); follower 3 (a replica a
    reassignment is adding) reaches the HW at 4 and is proposed in; then two more
    records reach follower 2 only."""
    partition = open_partition(tmp_path, min_insync_replicas=2)
    assert partition.make_leader(
        partition_state(
            (1, 2, 3),
            isr=(1, 2),
            leader_epoch=LEADER_EPOCH,
            partition_epoch=PARTITION_EPOCH,
        ),
        0.0,
    )
    produce(partition, 4)
    partition.update_follower_fetch_state(2, 4, 1.0)
    assert partition.log.high_watermark == 4
    partition.update_follower_fetch_state(3, 4, 1.0)  # at the HW: proposed in
    proposal = partition.take_isr_change()
    assert proposal is not None
    assert proposal.new_isr == (1, 2, 3)
    produce(partition, 2)
    partition.update_follower_fetch_state(2, 6, 2.0)
    assert partition.log.high_watermark == 4  # follower 3 counts while in flight
    return partition


def produce(partition: Partition, records: int) -> None:
    partition.append_records_to_leader(
        value_batch(records), required_acks=Acks.ALL, now=0.0
    )


@pytest.mark.parametrize(
    "answer",
    [
        # The seed-127 answer: the expansion committed, the reassignment completed in
        # the same step and follower 3 was elected (leader epoch and partition moved on).
        (
            ErrorCode.new_leader_elected,
            (1, 2, 3),
            LEADER_EPOCH + 2,
            PARTITION_EPOCH + 3,
        ),
        (ErrorCode.none, (1, 2, 3), LEADER_EPOCH + 1, PARTITION_EPOCH + 2),
        (ErrorCode.none, (1, 2), LEADER_EPOCH, PARTITION_EPOCH - 1),
        (ErrorCode.fenced_leader_epoch, (), -1, -1),
        (ErrorCode.invalid_update_version, (), -1, -1),
        (ErrorCode.unknown_topic_or_partition, (), -1, -1),
        (ErrorCode.unknown_topic_id, (), -1, -1),
        (ErrorCode.invalid_request, (), -1, -1),
    ],
    ids=lambda a: f"{a[0].name}-epoch{a[2]}",
)
def test_an_answer_that_may_have_applied_the_expansion_keeps_it_counted(
    tmp_path: Path, answer: tuple[ErrorCode, tuple[int, ...], int, int]
) -> None:
    partition = expanding_leader(tmp_path)
    error, isr, leader_epoch, partition_epoch = answer
    partition.on_isr_change_answer(error, isr, leader_epoch, partition_epoch, 3.0)
    assert partition.maximal_isr == frozenset({1, 2, 3})
    assert partition.isr == frozenset({1, 2})
    assert partition.partition_epoch == PARTITION_EPOCH
    # A later fetch of follower 2 does not move the HW past follower 3's log end: the
    # acks=all writes at 4 and 5 stay unacknowledged.
    partition.update_follower_fetch_state(2, 6, 4.0)
    assert partition.log.high_watermark == 4
    assert partition.check_enough_replicas_reach_offset(6) is None
    # Nor is a second proposal made on top of it: the metadata decides next.
    assert not partition.maybe_shrink_isr(100.0, 30.0)
    # The metadata's state replaces the proposal.
    assert partition.make_leader(
        partition_state(
            (1, 2, 3),
            isr=(1, 2, 3),
            leader_epoch=LEADER_EPOCH + 1,
            partition_epoch=PARTITION_EPOCH + 2,
        ),
        5.0,
    )
    assert partition.pending_isr_change is None


@pytest.mark.parametrize(
    "error", [ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica]
)
def test_a_proposal_the_controller_did_not_apply_goes_back_to_the_committed_isr(
    tmp_path: Path, error: ErrorCode
) -> None:
    partition = expanding_leader(tmp_path)
    moved = partition.on_isr_change_answer(error, (), -1, -1, 3.0)
    assert partition.pending_isr_change is None
    assert partition.maximal_isr == frozenset({1, 2})
    assert moved
    assert partition.log.high_watermark == 6


@pytest.mark.parametrize("partition_epoch", [PARTITION_EPOCH, PARTITION_EPOCH + 1])
def test_a_success_on_this_leader_epoch_commits_the_new_isr(
    tmp_path: Path, partition_epoch: int
) -> None:
    partition = expanding_leader(tmp_path)
    partition.on_isr_change_answer(
        ErrorCode.none, (1, 2, 3), LEADER_EPOCH, partition_epoch, 3.0
    )
    assert partition.pending_isr_change is None
    assert partition.isr == frozenset({1, 2, 3})
    assert partition.partition_epoch == partition_epoch
    assert partition.log.high_watermark == 4  # follower 3 is in the ISR now
