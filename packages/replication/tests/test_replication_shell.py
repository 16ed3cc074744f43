"""ReplicaManagerShell, the trio shell: the expiration reaper and the HW checkpoint.

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
    IsrChangeAnswer,
    IsrChangeProposal,
    ProducePartitionResult,
    ReplicaManager,
    ReplicaManagerShell,
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


def replica_manager(tmp_path: Path) -> ReplicaManagerShell:
    return ReplicaManagerShell(replica_manager_core(tmp_path))


@asynccontextmanager
async def running(manager: ReplicaManagerShell) -> AsyncIterator[float]:
    """The shell running (its reaper and its checkpoint timer) until the block ends; the
    block is given the time it started at."""
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield trio.current_time()
        nursery.cancel_scope.cancel()


def long_poll(manager: ReplicaManagerShell, max_wait_ms: int, answers: Timed) -> None:
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
    manager = ReplicaManagerShell(core, high_watermark_checkpoint_interval_ms=5_000)
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
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = recording_manager(tmp_path, failures=1)
    manager = ReplicaManagerShell(core, high_watermark_checkpoint_interval_ms=5_000)
    lead(manager, TP)
    async with running(manager) as start:
        await core.wait_for_writes(1)
    assert core.written == [pytest.approx(start + 10.0)]
    assert "high-watermark checkpoint failed" in caplog.text
    assert OffsetCheckpointFile(tmp_path / HIGH_WATERMARK_CHECKPOINT).read() == {TP: 0}


@attrs.define(eq=False)
class FakeController:
    """Accepts every AlterPartition with the next partition epoch, as the controller
    would for a leader in its current epoch; keeps what it was asked."""

    asked: list[IsrChangeProposal] = attrs.field(factory=list)

    async def __call__(
        self, proposals: list[IsrChangeProposal]
    ) -> list[IsrChangeAnswer]:
        self.asked.extend(proposals)
        await trio.sleep(0.01)  # a round trip
        return [
            IsrChangeAnswer(
                p.topic_partition,
                ErrorCode.none,
                p.new_isr,
                p.leader_epoch,
                p.partition_epoch + 1,
            )
            for p in proposals
        ]


async def test_a_stalled_follower_leaves_the_isr_and_acks_all_completes(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # Seed 000: acks=all waits for the ISR; a follower that stops fetching holds it back
    # only until replica.lag.time.max.ms, when the leader's AlterPartition removes it.
    controller = FakeController()
    manager = ReplicaManagerShell(
        replica_manager_core(tmp_path),
        replica_lag_time_max_ms=10_000,
        alter_partition=controller,
    )
    lead(manager, TP, (1, 2), isr=(1, 2))
    answers = ProduceAnswers()
    done = trio.Event()

    def respond(answer: dict[TopicPartition, ProducePartitionResult]) -> None:
        answers(answer)
        done.set()

    async with running(manager) as start:
        manager.append_records(60_000, Acks.ALL, {TP: value_batch(3)}, respond)
        assert not answers.calls  # follower 2 has not fetched: the HW is 0
        with trio.fail_after(60):  # virtual seconds
            await done.wait()
        finished = trio.current_time()
    [proposal] = controller.asked
    assert proposal.new_isr == (1,)
    # Not before the lag (10 s), and at the first check after it (every 5 s).
    assert 10.0 < finished - start <= 15.1
    assert answers.only[TP].error_code is ErrorCode.none
    partition = manager.get_partition(TP)
    assert partition is not None
    assert partition.isr == frozenset({1})
    assert partition.log.high_watermark == 3
