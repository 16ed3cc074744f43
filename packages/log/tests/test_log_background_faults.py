"""No exception in the LogManager's background work ends the broker (Kafka's policies).

Each test runs :meth:`LogManager.run` in a nursery, makes one partition's step raise
(a method patched for that partition only) and shows that the task goes on: the other
partitions are still cleaned, deleted, flushed or checkpointed, the failing one is
marked uncleanable (the cleaner: Kafka's ``markPartitionUncleanable``) or tried again
at the next pass (everything else, as Kafka's ``KafkaScheduler`` does), and the error
is logged at ERROR once, not at every pass. Without the guards the exception would
leave through the nursery and the test would fail with it.

Virtual time (``autojump_clock``) where nothing runs in a thread; the flusher's fsync
runs in a worker thread, during which a virtual clock would jump past any deadline, so
its test runs on real time with a short interval.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from minikafka.common import TopicPartition
from minikafka.log import (
    KafkaStorageError,
    Log,
    LogConfig,
    LogManager,
    LogManagerSchedule,
    _cleaner,
    _manager,
)
from minikafka.log._checkpoint import OffsetCheckpointFile
from minikafka.log._names import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from minikafka.log.testing import ManualClock, keyed_batch, value_batch
from minikafka.net.testing import wait_until

BAD = TopicPartition("bad", 0)
GOOD = TopicPartition("good", 0)
NEVER = 10**9  # an interval (ms) that does not come up during a test
DEADLINE = 30.0  # seconds: virtual ones, except in the flusher's test

COMPACT = LogConfig(
    segment_bytes=600, cleanup_policy=frozenset({"compact"}), file_delete_delay_ms=0
)
RETAINED = LogConfig(segment_bytes=1000, retention_bytes=1000, file_delete_delay_ms=0)


def quiet(
    *,
    retention: int = NEVER,
    flush: int = NEVER,
    recovery_points: int = NEVER,
    start_offsets: int = NEVER,
    cleaner: int = NEVER,
) -> LogManagerSchedule:
    """A schedule whose tasks come up at the intervals given (ms), the others never."""
    return LogManagerSchedule(
        retention_check_interval_ms=retention,
        flush_check_interval_ms=flush,
        recovery_point_checkpoint_interval_ms=recovery_points,
        start_offset_checkpoint_interval_ms=start_offsets,
        cleaner_backoff_ms=cleaner,
    )


@asynccontextmanager
async def running(manager: LogManager) -> AsyncIterator[None]:
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield
        nursery.cancel_scope.cancel()


def errors_about(caplog: pytest.LogCaptureFixture, what: object) -> list[str]:
    """The ERROR lines naming ``what``, each with its traceback attached."""
    found = []
    for record in caplog.records:
        if record.levelno == logging.ERROR and str(what) in record.getMessage():
            assert record.exc_info is not None, record.getMessage()
            found.append(record.getMessage())
    return found


def fill_compacted(log: Log, batches: int = 60) -> None:
    for i in range(batches):
        log.append_as_leader(
            keyed_batch([(b"k%d" % (i % 3), b"v" * 30)]), leader_epoch=0
        )
    log.update_high_watermark(log.log_end_offset)


def fill(log: Log, batches: int = 40) -> None:
    for _ in range(batches):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


# --- the log cleaner -------------------------------------------------------------------


async def test_a_partition_the_cleaner_fails_on_is_uncleanable_and_the_rest_cleaned(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.log")
    manager = LogManager.startup(
        [tmp_path],
        COMPACT,
        clock=ManualClock(),
        schedule=quiet(cleaner=1_000),
    )
    bad, good = manager.get_or_create_log(BAD), manager.get_or_create_log(GOOD)
    fill_compacted(bad)
    fill_compacted(good)
    passes: Counter[TopicPartition] = Counter()
    real_clean = _cleaner.clean

    def clean(log: Log, first_dirty: int, now: int) -> _cleaner.CleanResult | None:
        passes[log.topic_partition] += 1
        if log.topic_partition == BAD:
            raise RuntimeError("a bug met in bad-0")
        return real_clean(log, first_dirty, now)

    monkeypatch.setattr(_manager, "clean", clean)
    async with running(manager):
        await wait_until(lambda: passes[GOOD] == 1, DEADLINE)
        fill_compacted(good)  # dirty again: the next pass cleans it again
        await wait_until(lambda: passes[GOOD] == 2, DEADLINE)
    assert passes[BAD] == 1  # skipped by the second pass, not failed again
    assert manager.cleaner_offsets[GOOD] == good.active_segment.base_offset
    assert BAD not in manager.cleaner_offsets
    assert dict(manager.uncleanable) == {BAD: "RuntimeError: a bug met in bad-0"}
    assert len(errors_about(caplog, BAD)) == 1
    assert errors_about(caplog, GOOD) == []


def test_a_deleted_log_is_no_longer_uncleanable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's maintainUncleanablePartitions: a partition whose log is gone leaves the
    set, so a new log of the same name is cleaned again."""
    manager = LogManager.startup([tmp_path], COMPACT, clock=ManualClock())
    fill_compacted(manager.get_or_create_log(BAD))
    real_clean = _cleaner.clean

    def failing(log: Log, first_dirty: int, now: int) -> _cleaner.CleanResult | None:
        raise ValueError("unexpected")

    monkeypatch.setattr(_manager, "clean", failing)
    assert manager.clean_logs() == 0
    assert BAD in manager.uncleanable
    manager.delete_log(BAD)
    assert BAD not in manager.uncleanable
    monkeypatch.setattr(_manager, "clean", real_clean)
    fill_compacted(manager.get_or_create_log(BAD))
    assert manager.clean_logs() == 1


