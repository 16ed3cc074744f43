"""The followers' shell (``ReplicaFetcherManager``): what arrives for a partition that
moved on while the request was in flight is dropped, and one partition's failure is
that partition's alone.

A follower re-added in a newer leader epoch (the leader changed while an
OffsetForLeaderEpoch or a Fetch was on the wire) must take neither the old epoch's
truncation point nor the old fetch's records: both describe a log the partition no
longer follows. The network is replaced by functions that re-add the partition in
epoch 1 before they answer for epoch 0.
"""

from __future__ import annotations

import errno
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker._fetch_session_handler import (
    SessionFetchRequest,
    SessionFetchResponse,
)
from minikafka.broker._fetch_sessions import INVALID_SESSION_ID
from minikafka.broker._replica_fetchers import FETCHER_STATE_FILE, ReplicaFetcherManager
from minikafka.common import TopicPartition
from minikafka.log.testing import value_batch
from minikafka.net import DisconnectedError, NetworkClient, Node
from minikafka.replication import (
    EpochAnswer,
    EpochRequest,
    FetchedPartition,
    FetchPartition,
    FollowerAppended,
    Partition,
    PartitionState,
    ReplicaManagerShell,
)
from minikafka.replication.testing import replica_manager_core
from minikafka.trace.testing import RecordingTracer

TP = TopicPartition("t", 0)
LEADER = Node(1, "127.0.0.1", 1)


EpochWire = Callable[[list[EpochRequest]], Awaitable[list[EpochAnswer]]]
FetchWire = Callable[[list[FetchPartition]], Awaitable[list[FetchedPartition]]]


@attrs.define(eq=False)
class Unwired(ReplicaFetcherManager):
    """The fetcher shell with its two requests answered by the test, not a leader."""

    epoch_wire: EpochWire | None = None
    fetch_wire: FetchWire | None = None
    session_id: int = INVALID_SESSION_ID
    """The session the leader's answers name (0: it opens none)."""
    sent: list[SessionFetchRequest] = attrs.field(factory=list)

    async def _offsets_for_leader_epoch(
        self, client: NetworkClient, node: Node, asked: list[EpochRequest]
    ) -> list[EpochAnswer]:
        assert self.epoch_wire is not None
        return await self.epoch_wire(asked)

    async def _fetch(
        self, client: NetworkClient, node: Node, fetch: SessionFetchRequest
    ) -> SessionFetchResponse:
        """The leader answers what the request names, in session ``session_id``."""
        assert self.fetch_wire is not None
        self.sent.append(fetch)
        fetched = await self.fetch_wire(list(fetch.partitions))
        return SessionFetchResponse(ErrorCode.none, self.session_id, fetched)


def follower(tmp_path: Path) -> tuple[ReplicaManagerShell, Unwired]:
    service = ReplicaManagerShell(replica_manager_core(tmp_path, broker_id=2))
    return service, Unwired(2, service)


def follow(service: ReplicaManagerShell, epoch: int) -> None:
    state = PartitionState(1, epoch, epoch, (1, 2), (1, 2))
    service.become_leader_or_follower({}, {TP: (uuid.UUID(int=1), state)})


async def test_an_epoch_answer_for_an_epoch_left_behind_truncates_nothing(
    tmp_path: Path,
) -> None:
    service, manager = follower(tmp_path)
    follow(service, 0)
    partition = service.get_partition(TP)
    assert partition is not None
    partition.log.append_as_follower(value_batch(5))  # five records from leader 1
    partition.log.leader_epoch_cache.assign(0, 0)  # ...in its epoch 0
    manager.add_partitions({TP: LEADER})
    [fetcher] = manager.fetchers.values()

    async def answer_after_a_move(asked: list[EpochRequest]) -> list[EpochAnswer]:
        # The leader changed meanwhile: epoch 1, truncating again (the same fetcher
        # keeps the partition, as when it still fetches others from that broker).
        follow(service, 1)
        fetcher.core.remove_partitions([TP])
        fetcher.core.add_partitions([TP])
        return [EpochAnswer(r.topic_partition, ErrorCode.none, 0, 0) for r in asked]

    manager.epoch_wire = answer_after_a_move
    async with NetworkClient.open() as client:
        await manager._round(client, fetcher)
    assert partition.log.log_end_offset == 5  # the old answer (end 0) truncated nothing
    assert fetcher.core.states[TP].current_leader_epoch == 1
    assert fetcher.core.states[TP].truncating  # it asks again, in epoch 1


