"""LeaderEpochFileCache: Kafka's scenarios (LeaderEpochFileCacheTest), KIP-101/KIP-279 answers,
and a random-operation property against a small reference model and the checkpoint file."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log._checkpoint import EpochEntry, LeaderEpochCheckpointFile
from minikafka.log._epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochFileCache,
)
from minikafka.log._names import LEADER_EPOCH_CHECKPOINT

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
E = EpochEntry


def cache_with(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache.open(None)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_undefined_constants_are_kafkas() -> None:
    assert UNDEFINED == (-1, -1)


# --- assign ---------------------------------------------------------------------------


def test_empty_cache() -> None:
    cache = cache_with()
    assert cache.entries == ()
    assert cache.latest_epoch is None
    assert cache.latest_entry is None
    assert cache.earliest_entry is None
    assert cache.epoch_for_offset(0) is None


def test_assign_records_first_offset_of_each_epoch() -> None:
    # A follower appending batch after batch: only the first offset of an epoch is kept.
    cache = cache_with((0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (2, 6), (2, 7))
    assert cache.entries == (E(0, 0), E(1, 3), E(2, 6))
    assert cache.latest_epoch == 2
    assert cache.latest_entry == E(2, 6)
    assert cache.earliest_entry == E(0, 0)


def test_assign_same_epoch_later_offset_is_ignored() -> None:
    cache = cache_with((2, 6), (2, 10))
    assert cache.entries == (E(2, 6),)


def test_assign_same_epoch_earlier_offset_moves_start_down() -> None:
    # shouldTruncateIfMatchingEpochButEarlierStartingOffset
    cache = cache_with((5, 11), (6, 12), (7, 13), (7, 12))
    assert cache.entries == (E(5, 11), E(7, 12))
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_assign_new_epoch_at_same_offset_replaces_empty_epoch() -> None:
    # shouldEnforceMonotonicallyIncreasingStartOffsets: epoch 2 never got a batch.
    assert cache_with((2, 9), (3, 9)).entries == (E(3, 9),)


def test_assign_older_epoch_truncates_newer_entries() -> None:
    # shouldEnforceMonotonicallyIncreasingEpochs
    cache = cache_with((1, 5), (2, 6), (1, 7))
    assert cache.entries == (E(1, 7),)
    assert cache.end_offset_for(1, 8) == (1, 8)
    assert cache.end_offset_for(2, 8) == UNDEFINED


def test_assign_newer_epoch_with_lower_offset_truncates() -> None:
    # shouldEnforceOffsetsIncreaseMonotonically
    assert cache_with((2, 6), (3, 5)).entries == (E(3, 5),)
    assert cache_with((1, 0), (2, 6), (4, 10), (3, 8)).entries == (
        E(1, 0),
        E(2, 6),
        E(3, 8),
    )


@pytest.mark.parametrize(("epoch", "start"), [(-1, 0), (0, -1)])
def test_assign_rejects_negative_values(epoch: int, start: int) -> None:
    with pytest.raises(ValueError, match="invalid"):
        cache_with().assign(epoch, start)


# --- epoch_for_offset -----------------------------------------------------------------


def test_epoch_for_offset() -> None:
    # shouldFetchEpochForGivenOffset
    cache = cache_with((0, 10), (1, 20), (5, 30))
    assert cache.epoch_for_offset(25) == 1
    assert cache.epoch_for_offset(20) == 1
    assert cache.epoch_for_offset(30) == 5
    assert cache.epoch_for_offset(50) == 5
    assert cache.epoch_for_offset(19) == 0
    assert cache.epoch_for_offset(5) is None


# --- end_offset_for: the OffsetsForLeaderEpoch answer ---------------------------------


def test_end_offset_for_latest_epoch_is_log_end_offset() -> None:
    cache = cache_with((2, 11), (2, 12))
    assert cache.end_offset_for(2, 14) == (2, 14)


def test_end_offset_for_undefined_epoch() -> None:
    assert cache_with((2, 11), (3, 12)).end_offset_for(UNDEFINED_EPOCH, 0) == UNDEFINED
    assert cache_with().end_offset_for(UNDEFINED_EPOCH, 73) == UNDEFINED


def test_end_offset_for_on_empty_cache() -> None:
    assert cache_with().end_offset_for(0, 0) == UNDEFINED
    assert cache_with().end_offset_for(7, 0) == UNDEFINED


def test_end_offset_for_epoch_newer_than_all_known() -> None:
    assert cache_with((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_end_offset_for_epoch_older_than_all_known() -> None:
    # The data of epoch 4 is gone; answer with the start of the first known epoch.
    cache = cache_with((5, 11), (6, 12), (7, 13))
    assert cache.end_offset_for(4, 0) == (4, 11)


def test_end_offset_for_missing_epoch_answers_with_floor_epoch() -> None:
    # KIP-279: the largest known epoch <= requested, ending where the next one starts.
    cache = cache_with((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)
    assert cache.end_offset_for(4, 20) == (4, 20)


def test_end_offsets_as_leaders_change() -> None:
    # shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes
    cache = cache_with((0, 0), (1, 0))
    assert cache.entries == (E(1, 0),)
    assert cache.end_offset_for(1, 0) == (1, 0)
    assert cache.end_offset_for(0, 0) == (
        0,
        0,
    )  # older than all known: start of epoch 1
    assert cache.end_offset_for(1, 5) == (1, 5)
    cache.assign(2, 5)
    assert cache.end_offset_for(2, 10) == (2, 10)
    assert cache.end_offset_for(1, 10) == (1, 5)
    assert cache.end_offset_for(0, 10) == (0, 0)


def test_kip_101_follower_keeps_data_the_high_watermark_would_lose() -> None:
    """KIP-101 scenario 1: leader A and follower B both hold m0, m1 (epoch 0, offsets 0-1),
    but B has not yet learnt that the high watermark moved past m1: its high watermark is 1.

    If B restarts and truncates to its high watermark it drops m1, which the producer saw
    acknowledged; should A then die, m1 is lost. With epochs, B asks A where epoch 0 ends.
    """
    leader = cache_with((0, 0))
    follower = cache_with((0, 0))
    follower_log_end, follower_high_watermark = 2, 1
    assert follower.latest_epoch == 0
    epoch, end = leader.end_offset_for(0, log_end_offset=2)
    assert (epoch, end) == (0, 2)
    truncate_to = min(end, follower_log_end)
    assert truncate_to == 2 > follower_high_watermark  # m1 survives
    follower.truncate_from_end(truncate_to)
    assert follower.entries == (E(0, 0),)


def test_kip_101_diverged_logs_truncate_to_the_common_epoch() -> None:
    """KIP-101 scenario 2 (divergence): A has m0, m1 and B only m0, all in epoch 0; both
    crash and B comes back first, leads epoch 1 and writes m2 at offset 1.

    When A returns as a follower it asks B where epoch 0 ends: offset 1. A truncates its m1
    and fetches m2, instead of keeping a different record at offset 1 forever.
    """
    b = cache_with((0, 0), (1, 1))
    a = cache_with((0, 0))
    assert a.latest_epoch == 0
    assert b.end_offset_for(0, log_end_offset=2) == (0, 1)
    a.truncate_from_end(1)
    assert a.entries == (E(0, 0),)
    a.assign(1, 1)  # A fetches m2 from B
    assert a.entries == b.entries


def test_kip_279_follower_with_an_epoch_unknown_to_the_leader() -> None:
    """KIP-279: the follower led epoch 3 briefly (offsets 8-9), which the leader never saw.

    The leader answers for epoch 3 with its largest epoch below it, epoch 2, ending at 9.
    Because the epochs differ, the follower also looks up where epoch 2 ends in its own log
    (8) and truncates to the smaller offset; no record of epoch 3 survives.
    """
    leader = cache_with((0, 0), (2, 5), (4, 9))
    follower = cache_with((0, 0), (2, 5), (3, 8))
    leader_epoch, leader_end = leader.end_offset_for(3, log_end_offset=12)
    assert (leader_epoch, leader_end) == (2, 9)
    assert follower.end_offset_for(leader_epoch, log_end_offset=10) == (2, 8)
    follower.truncate_from_end(min(leader_end, 8))
    assert follower.entries == (E(0, 0), E(2, 5))
    # Now the follower's latest epoch is 2, so its own answer is its log end (8).
    assert follower.end_offset_for(2, log_end_offset=8) == (2, 8)
    # after fetching offset 8 of epoch 2 and then epoch 4's batches
    follower.assign(4, 9)
    assert follower.entries == leader.entries


# --- truncation -----------------------------------------------------------------------


# Kafka's LeaderEpochFileCacheTest cases, each on the entries (2, 6), (3, 8), (4, 11): which
# end is truncated, at which offset, and the entries left.
_EPOCHS = ((2, 6), (3, 8), (4, 11))
_TRUNCATIONS = [
    pytest.param("end", 8, [(2, 6)], id="from_end_is_inclusive_at_an_epoch_boundary"),
    pytest.param("end", 9, [(2, 6), (3, 8)], id="from_end_between_boundaries"),
    pytest.param(
        "end", UNDEFINED_EPOCH_OFFSET, _EPOCHS, id="from_end_undefined_changes_nothing"
    ),
    pytest.param(
        "start", 9, [(3, 9), (4, 11)], id="from_start_between_boundaries_moves_floor"
    ),
    pytest.param(
        "start", 8, [(3, 8), (4, 11)], id="from_start_on_boundary_keeps_that_entry"
    ),
    *(
        pytest.param(
            "start",
            start,
            _EPOCHS,
            id=f"from_start_{start}_before_first_changes_nothing",
        )
        for start in (1, 6, UNDEFINED_EPOCH_OFFSET)
    ),
    pytest.param(
        "start", 15, [(4, 15)], id="from_start_beyond_last_entry_keeps_latest_epoch"
    ),
]


@pytest.mark.parametrize(("end", "offset", "left"), _TRUNCATIONS)
def test_truncate(end: str, offset: int, left: list[tuple[int, int]]) -> None:
    cache = cache_with(*_EPOCHS)
    if end == "end":
        cache.truncate_from_end(offset)
    else:
        cache.truncate_from_start(offset)
    assert cache.entries == tuple(E(epoch, start) for epoch, start in left)
    assert cache.latest_epoch == left[-1][0]


def test_truncation_of_empty_cache() -> None:
    cache = cache_with()
    cache.truncate_from_start(7)
    cache.truncate_from_end(7)
    assert cache.entries == ()


def test_clear() -> None:
    cache = cache_with((2, 6), (3, 8))
    cache.clear()
    assert cache.entries == ()
    assert cache.latest_epoch is None


# --- the checkpoint -------------------------------------------------------------------


def test_every_mutation_is_checkpointed(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
    assert not path.exists()  # nothing written until something changes
    for epoch, start in [(2, 6), (3, 8), (4, 11)]:
        cache.assign(epoch, start)
    assert path.read_text() == "0\n3\n2 6\n3 8\n4 11\n"
    # shouldWriteCheckpointOnTruncation
    cache.truncate_from_end(11)
    cache.truncate_from_start(8)
    assert LeaderEpochCheckpointFile(path).read() == [E(3, 8)]
    cache.truncate_from_start(9)
    assert LeaderEpochCheckpointFile(path).read() == [E(3, 9)]
    cache.clear()
    assert path.read_text() == "0\n0\n"


def test_no_op_mutations_do_not_rewrite(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
    cache.assign(2, 6)
    path.unlink()
    cache.assign(2, 6)
    # every batch of epoch 2 calls assign: it must not fsync each time
    cache.assign(2, 7)
    cache.truncate_from_start(6)
    cache.truncate_from_end(7)
    assert not path.exists()
    cache.assign(3, 7)
    assert LeaderEpochCheckpointFile(path).read() == [E(2, 6), E(3, 7)]


def test_entries_persist_between_instances(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path)).assign(2, 6)
    reopened = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
    assert reopened.entries == (E(2, 6),)


def test_open_restores_monotonicity_without_rewriting(tmp_path: Path) -> None:
    # Kafka replays the file through assign(), which drops conflicting entries.
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text("0\n3\n1 5\n2 6\n1 7\n")
    cache = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
    assert cache.entries == (E(1, 7),)
    assert path.read_text() == "0\n3\n1 5\n2 6\n1 7\n"


def test_entries_is_a_snapshot() -> None:
    cache = cache_with((1, 0))
    snapshot = cache.entries
    cache.assign(2, 5)
    assert snapshot == (E(1, 0),)


# --- property: random operations against a reference model ----------------------------


def model_assign(entries: list[EpochEntry], epoch: int, start: int) -> list[EpochEntry]:
    """The rules in plain words: an epoch's start only moves down; every entry that is not
    strictly older in both epoch and offset than the new one is dropped."""
    if entries and entries[-1].epoch == epoch and start >= entries[-1].start_offset:
        return entries
    return [e for e in entries if e.epoch < epoch and e.start_offset < start] + [
        E(epoch, start)
    ]


def model_truncate_from_end(entries: list[EpochEntry], end: int) -> list[EpochEntry]:
    return entries if end < 0 else [e for e in entries if e.start_offset < end]


def model_truncate_from_start(
    entries: list[EpochEntry], start: int
) -> list[EpochEntry]:
    before = [e for e in entries if e.start_offset <= start]
    if not before:
        return entries
    return [E(before[-1].epoch, start)] + [e for e in entries if e.start_offset > start]


def model_epoch_for_offset(entries: list[EpochEntry], offset: int) -> int | None:
    found = None
    for e in entries:
        if e.start_offset <= offset:
            found = e.epoch
    return found


def model_end_offset_for(
    entries: list[EpochEntry], requested: int, log_end: int
) -> tuple[int, int]:
    if requested == UNDEFINED_EPOCH or not entries:
        return UNDEFINED
    if requested == entries[-1].epoch:
        return requested, log_end
    later = [e for e in entries if e.epoch > requested]
    if not later:
        return UNDEFINED
    earlier = [e for e in entries if e.epoch <= requested]
    epoch = earlier[-1].epoch if earlier else requested
    return epoch, later[0].start_offset


operations = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), st.integers(0, 8), st.integers(0, 40)),
        st.tuples(st.just("truncate_from_end"), st.integers(-1, 45)),
        st.tuples(st.just("truncate_from_start"), st.integers(-1, 45)),
        st.tuples(st.just("clear")),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_random_operations_match_model_and_checkpoint(
    ops: list[tuple[object, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / LEADER_EPOCH_CHECKPOINT
        cache = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
        model: list[EpochEntry] = []
        for op in ops:
            match op:
                case ("assign", int(epoch), int(start)):
                    cache.assign(epoch, start)
                    model = model_assign(model, epoch, start)
                case ("truncate_from_end", int(end)):
                    cache.truncate_from_end(end)
                    model = model_truncate_from_end(model, end)
                case ("truncate_from_start", int(start)):
                    cache.truncate_from_start(start)
                    model = model_truncate_from_start(model, start)
                case ("clear",):
                    cache.clear()
                    model = []
                case _:
                    raise AssertionError(op)
            entries = cache.entries
            assert list(entries) == model, op
            # The invariants that make the lookups correct.
            assert all(a.epoch < b.epoch for a, b in itertools.pairwise(entries))
            assert all(
                a.start_offset < b.start_offset for a, b in itertools.pairwise(entries)
            )
            # What is on disk is what is in memory, and reopening gives it back.
            if path.exists():
                assert LeaderEpochCheckpointFile(path).read() == model
            else:
                assert model == []
            reopened = LeaderEpochFileCache.open(LeaderEpochCheckpointFile(path))
            assert reopened.entries == entries
        for probe in range(-1, 12):
            assert cache.end_offset_for(probe, 50) == model_end_offset_for(
                model, probe, 50
            )
        for offset in range(0, 46, 3):
            assert cache.epoch_for_offset(offset) == model_epoch_for_offset(
                model, offset
            )