def _is_cleaned_file_of(tp: TopicPartition, fd: int) -> bool:
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return f"/{tp}/" in path and path.endswith(".log.cleaned")


@pytest.mark.parametrize(
    ("err", "offline"), [(errno.ENOSPC, False), (errno.EIO, True)], ids=["full", "eio"]
)
def test_a_disk_error_while_cleaning_is_a_storage_error_not_an_uncleanable_log(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    err: int,
    offline: bool,
) -> None:
    """A full disk while the .cleaned file is written leaves the log as it was: the dir
    stays online, the error is logged once and the next pass tries again. Any other I/O
    error takes the dir offline, as Kafka's cleaner hands an IOException to the
    LogDirFailureChannel. Neither marks the partition uncleanable: the log is sound."""
    caplog.set_level(logging.INFO, logger="minikafka.log")
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    manager = LogManager.startup(dirs, COMPACT, clock=ManualClock())
    bad, good = manager.get_or_create_log(BAD), manager.get_or_create_log(GOOD)
    assert [manager.log_dir_of(BAD), manager.log_dir_of(GOOD)] == dirs
    fill_compacted(bad)
    fill_compacted(good)
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        if _is_cleaned_file_of(BAD, fd):
            raise OSError(err, os.strerror(err))
        return real_write(fd, data)

    with monkeypatch.context() as m:
        m.setattr(os, "write", write)
        assert manager.clean_logs() == 1  # the good one
        assert manager.clean_logs() == 0
    assert BAD not in manager.uncleanable
    assert not [p for p in bad.dir.iterdir() if p.name.endswith(".cleaned")]
    if offline:
        assert list(manager.offline_dirs) == [dirs[0]]
        assert "log cleaner of bad-0" in manager.offline_dirs[dirs[0]]
    else:
        assert manager.offline_dirs == {}
        assert len(errors_about(caplog, BAD)) == 1  # two passes, one ERROR
        assert manager.clean_logs() == 1  # space again: the next pass cleans it
        assert BAD in manager.cleaner_offsets


# --- retention -------------------------------------------------------------------------


