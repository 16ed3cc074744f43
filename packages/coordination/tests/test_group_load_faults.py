"""GroupCoordinatorShell under faults: Kafka's CoordinatorRuntime policies.

A partition of ``__consumer_offsets`` that fails to load is left unloaded (its groups
answer COORDINATOR_LOAD_IN_PROGRESS while it loads, NOT_COORDINATOR after the failure)
while the other partitions serve, and a later leadership loads it again; a group
operation that raises is answered with its error (UNKNOWN_SERVER_ERROR for a bug) and
the next request is served; an append or a timer round that raises does not stop the
service. The service runs in trio on virtual time (``autojump_clock``), over an
``__consumer_offsets`` kept in memory.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager

import attrs
import pytest
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupCoordinatorShell,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    StoredRecord,
    SyncGroupRequest,
    partition_for,
)

PARTITIONS = 2
CONFIG = GroupConfig(
    group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=PARTITIONS
)
TP = TopicPartition("orders", 0)


def group_on(partition: int, name: str = "g") -> str:
    """A group id that hashes onto ``partition``."""
    return next(
        f"{name}{i}"
        for i in range(1000)
        if partition_for(f"{name}{i}", PARTITIONS) == partition
    )


G0, G1 = group_on(0), group_on(1)


@attrs.define(eq=False)
class MemoryOffsetsTopic:
    """``__consumer_offsets`` as lists, every append committed at once. ``broken``
    partitions raise after their first record when read; ``while_loading`` is called
    in the middle of each read (to look at the coordinator then)."""

    partitions: dict[int, list[StoredRecord]] = attrs.field(factory=dict)
    broken: set[int] = attrs.field(factory=set)
    while_loading: Callable[[int], object] = lambda _: None
    append_error: Exception | None = None
    held: list[Callable[[ErrorCode], None]] | None = None
    """When a list: each append's report is kept here for the test to make."""

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
        producer: tuple[int, int] | None = None,
    ) -> None:
        if self.append_error is not None:
            error, self.append_error = self.append_error, None
            raise error
        if self.held is not None:
            self.held.append(on_committed)
            return
        self.partitions.setdefault(partition, []).extend(records)
        on_committed(ErrorCode.none)

    def read(self, partition: int) -> Iterator[StoredRecord]:
        for i, record in enumerate(self.partitions.get(partition, [])):
            yield record
            if i == 0:
                self.while_loading(partition)
                if partition in self.broken:
                    raise OSError(
                        5, "Input/output error", f"__consumer_offsets-{partition}"
                    )


def service_over(topic: MemoryOffsetsTopic) -> GroupCoordinatorShell:
    core = GroupCoordinator(CONFIG, random.Random(0))
    return GroupCoordinatorShell(core, topic, clock=trio.current_time)


@asynccontextmanager
async def running(service: GroupCoordinatorShell) -> AsyncIterator[None]:
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        yield
        nursery.cancel_scope.cancel()


def commit(group: str, offset: int) -> OffsetCommitRequest:
    """A standalone commit (no member, generation -1), as an admin tool or an
    assign()-based consumer sends."""
    return OffsetCommitRequest(group, -1, "", ((TP, CommittedOffset(offset)),))


def errors_logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(
        1
        for r in caplog.records
        if r.levelno >= logging.ERROR and text in r.getMessage()
    )


async def stored_groups(*groups: str) -> MemoryOffsetsTopic:
    """An offsets topic holding two commits for each group, written by a coordinator
    that led every partition (as the previous leader did)."""
    topic = MemoryOffsetsTopic()
    writer = service_over(topic)
    for partition in range(PARTITIONS):
        writer.become_leader(partition)
    for group in groups:
        for offset in (5, 7):
            [(_, error)] = (await writer.commit_offsets(commit(group, offset))).errors
            assert error is ErrorCode.none
    return topic


# --- loading a partition --------------------------------------------------------------------


