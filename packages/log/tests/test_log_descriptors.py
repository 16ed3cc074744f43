"""The descriptor pool and checkpoint failures (item 8).

A broker must host more segments than it may hold open: segment files are opened on use
and the least recently used are closed, without a closed descriptor's number ever
naming the wrong file, and without losing O_APPEND positions, fsyncs, truncations,
recovery or the cleaner's renames. A checkpoint that cannot be written is logged and
retried, never silently lost and never half-written.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import trio

from minikafka.common import FileRegion, TopicPartition
from minikafka.log import FilePool, Log, LogConfig, LogManager, clean, iter_batches
from minikafka.log._files import MIN_CAPACITY, ClosedFileError, default_capacity
from minikafka.log._names import (
    CLEAN_SHUTDOWN_FILE,
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)
from minikafka.net._socket_io import send_file_region

SMALL_SEGMENTS = LogConfig(
    segment_bytes=600, index_interval_bytes=100, file_delete_delay_ms=0
)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- the pool itself -------------------------------------------------------------------


def test_the_pool_keeps_at_most_its_capacity_and_evicts_the_least_recently_used(
    tmp_path: Path,
) -> None:
    """At most ``capacity`` descriptors are open; the one used least recently goes first."""
    pool = FilePool(MIN_CAPACITY)
    files = [pool.file(tmp_path / f"f{i}") for i in range(MIN_CAPACITY)]
    files[0].write(b"first")  # now the most recently used: files[1] is the oldest
    extra = pool.file(tmp_path / "extra")
    assert pool.open_count == MIN_CAPACITY
    assert not files[1].is_open
    assert files[0].is_open
    assert extra.is_open
    assert pool.evictions == 1
    # An evicted file is reopened on use, where it is, and still appends at its end.
    files[1].write(b"abc")
    files[1].write(b"def")
    assert files[1].pread(100, 0) == b"abcdef"
    assert pool.open_count == MIN_CAPACITY
    for f in [*files, extra]:
        f.close()
    assert pool.open_count == 0


def test_a_pinned_descriptor_is_never_closed_under_its_user(tmp_path: Path) -> None:
    """Eviction skips a pinned file (a sendfile or fsync in progress): the pool grows past
    its capacity instead, and the number stays this file's until unpinned."""
    pool = FilePool(MIN_CAPACITY)
    pinned = pool.file(tmp_path / "pinned")
    pinned.write(b"mine")
    fd = pinned.pin()
    others = [pool.file(tmp_path / f"o{i}") for i in range(MIN_CAPACITY * 2)]
    assert os.fstat(fd).st_ino == os.stat(tmp_path / "pinned").st_ino
    assert os.pread(fd, 4, 0) == b"mine"
    pinned.close()  # closed for good while pinned: the descriptor lives until unpin
    assert os.pread(fd, 4, 0) == b"mine"
    pinned.unpin()
    assert not pinned.is_open
    with pytest.raises(ClosedFileError):
        pinned.pin()
    for f in others:
        f.close()


def test_a_reopen_never_creates_a_file_removed_behind_the_logs_back(
    tmp_path: Path,
) -> None:
    """A file deleted by someone else is an error on reopen, not a new empty file."""
    pool = FilePool(MIN_CAPACITY)
    victim = pool.file(tmp_path / "victim")
    others = [pool.file(tmp_path / f"o{i}") for i in range(MIN_CAPACITY)]
    assert not victim.is_open  # pushed out by the others
    (tmp_path / "victim").unlink()
    with pytest.raises(FileNotFoundError):
        victim.pread(1, 0)
    assert not (tmp_path / "victim").exists()
    for f in [victim, *others]:
        f.close()


def test_the_capacity_is_derived_from_the_open_files_limit() -> None:
    """Half the soft RLIMIT_NOFILE, never below the minimum."""
    assert default_capacity(512) == 256
    assert default_capacity(10) == MIN_CAPACITY


# --- logs sharing a small pool ---------------------------------------------------------


def _manager(tmp_path: Path, pool: FilePool, clock: ManualClock) -> LogManager:
    return LogManager.startup(
        [tmp_path / "data"], SMALL_SEGMENTS, clock=clock, files=pool
    )