async def test_a_log_retention_fails_on_is_retried_and_the_others_are_deleted(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.log")
    manager = LogManager.startup(
        [tmp_path],
        RETAINED,
        clock=ManualClock(),
        schedule=quiet(retention=1_000),
    )
    bad, good = manager.get_or_create_log(BAD), manager.get_or_create_log(GOOD)
    fill(bad)
    fill(good)
    attempts: Counter[TopicPartition] = Counter()
    failing = True
    real_delete = Log.delete_old_segments

    def delete_old_segments(log: Log) -> int:
        attempts[log.topic_partition] += 1
        if log.topic_partition == BAD and failing:
            raise RuntimeError("a bug met in bad-0")
        return real_delete(log)

    monkeypatch.setattr(Log, "delete_old_segments", delete_old_segments)
    async with running(manager):
        await wait_until(lambda: attempts[BAD] >= 3, DEADLINE)
        assert good.log_start_offset > 0  # deleted at the first pass
        assert bad.log_start_offset == 0
        failing = False  # whatever it was is gone: the next pass deletes
        await wait_until(lambda: bad.log_start_offset > 0, DEADLINE)
    assert len(errors_about(caplog, BAD)) == 1  # at least three failures, one ERROR
    assert any("retention of bad-0 succeeded again" in m for m in caplog.messages)
    assert manager.offline_dirs == {}


async def test_an_io_error_in_retention_takes_that_dir_offline_only(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kafka's maybeHandleIOException: the dir goes to the LogDirFailureChannel, a
    queue whoever must act on it (the ReplicaManager's shell) waits on in a task of its
    own; the other dir's logs are still deleted, pass after pass."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    manager = LogManager.startup(
        dirs,
        RETAINED,
        clock=ManualClock(),
        schedule=quiet(retention=1_000),
    )
    bad, good = manager.get_or_create_log(BAD), manager.get_or_create_log(GOOD)
    assert [manager.log_dir_of(BAD), manager.log_dir_of(GOOD)] == dirs
    fill(bad)
    told: list[Path] = []

    async def handler() -> None:
        while True:
            told.extend(await manager.wait_offline_dirs())

    real_delete = Log.delete_old_segments

    def delete_old_segments(log: Log) -> int:
        if log.topic_partition == BAD:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_delete(log)

    monkeypatch.setattr(Log, "delete_old_segments", delete_old_segments)
    async with running(manager), trio.open_nursery() as nursery:
        nursery.start_soon(handler)
        await wait_until(lambda: told == [dirs[0]], DEADLINE)
        fill(good)  # written after the failure: a later pass deletes its segments
        await wait_until(lambda: good.log_start_offset > 0, DEADLINE)
        nursery.cancel_scope.cancel()
    assert told == [dirs[0]]  # each dir once, however many passes failed
    assert manager.take_offline_dirs() == []
    assert list(manager.offline_dirs) == [dirs[0]]
    assert "retention of bad-0 failed" in manager.offline_dirs[dirs[0]]


async def test_a_full_disk_in_retention_leaves_the_dir_online_and_is_retried(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A roll the disk refused and the log undid (KafkaStorageError, offline false):
    nothing to distrust, so the dir stays online and the next pass tries again."""
    caplog.set_level(logging.INFO, logger="minikafka.log")
    manager = LogManager.startup(
        [tmp_path],
        RETAINED,
        clock=ManualClock(),
        schedule=quiet(retention=1_000),
    )
    fill(manager.get_or_create_log(BAD))
    attempts: list[int] = []

    def delete_old_segments(log: Log) -> int:
        attempts.append(1)
        raise KafkaStorageError(errno.ENOSPC, "rolling failed", offline=False)

    monkeypatch.setattr(Log, "delete_old_segments", delete_old_segments)
    async with running(manager):
        await wait_until(lambda: len(attempts) >= 3, DEADLINE)
    assert manager.offline_dirs == {}
    assert len(errors_about(caplog, BAD)) == 1


# --- the flusher -----------------------------------------------------------------------


async def test_a_log_whose_flush_fails_is_retried_and_the_others_are_flushed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.log")
    manager = LogManager.startup(
        [tmp_path],
        LogConfig(segment_bytes=1000),
        schedule=quiet(flush=20),
    )
    bad, good = manager.get_or_create_log(BAD), manager.get_or_create_log(GOOD)
    fill(bad, 20)
    fill(good, 20)
    rolled_at = good.active_segment.base_offset
    assert rolled_at > 0
    assert bad.active_segment.base_offset > 0
    attempts: list[TopicPartition] = []  # appended from the worker thread
    real_fsync = Log.fsync_up_to

    def fsync_up_to(log: Log, offset: int) -> None:
        if log.topic_partition == BAD:
            attempts.append(BAD)
            raise RuntimeError("a bug met in bad-0")
        real_fsync(log, offset)

    monkeypatch.setattr(Log, "fsync_up_to", fsync_up_to)
    async with running(manager):
        await wait_until(lambda: len(attempts) >= 3, DEADLINE)
        await wait_until(lambda: good.recovery_point >= rolled_at, DEADLINE)
    assert bad.recovery_point == 0
    assert (
        manager.offline_dirs == {}
    )  # not an I/O error: no reason to distrust the disk
    assert len(errors_about(caplog, BAD)) == 1


# --- checkpoints -----------------------------------------------------------------------


async def test_a_dir_whose_checkpoints_fail_is_retried_and_the_others_are_written(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.log")
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    manager = LogManager.startup(
        dirs,
        clock=ManualClock(),
        schedule=quiet(recovery_points=1_000, start_offsets=1_000),
    )
    manager.get_or_create_log(BAD)
    good = manager.get_or_create_log(GOOD)
    for _ in range(2):
        good.append_as_leader(value_batch(1), leader_epoch=0)
    good.update_high_watermark(2)
    # Above the first segment's base, so that both files carry an entry for GOOD (a log
    # starting at its first segment has none in log-start-offset-checkpoint).
    good.maybe_increment_log_start_offset(1)
    attempts: Counter[str] = Counter()
    real_write = OffsetCheckpointFile.write

    def write(file: OffsetCheckpointFile, offsets: Any) -> None:
        if file.path.parent == dirs[0]:
            attempts[file.path.name] += 1
            raise RuntimeError(f"a bug met writing {file.path.name}")
        real_write(file, offsets)

    monkeypatch.setattr(OffsetCheckpointFile, "write", write)
    names = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT)

    def failed_three_times_and_written() -> bool:
        return all(attempts[name] >= 3 and (dirs[1] / name).exists() for name in names)

    async with running(manager):
        await wait_until(failed_three_times_and_written, DEADLINE)
    for name in names:
        assert OffsetCheckpointFile(dirs[1] / name).read() == {GOOD: 1}
        assert not (dirs[0] / name).exists()
        assert len(errors_about(caplog, dirs[0] / name)) == 1
    assert manager.offline_dirs == {}
