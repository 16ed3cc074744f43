"""When the active segment rolls (Kafka's ``LogSegment.shouldRoll``), append by append.

The property drives logs with random ``segment.bytes``, ``segment.ms``,
``index.interval.bytes`` and ``segment.index.bytes`` through random appends, with
record timestamps that mostly move forward and sometimes back, and checks before every
append that the log rolls exactly when one of Kafka's reasons holds, computed from what
is on disk: the segment's bytes, its first batch's timestamp, its index entries.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import Log, LogConfig, LogSegment, build_batch, make_records
from minikafka.log.testing import ManualClock, value_batch

T0 = 1_700_000_000_000
MAX_RELATIVE_OFFSET = 2**31 - 1


def roll_due(segment: LogSegment, batch: bytearray, max_timestamp: int) -> bool:
    """Kafka's reasons, from what the segment holds (the model the log must follow)."""
    config = segment.config
    first = next(iter(segment.batches()), None)
    if first is not None:
        if segment.size + len(batch) > config.segment_bytes:
            return True
        first_timestamp = first[1].max_timestamp
        if first_timestamp >= 0 and max_timestamp - first_timestamp > config.segment_ms:
            return True
    offset_slots = config.segment_index_bytes // 8
    time_slots = config.segment_index_bytes // 12
    return (
        len(segment.offset_index) >= offset_slots
        or len(segment.time_index) >= time_slots
    )


appends = st.lists(
    st.tuples(
        st.integers(1, 4),  # records
        st.integers(0, 300),  # value bytes
        st.integers(-300, 1500),  # how far the record timestamps move
        st.integers(0, 3000),  # how far the broker's clock moves
    ),
    min_size=1,
    max_size=50,
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    ops=appends,
    segment_bytes=st.integers(300, 3000),
    segment_ms=st.integers(200, 5000),
    interval=st.integers(0, 600),
    index_slots=st.integers(2, 12),
)
def test_the_log_rolls_exactly_when_a_reason_holds(
    ops: list[tuple[int, int, int, int]],
    segment_bytes: int,
    segment_ms: int,
    interval: int,
    index_slots: int,
) -> None:
    config = LogConfig(
        segment_bytes=segment_bytes,
        segment_ms=segment_ms,
        index_interval_bytes=interval,
        segment_index_bytes=8 * index_slots,
    )
    clock = ManualClock(T0)
    timestamp = T0
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "t-0", config, clock=clock)
        for count, size, step, wait in ops:
            timestamp = max(0, timestamp + step)
            clock.advance(wait)
            batch = value_batch(count, value_bytes=size, timestamp_ms=timestamp)
            active, end = log.active_segment, log.log_end_offset
            due = roll_due(active, batch, timestamp)
            log.append_as_leader(batch, leader_epoch=0)
            rolled = log.active_segment is not active
            assert rolled == due, (active.size, len(batch), active.base_offset)
            if rolled:
                assert log.active_segment.base_offset == end  # at the log end
        log.close()


def test_batches_that_fit_exactly_fill_a_segment(tmp_path: Path) -> None:
    size = len(value_batch(1))
    log = Log.open(
        tmp_path / "t-0", LogConfig(segment_bytes=3 * size), clock=ManualClock()
    )
    for _ in range(9):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert all(s.size == 3 * size for s in log.segments)


def test_a_batch_larger_than_segment_bytes_gets_a_segment_of_its_own(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=100), clock=ManualClock())
    for _ in range(3):
        log.append_as_leader(value_batch(1, value_bytes=200), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 1, 2]


def test_without_record_timestamps_segment_age_is_the_brokers_clock(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_ms=1000), clock=clock)
    for _ in range(2):
        log.append_as_leader(value_batch(1, timestamp_ms=-1), leader_epoch=0)
    clock.advance(1000)
    log.append_as_leader(value_batch(1, timestamp_ms=-1), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0]  # 1000 ms is not more than 1000
    clock.advance(1)
    log.append_as_leader(value_batch(1, timestamp_ms=-1), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 3]


def test_the_broker_clock_does_not_age_a_segment_with_record_timestamps(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_ms=1000), clock=clock)
    for _ in range(3):
        clock.advance(10_000)  # a follower catching up: old records, arriving late
        log.append_as_leader(value_batch(1, timestamp_ms=T0), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0]


def test_offsets_too_far_for_the_index_start_a_segment_at_the_batch(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "t-0", clock=ManualClock())
    far = MAX_RELATIVE_OFFSET + 10
    for base in (0, far):
        records = make_records([(None, b"v")], first_offset=base, timestamp_ms=T0)
        log.append_as_follower(build_batch(records, partition_leader_epoch=0))
    # Kafka's rule: the new segment starts at the batch's first offset, not at the log
    # end, so that its relative offsets fit in 32 bits.
    assert [s.base_offset for s in log.segments] == [0, far]
    assert log.log_end_offset == far + 1


def test_segment_rolls_when_the_time_index_is_full(tmp_path: Path) -> None:
    # 24 bytes of index: three offset entries (8 bytes) but two time entries (12 bytes).
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=24)
    log = Log.open(tmp_path / "t-0", config, clock=ManualClock())
    for i in range(4):  # an entry in both indexes from the second batch on
        log.append_as_leader(value_batch(1, timestamp_ms=T0 + i), leader_epoch=0)
    first = log.segments[0]
    assert (len(first.offset_index), len(first.time_index)) == (2, 2)
    assert [s.base_offset for s in log.segments] == [0, 3]
