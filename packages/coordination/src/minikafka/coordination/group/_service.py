"""The group coordinator's shell: the core on trio, the log behind a port (ARCHITECTURE.md, "Cores
and shells").

The broker's request handlers call the async methods here; each turns into a call of
the sans-IO ``GroupCoordinator`` with a fresh request id and the time, and waits for the
reply with that id, which may come at once (a Heartbeat), when other members arrive (a
JoinGroup held for the rebalance), when a timer fires (the rebalance timeout) or when a
write to ``__consumer_offsets`` is committed (the leader's SyncGroup, an OffsetCommit).

The coordination package does not know the replication layer; the broker hands it an
``OffsetsTopic``, the port through which the coordinator appends to and replays its
partitions (ARCHITECTURE.md, "Packages and layers"). Appends are made in the order the core queued
them, so the log holds the records in the order the cache applied them.

Time is the wall clock (``time.time``), because the records carry commit and state
timestamps that must mean something after a restart; timers sleep on trio's clock for
the difference.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Protocol

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._coordinator import GroupCoordinator
from ._group import GroupSummary, ListedGroup
from ._group_metadata_manager import PartitionStatus, StoredRecord
from ._group_requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ._group_state import GroupState
from ._results import GroupReply, GroupResponse

__all__ = ["GroupCoordinatorService", "OffsetsTopic"]


class OffsetsTopic(Protocol):
    """The port: what the coordinator needs of ``__consumer_offsets`` (the broker
    implements it with the ReplicaManager)."""

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
    ) -> None:
        """Append ``records`` as one batch to the partition now, and call
        ``on_committed`` once the ISR has them (acks=all), or with the error."""

    def read(self, partition: int) -> Iterator[StoredRecord]:
        """Every record of the partition from its start, in offset order."""


@attrs.define(eq=False)
class _Waiter:
    event: trio.Event = attrs.field(factory=trio.Event)
    response: GroupResponse | None = None


@attrs.define(eq=False)
class GroupCoordinatorService:
    core: GroupCoordinator
    offsets_topic: OffsetsTopic
    clock: Callable[[], float] = time.time
    _waiting: dict[int, _Waiter] = attrs.field(init=False, factory=dict)
    _next_id: int = attrs.field(init=False, default=0)
    _wakeup: trio.Event = attrs.field(init=False, factory=trio.Event)

    # --- partitions of __consumer_offsets ----------------------------------------------------

    def become_leader(self, partition: int) -> int:
        """Replay ``partition`` into the cache: its groups are served from now on.
        Returns how many groups it held. The replay runs to the end before anything
        else happens (Kafka loads on a background thread and answers
        COORDINATOR_LOAD_IN_PROGRESS meanwhile). A new leader epoch of a partition this
        broker already serves changes nothing: the cache is the log's latest state."""
        if self.core.manager.partitions.get(partition) is PartitionStatus.ACTIVE:
            return 0
        self.core.begin_loading(partition)
        loaded = self.core.load_partition(
            partition, self.offsets_topic.read(partition), self.clock()
        )
        self._wakeup.set()  # the members restored have session deadlines
        return loaded

    def resign(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its groups go Dead."""
        self._dispatch(self.core.unload_partition(partition))

    def shutdown(self) -> None:
        """The broker is stopping: every group goes Dead and the requests parked in a
        rebalance are answered NOT_COORDINATOR now, so the clients look for the group's
        next coordinator instead of holding the shutdown up until their timeouts."""
        for partition in list(self.core.manager.partitions):
            self.resign(partition)

    # --- the APIs -------------------------------------------------------------------------

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        response = await self._call(
            functools.partial(self.core.join_group, request=request)
        )
        assert isinstance(response, JoinGroupResponse)
        return response

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        response = await self._call(
            functools.partial(self.core.sync_group, request=request)
        )
        assert isinstance(response, SyncGroupResponse)
        return response

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        response = await self._call(
            functools.partial(self.core.heartbeat, request=request)
        )
        assert isinstance(response, HeartbeatResponse)
        return response

    async def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        response = await self._call(
            functools.partial(self.core.leave_group, request=request)
        )
        assert isinstance(response, LeaveGroupResponse)
        return response

    async def commit_offsets(
        self, request: OffsetCommitRequest
    ) -> OffsetCommitResponse:
        response = await self._call(
            functools.partial(self.core.commit_offsets, request=request)
        )
        assert isinstance(response, OffsetCommitResponse)
        return response

    def fetch_offsets(
        self, group_id: str, partitions: Collection[TopicPartition] | None
    ) -> OffsetFetchResponse:
        return self.core.fetch_offsets(group_id, partitions)

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        status = self.core.group_status(group_id)
        if status is not ErrorCode.none:
            return status, GroupSummary(GroupState.DEAD, "", "", ())
        return ErrorCode.none, self.core.describe_group(group_id)

    def list_groups(
        self, states: Collection[GroupState] | None = None
    ) -> tuple[ErrorCode, list[ListedGroup]]:
        error = (
            ErrorCode.coordinator_load_in_progress
            if self.core.loading
            else ErrorCode.none
        )
        return error, self.core.list_groups(states)

    def delete_group(self, group_id: str) -> ErrorCode:
        error = self.core.delete_group(group_id, self.clock())
        self._dispatch([])
        return error

    # --- plumbing ---------------------------------------------------------------------------

    async def _call(self, call: Callable[..., list[GroupReply]]) -> GroupResponse:
        self._next_id += 1
        request_id = self._next_id
        waiter = self._waiting[request_id] = _Waiter()
        try:
            self._dispatch(call(request_id=request_id, now=self.clock()))
            await waiter.event.wait()
        finally:
            self._waiting.pop(request_id, None)
        assert waiter.response is not None
        return waiter.response

    def _dispatch(self, replies: Iterable[GroupReply]) -> None:
        """Hand out the replies, start the writes the core queued, re-arm the timer."""
        for reply in replies:
            waiter = self._waiting.get(reply.request_id)
            if waiter is not None:  # None: its connection went away meanwhile
                waiter.response = reply.response
                waiter.event.set()
        for write in self.core.take_writes():
            self.offsets_topic.append(
                write.partition,
                write.records,
                functools.partial(self._written, write.write_id),
            )
        self._wakeup.set()

    def _written(self, write_id: int, error: ErrorCode) -> None:
        self._dispatch(self.core.complete_write(write_id, error, self.clock()))

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Fire the core's timers (joins, syncs, sessions, offset expiry) when due."""
        task_status.started()
        while True:
            deadline = self.core.next_deadline()
            wait = (
                float("inf") if deadline is None else max(0.0, deadline - self.clock())
            )
            with trio.move_on_after(wait):
                await self._wakeup.wait()
            self._wakeup = trio.Event()
            now = self.clock()
            deadline = self.core.next_deadline()
            if deadline is not None and deadline <= now:
                self._dispatch(self.core.on_timer(now))
