"""The leader's ISR changes (seed 000, KIP-497): shrink after replica.lag.time.max.ms,
expand once caught up, and the maximal ISR while a change is in flight.

Guarantees tested, on a real log with followers simulated by their fetch offsets and
time passed in (virtual, seeded):

- a follower that keeps fetching up to where the leader was at its previous fetch stays
  in the ISR however fast records arrive; one that stops, or falls behind, is proposed
  for removal once ``max_lag`` has passed, and not before;
- while a removal is in flight the slow follower still holds the HW back (nothing is
  acknowledged on fewer replicas than the controller may still count); once the
  controller accepts, the HW moves without it;
- a follower that catches up to the HW in the current epoch is proposed back, and counts
  for the HW as soon as that proposal is made;
- one proposal at a time; a refused one (stale partition epoch) stays in flight until
  the metadata's state replaces it (the other answers: test_replication_isr_answers).
"""

from __future__ import annotations

from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.common import Acks
from minikafka.log.testing import value_batch
from minikafka.replication import IsrChangeProposal, Partition
from minikafka.replication.testing import open_partition, partition_state

LAG = 30.0  # replica.lag.time.max.ms, Kafka's default, in seconds


def leader(tmp_path: Path, isr: tuple[int, ...] = (1, 2, 3)) -> Partition:
    partition = open_partition(tmp_path)
    assert partition.make_leader(
        partition_state((1, 2, 3), isr=isr, partition_epoch=4), 0.0
    )
    return partition


def produce(partition: Partition, records: int = 1) -> None:
    partition.append_records_to_leader(
        value_batch(records), required_acks=Acks.LEADER, now=0.0
    )


def fetch(partition: Partition, follower: int, now: float) -> None:
    """The follower fetches from its log end, which is where its last fetch left it."""
    partition.update_follower_fetch_state(follower, partition.log.log_end_offset, now)


def fetch_at(partition: Partition, follower: int, offset: int, now: float) -> None:
    partition.update_follower_fetch_state(follower, offset, now)


def test_steady_followers_stay_in_sync_under_steady_produce(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    for second in range(1, 200):
        # A record arrives between every two fetches: the followers are never at the
        # leader's end when they fetch, but always at where the leader was last time.
        offset_before = partition.log.log_end_offset
        produce(partition)
        fetch_at(partition, 2, offset_before, float(second))
        fetch_at(partition, 3, offset_before, float(second))
        partition.maybe_shrink_isr(float(second), LAG)
    assert partition.pending_isr_change is None
    assert partition.isr == frozenset({1, 2, 3})


def test_a_stopped_follower_is_proposed_out_after_the_lag_and_not_before(
    tmp_path: Path,
) -> None:
    partition = leader(tmp_path)
    produce(partition, 3)
    fetch(partition, 2, 1.0)
    fetch(partition, 3, 1.0)
    for second in range(2, 40):
        produce(partition)
        fetch(partition, 2, float(second))  # follower 3 stopped at second 1
        shrunk = partition.maybe_shrink_isr(float(second), LAG)
        assert shrunk == (second - 1.0 > LAG), second
        if shrunk:
            break
    proposal = partition.take_isr_change()
    assert proposal == IsrChangeProposal(
        partition.topic_partition, partition.topic_id, 0, (1, 2), partition_epoch=4
    )
    assert partition.take_isr_change() is None  # sent once
    assert partition.isr == frozenset({1, 2, 3})  # not before the controller agrees


def test_in_flight_shrink_still_waits_for_the_slow_follower(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    produce(partition, 5)
    fetch(partition, 2, 1.0)
    fetch_at(partition, 3, 2, 1.0)  # follower 3 has 2 of 5 records
    assert partition.log.high_watermark == 2
    partition.maybe_shrink_isr(40.0, LAG)
    assert partition.take_isr_change() is not None
    fetch(partition, 2, 40.0)
    assert partition.log.high_watermark == 2  # the maximal ISR is still {1, 2, 3}
    assert partition.check_enough_replicas_reach_offset(5) is None  # acks=all waits
    moved = partition.on_isr_change_answer(ErrorCode.none, (1, 2), 0, 5, now=0.0)
    assert moved
    assert partition.isr == frozenset({1, 2})
    assert partition.partition_epoch == 5
    assert partition.log.high_watermark == 5
    assert partition.check_enough_replicas_reach_offset(5) == ErrorCode.none


def test_a_follower_that_catches_up_is_proposed_back_and_counts_at_once(
    tmp_path: Path,
) -> None:
    partition = leader(tmp_path, isr=(1, 2))
    produce(partition, 4)
    fetch(partition, 2, 1.0)
    assert partition.log.high_watermark == 4
    fetch_at(partition, 3, 2, 1.0)  # behind the HW: not yet
    assert partition.pending_isr_change is None
    fetch_at(partition, 3, 4, 2.0)  # at the HW, in this leader epoch
    proposal = partition.take_isr_change()
    assert proposal is not None
    assert proposal.new_isr == (1, 2, 3)
    assert partition.maximal_isr == frozenset({1, 2, 3})
    produce(partition, 2)
    fetch(partition, 2, 3.0)
    # follower 3 already counts: the HW waits for it
    assert partition.log.high_watermark == 4
    fetch(partition, 3, 3.0)
    assert partition.log.high_watermark == 6


def test_one_proposal_at_a_time_and_a_refused_one_waits_for_the_metadata(
    tmp_path: Path,
) -> None:
    partition = leader(tmp_path)
    produce(partition)
    partition.maybe_shrink_isr(100.0, LAG)  # nobody fetched: both followers are out
    first = partition.take_isr_change()
    assert first is not None
    assert first.new_isr == (1,)
    assert not partition.maybe_shrink_isr(200.0, LAG)  # one in flight: no second
    # The controller refuses it (its partition epoch moved on meanwhile): the leader's
    # view is stale, so it keeps the maximal ISR and proposes nothing more until the
    # metadata tells it the partition's state.
    partition.on_isr_change_answer(
        ErrorCode.invalid_update_version, (), -1, -1, now=0.0
    )
    still = partition.pending_isr_change
    assert still is not None
    assert still.proposal == first
    assert partition.maximal_isr == frozenset({1, 2, 3})
    assert not partition.maybe_shrink_isr(300.0, LAG)
    partition.make_leader(
        partition_state((1, 2, 3), isr=(1, 3), partition_epoch=6), 300.0
    )
    assert partition.pending_isr_change is None
    assert partition.isr == frozenset({1, 3})
