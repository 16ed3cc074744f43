"""LogManager: loading log.dirs, checkpoints in Kafka's format, deletion, background tasks."""

from __future__ import annotations

from pathlib import Path

import trio

from minikafka.common import TopicPartition
from minikafka.log import LogConfig, LogManager, LogManagerSchedule, LogRecovered
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)
from minikafka.net.testing import wait_until
from minikafka.trace.testing import RecordingTracer

SMALL = LogConfig(segment_bytes=1000, file_delete_delay_ms=500)


def test_logs_are_created_spread_over_dirs_and_reloaded(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager.startup(dirs, SMALL, clock=ManualClock())
    for p in range(4):
        log = manager.get_or_create_log(TopicPartition("orders", p))
        for _ in range(p + 1):
            log.append_as_leader(value_batch(1), leader_epoch=0)
    assert sorted(d.name for d in (tmp_path / "a").iterdir() if d.is_dir()) == [
        "orders-0",
        "orders-2",
    ]
    manager.shutdown()
    assert (tmp_path / "a" / ".kafka_cleanshutdown").exists()

    tracer = RecordingTracer()
    again = LogManager.startup(dirs, SMALL, clock=ManualClock(), tracer=tracer)
    assert not tracer.of_type(LogRecovered)  # clean shutdown: nothing rescanned
    assert not (tmp_path / "a" / ".kafka_cleanshutdown").exists()  # a crash would show
    ends = {tp.partition: log.log_end_offset for tp, log in again.logs.items()}
    assert ends == {0: 1, 1: 2, 2: 3, 3: 4}


def test_checkpoint_files_are_in_kafkas_text_format(tmp_path: Path) -> None:
    manager = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    log = manager.get_or_create_log(TopicPartition("my-topic", 3))
    for _ in range(5):
        log.append_as_leader(value_batch(1), leader_epoch=2)
    log.update_high_watermark(4)
    manager.shutdown()
    assert (
        tmp_path / "recovery-point-offset-checkpoint"
    ).read_text() == "0\n1\nmy-topic 3 5\n"
    assert (
        tmp_path / "replication-offset-checkpoint"
    ).read_text() == "0\n1\nmy-topic 3 4\n"
    # As Kafka, only a log that starts above its first segment's base offset has an
    # entry here; a missing one reads back as the first segment's base offset.
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    epochs = tmp_path / "my-topic-3" / "leader-epoch-checkpoint"
    assert epochs.read_text() == "0\n1\n2 0\n"
    again = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    reloaded = again.get_log(TopicPartition("my-topic", 3))
    assert reloaded is not None
    assert (reloaded.high_watermark, reloaded.recovery_point) == (4, 5)
    assert reloaded.log_start_offset == 0


def test_a_log_start_offset_above_the_first_segment_is_checkpointed(
    tmp_path: Path,
) -> None:
    manager = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    log = manager.get_or_create_log(TopicPartition("my-topic", 3))
    for _ in range(5):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    log.update_high_watermark(5)
    log.maybe_increment_log_start_offset(3)  # DeleteRecords, within the first segment
    manager.shutdown()
    assert (
        tmp_path / "log-start-offset-checkpoint"
    ).read_text() == "0\n1\nmy-topic 3 3\n"
    again = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    reloaded = again.get_log(TopicPartition("my-topic", 3))
    assert reloaded is not None
    assert reloaded.log_start_offset == 3


def test_an_unclean_shutdown_recovers_from_the_recovery_point(tmp_path: Path) -> None:
    manager = LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    log = manager.get_or_create_log(TopicPartition("t", 0))
    for _ in range(30):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    log.flush()
    manager.checkpoint("recovery-point-offset-checkpoint")
    for _ in range(3):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    # No shutdown(): the process died.
    tracer = RecordingTracer()
    again = LogManager.startup([tmp_path], SMALL, clock=ManualClock(), tracer=tracer)
    (event,) = tracer.of_type(LogRecovered)
    # only the segment holding the recovery point on
    assert event.segments_recovered == 1
    reloaded = again.get_log(TopicPartition("t", 0))
    assert reloaded is not None
    assert reloaded.log_end_offset == 33


def test_delete_log_renames_then_removes(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager.startup([tmp_path], SMALL, clock=clock)
    tp = TopicPartition("gone", 0)
    manager.get_or_create_log(tp).append_as_leader(value_batch(1), leader_epoch=0)
    manager.delete_log(tp)
    assert manager.get_log(tp) is None
    (renamed,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert renamed.name.startswith("gone-0.")
    assert renamed.name.endswith("-delete")
    clock.advance(500)
    manager.purge_deleted()
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]


def test_a_topic_of_249_characters_can_be_deleted(tmp_path: Path) -> None:
    """Deleting a partition of the longest legal topic name renames it within 255 bytes.

    Found by the fuzz suite: ``<topic>-<partition>.<32 hex>-delete`` was 290 bytes, the
    rename failed after the controller had committed the deletion, and the broker could
    not start again. Kafka cuts the topic short in that name, and so do we.
    """
    clock = ManualClock()
    manager = LogManager.startup([tmp_path], SMALL, clock=clock)
    tp = TopicPartition("t" * 249, 12)
    manager.get_or_create_log(tp).append_as_leader(value_batch(1), leader_epoch=0)
    manager.delete_log(tp)
    (renamed,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(renamed.name) <= 255
    assert renamed.name.endswith("-delete")
    manager.shutdown()
    # A restart does not take the renamed directory for a partition, and removes it.
    LogManager.startup([tmp_path], SMALL, clock=clock).shutdown()
    assert not renamed.exists()


def test_a_leftover_delete_dir_is_removed_at_startup(tmp_path: Path) -> None:
    leftover = tmp_path / "t-0.0123abcd-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"")
    LogManager.startup([tmp_path], SMALL, clock=ManualClock())
    assert not leftover.exists()


def test_retention_runs_over_every_log(tmp_path: Path) -> None:
    clock = ManualClock()
    config = LogConfig(segment_bytes=1000, retention_bytes=1000, file_delete_delay_ms=0)
    manager = LogManager.startup([tmp_path], config, clock=clock)
    log = manager.get_or_create_log(TopicPartition("t", 0))
    for _ in range(40):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    log.update_high_watermark(40)
    assert manager.cleanup_logs() > 0
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]


def test_compacted_logs_are_cleaned_and_the_checkpoint_written(tmp_path: Path) -> None:
    clock = ManualClock()
    config = LogConfig(segment_bytes=600, cleanup_policy=frozenset({"compact"}))
    manager = LogManager.startup(
        [tmp_path], SMALL, clock=clock, topic_configs={"c": config}
    )
    log = manager.get_or_create_log(TopicPartition("c", 0))
    for i in range(60):
        log.append_as_leader(
            keyed_batch([(b"k%d" % (i % 3), b"v" * 30)]), leader_epoch=0
        )
    log.update_high_watermark(60)
    assert manager.clean_logs() == 1
    text = (tmp_path / "cleaner-offset-checkpoint").read_text().splitlines()
    assert text[:2] == ["0", "1"]
    assert text[2].startswith("c 0 ")
    assert int(text[2].split()[2]) == log.active_segment.base_offset
    assert len(read_all_records(log)) < 60


async def test_background_flusher_fsyncs_rolled_segments(tmp_path: Path) -> None:
    # Real time, not autojump: the fsync runs in a worker thread, and a virtual clock
    # would jump past the deadline while the thread works.
    manager = LogManager.startup(
        [tmp_path], SMALL, schedule=LogManagerSchedule(flush_check_interval_ms=100)
    )
    log = manager.get_or_create_log(TopicPartition("t", 0))
    for _ in range(20):
        log.append_as_leader(value_batch(1), leader_epoch=0)
    rolled_at = log.active_segment.base_offset
    assert rolled_at > 0
    assert log.recovery_point == 0
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await wait_until(lambda: log.recovery_point >= rolled_at, deadline=30)
        nursery.cancel_scope.cancel()
    assert log.recovery_point == rolled_at
