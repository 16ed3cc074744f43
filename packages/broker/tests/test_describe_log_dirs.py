"""DescribeLogDirs' answer (KIP-113, KIP-827) from a broker's ReplicaManager and its two
log dirs: what Kafka's ``ReplicaManager.describeLogDirs`` gives for each dir."""

from __future__ import annotations

import shutil
from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.broker._describe import (
    INVALID_OFFSET_LAG,
    LogDirDescription,
    LogDirPartition,
    describe_log_dirs,
)
from minikafka.common import Acks, TopicPartition
from minikafka.log import LogManager
from minikafka.log.testing import ManualClock, value_batch
from minikafka.replication import ReplicaManager
from minikafka.replication.testing import ManualShell, SettingsTable, lead

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


def two_dirs(tmp_path: Path) -> tuple[ManualShell, Path, Path]:
    first, second = tmp_path / "one", tmp_path / "two"
    logs = LogManager.startup([first, second], clock=ManualClock())
    return ManualShell(ReplicaManager(1, logs, SettingsTable())), first, second


def by_path(described: list[LogDirDescription]) -> dict[str, LogDirDescription]:
    return {d.path: d for d in described}


def test_each_dir_lists_its_replicas_with_their_size_and_lag(tmp_path: Path) -> None:
    # Guarantee: every configured dir is described, each with only the replicas it
    # holds, each replica's size being its log's bytes, its lag the high watermark's
    # distance past its end, never negative (a leader whose follower has not fetched
    # is ahead of its high watermark: 0), and the volume's total and usable bytes.
    manager, first, second = two_dirs(tmp_path)
    a0 = lead(manager, A0, (1, 2), isr=(1, 2))
    lead(manager, A1)
    a0.append_records_to_leader(value_batch(10), Acks.LEADER, 0.0)
    assert a0.log.high_watermark == 0 < a0.log.log_end_offset
    dirs = {tp: manager.core.log_manager.log_dir_of(tp) for tp in (A0, A1)}
    assert set(dirs.values()) == {first, second}  # one partition in each

    described = by_path(describe_log_dirs(manager.core, None))
    assert list(described) == [str(first.absolute()), str(second.absolute())]
    for tp, log_dir in dirs.items():
        assert log_dir is not None
        d = described[str(log_dir.absolute())]
        assert d.error_code is ErrorCode.none
        log = manager.core.log_manager.logs[tp]
        assert d.topics == {"a": [LogDirPartition(tp.partition, log.size, 0)]}
        assert d.total_bytes == shutil.disk_usage(log_dir).total
        assert 0 < d.usable_bytes <= d.total_bytes
    assert (
        manager.core.log_manager.logs[A0].size
        > 0
        == manager.core.log_manager.logs[A1].size
    )


def test_only_the_partitions_asked_for_and_held_are_listed(tmp_path: Path) -> None:
    # Guarantee: a request naming partitions lists those this broker holds; a topic or
    # partition it does not hold is absent, not an error (as in Kafka); a dir holding
    # none of them is still described, with no topics.
    manager, _first, _second = two_dirs(tmp_path)
    lead(manager, A0)
    lead(manager, A1)
    asked = {A0, TopicPartition("a", 7), TopicPartition("nope", 0)}
    described = describe_log_dirs(manager.core, asked)
    assert [d.error_code for d in described] == [ErrorCode.none] * 2
    listed = [
        (name, p.partition)
        for d in described
        for name, ps in d.topics.items()
        for p in ps
    ]
    assert listed == [("a", 0)]


def test_a_log_no_replica_owns_has_no_lag_to_give(tmp_path: Path) -> None:
    # Guarantee: a log in a dir with no online replica of it (not yet made leader or
    # follower) answers offset lag -1, Kafka's INVALID_OFFSET_LAG.
    manager, _first, _second = two_dirs(tmp_path)
    stray = TopicPartition("stray", 0)
    manager.core.log_manager.get_or_create_log(stray)
    [entry] = [
        p
        for d in describe_log_dirs(manager.core, None)
        for p in d.topics.get("stray", [])
    ]
    assert entry == LogDirPartition(0, 0, INVALID_OFFSET_LAG)


def test_an_offline_dir_answers_kafka_storage_error(tmp_path: Path) -> None:
    # Guarantee: a dir taken offline (a failed write) answers KAFKA_STORAGE_ERROR with
    # no replicas and no volume bytes; the other dir is described as before.
    manager, _first, _second = two_dirs(tmp_path)
    lead(manager, A0)
    lead(manager, A1)
    broken = manager.core.log_manager.log_dir_of(A1)
    assert broken is not None
    manager.core.log_manager.mark_dir_offline(broken, "a write failed")
    described = by_path(describe_log_dirs(manager.core, None))
    assert described[str(broken.absolute())] == LogDirDescription(
        str(broken.absolute()), ErrorCode.kafka_storage_error
    )
    [healthy] = [d for path, d in described.items() if path != str(broken.absolute())]
    assert healthy.error_code is ErrorCode.none
    assert [p.partition for p in healthy.topics["a"]] == [0]
    assert healthy.total_bytes > 0
