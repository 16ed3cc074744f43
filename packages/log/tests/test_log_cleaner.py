"""Compaction: the latest record per key survives with its offset, and crashes lose nothing."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import CompressionType, Log, LogConfig, clean
from minikafka.log._cleaner import (
    _group_segments,
    cleanable_segments,
    first_uncleanable_offset,
)
from minikafka.log.testing import ManualClock, keyed_batch, read_all_records

COMPACT = LogConfig(
    segment_bytes=700,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=10_000,
    file_delete_delay_ms=0,
)


def latest_by_key(log: Log) -> dict[bytes, tuple[int, bytes | None]]:
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for record in read_all_records(log):
        assert record.key is not None
        latest[record.key] = (record.offset, record.value)
    return latest


def fill(
    log: Log, writes: Sequence[tuple[bytes, bytes | None]], codec: CompressionType
) -> None:
    for i in range(0, len(writes), 3):  # a few records per batch
        log.append_as_leader(
            keyed_batch(writes[i : i + 3], compression=codec), leader_epoch=0
        )
    log.update_high_watermark(log.log_end_offset)


def test_compaction_keeps_the_last_value_of_every_key_at_its_offset(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    writes = [(b"key-%d" % (i % 7), b"value-%d" % i) for i in range(120)]
    fill(log, writes, CompressionType.NONE)
    expected = latest_by_key(log)
    active = log.active_segment
    active_bytes = active.log_path.read_bytes()
    size_before = log.size

    result = clean(log, 0, clock())

    assert result is not None
    assert result.records_removed > 0
    assert log.size < size_before
    assert latest_by_key(log) == expected
    assert log.active_segment is active  # the active segment is never cleaned
    assert active.log_path.read_bytes() == active_bytes
    cleaned = [r for r in read_all_records(log) if r.offset < active.base_offset]
    # one record per key in clean part
    assert len({r.key for r in cleaned}) == len(cleaned)
    # Offsets are preserved, so reads by offset still work and find the same records.
    for key, (offset, value) in expected.items():
        fetched = log.read(offset, 1).records
        assert fetched is not None
        assert (key, value) in {
            (r.key, r.value)
            for r in _records(fetched.read_bytes())
            if r.offset == offset
        }


def _records(data: bytes) -> list:  # type: ignore[type-arg]
    from minikafka.log import decode_batch, iter_batches

    out = []
    for position, _ in iter_batches(data):
        out.extend(decode_batch(data, position)[1])
    return out


def test_tombstones_are_kept_for_delete_retention_ms_then_removed(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    fill(
        log,
        [(b"a", b"1"), (b"b", b"1"), (b"a", None)] + [(b"c", b"x" * 50)] * 30,
        CompressionType.NONE,
    )
    clean(log, 0, clock())
    assert latest_by_key(log)[b"a"][1] is None  # the delete is still visible to readers
    assert b"b" in latest_by_key(log)
    clock.advance(COMPACT.delete_retention_ms - 1)
    clean(log, 0, clock())
    assert b"a" in latest_by_key(log)
    clock.advance(1)
    clean(log, 0, clock())
    assert b"a" not in latest_by_key(log)
    assert b"b" in latest_by_key(log)


def test_nothing_to_clean_in_a_log_with_only_an_active_segment(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(cleanup_policy=frozenset({"compact"})))
    fill(log, [(b"k", b"v")] * 10, CompressionType.NONE)
    assert clean(log, 0, log.clock()) is None


def test_cleaning_stops_at_the_high_watermark(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    fill(log, [(b"k", b"v" * 40)] * 60, CompressionType.NONE)
    log.update_high_watermark(0)
    assert clean(log, 0, clock()) is None


STEPS = [
    "cleaned written",
    "renamed to swap",
    "old segments deleted",
    "swap renamed live",
]


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_of_the_swap_leaves_a_readable_log(
    tmp_path: Path, step: str
) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    fill(
        log,
        [(b"key-%d" % (i % 5), b"v%d" % i) for i in range(90)],
        CompressionType.GZIP,
    )
    expected = latest_by_key(log)
    all_before = {(r.offset, r.key, r.value) for r in read_all_records(log)}
    leo = log.log_end_offset

    def crash_at(name: str) -> None:
        if name == step:
            raise Crash(name)

    with pytest.raises(Crash):
        clean(log, 0, clock(), crash_hook=crash_at)
    for segment in log.segments:
        segment.close_handlers()

    again = Log.open(tmp_path / "t-0", COMPACT, recovery_point=0, clock=clock)
    assert again.log_end_offset == leo
    assert latest_by_key(again) == expected
    survivors = {(r.offset, r.key, r.value) for r in read_all_records(again)}
    assert survivors <= all_before  # nothing invented, offsets unchanged
    leftovers = [
        p.name for p in again.dir.iterdir() if p.suffix in (".cleaned", ".swap")
    ]
    assert leftovers == []
    offsets = [r.offset for r in read_all_records(again)]
    assert offsets == sorted(offsets)
    # And the log can be cleaned again and goes on.
    again.update_high_watermark(leo)
    clean(again, 0, clock())
    assert latest_by_key(again) == expected


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    writes=st.lists(
        st.tuples(
            st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
            st.one_of(st.none(), st.binary(max_size=60)),
        ),
        min_size=1,
        max_size=150,
    ),
    codec=st.sampled_from(list(CompressionType)),
    passes=st.integers(1, 3),
)
def test_compaction_property(
    writes: list[tuple[bytes, bytes | None]], codec: CompressionType, passes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        log = Log.open(Path(tmp) / "t-0", COMPACT, clock=clock)
        fill(log, writes, codec)
        expected = latest_by_key(log)
        first_dirty = 0
        for _ in range(passes):
            result = clean(log, first_dirty, clock())
            if result is not None:
                first_dirty = result.next_dirty_offset
        # within delete.retention.ms nothing is lost
        assert latest_by_key(log) == expected
        for segment in log.segments:
            segment.close_handlers()


def test_random_keys_seeded(tmp_path: Path) -> None:
    rng = random.Random(7)
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    writes = [
        (b"k%d" % rng.randrange(20), bytes(rng.randrange(256) for _ in range(20)))
        for _ in range(300)
    ]
    fill(log, writes, CompressionType.ZSTD)
    expected = latest_by_key(log)
    result = clean(log, 0, clock())
    assert result is not None
    assert result.bytes_after < result.bytes_before
    assert latest_by_key(log) == expected


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_leaves_either_the_old_or_the_new_log_exactly(
    tmp_path: Path, step: str
) -> None:
    """Two identical logs: one cleaned to the end, one crashed mid-swap and reopened."""
    # A first pass leaves small segments that the second pass groups together; the
    # later writes supersede everything in the group's last segment, so the cleaned
    # group ends before the old one did and the swap must still replace all of it.
    logs = []
    for name in ("done", "crashed"):
        log = Log.open(tmp_path / name / "t-0", COMPACT, clock=ManualClock())
        fill(
            log,
            [(b"k%d" % (i % 4), b"v" * 40) for i in range(40)],
            CompressionType.NONE,
        )
        clean(log, 0, log.clock())
        fill(
            log,
            [(b"k%d" % (i % 4), b"w" * 40) for i in range(24)],
            CompressionType.NONE,
        )
        logs.append(log)
    done, crashed = logs
    clean(done, 0, done.clock())
    after = read_all_records(done)
    before = read_all_records(crashed)

    def crash_at(name: str) -> None:
        if name == step:
            raise Crash(name)

    # The crash hits the first group of segments the cleaner rewrites; later groups
    # are untouched by then.
    end = first_uncleanable_offset(crashed, crashed.clock())
    groups = _group_segments(cleanable_segments(crashed, end), COMPACT.segment_bytes)
    group_end = groups[0][-1].next_offset
    assert len(groups[0]) > 1
    with pytest.raises(Crash):
        clean(crashed, 0, crashed.clock(), crash_at)
    for segment in crashed.segments:
        segment.close_handlers()
    again = read_all_records(
        Log.open(tmp_path / "crashed" / "t-0", COMPACT, clock=ManualClock())
    )
    expected_group = before if step == "cleaned written" else after
    assert [r for r in again if r.offset < group_end] == [
        r for r in expected_group if r.offset < group_end
    ]
    assert [r for r in again if r.offset >= group_end] == [
        r for r in before if r.offset >= group_end
    ]
