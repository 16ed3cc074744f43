"""The Log: append, roll, read, timestamps, truncation, retention, flushing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    CorruptRecordError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    PooledFile,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
    build_batch,
    iter_batches,
    make_records,
)
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def open_log(
    tmp_path: Path, config: LogConfig = SMALL, clock: ManualClock | None = None
) -> Log:
    return Log.open(tmp_path / "topic-0", config, clock=clock or ManualClock())


def whole_batches(data: bytes) -> bytes:
    """A fetch may end inside a batch; clients keep only the whole batches before it."""
    end = 0
    try:
        for position, header in iter_batches(data):
            end = position + header.size
    except CorruptRecordError:
        pass
    return data[:end]


def test_append_assigns_consecutive_offsets_in_place(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(value_batch(3), leader_epoch=0)
    batch = value_batch(2)
    second = log.append_as_leader(batch, leader_epoch=0)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    # baseOffset was rewritten in the buffer
    assert int.from_bytes(batch[:8], "big") == 3
    assert log.log_end_offset == 5
    assert [r.offset for r in read_all_records(log)] == [0, 1, 2, 3, 4]


def test_offset_assignment_keeps_the_crc_valid(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(1), leader_epoch=0)
    batch = value_batch(1)
    log.append_as_leader(batch, leader_epoch=7)
    ((_, header),) = list(iter_batches(batch, verify_crc=True))
    assert (header.base_offset, header.partition_leader_epoch) == (1, 7)


def test_segments_roll_on_size_and_reads_cross_them(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert len(log.segments) > 3
    names = sorted(p.name for p in log.dir.iterdir() if p.suffix == ".log")
    assert names[0] == "00000000000000000000.log"
    assert all(len(n) == len("00000000000000000000.log") for n in names)
    assert all(s.size <= SMALL.segment_bytes for s in log.segments)
    for offset in range(40):
        data = log.read(offset, 1).records
        assert data is not None
        first = next(iter(iter_batches(whole_batches(data.read_bytes()))))[1]
        assert first.base_offset == offset  # min_one_message: always the whole batch


def test_read_is_a_file_slice_of_the_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    for _ in range(5):
        log.append_as_leader(value_batch(2), leader_epoch=0)
    fetched = log.read(4, 10_000)
    assert fetched.records is not None
    region = fetched.records
    assert region.path == log.segments[0].log_path
    whole = region.path.read_bytes()
    assert (
        whole[region.position : region.position + region.length] == region.read_bytes()
    )
    offsets = [h.base_offset for _, h in iter_batches(region.read_bytes())]
    assert offsets == [4, 6, 8]  # the batch holding offset 4 starts at 4


def test_a_read_stays_within_one_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(5):
        log.append_as_leader(value_batch(2), leader_epoch=0)
    assert log.segments[1].base_offset == 6
    fetched = log.read(4, 10_000).records
    assert fetched is not None
    assert [h.base_offset for _, h in iter_batches(fetched.read_bytes())] == [4]


def test_read_stops_at_max_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(30):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    fetched = log.read(2, 100_000, max_offset=17)
    assert fetched.records is not None
    offsets = [h.base_offset for _, h in iter_batches(fetched.records.read_bytes())]
    assert offsets[0] == 2
    assert offsets[-1] <= 16
    assert log.read(17, 100_000, max_offset=17).records is None


def test_read_outside_the_log_is_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(1), leader_epoch=0)
    assert log.read(1, 100).records is None  # at the log end: nothing yet
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_segment_rolls_on_segment_ms_by_record_timestamps(tmp_path: Path) -> None:
    clock = ManualClock()
    log = open_log(tmp_path, LogConfig(segment_ms=1000), clock)
    log.append_as_leader(value_batch(1, timestamp_ms=5_000), leader_epoch=0)
    log.append_as_leader(value_batch(1, timestamp_ms=5_900), leader_epoch=0)
    assert len(log.segments) == 1
    log.append_as_leader(value_batch(1, timestamp_ms=6_001), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_segment_rolls_when_the_offset_index_is_full(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=8 * 3)
    log = open_log(tmp_path, config)
    for _ in range(10):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert len(log.segments) > 1
    assert all(len(s.offset_index) <= 3 for s in log.segments)


def test_sparse_index_has_one_entry_per_interval(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(index_interval_bytes=1000))
    for _ in range(50):
        log.append_as_leader(value_batch(1, value_bytes=200), leader_epoch=0)
    segment = log.active_segment
    entries = segment.offset_index.entries()
    assert 5 <= len(entries) <= segment.size // 1000
    for offset, position in entries:
        found = segment.translate_offset(offset)
        assert found is not None
        assert found[0] == position


def _translations_agree(log: Log) -> int:
    """Every offset of the active segment (and a few past its end) translated both ways:
    through the unindexed tail and by the index-and-scan it replaces. How many offsets
    the tail answered."""
    segment = log.active_segment
    answered = 0
    for offset in range(segment.base_offset, segment.next_offset + 3):
        by_tail = segment.translate_offset(offset)
        assert by_tail == segment._translate_by_scan(offset), offset
        tail = segment._tail_last_offsets
        answered += bool(tail and offset >= tail[0])
    return answered


def test_the_unindexed_tail_answers_what_the_scan_would(tmp_path: Path) -> None:
    """A lookup past the last index entry bisects the batches appended since
    (no file read) and must find the very batch the index-then-scan finds, through
    appends of varied sizes, a truncation, a roll and a reopen."""
    log = open_log(tmp_path, LogConfig(segment_bytes=20_000, index_interval_bytes=300))
    sizes = [1, 3, 1, 7, 2, 1, 1, 5]
    for i in range(40):
        log.append_as_leader(
            value_batch(sizes[i % len(sizes)], value_bytes=40), leader_epoch=0
        )
    assert len(log.active_segment.offset_index) > 3
    assert _translations_agree(log) > 0  # the tail was used, and agreed
    log.truncate_to(log.log_end_offset - 4)
    assert log.active_segment._tail is None  # unknown after a truncation: lookups scan
    assert _translations_agree(log) == 0
    for _ in range(20):  # the next index entry makes the tail known again
        log.append_as_leader(value_batch(2, value_bytes=40), leader_epoch=0)
    assert _translations_agree(log) > 0
    while len(log.segments) == 1:
        log.append_as_leader(value_batch(3, value_bytes=200), leader_epoch=0)
    assert log.segments[0]._tail is None  # let go at the roll
    assert _translations_agree(log) > 0
    log.close()
    reopened = open_log(
        tmp_path, LogConfig(segment_bytes=20_000, index_interval_bytes=300)
    )
    assert _translations_agree(reopened) == 0  # not known after a reopen until an entry
    for _ in range(10):
        reopened.append_as_leader(value_batch(1, value_bytes=40), leader_epoch=0)
    assert _translations_agree(reopened) > 0


def test_bad_batches_are_rejected_and_nothing_is_appended(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(1), leader_epoch=0)
    size = log.size
    flipped = value_batch(1)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(flipped, leader_epoch=0)
    torn = value_batch(2)[:-3]
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(torn, leader_epoch=0)
    good_then_bad = value_batch(1) + bytearray(b"\x00" * 20)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good_then_bad, leader_epoch=0)
    control = bytearray(
        build_batch(make_records([(b"k", b"v")], timestamp_ms=0), is_control=True)
    )
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(control, leader_epoch=0)
    gapped = bytearray(
        build_batch(make_records([(b"k", b"v")], timestamp_ms=0), last_offset_delta=3)
    )
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(gapped, leader_epoch=0)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(value_batch(1, value_bytes=2_000_000), leader_epoch=0)
    assert (log.size, log.log_end_offset) == (size, 1)


def test_log_append_time_restamps_the_batch(tmp_path: Path) -> None:
    clock = ManualClock(now_ms=42_000)
    log = open_log(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"), clock)
    batch = value_batch(2, timestamp_ms=1)
    info = log.append_as_leader(batch, leader_epoch=0)
    ((_, header),) = list(iter_batches(batch, verify_crc=True))
    assert header.max_timestamp == 42_000 == info.log_append_time
    assert [r.timestamp for r in read_all_records(log)] == [42_000, 42_000]


def test_offset_lookup_by_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(30):
        records = make_records([(None, b"a"), (None, b"b")], timestamp_ms=1000 + 10 * i)
        records[1] = records[1].__class__(1, 1005 + 10 * i, None, b"b")
        log.append_as_leader(bytearray(build_batch(records)), leader_epoch=i // 10)
    found = log.fetch_offset_by_timestamp(1105)
    assert found is not None
    assert (found.timestamp, found.offset) == (1105, 21)
    found = log.fetch_offset_by_timestamp(1101)
    assert found is not None
    assert (found.timestamp, found.offset) == (1105, 21)
    assert found.leader_epoch == 1
    assert log.fetch_offset_by_timestamp(9999) is None
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)
    newest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert earliest is not None
    assert earliest.offset == 0
    assert latest is not None
    assert (latest.offset, latest.leader_epoch) == (60, 2)
    assert newest is not None
    assert (newest.timestamp, newest.offset) == (1295, 59)


def test_truncate_to_removes_the_tail_and_the_epochs_past_it(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for epoch in range(4):
        for _ in range(10):
            log.append_as_leader(value_batch(1), leader_epoch=epoch)
    log.update_high_watermark(35)
    assert log.truncate_to(25)
    assert log.log_end_offset == 25
    assert log.high_watermark == 25
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [
        (0, 0),
        (1, 10),
        (2, 20),
    ]
    assert [r.offset for r in read_all_records(log)] == list(range(25))
    log.append_as_leader(value_batch(1), leader_epoch=5)
    assert read_all_records(log)[-1].offset == 25
    assert not log.truncate_to(100)


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(30):
        log.append_as_leader(value_batch(1), leader_epoch=1)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (
        500,
        500,
        500,
    )
    assert log.leader_epoch_cache.entries == ()
    assert [s.base_offset for s in log.segments] == [500]
    log.append_as_follower(
        build_batch(
            make_records([(None, b"v")], first_offset=500, timestamp_ms=0),
            partition_leader_epoch=4,
        )
    )
    assert log.log_end_offset == 501
    assert log.leader_epoch_cache.latest_epoch == 4


def test_follower_append_keeps_the_leaders_offsets(tmp_path: Path) -> None:
    leader = open_log(tmp_path)
    for epoch in (0, 0, 2, 2, 3):
        leader.append_as_leader(value_batch(2), leader_epoch=epoch)
    follower = Log.open(tmp_path / "topic-1", SMALL, clock=ManualClock())
    while follower.log_end_offset < leader.log_end_offset:  # one segment per read
        fetched = leader.read(follower.log_end_offset, 1_000_000).records
        assert fetched is not None
        follower.append_as_follower(whole_batches(fetched.read_bytes()))
    assert follower.log_end_offset == 10
    assert read_all_records(follower) == read_all_records(leader)
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(leader.read(8, 1_000_000).records.read_bytes())  # type: ignore[union-attr]


def test_retention_by_bytes_deletes_whole_old_segments(tmp_path: Path) -> None:
    clock = ManualClock()
    config = LogConfig(
        segment_bytes=1000, retention_bytes=2500, file_delete_delay_ms=1000
    )
    log = open_log(tmp_path, config, clock)
    for _ in range(60):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert log.delete_old_segments() == 0  # nothing is below the high watermark yet
    log.update_high_watermark(log.log_end_offset)
    before = len(log.segments)
    deleted = log.delete_old_segments()
    assert deleted > 0
    assert len(log.segments) == before - deleted
    assert log.size - log.active_segment.size <= 2500
    assert log.log_start_offset == log.segments[0].base_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    pending = [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert len(pending) == 3 * deleted  # renamed, not yet removed
    clock.advance(1000)
    assert log.purge_deleted_segments() == deleted
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]


def test_retention_by_time_can_empty_the_log_but_keeps_an_active_segment(
    tmp_path: Path,
) -> None:
    clock = ManualClock(now_ms=10_000)
    log = open_log(tmp_path, LogConfig(segment_bytes=1000, retention_ms=5000), clock)
    for i in range(30):
        log.append_as_leader(value_batch(1, timestamp_ms=10_000 + i), leader_epoch=0)
    log.update_high_watermark(30)
    assert log.delete_old_segments() == 0
    clock.advance(6000)
    assert log.delete_old_segments() > 0
    assert log.log_start_offset == log.log_end_offset == 30
    assert log.active_segment.size == 0


def test_compacted_topic_is_not_deleted_by_retention(tmp_path: Path) -> None:
    clock = ManualClock(now_ms=10_000)
    config = LogConfig(
        segment_bytes=1000, retention_ms=1, cleanup_policy=frozenset({"compact"})
    )
    log = open_log(tmp_path, config, clock)
    for _ in range(30):
        log.append_as_leader(
            keyed_batch([(b"k", b"v")], timestamp_ms=1), leader_epoch=0
        )
    log.update_high_watermark(30)
    clock.advance(10_000)
    assert log.delete_old_segments() == 0


def test_delete_records_moves_the_log_start_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(10)  # not past the high watermark
    log.update_high_watermark(40)
    assert log.maybe_increment_log_start_offset(23)
    assert log.delete_old_segments() > 0
    assert log.segments[0].base_offset <= 23 < log.segments[0].next_offset
    assert log.log_start_offset == 23


def test_flush_messages_moves_the_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(flush_messages=5))
    for _ in range(4):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(value_batch(1), leader_epoch=0)
    assert log.recovery_point == 5


def test_roll_asks_for_the_old_segment_to_be_flushed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(20):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert log.flush_requested_offset == log.active_segment.base_offset > 0
    assert log.recovery_point == 0


def test_reopen_after_close_finds_the_same_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(35):
        log.append_as_leader(value_batch(1), leader_epoch=2)
    before = read_all_records(log)
    log.close()
    again = Log.open(
        tmp_path / "topic-0", SMALL, had_clean_shutdown=True, clock=ManualClock()
    )
    assert again.log_end_offset == 35
    assert read_all_records(again) == before
    assert again.leader_epoch_cache.latest_epoch == 2
    assert again.fetch_offset_by_timestamp(0) is not None


def test_a_read_goes_to_a_socket_with_sendfile(tmp_path: Path) -> None:
    import socket

    log = open_log(tmp_path, LogConfig())
    for _ in range(10):
        log.append_as_leader(value_batch(3), leader_epoch=0)
    fetched = log.read(6, 100_000).records
    assert fetched is not None
    region = fetched.file_region()
    # The segment's pooled file itself: the Processor pins it for the send (see _files).
    assert (region.file, region.position, region.length) == (
        fetched.file,
        fetched.position,
        fetched.length,
    )
    assert isinstance(region.file, PooledFile)
    sender, receiver = socket.socketpair()
    with sender, receiver:
        fd = region.file.pin()
        try:
            sent = os.sendfile(sender.fileno(), fd, region.position, region.length)
        finally:
            region.file.unpin()
        assert sent == fetched.length
        received = b""
        while len(received) < sent:
            received += receiver.recv(65536)
    assert received == fetched.read_bytes()
    assert [h.base_offset for _, h in iter_batches(received)] == [
        6,
        9,
        12,
        15,
        18,
        21,
        24,
        27,
    ]


def test_the_remembered_high_watermark_position_follows_truncation(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path, LogConfig())
    for _ in range(30):
        log.append_as_leader(value_batch(1), leader_epoch=0)

    def offsets_below(max_offset: int) -> list[int]:
        fetched = log.read(0, 1_000_000, max_offset=max_offset).records
        assert fetched is not None
        return [h.base_offset for _, h in iter_batches(fetched.read_bytes())]

    assert offsets_below(17) == list(range(17))
    log.truncate_to(10)  # the bytes where offset 17 was are gone...
    for _ in range(20):
        # ...and now hold 2-record batches
        log.append_as_leader(value_batch(2), leader_epoch=1)
    # The batch holding offset 17 (16-17) starts at the limit, so it is not read.
    assert offsets_below(17) == [*range(10), 10, 12, 14]
    assert offsets_below(18) == [*range(10), 10, 12, 14, 16]
