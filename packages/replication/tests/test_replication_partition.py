"""Partition, leader side: epochs, the ISR and the high watermark, min.insync.replicas,
reads that stop at the HW for consumers, ListOffsets, KIP-320's leader-epoch checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.common import Acks
from minikafka.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    Record,
    build_batch,
)
from minikafka.log.testing import keyed_batch, value_batch
from minikafka.replication import Partition, ReplicationError
from minikafka.replication.testing import open_partition, partition_state

T0 = 1_700_000_000_000


def leader_of_three(
    tmp_path: Path, *, isr: tuple[int, ...] = (1, 2, 3), min_insync_replicas: int = 1
) -> Partition:
    partition = open_partition(tmp_path, min_insync_replicas=min_insync_replicas)
    assert partition.make_leader(partition_state((1, 2, 3), isr=isr), now=0.0)
    return partition


def error_of(excinfo: pytest.ExceptionInfo[ReplicationError]) -> ErrorCode:
    return excinfo.value.error_code


# --- becoming leader or follower ------------------------------------------------------


def test_make_leader_starts_the_epoch_and_waits_for_every_follower(
    tmp_path: Path,
) -> None:
    partition = open_partition(tmp_path)
    partition.log.append_as_leader(value_batch(3), leader_epoch=-1)  # data from before
    assert partition.make_leader(partition_state((1, 2, 3), leader_epoch=4), now=7.0)
    assert partition.is_leader
    assert partition.leader_epoch == 4
    assert partition.isr == frozenset({1, 2, 3})
    assert {b: r.log_end_offset for b, r in partition.remote_replicas.items()} == {
        2: -1,
        3: -1,
    }
    assert all(r.last_caught_up_time == 7.0 for r in partition.remote_replicas.values())
    # KIP-101: the epoch begins at the leader's log end offset.
    assert [
        (e.epoch, e.start_offset) for e in partition.log.leader_epoch_cache.entries
    ] == [(4, 3)]
    assert partition.log.high_watermark == 0  # nobody has fetched in this epoch yet


def test_a_single_replica_leader_moves_the_hw_to_its_log_end(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    partition.log.append_as_leader(value_batch(3), leader_epoch=-1)
    partition.make_leader(partition_state((1,)), now=0.0)
    assert partition.log.high_watermark == 3
    partition.append_records_to_leader(value_batch(2), required_acks=Acks.ALL, now=0.0)
    assert partition.log.high_watermark == 5


def test_a_stale_leader_epoch_is_ignored(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    partition.make_leader(
        partition_state((1, 2, 3), leader_epoch=5, partition_epoch=9), 0.0
    )
    stale = partition_state((1, 2), leader_epoch=4, partition_epoch=10)
    assert not partition.make_leader(stale, now=1.0)
    assert not partition.make_follower(partition_state((2, 1), leader_epoch=4), now=0.0)
    assert (partition.leader_epoch, partition.replicas) == (5, (1, 2, 3))
    assert partition.is_leader


def test_an_older_partition_epoch_at_the_same_leader_epoch_is_ignored(
    tmp_path: Path,
) -> None:
    partition = open_partition(tmp_path)
    partition.make_leader(partition_state((1, 2, 3), partition_epoch=3), now=0.0)
    older = partition_state((1, 2, 3), isr=(1, 2), partition_epoch=2)
    assert not partition.make_leader(older, now=1.0)
    assert partition.isr == frozenset({1, 2, 3})  # the newer ISR stays
    assert partition.partition_epoch == 3
    assert not partition.make_follower(
        partition_state((2, 1, 3), leader=2, partition_epoch=2), now=0.0
    )
    assert partition.is_leader


def test_an_isr_change_in_the_same_epoch_keeps_what_the_followers_fetched(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(4), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 4, now=1.0)
    partition.update_follower_fetch_state(3, 1, now=1.0)
    assert partition.log.high_watermark == 1
    # The controller drops the slow broker 3 from the ISR: same leader epoch.
    assert partition.make_leader(
        partition_state((1, 2, 3), isr=(1, 2), partition_epoch=1), 2.0
    )
    assert partition.remote_replicas[2].log_end_offset == 4
    assert partition.log.high_watermark == 4  # no longer held back by broker 3


def test_a_new_leader_epoch_forgets_the_followers_positions(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(4), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 4, now=1.0)
    partition.update_follower_fetch_state(3, 4, now=1.0)
    assert partition.log.high_watermark == 4
    partition.append_records_to_leader(
        value_batch(2), required_acks=Acks.LEADER, now=0.0
    )
    assert partition.make_leader(
        partition_state((1, 2, 3), leader_epoch=1, partition_epoch=1), 2
    )
    assert {b: r.log_end_offset for b, r in partition.remote_replicas.items()} == {
        2: -1,
        3: -1,
    }
    assert partition.log.high_watermark == 4  # never back, not forward until they fetch
    entries = partition.log.leader_epoch_cache.entries
    assert [(e.epoch, e.start_offset) for e in entries] == [(0, 0), (1, 6)]


def test_a_reassignment_adds_and_removes_remote_replicas(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    partition.update_follower_fetch_state(2, 0, now=1.0)
    moved = partition_state((1, 2, 4), isr=(1, 2), partition_epoch=1)
    assert partition.make_leader(moved, now=5.0)
    assert sorted(partition.remote_replicas) == [2, 4]
    assert partition.remote_replicas[4].last_caught_up_time == 5.0


def test_a_follower_refuses_writes_and_reads(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    assert partition.make_follower(partition_state((2, 1, 3), leader=2), now=0.0)
    assert not partition.is_leader
    assert partition.remote_replicas == {}
    with pytest.raises(ReplicationError) as write:
        partition.append_records_to_leader(
            value_batch(1), required_acks=Acks.LEADER, now=0.0
        )
    with pytest.raises(ReplicationError) as read:
        partition.read_records(0, 1000, from_follower=False, min_one_message=True)
    with pytest.raises(ReplicationError) as offsets:
        partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP)
    with pytest.raises(ReplicationError) as fetched:
        partition.update_follower_fetch_state(3, 0, now=0.0)
    for excinfo in (write, read, offsets, fetched):
        assert error_of(excinfo) is ErrorCode.not_leader_or_follower
    assert (
        partition.check_enough_replicas_reach_offset(0)
        is ErrorCode.not_leader_or_follower
    )
    assert not partition.maybe_increment_leader_hw(now=0.0)
    assert partition.log.log_end_offset == 0


def test_a_leader_that_becomes_follower_and_back_starts_a_new_epoch(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path)
    partition.update_follower_fetch_state(2, 0, now=1.0)
    assert partition.make_follower(
        partition_state((2, 1, 3), leader=2, leader_epoch=1), now=0.0
    )
    assert partition.make_leader(partition_state((1, 2, 3), leader_epoch=2), now=3.0)
    assert partition.remote_replicas[2].log_end_offset == -1


# --- the high watermark ---------------------------------------------------------------


def test_the_hw_is_the_smallest_log_end_offset_in_the_isr(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(5), required_acks=Acks.LEADER, now=0.0
    )
    assert partition.log.log_end_offset == 5
    assert partition.log.high_watermark == 0
    assert not partition.update_follower_fetch_state(2, 5, now=1.0)  # 3 has not fetched
    assert partition.log.high_watermark == 0
    assert partition.update_follower_fetch_state(3, 2, now=1.0)
    assert partition.log.high_watermark == 2
    assert partition.update_follower_fetch_state(3, 5, now=1.0)
    assert partition.log.high_watermark == 5


def test_a_replica_outside_the_isr_does_not_hold_the_hw_back(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path, isr=(1, 2))
    partition.append_records_to_leader(
        value_batch(5), required_acks=Acks.LEADER, now=0.0
    )
    assert partition.update_follower_fetch_state(2, 5, now=1.0)
    assert partition.log.high_watermark == 5
    assert partition.remote_replicas[3].log_end_offset == -1


def test_the_hw_never_goes_back(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(5), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 5, now=1.0)
    partition.update_follower_fetch_state(3, 5, now=1.0)
    assert partition.log.high_watermark == 5
    # A follower that fetches from an older offset again (it truncated) holds the HW
    # at most where it was; it does not move it back.
    assert not partition.update_follower_fetch_state(3, 1, now=2.0)
    assert partition.log.high_watermark == 5
    partition.append_records_to_leader(
        value_batch(1), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 6, now=3.0)
    assert partition.log.high_watermark == 5


def test_last_caught_up_time_moves_only_when_the_follower_reaches_the_log_end(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(5), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 3, now=4.0)
    assert partition.remote_replicas[2].last_caught_up_time == 0.0
    partition.update_follower_fetch_state(2, 5, now=6.0)
    assert partition.remote_replicas[2].last_caught_up_time == 6.0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 4)),
            st.tuples(st.sampled_from([2, 3, 4]), st.floats(0.0, 1.0)),
        ),
        max_size=30,
    )
)
def test_the_hw_is_monotonic_and_never_beyond_what_every_isr_member_has(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[object, float]]
) -> None:
    partition = open_partition(tmp_path_factory.mktemp("p"))
    partition.make_leader(partition_state((1, 2, 3, 4), isr=(1, 2, 3)), now=0.0)
    has: dict[int, int] = {
        2: 0,
        3: 0,
        4: 0,
    }  # the most each follower ever fetched up to
    previous = 0
    for kind, amount in steps:
        if kind == "append":
            partition.append_records_to_leader(
                value_batch(int(amount)), required_acks=Acks.LEADER, now=0.0
            )
        else:
            broker = int(str(kind))
            offset = round(amount * partition.log.log_end_offset)
            has[broker] = max(has[broker], offset)
            partition.update_follower_fetch_state(broker, offset, now=0.0)
        hw = partition.log.high_watermark
        assert hw >= previous
        assert hw <= min(has[2], has[3], partition.log.log_end_offset)
        previous = hw


# --- appends and min.insync.replicas ---------------------------------------------------


def test_acks_all_is_refused_when_the_isr_is_below_min_insync_replicas(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path, isr=(1,), min_insync_replicas=2)
    with pytest.raises(ReplicationError) as refused:
        partition.append_records_to_leader(
            value_batch(2), required_acks=Acks.ALL, now=0.0
        )
    assert error_of(refused) is ErrorCode.not_enough_replicas
    assert "min.insync.replicas=2" in str(refused.value)
    assert partition.log.log_end_offset == 0  # nothing was written
    info = partition.append_records_to_leader(
        value_batch(2), required_acks=Acks.LEADER, now=0.0
    )
    assert (info.first_offset, info.last_offset) == (0, 1)
    assert partition.log.high_watermark == 2  # the ISR is the leader alone


def test_acks_all_is_accepted_when_the_isr_is_exactly_min_insync_replicas(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path, isr=(1, 2), min_insync_replicas=2)
    info = partition.append_records_to_leader(
        value_batch(2), required_acks=Acks.ALL, now=0.0
    )
    assert info.last_offset == 1
    assert partition.check_enough_replicas_reach_offset(2) is None  # HW not there yet
    partition.update_follower_fetch_state(2, 2, now=1.0)
    assert partition.check_enough_replicas_reach_offset(2) is ErrorCode.none


def test_not_enough_replicas_after_append_when_the_isr_shrinks_meanwhile(
    tmp_path: Path,
) -> None:
    partition = leader_of_three(tmp_path, isr=(1, 2), min_insync_replicas=2)
    partition.append_records_to_leader(value_batch(3), required_acks=Acks.ALL, now=0.0)
    assert partition.check_enough_replicas_reach_offset(3) is None
    # Broker 2 drops out of the ISR: the HW moves (the leader alone), but the write
    # reached fewer copies than min.insync.replicas.
    partition.make_leader(
        partition_state((1, 2, 3), isr=(1,), partition_epoch=1), now=1.0
    )
    assert partition.log.high_watermark == 3
    assert (
        partition.check_enough_replicas_reach_offset(3)
        is ErrorCode.not_enough_replicas_after_append
    )


# --- reads, ListOffsets and leader epochs ---------------------------------------------


def test_consumers_read_up_to_the_hw_followers_to_the_log_end(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    first, second = value_batch(2), value_batch(3)
    partition.append_records_to_leader(first, required_acks=Acks.LEADER, now=0.0)
    partition.append_records_to_leader(second, required_acks=Acks.LEADER, now=0.0)
    partition.update_follower_fetch_state(2, 2, now=1.0)
    partition.update_follower_fetch_state(3, 2, now=1.0)
    assert partition.log.high_watermark == 2
    consumer = partition.read_records(
        0, 1 << 20, from_follower=False, min_one_message=True
    )
    follower = partition.read_records(
        0, 1 << 20, from_follower=True, min_one_message=True
    )
    assert consumer.info.size == len(first)
    assert follower.info.size == len(first) + len(second)
    for read in (consumer, follower):
        assert (read.high_watermark, read.log_end_offset, read.log_start_offset) == (
            2,
            5,
            0,
        )
        assert read.last_stable_offset == 2
    at_hw = partition.read_records(
        2, 1 << 20, from_follower=False, min_one_message=True
    )
    assert at_hw.info.records is None  # nothing a consumer may read there yet
    assert at_hw.info.fetch_offset_metadata.offset == 2


def test_list_offsets_latest_is_the_hw_not_the_log_end(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    partition.append_records_to_leader(
        value_batch(4), required_acks=Acks.LEADER, now=0.0
    )
    partition.update_follower_fetch_state(2, 3, now=1.0)
    partition.update_follower_fetch_state(3, 3, now=1.0)
    latest = partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP)
    assert latest is not None
    assert (latest.timestamp, latest.offset, latest.leader_epoch) == (-1, 3, 0)
    earliest = partition.fetch_offset_for_timestamp(EARLIEST_TIMESTAMP)
    assert earliest is not None
    assert earliest.offset == 0


def test_timestamps_past_the_hw_are_not_visible(tmp_path: Path) -> None:
    partition = leader_of_three(tmp_path)
    for i in range(3):
        partition.append_records_to_leader(
            keyed_batch([(b"k", b"v")], T0 + 1000 * i), Acks.LEADER, now=0.0
        )
    partition.update_follower_fetch_state(2, 2, now=1.0)
    partition.update_follower_fetch_state(3, 2, now=1.0)
    found = partition.fetch_offset_for_timestamp(T0 + 500)
    assert found is not None
    assert (found.offset, found.timestamp) == (1, T0 + 1000)
    # offset 2 is past the HW
    assert partition.fetch_offset_for_timestamp(T0 + 1500) is None
    # KIP-734's "largest timestamp" is offset 2, which a consumer may not see yet.
    assert partition.fetch_offset_for_timestamp(MAX_TIMESTAMP) is None
    partition.update_follower_fetch_state(2, 3, now=2.0)
    partition.update_follower_fetch_state(3, 3, now=2.0)
    found = partition.fetch_offset_for_timestamp(T0 + 1500)
    assert found is not None
    assert found.offset == 2
    newest = partition.fetch_offset_for_timestamp(MAX_TIMESTAMP)
    assert newest is not None
    assert (newest.offset, newest.timestamp) == (2, T0 + 2000)


def test_a_new_leader_whose_hw_lags_answers_latest_with_offset_not_available(
    tmp_path: Path,
) -> None:
    """KIP-207: until the HW reaches the start of the leader's epoch, "latest" could be
    lower than what the previous leader already answered, so the leader says to retry."""
    partition = open_partition(tmp_path)
    partition.make_follower(partition_state((2, 1), leader=2), now=0.0)
    records = [Record(i, T0 + i, None, b"v") for i in range(4)]
    partition.log.append_as_follower(build_batch(records, partition_leader_epoch=0))
    partition.log.update_high_watermark(1)  # what the old leader had told us
    partition.make_leader(
        partition_state((1, 2), leader_epoch=1, partition_epoch=1), now=0.0
    )
    with pytest.raises(ReplicationError) as lagging:
        partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP)
    assert error_of(lagging) is ErrorCode.offset_not_available
    with pytest.raises(ReplicationError) as by_time:
        partition.fetch_offset_for_timestamp(T0 + 2)  # offset 2 is past the HW
    assert error_of(by_time) is ErrorCode.offset_not_available
    earliest = partition.fetch_offset_for_timestamp(EARLIEST_TIMESTAMP)
    assert earliest is not None
    assert earliest.offset == 0
    partition.update_follower_fetch_state(2, 4, now=1.0)
    latest = partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP)
    assert latest is not None
    assert (latest.offset, latest.leader_epoch) == (4, 1)


@pytest.mark.parametrize(
    ("epoch", "error"),
    [
        (-1, None),
        (3, None),
        (2, ErrorCode.fenced_leader_epoch),
        (4, ErrorCode.unknown_leader_epoch),
    ],
)
def test_kip_320_the_current_leader_epoch_is_checked(
    tmp_path: Path, epoch: int, error: ErrorCode | None
) -> None:
    partition = open_partition(tmp_path)
    partition.make_leader(partition_state((1,), leader_epoch=3), now=0.0)
    partition.append_records_to_leader(
        value_batch(1), required_acks=Acks.LEADER, now=0.0
    )
    calls: list[Callable[[], object]] = [
        lambda: partition.read_records(
            0,
            100,
            from_follower=False,
            min_one_message=True,
            current_leader_epoch=epoch,
        ),
        lambda: partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP, epoch),
    ]
    for call in calls:
        if error is None:
            assert call() is not None
        else:
            with pytest.raises(ReplicationError) as refused:
                call()
            assert error_of(refused) is error
