"""Regression tests for failure modes found in review: each once lost or corrupted data."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest

from minikafka.common import TopicPartition
from minikafka.log import (
    MAX_TIMESTAMP,
    InvalidRecordError,
    Log,
    LogConfig,
    LogManager,
    build_batch,
    clean,
    iter_batches,
    make_records,
)
from minikafka.log._batch import CRC_OFFSET, compute_crc
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)


def follower_batch(base: int, count: int = 1, epoch: int = 0) -> bytes:
    records = make_records([(None, b"v")] * count, first_offset=base, timestamp_ms=0)
    return build_batch(records, partition_leader_epoch=epoch)


def test_a_failed_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log.open(
        tmp_path / "t-0", LogConfig(index_interval_bytes=0), clock=ManualClock()
    )
    log.append_as_leader(value_batch(3), leader_epoch=0)
    real_write = os.write
    calls = 0

    def disk_fills(fd: int, data: bytes | memoryview) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data)[:20])  # a short write...
        raise OSError(errno.ENOSPC, "No space left on device")  # ...then a full disk

    monkeypatch.setattr(os, "write", disk_fills)  # the segment writes through os.write
    with pytest.raises(OSError, match="No space"):
        log.append_as_leader(value_batch(2), leader_epoch=0)
    monkeypatch.undo()
    assert os.path.getsize(log.active_segment.log_path) == log.active_segment.size
    log.append_as_leader(value_batch(2), leader_epoch=0)  # the producer's retry
    assert [r.offset for r in read_all_records(log)] == [0, 1, 2, 3, 4]
    fetched = log.read(3, 10_000).records
    assert fetched is not None
    assert [h.base_offset for _, h in iter_batches(fetched.read_bytes())] == [3]


def test_a_follower_batch_cannot_move_offsets_backwards(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=ManualClock())
    log.append_as_follower(follower_batch(0, 10))
    bad = bytearray(follower_batch(10))
    struct.pack_into(">i", bad, 23, -5)  # lastOffsetDelta
    struct.pack_into(">I", bad, CRC_OFFSET, compute_crc(bad, 0, len(bad)))
    with pytest.raises(InvalidRecordError):
        log.append_as_follower(bad)
    assert log.log_end_offset == 10


def test_a_follower_batch_far_ahead_starts_its_own_segment(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=ManualClock())
    log.append_as_follower(follower_batch(0, 2))
    far = 3 * 2**31
    log.append_as_follower(follower_batch(far))
    log.append_as_follower(follower_batch(far + 1))
    assert [s.base_offset for s in log.segments] == [0, far]
    log.flush()
    recovery_point = log.recovery_point
    for segment in log.segments:
        segment.close_handlers()
    # Unflushed, the gap between the segments would look like a lost tail to recovery
    # (which cuts there and lets the follower fetch again); flushed, it is kept.
    again = Log.open(
        tmp_path / "t-0", recovery_point=recovery_point, clock=ManualClock()
    )
    assert again.log_end_offset == far + 2


def test_an_empty_log_takes_a_far_follower_batch_without_overflow(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "t-0", clock=ManualClock())
    log.append_as_follower(follower_batch(5 * 2**31))
    assert [s.base_offset for s in log.segments] == [5 * 2**31]
    for segment in log.segments:
        segment.close_handlers()
    assert (
        Log.open(tmp_path / "t-0", clock=ManualClock()).log_end_offset == 5 * 2**31 + 1
    )
    assert not (tmp_path / "t-0" / "00000000000000000000.log").exists()


def test_a_segment_after_a_lost_tail_is_not_kept(tmp_path: Path) -> None:
    """The previous segment lost its unflushed tail at a batch boundary: a hole, not a log."""
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=400), clock=ManualClock())
    for _ in range(12):
        log.append_as_leader(value_batch(1, value_bytes=4), leader_epoch=0)
    first = log.segments[0]
    batch_size = next(iter(first.batches()))[1].size
    log.close()
    os.truncate(first.log_path, 2 * batch_size)
    again = Log.open(
        tmp_path / "t-0", LogConfig(segment_bytes=400), clock=ManualClock()
    )
    assert again.log_end_offset == 2
    assert [r.offset for r in read_all_records(again)] == [0, 1]


def test_truncation_recomputes_the_largest_timestamp(tmp_path: Path) -> None:
    clock = ManualClock(now_ms=100_000)
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=150), clock=clock)
    for i in range(10):
        log.append_as_leader(
            value_batch(1, timestamp_ms=1000 * (i + 1)), leader_epoch=0
        )
    log.truncate_to(5)
    assert log.active_segment.max_timestamp_so_far == 5000
    newest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert newest is not None
    assert (newest.timestamp, newest.offset) == (5000, 4)


def test_index_entries_written_after_a_reopen_go_at_the_end(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=50)
    log = Log.open(tmp_path / "t-0", config, clock=ManualClock())
    for _ in range(5):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    log.close()
    again = Log.open(
        tmp_path / "t-0", config, had_clean_shutdown=True, clock=ManualClock()
    )
    for _ in range(5):
        again.append_as_leader(value_batch(1), leader_epoch=0)
    in_memory = again.active_segment.offset_index.entries()
    raw = again.active_segment.offset_index.path.read_bytes()
    on_disk = [(rel, pos) for rel, pos in struct.iter_unpack(">ii", raw)]
    assert on_disk == in_memory
    assert len(in_memory) >= 6


def test_lies_about_the_record_count_or_codec_are_refused(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=ManualClock())
    for offset, value, name in ((57, 1_000_000, "count"), (21, 7, "codec")):
        bad = bytearray(build_batch(make_records([(None, b"v")], timestamp_ms=0)))
        if name == "count":
            struct.pack_into(">i", bad, offset, value)
            struct.pack_into(">i", bad, 23, value - 1)
        else:
            struct.pack_into(">h", bad, offset, value)
        struct.pack_into(">I", bad, CRC_OFFSET, compute_crc(bad, 0, len(bad)))
        with pytest.raises(InvalidRecordError):
            log.append_as_leader(bad, leader_epoch=0)
    assert log.log_end_offset == 0


def test_a_failed_cleaning_pass_leaves_no_stale_cleaned_file(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300, cleanup_policy=frozenset({"compact"}))
    log = Log.open(tmp_path / "t-0", config, clock=ManualClock())
    for i in range(12):
        log.append_as_leader(
            keyed_batch([(b"k%d" % (i % 2), b"v%d" % i)]), leader_epoch=0
        )
    log.update_high_watermark(12)

    def fail(step: str) -> None:
        if step == "cleaned written":
            raise RuntimeError(step)

    with pytest.raises(RuntimeError):
        clean(log, 0, log.clock(), fail)
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".cleaned")]
    clean(log, 0, log.clock())
    offsets = [r.offset for r in read_all_records(log)]
    assert offsets == sorted(set(offsets))  # no batch twice


def test_a_corrupt_compacted_log_is_skipped_not_fatal(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300, cleanup_policy=frozenset({"compact"}))
    manager = LogManager.startup([tmp_path], config, clock=ManualClock())
    log = manager.get_or_create_log(TopicPartition("c", 0))
    junk = bytearray(build_batch(make_records([(b"k", b"v" * 20)], timestamp_ms=0)))
    struct.pack_into(">h", junk, 21, 1)  # says GZIP, but the payload is not gzip
    struct.pack_into(">I", junk, CRC_OFFSET, compute_crc(junk, 0, len(junk)))
    # A leader refuses such a batch now (its records are checked); a follower stores what
    # its leader sent, and a disk can rot, so the cleaner must still survive one.
    log.append_as_follower(junk)
    for i in range(12):
        log.append_as_leader(keyed_batch([(b"k", b"v%d" % i)]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert manager.clean_logs() == 0
    assert TopicPartition("c", 0) in manager.uncleanable
    assert manager.clean_logs() == 0  # skipped, not retried and failed again
