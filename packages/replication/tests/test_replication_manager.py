"""ReplicaManager and metadata: leading, following, deleting, stray logs, topic settings,
and the high-watermark checkpoint."""

from __future__ import annotations

import uuid
from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import LogConfig, LogManager, OffsetCheckpointFile
from minikafka.log.testing import ManualClock, value_batch
from minikafka.replication import (
    HIGH_WATERMARK_CHECKPOINT,
    ProducePartitionResult,
    TopicSettings,
)
from minikafka.replication.testing import (
    TP,
    Answers,
    SettingsTable,
    discard,
    follower_fetch,
    lead,
    partition_state,
    replica_manager,
)


def test_become_leader_and_follower_create_the_logs(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    led, followed = TopicPartition("orders", 0), TopicPartition("orders", 1)
    manager.become_leader_or_follower(
        {led: (uuid.uuid4(), partition_state((1, 2)))},
        {followed: (uuid.uuid4(), partition_state((2, 1)))},
        now=0.0,
    )
    leader, follower = (
        manager.core.get_partition(led),
        manager.core.get_partition(followed),
    )
    assert leader is not None
    assert leader.is_leader
    assert follower is not None
    assert not follower.is_leader
    assert follower.leader_id == 2
    assert (tmp_path / "orders-0").is_dir()
    assert (tmp_path / "orders-1").is_dir()
    assert set(manager.core.log_manager.logs) == {led, followed}


def test_a_stale_state_leaves_the_partition_as_it_is(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    partition = lead(manager, TP, (1, 2), leader_epoch=3, partition_epoch=5)
    stale = partition_state((2, 1), leader=2, leader_epoch=2, partition_epoch=6)
    manager.become_leader_or_follower({}, {TP: (partition.topic_id, stale)}, now=1.0)
    assert partition.is_leader
    assert partition.leader_epoch == 3
    assert manager.core.get_partition(TP) is partition


def test_stop_replicas_deletes_the_logs(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    manager.append_records(30_000, Acks.LEADER, {TP: value_batch(3)}, discard, now=0.0)
    manager.stop_replicas([TP, TopicPartition("never-here", 0)])
    assert manager.core.get_partition(TP) is None
    assert manager.core.log_manager.get_log(TP) is None
    assert not (tmp_path / "orders-0").exists()  # renamed to ...-delete, removed later
    assert [p.name.endswith("-delete") for p in tmp_path.iterdir() if p.is_dir()] == [
        True
    ]


def test_a_topic_recreated_under_the_same_name_starts_with_an_empty_log(
    tmp_path: Path,
) -> None:
    manager = replica_manager(tmp_path)
    old = lead(manager, TP, topic_id=uuid.uuid4())
    manager.append_records(30_000, Acks.LEADER, {TP: value_batch(3)}, discard, now=0.0)
    new = lead(manager, TP, topic_id=uuid.uuid4())
    assert new is not old
    assert new.log.log_end_offset == 0
    assert manager.core.log_manager.get_log(TP) is new.log


def test_remove_stray_logs_deletes_only_what_is_not_placed_here(tmp_path: Path) -> None:
    stray = TopicPartition("deleted-while-down", 0)
    logs = LogManager.startup([tmp_path], clock=ManualClock())
    logs.get_or_create_log(stray).append_as_leader(value_batch(1), leader_epoch=0)
    logs.get_or_create_log(TP)
    logs.shutdown()

    manager = replica_manager(tmp_path)  # loads both logs from disk
    assert set(manager.core.log_manager.logs) == {stray, TP}
    lead(manager, TP)
    assert manager.core.remove_stray_logs() == [stray]
    assert set(manager.core.log_manager.logs) == {TP}
    assert manager.core.remove_stray_logs() == []


def test_update_topic_settings_reaches_every_partition_of_the_topic(
    tmp_path: Path,
) -> None:
    table = SettingsTable()
    manager = replica_manager(tmp_path, settings=table)
    partitions = [
        lead(manager, TopicPartition("orders", p), (1, 2, 3), isr=(1,)) for p in (0, 1)
    ]
    other = lead(manager, TopicPartition("audit", 0), (1, 2, 3), isr=(1,))
    refused: Answers[dict[TopicPartition, ProducePartitionResult]] = Answers()
    config = LogConfig(segment_bytes=4096, retention_ms=1000)
    table.topics["orders"] = TopicSettings(config, min_insync_replicas=2)
    manager.core.update_topic_settings("orders")
    for partition in partitions:
        assert partition.log.config == config
        assert partition.min_insync_replicas == 2
    assert other.min_insync_replicas == 1
    assert other.log.config == LogConfig()
    manager.append_records(
        30_000, Acks.ALL, {partitions[0].topic_partition: value_batch(1)}, refused, 0
    )
    assert (
        refused.only[partitions[0].topic_partition].error_code
        is ErrorCode.not_enough_replicas
    )


def test_the_settings_in_force_when_a_partition_is_created_are_used(
    tmp_path: Path,
) -> None:
    config = LogConfig(max_message_bytes=5000)
    table = SettingsTable(
        topics={"orders": TopicSettings(config, min_insync_replicas=2)}
    )
    manager = replica_manager(tmp_path, settings=table)
    partition = lead(manager, TP, (1, 2), isr=(1, 2))
    assert partition.log.config == config
    assert partition.min_insync_replicas == 2


def test_the_hw_checkpoint_is_what_a_restart_resumes_from(tmp_path: Path) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    manager.append_records(30_000, Acks.LEADER, {TP: value_batch(5)}, discard, now=0.0)
    follower_fetch(manager, 2, TP, 3)
    manager.core.checkpoint_high_watermarks()
    path = tmp_path / HIGH_WATERMARK_CHECKPOINT
    assert OffsetCheckpointFile(path).read() == {TP: 3}
    # A crash now: the LogManager reloads the HW from the checkpoint, not the log end.
    again = replica_manager(tmp_path)
    log = again.core.log_manager.get_log(TP)
    assert log is not None
    assert (log.high_watermark, log.log_end_offset) == (3, 5)
    partition = lead(again, TP, (1, 2), isr=(1, 2), leader_epoch=1)
    assert partition.log.high_watermark == 3
