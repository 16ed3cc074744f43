"""A disk that refuses a write: the log is undone, or says it must go offline.

The failures are injected deterministically by wrapping ``os.write``, ``os.open`` and
``os.fsync``: a call on a file whose name ends with a given suffix fails with a given
errno, after writing part of its bytes where a real full disk would.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from minikafka.common import TopicPartition
from minikafka.log import KafkaStorageError, Log, LogConfig, LogManager
from minikafka.log._names import CLEAN_SHUTDOWN_FILE
from minikafka.log.testing import ManualClock, read_all_records, value_batch

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def open_log(tmp_path: Path, config: LogConfig = SMALL) -> Log:
    return Log.open(tmp_path / "topic-0", config, clock=ManualClock())


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@contextmanager
def failing_writes(
    monkeypatch: pytest.MonkeyPatch,
    suffix: str,
    err: int = errno.ENOSPC,
    partial: int = 0,
) -> Iterator[list[str]]:
    """Every ``os.write`` to a ``*suffix`` file writes ``partial`` bytes, then fails."""
    real_write = os.write
    failed: list[str] = []

    def write(fd: int, data: Any) -> int:
        path = _path_of(fd)
        if not path.endswith(suffix):
            return real_write(fd, data)
        if partial and not failed:
            failed.append(path)
            return real_write(fd, bytes(data[:partial]))  # a short write, as on ENOSPC
        failed.append(path)
        raise OSError(err, os.strerror(err))

    with monkeypatch.context() as m:
        m.setattr(os, "write", write)
        yield failed


def file_sizes(log: Log) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(log.dir.iterdir()) if p.is_file()}


def test_a_short_write_then_enospc_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk's partial write is cut off: same files, same offsets, appends go on."""
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(3), leader_epoch=0)
    before = file_sizes(log)
    with (
        failing_writes(monkeypatch, ".log", partial=10),
        pytest.raises(KafkaStorageError) as e,
    ):
        log.append_as_leader(value_batch(2), leader_epoch=0)
    assert e.value.errno == errno.ENOSPC
    assert e.value.error_code == 56
    assert not e.value.offline  # undone: the partition may stay online
    assert file_sizes(log) == before
    assert log.log_end_offset == 3
    # Space is back: the next append gets the next offset, and a restart agrees.
    info = log.append_as_leader(value_batch(2), leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (3, 4)
    log.close()
    reopened = Log.open(log.dir, SMALL, clock=ManualClock(), recovery_point=0)
    assert [r.offset for r in read_all_records(reopened)] == [0, 1, 2, 3, 4]
    reopened.close()


def test_an_index_append_that_fails_after_the_data_was_written_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch bytes reached the file but its index entry did not: both are cut back.

    Before the fix the batch stayed in the file behind the segment's recorded size, so
    the next append's index entries pointed at the wrong bytes.
    """
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    before = file_sizes(log)
    # The second batch crosses index.interval.bytes, so it adds an offset-index entry.
    with (
        failing_writes(monkeypatch, ".index", partial=3),
        pytest.raises(KafkaStorageError) as e,
    ):
        log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    assert not e.value.offline
    assert file_sizes(log) == before
    assert log.active_segment.size == before["00000000000000000000.log"]
    assert log.log_end_offset == 2
    for _ in range(3):
        log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    assert [r.offset for r in read_all_records(log)] == list(range(8))
    index = log.dir / "00000000000000000000.index"
    assert index.stat().st_size % 8 == 0  # no torn entry
    assert (
        log.offset_metadata(6).relative_position
        == log.active_segment.translate_offset(6)[0]  # type: ignore[index]
    )


def test_a_roll_the_disk_refuses_keeps_the_active_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating the next segment fails: the log keeps its segments and takes appends later."""
    log = open_log(tmp_path)
    while len(log.segments) == 1:
        log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    # Fill the second segment to the brink of its roll, then refuse new files.
    end = log.log_end_offset
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        new_file = flags & os.O_CREAT and not Path(path).exists()
        if new_file and str(path).endswith((".log", ".index", ".timeindex")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, flags, *args, **kwargs)

    segments = [s.base_offset for s in log.segments]
    with monkeypatch.context() as m:
        m.setattr(os, "open", refuse)
        while log.active_segment.should_roll(300, 0, log.log_end_offset + 2, 0) is None:
            log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
        with pytest.raises(KafkaStorageError) as e:
            log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    assert not e.value.offline
    assert [s.base_offset for s in log.segments] == segments
    assert sorted(p.name for p in log.dir.glob("*.log")) == [
        f"{b:020d}.log" for b in segments
    ]  # no half-made segment left behind
    assert log.log_end_offset >= end
    log.append_as_leader(value_batch(2, value_bytes=100), leader_epoch=0)
    assert len(log.segments) == len(segments) + 1
    assert [r.offset for r in read_all_records(log)] == list(range(log.log_end_offset))


def _eio(*_args: Any) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_a_failed_fsync_says_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsyncgate: after a failed fsync nothing is trusted, so the log must go offline."""
    log = open_log(tmp_path, LogConfig(flush_messages=1))
    log.append_as_leader(value_batch(1), leader_epoch=0)
    recovery_point = log.recovery_point
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", _eio)
        with pytest.raises(KafkaStorageError) as e:
            log.append_as_leader(value_batch(1), leader_epoch=0)
    assert e.value.offline
    assert e.value.errno == errno.EIO
    assert log.recovery_point == recovery_point  # never claims the unflushed bytes


def test_an_undo_that_fails_says_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short write whose cut-back also fails leaves a torn tail: the log must go offline."""
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(1), leader_epoch=0)
    with monkeypatch.context() as m:
        m.setattr(os, "ftruncate", _eio)
        with (
            failing_writes(m, ".log", partial=5),
            pytest.raises(KafkaStorageError) as e,
        ):
            log.append_as_leader(value_batch(1), leader_epoch=0)
    assert e.value.offline


def test_a_failed_write_that_is_not_a_full_disk_says_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EIO on write: the device is failing, whatever the undo managed (Kafka's rule)."""
    log = open_log(tmp_path)
    with (
        failing_writes(monkeypatch, ".log", err=errno.EIO),
        pytest.raises(KafkaStorageError) as e,
    ):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    assert e.value.offline
    assert log.log_end_offset == 0


def test_a_shutdown_on_a_full_disk_closes_every_file_and_is_not_marked_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean shutdown while the disk is still full ends without an error.

    Closing the active segment appends its last time-index entry, which a full disk
    refuses: the broker used to stop with "stopped by an I/O error". Now every file is
    closed, the failure is logged, and the dir gets no clean-shutdown marker, so the next
    start recovers it instead of trusting it; nothing acknowledged is lost.
    """
    manager = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    tps = [TopicPartition("full", p) for p in range(3)]
    for tp in tps:
        manager.get_or_create_log(tp).append_as_leader(value_batch(5), leader_epoch=0)
    before = set(os.listdir("/proc/self/fd"))
    with failing_writes(monkeypatch, ".timeindex") as failed:
        manager.shutdown()
    assert failed, "the time index was never written: the test proves nothing"
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert len(set(os.listdir("/proc/self/fd")) - before) == 0
    reopened = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    for tp in tps:
        log = reopened.get_log(tp)
        assert log is not None
        assert len(read_all_records(log)) == 5
    reopened.shutdown()
