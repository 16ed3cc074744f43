"""The followers' shell (``ReplicaFetcherManager``): what arrives for a partition that
moved on while the request was in flight is dropped.

A follower re-added in a newer leader epoch (the leader changed while an
OffsetForLeaderEpoch or a Fetch was on the wire) must take neither the old epoch's
truncation point nor the old fetch's records: both describe a log the partition no
longer follows. The network is replaced by functions that re-add the partition in
epoch 1 before they answer for epoch 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.broker._replica_fetchers import ReplicaFetcherManager
from minikafka.common import TopicPartition
from minikafka.log.testing import value_batch
from minikafka.net import NetworkClient, Node
from minikafka.replication import (
    EpochAnswer,
    EpochRequest,
    FetchedPartition,
    FetchPartition,
    PartitionState,
    ReplicaManagerService,
)
from minikafka.replication.testing import replica_manager_core

TP = TopicPartition("t", 0)
LEADER = Node(1, "127.0.0.1", 1)


EpochWire = Callable[[list[EpochRequest]], Awaitable[list[EpochAnswer]]]
FetchWire = Callable[[list[FetchPartition]], Awaitable[list[FetchedPartition]]]


@attrs.define(eq=False)
class Unwired(ReplicaFetcherManager):
    """The fetcher shell with its two requests answered by the test, not a leader."""

    epoch_wire: EpochWire | None = None
    fetch_wire: FetchWire | None = None

    async def _offsets_for_leader_epoch(
        self, client: NetworkClient, node: Node, asked: list[EpochRequest]
    ) -> list[EpochAnswer]:
        assert self.epoch_wire is not None
        return await self.epoch_wire(asked)

    async def _fetch(
        self, client: NetworkClient, node: Node, fetches: list[FetchPartition]
    ) -> list[FetchedPartition]:
        assert self.fetch_wire is not None
        return await self.fetch_wire(fetches)


def follower(tmp_path: Path) -> tuple[ReplicaManagerService, Unwired]:
    service = ReplicaManagerService(replica_manager_core(tmp_path, broker_id=2))
    return service, Unwired(2, service)


def follow(service: ReplicaManagerService, epoch: int) -> None:
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