async def test_a_fetch_answer_for_a_moved_partition_appends_nothing(
    tmp_path: Path,
) -> None:
    service, manager = follower(tmp_path)
    follow(service, 0)
    partition = service.get_partition(TP)
    assert partition is not None
    manager.add_partitions({TP: LEADER})
    [fetcher] = manager.fetchers.values()
    fetcher.core.states[TP].truncating = False  # an empty log: nothing to truncate

    async def fetched_after_a_move(
        fetches: list[FetchPartition],
    ) -> list[FetchedPartition]:
        fetcher.core.states[TP].fetch_offset = 3  # moved on (a truncation, a new epoch)
        batch = bytes(value_batch(2))
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 2, 0, batch)
            for f in fetches
        ]

    manager.fetch_wire = fetched_after_a_move
    async with NetworkClient.open() as client:
        assert await manager._round(client, fetcher)
    assert partition.log.log_end_offset == 0  # the stale records were not appended

    async def answer_as_asked(fetches: list[FetchPartition]) -> list[FetchedPartition]:
        batch = bytes(value_batch(2))
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 2, 0, batch)
            for f in fetches
        ]

    fetcher.core.states[TP].fetch_offset = 0
    manager.fetch_wire = answer_as_asked
    async with NetworkClient.open() as client:
        await manager._round(client, fetcher)
    # the same answer, to what was asked: taken
    assert partition.log.log_end_offset == 2


async def test_a_round_that_appends_traces_the_followers_side_of_the_fetch(
    tmp_path: Path,
) -> None:
    """The follower's half of the replication round trip is in its trace: one
    ``follower_append`` per partition an answer moved, with the log end it reached
    (what its next fetch tells the leader) and the round's timings; an empty answer
    traces nothing."""
    tracer = RecordingTracer()
    service = ReplicaManagerShell(
        replica_manager_core(tmp_path, broker_id=2, tracer=tracer)
    )
    manager = Unwired(2, service)
    follow(service, 0)
    manager.add_partitions({TP: LEADER})
    [fetcher] = manager.fetchers.values()
    fetcher.core.states[TP].truncating = False  # an empty log: nothing to truncate
    batch = bytes(value_batch(3))
    answer = batch

    async def answer_as_asked(fetches: list[FetchPartition]) -> list[FetchedPartition]:
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 0, 0, answer)
            for f in fetches
        ]

    manager.fetch_wire = answer_as_asked
    async with NetworkClient.open() as client:
        assert await manager._round(client, fetcher)
        [event] = tracer.of_type(FollowerAppended)
        assert (event.topic, event.partition, event.leader) == (TP.topic, 0, 1)
        assert (event.fetch_offset, event.log_end_offset) == (0, 3)
        assert event.bytes == len(batch)
        assert event.fetch_ms >= 0
        assert event.append_ms >= 0
        answer = b""  # caught up: the leader has nothing more
        assert await manager._round(client, fetcher)
    assert len(tracer.of_type(FollowerAppended)) == 1


# --- one partition's failure is that partition's alone ------------------------------


def corrupt_batch() -> bytes:
    data = bytearray(value_batch(2))
    data[-1] ^= 0xFF  # under the CRC
    return bytes(data)


async def test_a_corrupt_answer_fails_its_partition_logs_once_and_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service, manager = follower(tmp_path)
    follow(service, 0)
    manager.add_partitions({TP: LEADER})
    [fetcher] = manager.fetchers.values()
    fetcher.core.states[TP].truncating = False  # an empty log: nothing to truncate

    async def corrupt(fetches: list[FetchPartition]) -> list[FetchedPartition]:
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 2, 0, corrupt_batch())
            for f in fetches
        ]

    manager.fetch_wire = corrupt
    caplog.set_level(logging.INFO, "minikafka.broker")
    async with NetworkClient.open() as client:
        for _ in range(3):
            fetcher.core.states[TP].delayed_until = 0.0  # the backoff, run out
            await manager._round(client, fetcher)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, (
        "a failing partition is logged at ERROR once, not per round"
    )
    assert "CorruptRecordError" in caplog.text
    manager.report_states()
    report = json.loads((tmp_path / FETCHER_STATE_FILE).read_text())
    assert report["states"] == {"failed": 1}
    [row] = report["failed"]
    assert (row["topic"], row["fetch_offset"], row["failures"]) == ("t", 0, 3)

    async def good(fetches: list[FetchPartition]) -> list[FetchedPartition]:
        batch = bytes(value_batch(2))
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 2, 0, batch)
            for f in fetches
        ]

    manager.fetch_wire = good
    fetcher.core.states[TP].delayed_until = 0.0
    async with NetworkClient.open() as client:
        await manager._round(client, fetcher)
    assert "fetching again" in caplog.text, "the recovery is logged"
    manager.report_states()
    report = json.loads((tmp_path / FETCHER_STATE_FILE).read_text())
    assert report["states"] == {"fetching": 1}
    assert report["failed"] == []