def test_many_partitions_live_in_a_pool_smaller_than_their_files(
    tmp_path: Path,
) -> None:
    """60 partitions of several segments (hundreds of files) in a pool of 16: every byte
    is read back, flushed, truncated and recovered, and the process never holds more
    than the pool's descriptors for them."""
    clock = ManualClock()
    pool = FilePool(MIN_CAPACITY)
    baseline = open_fds()
    manager = _manager(tmp_path, pool, clock)
    tps = [TopicPartition("many", p) for p in range(60)]
    for round_ in range(4):
        for tp in tps:
            log = manager.get_or_create_log(tp)
            log.append_as_leader(value_batch(3, 100), leader_epoch=round_)
            assert open_fds() - baseline <= pool.capacity
    assert all(len(manager.logs[tp].segments) >= 2 for tp in tps)
    assert pool.evictions > 0
    for tp in tps:
        log = manager.logs[tp]
        log.update_high_watermark(log.log_end_offset)
        assert [r.offset for r in read_all_records(log)] == list(range(12))
        fetched = log.read(6, 100_000).records
        assert fetched is not None
        assert next(h.base_offset for _, h in iter_batches(fetched.read_bytes())) == 6
    for log, offset in manager.logs_to_flush():
        log.fsync_up_to(offset)  # fsync of segments whose descriptors were evicted
        log.mark_flushed(offset)
    manager.logs[tps[0]].truncate_to(4)  # a follower's truncation of an evicted segment
    assert open_fds() - baseline <= pool.capacity
    # A crash: no shutdown, every log is recovered at the next start, within the pool.
    manager.checkpoint(RECOVERY_POINT_CHECKPOINT)
    for log in manager.logs.values():
        log.close_handlers()
    assert open_fds() == baseline
    pool2 = FilePool(MIN_CAPACITY)
    again = LogManager.startup(
        [tmp_path / "data"], SMALL_SEGMENTS, clock=clock, files=pool2
    )
    assert open_fds() - baseline <= pool2.capacity
    assert again.logs[tps[0]].log_end_offset == 3
    for tp in tps[1:]:
        assert [r.offset for r in read_all_records(again.logs[tp])] == list(range(12))
    again.logs[tps[-1]].append_as_leader(value_batch(1), leader_epoch=9)
    again.shutdown()
    assert open_fds() == baseline


