"""The group coordinator's shell: the core on trio, the log behind a port (ARCHITECTURE.md, "Cores
and shells").

The broker's request handlers call the async methods here; each turns into a call of
the sans-IO ``GroupCoordinator`` with a fresh request id and the time, and waits for the
reply with that id, which may come at once (a Heartbeat), when other members arrive (a
JoinGroup held for the rebalance), when a timer fires (the rebalance timeout) or when a
write to ``__consumer_offsets`` is committed (the leader's SyncGroup, an OffsetCommit, a
TxnOffsetCommit, a DeleteGroups). A transaction's marker comes in through
``complete_transaction``, once the broker has written it.

The coordination package does not know the replication layer; the broker hands it an
``OffsetsTopic``, the port through which the coordinator appends to and replays its
partitions (ARCHITECTURE.md, "Packages and layers"). Appends are made in the order the core queued
them, so the log holds the records in the order the core replayed them: the core's
timeline of offsets counts on it (a write's id stands for its place in the log).

Time is an :class:`~minikafka.trace.EpochClock` over trio's clock, as every broker-side
shell's: seconds since the epoch, because the records carry commit and state timestamps
that must mean something after a restart, on a clock that never jumps; timers sleep on
trio's clock for the difference.

No exception ends the service, or the broker whose nursery runs it. Everything that
calls the core goes through :meth:`GroupCoordinatorShell._guard`, with the policies
of Kafka's ``CoordinatorRuntime`` and ``GroupCoordinatorShell``:

- a request whose operation raises is answered with its error code, UNKNOWN_SERVER_ERROR
  for anything that carries none (Kafka's ``handleOperationException``), and the
  coordinator serves the next one;
- a partition of ``__consumer_offsets`` that fails to load is left unloaded: its groups
  answer NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS only while it loads), the other
  partitions go on, and the next time this broker becomes its leader it is loaded again
  (Kafka's coordinator goes to FAILED, and a new leader epoch schedules a new load);
- an append that raises fails its write with that error, which answers the requests
  waiting for it; a timer round that raises is logged and tried again shortly.

Each failure is logged at ERROR with its traceback once (again only if it changes).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import FailureLog, TopicPartition
from minikafka.common.shell import Waiters, Wakeup, run_timers
from minikafka.trace import EpochClock

from .._operation_guard import guard_operation
from ._consumer_group import ConsumerGroup
from ._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ._coordinator import GroupCoordinator
from ._group import GroupSummary, ListedGroup
from ._group_metadata_manager import (
    OFFSETS_TOPIC,
    LoadedRecord,
    PartitionStatus,
    StoredRecord,
)
from ._group_requests import (
    DeletableGroupResult,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ._group_state import GroupState
from ._results import CoordinatorWrite, GroupResponse, GroupResult

__all__ = ["GroupCoordinatorShell", "OffsetsTopic"]

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")
_TIMER_RETRY_S = 0.1
"""How soon a timer round that raised is tried again (``retry.backoff.ms``)."""


class OffsetsTopic(Protocol):
    """The port: what the coordinator needs of ``__consumer_offsets`` (the broker
    implements it with the ReplicaManager)."""

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
        producer: tuple[int, int] | None = None,
    ) -> None:
        """Append ``records`` as one batch to the partition now, and call
        ``on_committed`` once the ISR has them (acks=all), or with the error. With
        ``producer`` (producer id, producer epoch) the batch is a transactional batch
        of that producer (a TxnOffsetCommit's, KIP-98)."""

    def read(self, partition: int) -> Iterator[LoadedRecord]:
        """Every record of the partition from its start, in offset order: a
        transactional batch's as ``TxnStoredRecord``, a transaction's marker as
        ``TxnMarkerRecord``."""


@attrs.define(eq=False)
class GroupCoordinatorShell:
    core: GroupCoordinator
    offsets_topic: OffsetsTopic
    clock: Callable[[], float] = attrs.field(
        factory=lambda: EpochClock(trio.current_time)
    )
    _waiters: Waiters[GroupResponse] = attrs.field(init=False, factory=Waiters)
    _wakeup: Wakeup = attrs.field(init=False, factory=Wakeup)
    _failures: FailureLog = attrs.field(init=False, factory=lambda: FailureLog(_logger))

    # --- partitions of __consumer_offsets ----------------------------------------------------

    def become_leader(self, partition: int) -> int:
        """Replay ``partition`` into the cache: its groups are served from now on.
        Returns how many groups it held. The replay runs to the end before anything
        else happens (Kafka loads on a background thread and answers
        COORDINATOR_LOAD_IN_PROGRESS meanwhile). A new leader epoch of a partition this
        broker already serves changes nothing: the cache is the log's latest state.

        A replay that raises (an unreadable log, a bug) leaves the partition unloaded,
        and its groups answer NOT_COORDINATOR; the next call loads it again."""
        if self.core.manager.partitions.get(partition) is PartitionStatus.ACTIVE:
            return 0
        self.core.begin_loading(partition)

        def load() -> int:
            loaded = self.core.load_partition(
                partition, self.offsets_topic.read(partition), self.clock()
            )
            self._wakeup.set()  # the members restored have session deadlines
            return loaded

        def failed(_: ErrorCode) -> int:
            # Kafka's CoordinatorRuntime: the coordinator goes to FAILED and is unloaded;
            # what was replayed before the error goes with it.
            self._dispatch(self.core.unload_partition(partition))
            return 0

        return self._guard(
            f"loading {OFFSETS_TOPIC}-{partition}",
            load,
            failed,
            then="its groups answer NOT_COORDINATOR until this broker leads it again",
        )

    def resign(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its groups go Dead."""
        self._guard(
            f"unloading {OFFSETS_TOPIC}-{partition}",
            lambda: self._dispatch(self.core.unload_partition(partition)),
            lambda _: None,
        )

    def shutdown(self) -> None:
        """The broker is stopping: every group goes Dead and the requests parked in a
        rebalance are answered NOT_COORDINATOR now, so the clients look for the group's
        next coordinator instead of holding the shutdown up until their timeouts."""
        for partition in list(self.core.manager.partitions):
            self.resign(partition)

    # --- the APIs -------------------------------------------------------------------------

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        response = await self._call(
            "JoinGroup",
            functools.partial(self.core.join_group, request=request),
            lambda error: JoinGroupResponse.error(error, request.member_id),
        )
        assert isinstance(response, JoinGroupResponse)
        return response

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        response = await self._call(
            "SyncGroup",
            functools.partial(self.core.sync_group, request=request),
            SyncGroupResponse,
        )
        assert isinstance(response, SyncGroupResponse)
        return response

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        response = await self._call(
            "Heartbeat",
            functools.partial(self.core.heartbeat, request=request),
            HeartbeatResponse,
        )
        assert isinstance(response, HeartbeatResponse)
        return response

    async def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        response = await self._call(
            "LeaveGroup",
            functools.partial(self.core.leave_group, request=request),
            LeaveGroupResponse,
        )
        assert isinstance(response, LeaveGroupResponse)
        return response

    async def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        """ConsumerGroupHeartbeat (KIP-848): join, heartbeat or leave, answered once
        the group's records are committed."""
        response = await self._call(
            "ConsumerGroupHeartbeat",
            functools.partial(self.core.consumer_group_heartbeat, request=request),
            ConsumerGroupHeartbeatResponse,
        )
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def consumer_group(self, group_id: str) -> tuple[ErrorCode, ConsumerGroup | None]:
        """ConsumerGroupDescribe's view of one group: NOT_COORDINATOR and the like, or
        the group (None: no consumer group by that id)."""

        def describe() -> tuple[ErrorCode, ConsumerGroup | None]:
            status = self.core.group_status(group_id)
            if status is not ErrorCode.none:
                return status, None
            return ErrorCode.none, self.core.consumer_group(group_id)

        return self._guard("ConsumerGroupDescribe", describe, lambda e: (e, None))

    def list_consumer_groups(self) -> list[ConsumerGroup]:
        return self._guard("ListGroups", self.core.list_consumer_groups, lambda _: [])

    async def commit_offsets(
        self, request: OffsetCommitRequest
    ) -> OffsetCommitResponse:
        response = await self._call(
            "OffsetCommit",
            functools.partial(self.core.commit_offsets, request=request),
            lambda error: OffsetCommitResponse(
                tuple((tp, error) for tp, _ in request.offsets)
            ),
        )
        assert isinstance(response, OffsetCommitResponse)
        return response

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Collection[TopicPartition] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse:
        return self._guard(
            "OffsetFetch",
            lambda: self.core.fetch_offsets(
                group_id, partitions, require_stable, member_id, member_epoch
            ),
            OffsetFetchResponse,
        )

    async def txn_commit_offsets(
        self, request: TxnOffsetCommitRequest
    ) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit (KIP-98): each partition's error, NONE once the offsets are
        written (pending for the producer until its transaction's marker)."""
        response = await self._call(
            "TxnOffsetCommit",
            functools.partial(self.core.txn_commit_offsets, request=request),
            lambda error: TxnOffsetCommitResponse(
                tuple((tp, error) for tp, _ in request.offsets)
            ),
        )
        assert isinstance(response, TxnOffsetCommitResponse)
        return response

    def complete_transaction(
        self, producer_id: int, partitions: Iterable[int], commit: bool
    ) -> None:
        """The producer's transaction marker is in these ``__consumer_offsets``
        partitions (the broker calls it once WriteTxnMarkers' append is committed, as
        Kafka's ``onTransactionCompleted``): the pending offsets are committed or dropped."""
        wanted = list(partitions)
        self._guard(
            "completing a transaction",
            lambda: self._dispatch(
                self.core.complete_transaction(
                    producer_id, wanted, commit, self.clock()
                )
            ),
            lambda _: None,
        )

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        def describe() -> tuple[ErrorCode, GroupSummary]:
            status = self.core.group_status(group_id)
            if status is not ErrorCode.none:
                return status, _NO_GROUP
            return ErrorCode.none, self.core.describe_group(group_id)

        return self._guard("DescribeGroups", describe, lambda error: (error, _NO_GROUP))

    def list_groups(
        self, states: Collection[GroupState] | None = None
    ) -> tuple[ErrorCode, list[ListedGroup]]:
        def listed() -> tuple[ErrorCode, list[ListedGroup]]:
            error = (
                ErrorCode.coordinator_load_in_progress
                if self.core.loading
                else ErrorCode.none
            )
            return error, self.core.list_groups(states)

        return self._guard("ListGroups", listed, lambda error: (error, []))

    async def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups for one group: its error, NONE once the tombstones are
        committed (Kafka's deleteGroups is a write operation)."""
        response = await self._call(
            "DeleteGroups",
            functools.partial(self.core.delete_group, group_id=group_id),
            lambda error: DeletableGroupResult(group_id, error),
        )
        assert isinstance(response, DeletableGroupResult)
        return response.error_code

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> OffsetDeleteResponse:
        """OffsetDelete (KIP-496): each partition's error, NONE once the tombstones are
        committed; or the group's error."""
        response = await self._call(
            "OffsetDelete",
            functools.partial(
                self.core.delete_offsets, group_id=group_id, partitions=partitions
            ),
            OffsetDeleteResponse,
        )
        assert isinstance(response, OffsetDeleteResponse)
        return response

    # --- plumbing ---------------------------------------------------------------------------

    async def _call(
        self,
        operation: str,
        call: Callable[..., GroupResult],
        failed: Callable[[ErrorCode], GroupResponse],
    ) -> GroupResponse:
        """Call the core with a fresh request id and wait for that id's reply; an
        operation that raises is answered ``failed(error)`` at once."""
        request_id = self._waiters.open()

        def start() -> bool:
            self._dispatch(call(request_id=request_id, now=self.clock()))
            return True

        def refuse(error: ErrorCode) -> bool:
            # not if it was answered before it raised
            self._waiters.answer(request_id, failed(error))
            return False

        try:
            self._guard(operation, start, refuse, then="it is answered {error}")
            return await self._waiters.wait(request_id)
        finally:
            self._waiters.close(request_id)

    def _dispatch(self, result: GroupResult) -> None:
        """Start the result's writes, hand out its replies, re-arm the timer."""
        self._append_all(result.records)
        for reply in result.replies:
            # nobody waits if its connection went away meanwhile
            self._waiters.answer(reply.request_id, reply.response)

    def _append_all(self, writes: Iterable[CoordinatorWrite]) -> None:
        for write in writes:
            self._append(write)
        self._wakeup.set()

    def _append(self, write: CoordinatorWrite) -> None:
        """Append one write; if the append raises, the write fails with that error
        (Kafka fails the write's operation with the append's exception), which answers
        the requests waiting for it."""
        reported = False

        def on_committed(error: ErrorCode) -> None:
            nonlocal reported
            reported = True
            self._written(write.write_id, error)

        def failed(error: ErrorCode) -> None:
            if not reported:
                self._written(write.write_id, error)

        self._guard(
            f"appending to {OFFSETS_TOPIC}-{write.partition}",
            lambda: self.offsets_topic.append(
                write.partition, write.records, on_committed, producer=write.producer
            ),
            failed,
            then="the write fails with {error}",
        )

    def _written(self, write_id: int, error: ErrorCode) -> None:
        # Called by the log's side (an acks=all append completing in the replica
        # manager's task): what the core raises is this service's, not that task's.
        self._guard(
            "completing a write",
            lambda: self._dispatch(
                self.core.complete_write(write_id, error, self.clock())
            ),
            lambda _: None,
        )

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Fire the core's timers (joins, syncs, sessions, offset expiry) when due."""
        task_status.started()
        await run_timers(
            self.core.next_deadline,
            self._fire_timers,
            self.clock,
            self._wakeup,
            retry_after=_TIMER_RETRY_S,
        )

    def _fire_timers(self, now: float) -> bool:
        """One round of due timers; False if it raised. The timer that raised is popped;
        the others are still due: they fire in the next round, after a pause."""

        def fire() -> bool:
            self._dispatch(self.core.on_timer(now))
            return True

        return self._guard("firing the group timers", fire, lambda _: False)

    # --- fault isolation --------------------------------------------------------------------

    def _guard(
        self,
        operation: str,
        call: Callable[[], _T],
        failed: Callable[[ErrorCode], _T],
        *,
        then: str = "the group coordinator goes on",
    ) -> _T:
        """``call()``; if it raises, ``failed(error)`` with the error the client is told
        (``then`` says what happens next in the log line; ``{error}`` is that error):
        :func:`~minikafka.coordination._operation_guard.guard_operation`, Kafka's
        ``GroupCoordinatorShell.handleOperationException``."""
        return guard_operation(self._failures, operation, call, failed, then)


_NO_GROUP = GroupSummary(GroupState.DEAD, "", "", ())
"""What DescribeGroups reports for a group it cannot describe."""