async def test_a_disk_that_refuses_a_follower_append_takes_its_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, manager = follower(tmp_path)
    follow(service, 0)
    manager.add_partitions({TP: LEADER})
    [fetcher] = manager.fetchers.values()
    fetcher.core.states[TP].truncating = False

    def refused(self: Partition, records: bytes, hw: int, start: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(Partition, "append_records_to_follower", refused)

    async def answer(fetches: list[FetchPartition]) -> list[FetchedPartition]:
        batch = bytes(value_batch(1))
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 1, 0, batch)
            for f in fetches
        ]

    manager.fetch_wire = answer
    async with NetworkClient.open() as client:
        await manager._round(client, fetcher)
    log_manager = service.core.log_manager
    assert list(log_manager.offline_dirs) == [tmp_path], "Kafka's LogDirFailureChannel"


async def test_a_round_that_fails_unexpectedly_is_retried_and_the_broker_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, autojump_clock: trio.abc.Clock
) -> None:
    service, manager = follower(tmp_path)
    follow(service, 0)
    calls = 0
    appended = trio.Event()

    async def broken_then_good(
        fetches: list[FetchPartition],
    ) -> list[FetchedPartition]:
        nonlocal calls
        calls += 1
        await trio.sleep(0.01)  # the wire (a real leader also long-polls)
        if any(f.fetch_offset == 2 for f in fetches):
            appended.set()  # asked from 2: offsets 0-1 are in
        if calls <= 3:
            raise RuntimeError("an answer that does not decode")
        return [  # offsets 0-1, then nothing new
            FetchedPartition(
                f.topic_partition,
                ErrorCode.none,
                2,
                0,
                bytes(value_batch(2)) if f.fetch_offset == 0 else b"",
            )
            for f in fetches
        ]

    manager.fetch_wire = broken_then_good
    partition = service.get_partition(TP)
    assert partition is not None
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        manager.add_partitions({TP: LEADER})
        with trio.fail_after(30):
            await appended.wait()
        nursery.cancel_scope.cancel()
    assert partition.log.log_end_offset == 2
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, "the same failure, logged once while it lasts"
    assert calls >= 4


async def test_a_lost_connection_makes_the_next_fetch_a_full_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, autojump_clock: trio.abc.Clock
) -> None:
    """A fetcher that reconnects starts its fetch session over (Kafka's
    ``FetchSessionHandler.handleError``): its next fetch names every partition again,
    closing the old session, and asks for a new one."""
    service, manager = follower(tmp_path)
    manager.session_id = 5  # the leader opens session 5
    follow(service, 0)
    done = trio.Event()

    async def cut_once_then_caught_up(
        fetches: list[FetchPartition],
    ) -> list[FetchedPartition]:
        await trio.sleep(0.01)  # the wire
        if len(manager.sent) == 3:
            raise DisconnectedError("the leader's connection closed")
        if len(manager.sent) == 5:
            done.set()
        return [
            FetchedPartition(f.topic_partition, ErrorCode.none, 0, 0) for f in fetches
        ]

    manager.fetch_wire = cut_once_then_caught_up
    caplog.set_level(logging.INFO, "minikafka.broker")
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        manager.add_partitions({TP: LEADER})
        with trio.fail_after(30):
            await done.wait()
        nursery.cancel_scope.cancel()
    sessions = [(r.session_id, r.epoch, len(r.partitions)) for r in manager.sent[:5]]
    assert sessions == [
        (0, 0, 1),  # full: opens session 5
        (5, 1, 0),  # incremental: nothing changed
        (5, 2, 0),  # lost with the connection
        (5, 0, 1),  # full again, closing session 5
        (5, 1, 0),
    ]
    assert "connection closed" in caplog.text