async def test_a_partition_that_fails_to_load_answers_not_coordinator_and_loads_later(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    topic = await stored_groups(G0, G1)
    service = service_over(topic)
    seen: dict[int, ErrorCode] = {}
    topic.while_loading = lambda p: seen.setdefault(p, service.core.group_status(G1))
    topic.broken = {1}
    async with running(service):
        assert service.become_leader(0) == 1
        assert service.become_leader(1) == 0  # the replay raised half-way
        # While it loaded its groups were LOAD_IN_PROGRESS; after the failure they are
        # NOT_COORDINATOR, and nothing half-replayed is served.
        assert seen[1] is ErrorCode.coordinator_load_in_progress
        assert service.core.group_status(G1) is ErrorCode.not_coordinator
        assert service.core.group(G1) is None
        assert service.fetch_offsets(G1, [TP]).error_code is ErrorCode.not_coordinator
        [(_, error)] = (await service.commit_offsets(commit(G1, 9))).errors
        assert error is ErrorCode.not_coordinator
        # The other partition, and the coordinator, serve on.
        fetched = service.fetch_offsets(G0, [TP])
        assert fetched.error_code is ErrorCode.none
        assert fetched.offsets == ((TP, CommittedOffset(7)),)
        [(_, error)] = (await service.commit_offsets(commit(G0, 8))).errors
        assert error is ErrorCode.none
        error, listed = service.list_groups()
        assert error is ErrorCode.none
        assert [g.group_id for g in listed] == [G0]
        # A later leadership of the partition (a new leader epoch) loads it again.
        topic.broken = set()
        assert service.become_leader(1) == 1
        assert service.fetch_offsets(G1, [TP]).offsets == ((TP, CommittedOffset(7)),)
    assert errors_logged(caplog, "loading __consumer_offsets-1 failed") == 1
    assert "NOT_COORDINATOR until this broker leads it again" in caplog.text


async def test_a_failed_load_does_not_stop_a_broker_that_leads_several_partitions(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Both partitions fail the same way: logged once each, and nothing escapes.
    topic = await stored_groups(G0, G1)
    topic.broken = {0, 1}
    service = service_over(topic)
    async with running(service):
        assert [service.become_leader(p) for p in range(PARTITIONS)] == [0, 0]
        assert service.core.group_status(G0) is ErrorCode.not_coordinator
        service.resign(0)  # a follower again: nothing to unload, nothing raised
    assert errors_logged(caplog, "loading __consumer_offsets-0 failed") == 1
    assert errors_logged(caplog, "loading __consumer_offsets-1 failed") == 1


# --- group operations -------------------------------------------------------------------------


class LeaderMoved(ApiError):
    error_code = ErrorCode.not_leader_or_follower


async def test_an_operation_that_raises_is_answered_and_the_next_one_served(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = service_over(await stored_groups())
    for partition in range(PARTITIONS):
        service.become_leader(partition)
    real = GroupCoordinator.commit_offsets
    failures: list[Exception] = [
        RuntimeError("a bug in OffsetCommit"),
        RuntimeError("a bug in OffsetCommit"),
        LeaderMoved("the log's leader moved"),
    ]

    def commit_offsets(
        self: GroupCoordinator,
        request_id: int,
        request: OffsetCommitRequest,
        now: float,
    ) -> object:
        if failures:
            raise failures.pop(0)
        return real(self, request_id, request, now)

    monkeypatch.setattr(GroupCoordinator, "commit_offsets", commit_offsets)
    async with running(service):
        answers = [
            (await service.commit_offsets(commit(G0, n))).errors for n in range(4)
        ]
        fetched = service.fetch_offsets(G0, [TP])
    # Kafka's handleOperationException: a bug is UNKNOWN_SERVER_ERROR, an error with a
    # code is mapped as a failed write's (NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR).
    assert answers == [
        ((TP, ErrorCode.unknown_server_error),),
        ((TP, ErrorCode.unknown_server_error),),
        ((TP, ErrorCode.not_coordinator),),
        ((TP, ErrorCode.none),),
    ]
    assert fetched.offsets == ((TP, CommittedOffset(3)),)
    # The same bug twice is logged once; the different failure once more.
    assert errors_logged(caplog, "OffsetCommit failed") == 2
    assert "it is answered UNKNOWN_SERVER_ERROR" in caplog.text


async def test_a_read_operation_that_raises_answers_unknown_server_error(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = service_over(await stored_groups(G0))
    service.become_leader(0)

    def broken(*_: object, **__: object) -> None:
        raise KeyError("a bug")

    for name in ("fetch_offsets", "describe_group", "list_groups", "delete_group"):
        monkeypatch.setattr(GroupCoordinator, name, broken)
    assert service.fetch_offsets(G0, [TP]).error_code is ErrorCode.unknown_server_error
    assert service.describe_group(G0)[0] is ErrorCode.unknown_server_error
    assert service.list_groups() == (ErrorCode.unknown_server_error, [])
    assert await service.delete_group(G0) is ErrorCode.unknown_server_error
    monkeypatch.undo()
    assert service.fetch_offsets(G0, [TP]).offsets == ((TP, CommittedOffset(7)),)
    assert errors_logged(caplog, "failed") == 4


async def test_an_append_that_raises_fails_its_write_and_answers_the_request(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    topic = await stored_groups()
    service = service_over(topic)
    for partition in range(PARTITIONS):
        service.become_leader(partition)
    async with running(service):
        topic.append_error = RuntimeError("a broken append")
        [(_, first)] = (await service.commit_offsets(commit(G0, 1))).errors
        [(_, second)] = (await service.commit_offsets(commit(G0, 2))).errors
        fetched = service.fetch_offsets(G0, [TP])
    assert (first, second) == (ErrorCode.unknown_server_error, ErrorCode.none)
    assert fetched.offsets == ((TP, CommittedOffset(2)),)
    assert errors_logged(caplog, "appending to __consumer_offsets-0 failed") == 1


async def test_delete_groups_is_answered_when_its_tombstones_commit() -> None:
    # Guarantee (Kafka's deleteGroups is a write operation): the answer waits for the
    # tombstones' append; a failed append is answered its error as a client sees it
    # (NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR) and the offsets are still served.
    topic = await stored_groups(G0)
    service = service_over(topic)
    service.become_leader(0)
    topic.held = []
    kept = ((TP, CommittedOffset(7)),)
    for report, answer, offsets in [
        (ErrorCode.not_leader_or_follower, ErrorCode.not_coordinator, kept),
        (ErrorCode.none, ErrorCode.none, ((TP, None),)),
    ]:
        answers: list[ErrorCode] = []

        async def delete() -> None:
            answers.append(await service.delete_group(G0))  # noqa: B023

        async with trio.open_nursery() as nursery:
            nursery.start_soon(delete)
            await trio.testing.wait_all_tasks_blocked()
            assert answers == []
            assert service.fetch_offsets(G0, [TP]).offsets == kept
            (on_committed,) = topic.held
            topic.held.clear()
            on_committed(report)
        assert answers == [answer]
        assert service.fetch_offsets(G0, [TP]).offsets == offsets


# --- the timers ---------------------------------------------------------------------------------


async def test_a_timer_round_that_raises_is_retried_and_sessions_still_expire(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = service_over(await stored_groups())
    for partition in range(PARTITIONS):
        service.become_leader(partition)
    real = GroupCoordinator.on_timer
    failures = [RuntimeError("a bug in a timer")]

    def on_timer(self: GroupCoordinator, now: float) -> object:
        if failures:
            raise failures.pop()
        return real(self, now)

    monkeypatch.setattr(GroupCoordinator, "on_timer", on_timer)
    async with running(service):
        join = JoinGroupRequest(
            G0, "", "consumer", (("range", b""),), 10_000, 10_000, version=3
        )
        with trio.fail_after(60):
            joined = await service.join_group(join)
        assert joined.error_code is ErrorCode.none
        member = joined.member_id
        synced = await service.sync_group(
            SyncGroupRequest(
                G0, joined.generation_id, member, assignments=((member, b"a"),)
            )
        )
        assert synced.error_code is ErrorCode.none
        alive = await service.heartbeat(
            HeartbeatRequest(G0, joined.generation_id, member)
        )
        assert alive.error_code is ErrorCode.none
        # The member goes quiet: its session still ends (10 s), in a later round.
        group = service.core.group(G0)
        assert group is not None
        await trio.sleep(10.5)
        assert group.state is GroupState.EMPTY
    assert errors_logged(caplog, "firing the group timers failed") == 1
