"""ReplicaManagerService, the trio shell: the expiration reaper and the HW checkpoint.

Virtual time (``autojump_clock``): the shell passes ``now=trio.current_time()`` to the
core, the same clock the reaper sleeps on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import LogManager, OffsetCheckpointFile
from minikafka.log.testing import ManualClock, value_batch
from minikafka.replication import (
    HIGH_WATERMARK_CHECKPOINT,
    FetchPartition,
    ProducePartitionResult,
    ReplicaManager,
    ReplicaManagerService,
)
from minikafka.replication.testing import (
    TP,
    Answers,
    FetchAnswer,
    ProduceAnswers,
    SettingsTable,
    consumer_params,
    discard,
    lead,
    replica_manager_core,
)


@attrs.define(eq=False)
class Timed(Answers[FetchAnswer]):
    """Keeps when each answer came, and wakes whoever waits for the next one."""

    times: list[float] = attrs.field(factory=list)
    arrived: trio.Event = attrs.field(factory=trio.Event)

    def __call__(self, answer: FetchAnswer) -> None:
        super().__call__(answer)
        self.times.append(trio.current_time())
        self.arrived.set()

    async def wait(self, count: int = 1) -> None:
        with trio.fail_after(60):  # virtual seconds
            while len(self.calls) < count:
                self.arrived = trio.Event()
                await self.arrived.wait()


def replica_manager(tmp_path: Path) -> ReplicaManagerService:
    return ReplicaManagerService(replica_manager_core(tmp_path))


@asynccontextmanager
async def running(manager: ReplicaManagerService) -> AsyncIterator[float]:
    """The shell running (its reaper and its checkpoint timer) until the block ends; the
    block is given the time it started at."""
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield trio.current_time()
        nursery.cancel_scope.cancel()


def long_poll(manager: ReplicaManagerService, max_wait_ms: int, answers: Timed) -> None:
    params = consumer_params(max_wait_ms=max_wait_ms, min_bytes=1)
    manager.fetch_messages(params, [FetchPartition(TP, 0, 1 << 20)], answers)
    assert not answers.answered


async def test_the_reaper_expires_a_long_poll_at_its_deadline(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    answers = Timed()
    async with running(manager) as start:
        long_poll(manager, 500, answers)
        await answers.wait()
    assert answers.times == [pytest.approx(start + 0.5)]
    [(_, result)] = answers.only
    assert result.error_code is ErrorCode.none
    assert result.records is None
    assert manager.core.fetch_purgatory.delayed == 0


async def test_an_earlier_deadline_parked_later_wakes_the_reaper(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    slow, quick = Timed(), Timed()
    async with running(manager) as start:
        long_poll(manager, 10_000, slow)
        await trio.testing.wait_all_tasks_blocked()  # the reaper now waits for t+10
        long_poll(manager, 1_000, quick)
        await quick.wait()
        assert quick.times == [pytest.approx(start + 1.0)]
        assert not slow.answered
        await slow.wait()
    assert slow.times == [pytest.approx(start + 10.0)]


async def test_a_long_poll_answered_by_data_is_not_answered_again_at_its_deadline(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP)
    answers, later = Timed(), Timed()
    async with running(manager) as start:
        long_poll(manager, 500, answers)
        manager.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, discard)
        assert answers.times == [start]
        params = consumer_params(max_wait_ms=2_000, min_bytes=1)
        manager.fetch_messages(params, [FetchPartition(TP, 2, 1 << 20)], later)
        await later.wait()  # the reaper ran past the first deadline meanwhile
    assert len(answers.calls) == 1
    assert later.times == [pytest.approx(start + 2.0)]


async def test_the_reaper_times_out_an_acks_all_produce(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    manager = replica_manager(tmp_path)
    lead(manager, TP, (1, 2), isr=(1, 2))
    done = trio.Event()
    answers = ProduceAnswers()

    def respond(answer: dict[TopicPartition, ProducePartitionResult]) -> None:
        answers(answer)
        done.set()

    async with running(manager) as start:
        manager.append_records(3_000, Acks.ALL, {TP: value_batch(1)}, respond)
        with trio.fail_after(60):
            await done.wait()
        elapsed = trio.current_time() - start
    assert elapsed == pytest.approx(3.0)
    assert answers.only[TP].error_code is ErrorCode.request_timed_out


@attrs.define(eq=False)
class RecordingManager(ReplicaManager):
    """Records when the HW checkpoint is written; the first ``failures`` writes fail."""

    failures: int = 0
    written: list[float] = attrs.field(init=False, factory=list)
    attempted: trio.Event = attrs.field(init=False, factory=trio.Event)

    def checkpoint_high_watermarks(self) -> None:
        self.attempted.set()
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")
        super().checkpoint_high_watermarks()
        self.written.append(trio.current_time())

    async def wait_for_writes(self, count: int) -> None:
        with trio.fail_after(60):
            while len(self.written) < count:
                self.attempted = trio.Event()
                await self.attempted.wait()


def recording_manager(tmp_path: Path, failures: int = 0) -> RecordingManager:
    logs = LogManager.startup([tmp_path], clock=ManualClock())
    return RecordingManager(1, logs, SettingsTable(), failures=failures)


async def test_the_hw_checkpoint_is_written_on_schedule(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    core = recording_manager(tmp_path)
    manager = ReplicaManagerService(core, high_watermark_checkpoint_interval_ms=5_000)
    lead(manager, TP)
    checkpoint = OffsetCheckpointFile(tmp_path / HIGH_WATERMARK_CHECKPOINT)
    async with running(manager) as start:
        manager.append_records(30_000, Acks.LEADER, {TP: value_batch(3)}, discard)
        await core.wait_for_writes(1)
        assert checkpoint.read() == {TP: 3}
        manager.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, discard)
        await core.wait_for_writes(2)
        assert checkpoint.read() == {TP: 5}
    assert core.written == [pytest.approx(start + 5.0), pytest.approx(start + 10.0)]


async def test_a_failed_checkpoint_is_logged_and_retried_at_the_next_tick(
    autojump_clock: trio.testing.MockClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    core = recording_manager(tmp_path, failures=1)
    manager = ReplicaManagerService(core, high_watermark_checkpoint_interval_ms=5_000)
    lead(manager, TP)
    async with running(manager) as start:
        await core.wait_for_writes(1)
    assert core.written == [pytest.approx(start + 10.0)]
    assert "high-watermark checkpoint failed" in caplog.text
    assert OffsetCheckpointFile(tmp_path / HIGH_WATERMARK_CHECKPOINT).read() == {TP: 0}