def test_fsync_of_an_evicted_segment_syncs_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flushing a segment whose descriptor the pool closed fsyncs a descriptor of the
    same file (Linux flushes the inode's dirty pages, whichever descriptor wrote them)."""
    pool = FilePool(MIN_CAPACITY)
    log = Log.open(tmp_path / "t-0", SMALL_SEGMENTS, clock=ManualClock(), files=pool)
    log.append_as_leader(value_batch(3), leader_epoch=0)
    for i in range(MIN_CAPACITY):
        pool.file(tmp_path / f"other{i}")  # evicts the log's three files
    assert not any(f.is_open for f in log.active_segment.files)
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    log.flush()
    assert os.stat(log.active_segment.log_path).st_ino in synced
    assert log.recovery_point == log.log_end_offset


# --- fetch responses sent after the pool, retention or the cleaner moved files ---------


async def _send(region: FileRegion) -> bytes:
    """Send a region over a real socket pair as the Processor does; what arrives."""
    a, b = trio.socket.socketpair()
    async with trio.SocketStream(a) as sender, trio.SocketStream(b) as receiver:
        await send_file_region(sender, region)
        await sender.send_eof()
        received = b""
        while chunk := await receiver.receive_some(65536):
            received += chunk
        return received


COMPACT = LogConfig(
    segment_bytes=700,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    file_delete_delay_ms=60_000,
)


async def test_a_queued_fetch_sends_its_own_segment_after_compaction_reuses_the_name(
    tmp_path: Path,
) -> None:
    """A region taken before the cleaner swapped a new segment in under the same file name
    sends the bytes it was taken from, not the cleaned file's (regions once went by path)."""
    clock = ManualClock()
    pool = FilePool(MIN_CAPACITY)
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock, files=pool)
    for i in range(0, 120, 3):
        pairs = [(b"key-%d" % (j % 5), b"value-%d" % j) for j in range(i, i + 3)]
        log.append_as_leader(keyed_batch(pairs), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    fetched = log.read(0, 100_000).records
    assert fetched is not None
    expected = fetched.read_bytes()
    region = fetched.file_region()
    name = log.segments[0].log_path
    assert clean(log, 0, clock()) is not None
    # the cleaned segment took the old one's name
    assert log.segments[0].log_path == name
    assert name.read_bytes()[: len(expected)] != expected
    for i in range(MIN_CAPACITY):
        # and the old segment's descriptor was evicted
        pool.file(tmp_path / f"other{i}")
    assert await _send(region) == expected


async def test_a_fetch_of_a_deleted_segment_fails_instead_of_sending_another_file(
    tmp_path: Path,
) -> None:
    """Once retention has removed the segment, sending its region raises (the connection
    closes); it never sends whatever file now holds the old descriptor number or name."""
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", SMALL_SEGMENTS, clock=clock)
    for _ in range(10):
        log.append_as_leader(value_batch(3), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    fetched = log.read(0, 1000).records
    assert fetched is not None
    region = fetched.file_region()
    log.maybe_increment_log_start_offset(log.segments[1].base_offset)
    assert log.delete_old_segments() == 1
    # renamed .deleted: still its bytes
    assert await _send(region) == fetched.read_bytes()
    log.purge_deleted_segments()
    with pytest.raises(ClosedFileError, match="is closed"):
        await _send(region)


# --- checkpoints that cannot be written ---------------------------------------------------


def test_a_failed_checkpoint_is_logged_kept_and_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A checkpoint write that fails is logged at ERROR with the file and the errno, leaves
    the previous file intact, does not stop the other checkpoints, is written at the next
    interval, and a shutdown with it unwritten leaves no clean-shutdown marker."""
    clock = ManualClock()
    manager = LogManager.startup([tmp_path / "data"], clock=clock)
    log = manager.get_or_create_log(TopicPartition("t", 0))
    log.append_as_leader(value_batch(3), leader_epoch=0)
    log.flush()
    manager.checkpoint(RECOVERY_POINT_CHECKPOINT)
    path = tmp_path / "data" / RECOVERY_POINT_CHECKPOINT
    before = path.read_bytes()
    log.append_as_leader(value_batch(3), leader_epoch=0)
    log.flush()
    # Something in the way of the temporary file: open() fails with EISDIR, even as root.
    blocker = path.with_name(path.name + ".tmp")
    blocker.mkdir()
    with caplog.at_level(logging.ERROR, logger="minikafka.log"):
        assert manager.checkpoint(RECOVERY_POINT_CHECKPOINT) == {tmp_path / "data"}
    assert path.read_bytes() == before
    message = next(r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    assert str(path) in message
    assert "EISDIR" in message
    blocker.rmdir()
    assert manager.checkpoint(RECOVERY_POINT_CHECKPOINT) == set()
    assert path.read_bytes() != before
    blocker.mkdir()
    manager.shutdown()
    assert not (tmp_path / "data" / CLEAN_SHUTDOWN_FILE).exists()


def test_a_failed_leader_epoch_checkpoint_does_not_fail_the_append_and_is_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The leader-epoch checkpoint is written on the append path when an epoch begins; a
    failure there is logged, the append succeeds, and the LogManager writes it later."""
    manager = LogManager.startup([tmp_path / "data"], clock=ManualClock())
    log = manager.get_or_create_log(TopicPartition("t", 0))
    log.append_as_leader(value_batch(1), leader_epoch=0)
    blocker = log.dir / (LEADER_EPOCH_CHECKPOINT + ".tmp")
    blocker.mkdir()
    with caplog.at_level(logging.ERROR, logger="minikafka.log"):
        log.append_as_leader(value_batch(1), leader_epoch=1)
    assert any(LEADER_EPOCH_CHECKPOINT in r.getMessage() for r in caplog.records)
    assert log.log_end_offset == 2
    assert manager.checkpoint_leader_epochs() == 1  # still in the way
    blocker.rmdir()
    assert manager.checkpoint_leader_epochs() == 0
    assert (log.dir / LEADER_EPOCH_CHECKPOINT).read_text().split("\n")[-2] == "1 1"
    manager.shutdown()
    assert (tmp_path / "data" / CLEAN_SHUTDOWN_FILE).exists()
