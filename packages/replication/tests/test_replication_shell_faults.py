"""ReplicaManagerShell under faults: no exception in a background task ends the shell.

Each test injects a failure (a method made to raise, for one partition or once) into the
running shell and shows it goes on as its policy says: the expiration reaper and the
HW checkpoint log the failure once and keep their schedule; a checkpoint the disk
refuses takes that log dir offline (Kafka's LogDirFailureChannel); the isr-expiration
task skips the one partition whose check raises; AlterPartition proposals whose send
failed are sent again after the backoff (Kafka's AlterPartitionManager). Virtual time
(``autojump_clock``), as in ``test_replication_shell.py``.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, FatalFaultError, TopicPartition
from minikafka.log import LogManager, OffsetCheckpointFile
from minikafka.log.testing import ManualClock, value_batch
from minikafka.replication import (
    HIGH_WATERMARK_CHECKPOINT,
    FetchPartition,
    IsrChangeAnswer,
    IsrChangeProposal,
    Partition,
    PartitionState,
    ProducePartitionResult,
    ProduceResponse,
    ReplicaManager,
    ReplicaManagerResult,
    ReplicaManagerShell,
)
from minikafka.replication.testing import (
    OTHER,
    TP,
    Answers,
    FetchAnswer,
    ProduceAnswers,
    SettingsTable,
    consumer_params,
    discard,
    lead,
    partition_state,
    replica_manager_core,
)

LOGGER = "minikafka.replication"


@asynccontextmanager
async def running(manager: ReplicaManagerShell) -> AsyncIterator[float]:
    """The shell's tasks running until the block ends; the block gets the start time."""
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield trio.current_time()
        nursery.cancel_scope.cancel()


def errors_logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    """How many ERROR lines (with a traceback or not) mention ``text``."""
    return sum(
        1
        for r in caplog.records
        if r.levelno >= logging.ERROR and text in r.getMessage()
    )


@attrs.define(eq=False)
class Produced:
    """A produce callback that keeps its answer and wakes whoever waits for it."""

    answers: ProduceAnswers = attrs.field(factory=ProduceAnswers)
    done: trio.Event = attrs.field(factory=trio.Event)

    def __call__(self, answer: dict[TopicPartition, ProducePartitionResult]) -> None:
        self.answers(answer)
        self.done.set()

    async def wait(self) -> ProducePartitionResult:
        with trio.fail_after(120):  # virtual seconds
            await self.done.wait()
        [result] = self.answers.only.values()
        return result


def produce(
    manager: ReplicaManagerShell, tp: TopicPartition, acks: Acks = Acks.LEADER
) -> Produced:
    produced = Produced()
    manager.append_records(60_000, acks, {tp: value_batch(1)}, produced)
    return produced


# --- the expiration reaper -----------------------------------------------------------------


@attrs.define(eq=False)
class Timed(Answers[FetchAnswer]):
    """A fetch callback that keeps when it was answered and wakes whoever waits."""

    times: list[float] = attrs.field(factory=list)
    arrived: trio.Event = attrs.field(factory=trio.Event)

    def __call__(self, answer: FetchAnswer) -> None:
        super().__call__(answer)
        self.times.append(trio.current_time())
        self.arrived.set()

    async def wait(self) -> float:
        with trio.fail_after(60):  # virtual seconds
            await self.arrived.wait()
        return self.times[0]


async def test_a_failed_expiry_round_is_logged_once_and_the_reaper_goes_on(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager = ReplicaManagerShell(replica_manager_core(tmp_path))
    lead(manager, TP)
    real_on_timer = ReplicaManager.on_timer
    failures = [RuntimeError("a bug in one expiry round")]

    def on_timer(self: ReplicaManager, now: float) -> ReplicaManagerResult:
        if failures:
            raise failures.pop()
        return real_on_timer(self, now)

    monkeypatch.setattr(ReplicaManager, "on_timer", on_timer)
    params = consumer_params(max_wait_ms=500, min_bytes=1)
    first, later = Timed(), Timed()
    async with running(manager) as start:
        manager.fetch_messages(params, [FetchPartition(TP, 0, 1 << 20)], first)
        # Due at 0.5 s; its round fails; the next, one backoff later, answers it.
        backoff = manager.task_retry_backoff_ms / 1000
        assert await first.wait() == pytest.approx(start + 0.5 + backoff)
        manager.fetch_messages(params, [FetchPartition(TP, 0, 1 << 20)], later)
        assert await later.wait() == pytest.approx(start + 1.0 + backoff)
    [(_, result)] = later.only
    assert result.error_code is ErrorCode.none
    assert errors_logged(caplog, "expiring parked requests failed") == 1
    assert "a bug in one expiry round" in caplog.text


# --- the high-watermark checkpoint -----------------------------------------------------------


def two_dir_manager(tmp_path: Path) -> tuple[ReplicaManagerShell, Path, Path]:
    """A shell over two log dirs, TP's log in the first and OTHER's in the second."""
    first, second = tmp_path / "a", tmp_path / "b"
    logs = LogManager.startup([first, second], clock=ManualClock())
    core = ReplicaManager(1, logs, SettingsTable())
    manager = ReplicaManagerShell(core, high_watermark_checkpoint_interval_ms=5_000)
    lead(manager, TP)
    lead(manager, OTHER)
    assert logs.log_dir_of(TP) == first
    assert logs.log_dir_of(OTHER) == second
    return manager, first, second


def refuse_hw_checkpoint(
    monkeypatch: pytest.MonkeyPatch, log_dir: Path, err: int
) -> list[Path]:
    """Every write of ``log_dir``'s HW checkpoint fails with ``err``; returns the list of
    the HW checkpoints written."""
    written: list[Path] = []
    real_write = OffsetCheckpointFile.write

    def write(
        self: OffsetCheckpointFile, offsets: Mapping[TopicPartition, int]
    ) -> None:
        path = self.path
        if path.name == HIGH_WATERMARK_CHECKPOINT:
            if path.parent == log_dir:
                raise OSError(err, os.strerror(err), str(path))
            written.append(path)
        real_write(self, offsets)

    monkeypatch.setattr(OffsetCheckpointFile, "write", write)
    return written


async def test_a_hw_checkpoint_the_disk_refuses_takes_that_log_dir_offline(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager, first, second = two_dir_manager(tmp_path)
    written = refuse_hw_checkpoint(monkeypatch, first, errno.EIO)
    async with running(manager):
        # An acks=all produce parked on TP (follower 2 has not fetched)...
        lead(manager, TP, (1, 2), isr=(1, 2), leader_epoch=1)
        waiting = produce(manager, TP, Acks.ALL)
        # ... is answered at once when the checkpoint fails (t = 5 s), not at its
        # timeout: its partition can no longer promise anything.
        assert (await waiting.wait()).error_code is ErrorCode.kafka_storage_error
        assert first in manager.core.log_manager.offline_dirs
        assert manager.is_offline(TP)
        assert not manager.is_offline(OTHER)
        assert (await produce(manager, TP).wait()).error_code is (
            ErrorCode.kafka_storage_error
        )
        # The other dir serves, and its checkpoint is written on schedule.
        assert (await produce(manager, OTHER).wait()).error_code is ErrorCode.none
        await trio.sleep(10)
    assert set(written) == {second / HIGH_WATERMARK_CHECKPOINT}
    assert OffsetCheckpointFile(second / HIGH_WATERMARK_CHECKPOINT).read() == {OTHER: 1}
    assert f"log dir {first} is offline" in caplog.text


async def test_a_full_disk_leaves_the_dir_online_and_the_checkpoint_is_written_later(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager, first, _ = two_dir_manager(tmp_path)
    refuse_hw_checkpoint(monkeypatch, first, errno.ENOSPC)
    async with running(manager):
        await trio.sleep(5.5)
        assert not manager.core.log_manager.offline_dirs
        assert (await produce(manager, TP).wait()).error_code is ErrorCode.none
        monkeypatch.undo()  # space is freed
        await trio.sleep(5)
    assert OffsetCheckpointFile(first / HIGH_WATERMARK_CHECKPOINT).read() == {TP: 1}
    assert "No space left on device" in caplog.text
    assert "written again at the next interval" in caplog.text


async def test_an_unexpected_checkpoint_failure_is_logged_once_and_the_schedule_kept(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    manager = ReplicaManagerShell(
        replica_manager_core(tmp_path), high_watermark_checkpoint_interval_ms=5_000
    )
    lead(manager, TP)
    real = ReplicaManager.checkpoint_high_watermarks
    attempts: list[float] = []

    def checkpoint(self: ReplicaManager) -> None:
        attempts.append(trio.current_time())
        if len(attempts) <= 2:  # the same bug twice: logged once
            raise KeyError("a bug")
        real(self)

    monkeypatch.setattr(ReplicaManager, "checkpoint_high_watermarks", checkpoint)
    async with running(manager) as start:
        manager.append_records(30_000, Acks.LEADER, {TP: value_batch(3)}, discard)
        await trio.sleep(15.5)
    assert attempts == [pytest.approx(start + t) for t in (5.0, 10.0, 15.0)]
    assert errors_logged(caplog, "high-watermark checkpoint failed") == 1
    assert "succeeded again" in caplog.text
    assert OffsetCheckpointFile(tmp_path / HIGH_WATERMARK_CHECKPOINT).read() == {TP: 3}


# --- the isr-expiration task and AlterPartition --------------------------------------------


@attrs.define(eq=False)
class FakeController:
    """Answers AlterPartition as the controller would; ``failures`` are what the first
    sends raise or answer instead (an exception, or an error code for every proposal)."""

    failures: list[Exception | ErrorCode] = attrs.field(factory=list)
    asked: list[tuple[float, list[IsrChangeProposal]]] = attrs.field(factory=list)
    answered: trio.Event = attrs.field(factory=trio.Event)
    """Set when a failure has been answered."""

    async def __call__(
        self, proposals: list[IsrChangeProposal]
    ) -> list[IsrChangeAnswer]:
        self.asked.append((trio.current_time(), proposals))
        await trio.sleep(0.01)  # a round trip
        if self.failures:
            failure = self.failures.pop(0)
            self.answered.set()
            if isinstance(failure, Exception):
                raise failure
            return [IsrChangeAnswer(p.topic_partition, failure) for p in proposals]
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


def isr_manager(
    tmp_path: Path, controller: FakeController
) -> tuple[ReplicaManagerShell, float]:
    """TP and OTHER led with follower 2 in the ISR, which never fetches."""
    manager = ReplicaManagerShell(
        replica_manager_core(tmp_path),
        replica_lag_time_max_ms=10_000,
        alter_partition=controller,
    )
    lead(manager, TP, (1, 2), isr=(1, 2))
    lead(manager, OTHER, (1, 2), isr=(1, 2))
    return manager, manager.alter_partition_retry_backoff_ms / 1000


async def test_one_partitions_failing_isr_check_does_not_stop_the_others(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    controller = FakeController()
    manager, _ = isr_manager(tmp_path, controller)
    real = Partition.maybe_shrink_isr

    def maybe_shrink_isr(self: Partition, now: float, max_lag: float) -> bool:
        if self.topic_partition == TP:
            raise RuntimeError("a bug in TP's ISR check")
        return real(self, now, max_lag)

    monkeypatch.setattr(Partition, "maybe_shrink_isr", maybe_shrink_isr)
    async with running(manager) as start:
        stuck, moving = (
            produce(manager, TP, Acks.ALL),
            produce(manager, OTHER, Acks.ALL),
        )
        # OTHER's follower leaves the ISR at the first check after the lag (15 s)...
        assert (await moving.wait()).error_code is ErrorCode.none
        assert trio.current_time() - start < 15.5
        await trio.sleep(30)  # ... and TP's failing check runs (and fails) 6 more times
        assert not stuck.answers.answered
    asked = [p.topic_partition for _, proposals in controller.asked for p in proposals]
    assert asked == [OTHER]
    other = manager.get_partition(OTHER)
    assert other is not None
    assert other.isr == frozenset({1})
    assert errors_logged(caplog, f"the ISR check of {TP} failed") == 1


async def test_a_send_that_raised_is_retried_after_the_backoff(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    controller = FakeController([ConnectionError("the channel broke")])
    manager, backoff = isr_manager(tmp_path, controller)
    async with running(manager):
        waiting = produce(manager, TP, Acks.ALL)
        assert (await waiting.wait()).error_code is ErrorCode.none
    [(first, proposals), (again, resent)] = controller.asked
    assert resent == proposals  # the same proposals, not dropped and made anew
    assert again - first == pytest.approx(0.01 + backoff)
    partition = manager.get_partition(TP)
    assert partition is not None
    assert partition.isr == frozenset({1})
    assert errors_logged(caplog, "sending AlterPartition failed") == 1
    assert "the channel broke" in caplog.text


async def test_a_send_that_timed_out_is_retried_until_answered(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    controller = FakeController([ErrorCode.request_timed_out] * 3)
    manager, backoff = isr_manager(tmp_path, controller)
    async with running(manager):
        waiting = produce(manager, TP, Acks.ALL)
        assert (await waiting.wait()).error_code is ErrorCode.none
    times = [t for t, _ in controller.asked]
    assert len(times) == 4
    assert [b - a for a, b in itertools.pairwise(times)] == [
        pytest.approx(0.01 + backoff)
    ] * 3
    assert all(proposals == controller.asked[0][1] for _, proposals in controller.asked)
    warnings = [r for r in caplog.records if "was not answered" in r.getMessage()]
    assert [r.levelno for r in warnings] == [logging.WARNING] + [logging.DEBUG] * 2


async def test_a_proposal_made_moot_by_new_metadata_is_not_sent_again(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    controller = FakeController([ErrorCode.request_timed_out])
    manager, _ = isr_manager(tmp_path, controller)
    async with running(manager):
        with trio.fail_after(60):
            await controller.answered.wait()
        # The controller's own change comes before the proposal is sent again: a new
        # leader epoch and ISR for TP, which make TP's proposal moot, not OTHER's.
        lead(manager, TP, (1, 2), isr=(1,), leader_epoch=1, partition_epoch=1)
        await trio.sleep(1)
    sent = [{p.topic_partition for p in proposals} for _, proposals in controller.asked]
    assert sent == [{TP, OTHER}, {OTHER}]


async def test_a_proposal_refused_with_an_error_kafka_retries_is_sent_again(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """NOT_CONTROLLER is none of the answers Kafka's handleAlterPartitionError decides
    on: the proposal stays pending (the slow follower still counted) and goes again
    after the backoff, until the controller accepts it."""
    controller = FakeController([ErrorCode.not_controller])
    manager, backoff = isr_manager(tmp_path, controller)
    async with running(manager):
        waiting = produce(manager, TP, Acks.ALL)
        assert (await waiting.wait()).error_code is ErrorCode.none
    [(first, proposals), (again, resent), *_] = controller.asked
    assert resent == proposals
    assert again - first == pytest.approx(0.01 + backoff)


async def test_an_answer_to_a_proposal_the_metadata_replaced_is_ignored(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """During the round trip the metadata brings TP's state at a newer partition epoch
    and the leader makes a new proposal on it: the answer to the first proposal must
    not settle the second (Kafka applies an answer only while the pending state is the
    one it answers)."""
    manager: ReplicaManagerShell | None = None
    first_answered = trio.Event()

    async def controller(
        proposals: list[IsrChangeProposal],
    ) -> list[IsrChangeAnswer]:
        assert manager is not None
        if first_answered.is_set():
            await trio.sleep_forever()  # the new proposal stays in flight
        lead(manager, TP, (1, 2), isr=(1, 2), partition_epoch=5)
        manager.core.maybe_shrink_isr(manager.now() + 60.0, 10.0)
        first_answered.set()
        return [
            IsrChangeAnswer(p.topic_partition, ErrorCode.none, p.new_isr, 0, 5)
            for p in proposals
        ]

    manager = ReplicaManagerShell(
        replica_manager_core(tmp_path),
        replica_lag_time_max_ms=10_000,
        alter_partition=controller,
    )
    lead(manager, TP, (1, 2), isr=(1, 2))
    async with running(manager):
        with trio.fail_after(60):
            await first_answered.wait()
        await trio.sleep(1)
        partition = manager.get_partition(TP)
        assert partition is not None
        pending = partition.pending_isr_change
        assert pending is not None
        assert pending.proposal.partition_epoch == 5
        assert partition.isr == frozenset({1, 2})


# --- the other callers of the shell -------------------------------------------------------


def test_a_failing_answer_does_not_escape_into_the_task_whose_write_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        manager = ReplicaManagerShell(replica_manager_core(tmp_path))
        lead(manager, TP, (1, 2), isr=(1, 2))

        def respond(_: dict[TopicPartition, ProducePartitionResult]) -> None:
            raise RuntimeError("a broken callback")

        manager.append_records(30_000, Acks.ALL, {TP: value_batch(1)}, respond)
        # What the shell's task does with a dir a failed flush took offline: a failing
        # answer is logged, never raised into the task.
        manager.core.log_manager.mark_dir_offline(tmp_path, "fsync failed")
        manager.answer_offline_dirs(manager.core.log_manager.take_offline_dirs())

    trio.run(main)
    assert errors_logged(caplog, "answering the requests waiting on offline") == 1


def test_a_partition_that_fails_to_become_leader_is_offline_and_the_others_lead(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = replica_manager_core(tmp_path)
    real = Partition.make_leader

    def make_leader(self: Partition, state: PartitionState, now: float) -> bool:
        if self.topic_partition == TP:
            raise RuntimeError("a bug in TP's state change")
        return real(self, state, now)

    monkeypatch.setattr(Partition, "make_leader", make_leader)
    leaders = {tp: (uuid.uuid4(), partition_state((1,))) for tp in (TP, OTHER)}
    assert not core.become_leader_or_follower(leaders, {}, 0.0)
    other = core.get_partition(OTHER)
    assert other is not None
    assert other.is_leader
    entries = {TP: value_batch(1), OTHER: value_batch(1)}
    [answer] = core.append_records(30_000, Acks.LEADER, entries, 1, 0.0).replies
    assert isinstance(answer, ProduceResponse)
    assert answer.results[TP].error_code is ErrorCode.kafka_storage_error
    assert "a bug in TP's state change" in (answer.results[TP].error_message or "")
    assert answer.results[OTHER].error_code is ErrorCode.none
    assert errors_logged(caplog, f"{TP} is offline until restart") == 1


async def test_a_fatal_fault_is_not_survived(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # FatalFaultError ends the process (minikafka.common): no guard keeps a task alive
    # past one.
    manager = ReplicaManagerShell(replica_manager_core(tmp_path))

    def checkpoint(self: ReplicaManager) -> None:
        raise FatalFaultError("a node that cannot vouch for its state")

    monkeypatch.setattr(ReplicaManager, "checkpoint_high_watermarks", checkpoint)
    with pytest.RaisesGroup(FatalFaultError, flatten_subgroups=True):
        async with running(manager):
            await trio.sleep(60)
