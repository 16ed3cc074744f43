"""The transaction coordinator's shell: the core on trio, ``__transaction_state`` and the
partitions' leaders behind two ports (ARCHITECTURE.md, "Cores and shells").

The broker's request handlers call the async methods here; each becomes a call of the
sans-IO :class:`~._txn_coordinator.TransactionCoordinator` with a fresh request id and
the time in ms, and waits for the reply with that id: at once (an error, a retried
EndTxn), or once the move's record is committed to ``__transaction_state`` (Kafka's
coordinator answers only after ``appendTransactionToLog`` completes).

Two ports, which the broker makes real (the coordination package knows no replication
and no network):

- :class:`TransactionStateTopic`: append records to a partition of
  ``__transaction_state`` with acks=all, and replay a partition when this broker becomes
  its leader;
- :class:`MarkerChannel`: write a transaction's commit or abort markers to each of its
  partitions' leaders (Kafka's ``TransactionMarkerChannelManager``: WriteTxnMarkers,
  retried until every partition has its marker), then say so; the coordinator then
  writes CompleteCommit or CompleteAbort.

The same fault policy as the group coordinator's shell: a request whose call raises is
answered with its error code (UNKNOWN_SERVER_ERROR if it carries none) and the next is
served; a partition that fails to load stays unloaded (NOT_COORDINATOR for its ids).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import FailureLog, TopicPartition
from minikafka.common.shell import Waiters, Wakeup, run_timers
from minikafka.trace import EpochClock

from .._operation_guard import guard_operation
from ..group._group_metadata_manager import LoadedRecord
from ._txn_coordinator import (
    TransactionCoordinator,
    TxnMarkers,
    TxnRecord,
    TxnReply,
    TxnResult,
)
from ._txn_log import read_key
from ._txn_queries import (
    TransactionDescription,
    TransactionListings,
    describe_transaction,
    list_transactions,
)
from ._txn_state_manager import TRANSACTION_STATE_TOPIC

__all__ = ["MarkerChannel", "TransactionCoordinatorShell", "TransactionStateTopic"]

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")
_TIMER_RETRY_S = 0.1


class TransactionStateTopic(Protocol):
    """The port to ``__transaction_state`` (the broker implements it with the
    ReplicaManager, as it does ``__consumer_offsets`` for the group coordinator)."""

    def append(
        self,
        partition: int,
        records: Iterable[tuple[bytes, bytes | None]],
        on_committed: Callable[[ErrorCode], None],
    ) -> None:
        """Append ``records`` as one batch to the partition now, and call
        ``on_committed`` once the ISR has them (acks=all), or with the error."""

    def read(self, partition: int) -> Iterator[LoadedRecord]:
        """Every record of the partition from its start, in offset order (the port is
        the group coordinator's: ``__transaction_state`` holds no transactional
        batches and no markers, so only ``(key, value)`` pairs come back)."""


class MarkerChannel(Protocol):
    """The port to the partitions' leaders (Kafka's TransactionMarkerChannelManager)."""

    def send(
        self,
        markers: TxnMarkers,
        on_written: Callable[[], None],
        still_current: Callable[[], bool],
    ) -> None:
        """Write ``markers`` to every partition's leader, retrying each until written
        (a partition that no longer exists needs none), then call ``on_written``. Once
        ``still_current()`` is False (this broker no longer coordinates the id in that
        epoch) they are dropped without a call: the next coordinator resends them."""


@attrs.define(eq=False)
class TransactionCoordinatorShell:
    core: TransactionCoordinator
    topic: TransactionStateTopic
    markers: MarkerChannel
    clock: Callable[[], float] = attrs.field(
        factory=lambda: EpochClock(trio.current_time)
    )
    _waiters: Waiters[TxnReply] = attrs.field(init=False, factory=Waiters)
    _wakeup: Wakeup = attrs.field(init=False, factory=Wakeup)
    _failures: FailureLog = attrs.field(init=False, factory=lambda: FailureLog(_logger))

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # --- partitions of __transaction_state --------------------------------------------

    def become_leader(self, partition: int, coordinator_epoch: int) -> None:
        """Replay ``partition`` (led here in ``coordinator_epoch``): its ids are served
        from now on, and the transactions it left ended but not completed get their
        markers again. A replay that raises leaves the partition unloaded."""
        manager = self.core.manager
        if manager.is_loaded(partition):
            if manager.partition_epoch(partition) == coordinator_epoch:
                return
            # Led again in a newer epoch without this broker hearing it resign (the
            # deltas between were coalesced): another coordinator may have moved its
            # ids meanwhile, so the cache is replayed from the log.
            self.resign(partition)
        manager.begin_loading(partition, coordinator_epoch)

        def load() -> None:
            self._dispatch(
                self.core.load_partition(
                    partition,
                    coordinator_epoch,
                    (r for r in self.topic.read(partition) if isinstance(r, tuple)),
                    self.now_ms(),
                )
            )

        def failed(_: ErrorCode) -> None:
            self._dispatch(self.core.unload_partition(partition))

        self._guard(
            f"loading {TRANSACTION_STATE_TOPIC}-{partition}",
            load,
            failed,
            then="its ids answer NOT_COORDINATOR until this broker leads it again",
        )

    def resign(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its ids are no longer served."""
        self._guard(
            f"unloading {TRANSACTION_STATE_TOPIC}-{partition}",
            lambda: self._dispatch(self.core.unload_partition(partition)),
            lambda _: None,
        )

    def shutdown(self) -> None:
        for partition in list(self.core.manager.loaded_partitions()):
            self.resign(partition)

    # --- the APIs ---------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        txn_timeout_ms: int,
        expected: tuple[int, int] | None,
    ) -> TxnReply:
        return await self._call(
            "InitProducerId",
            lambda request_id, now: self.core.init_producer_id(
                request_id, transactional_id, txn_timeout_ms, expected, now
            ),
        )

    async def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> ErrorCode:
        reply = await self._call(
            "AddPartitionsToTxn",
            lambda request_id, now: self.core.add_partitions_to_txn(
                request_id,
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                now,
            ),
        )
        return reply.error_code

    def verify_partitions_in_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn's ``verify_only`` (KIP-890): answered from the
        metadata at once, as nothing is written."""
        return self._guard(
            "AddPartitionsToTxn (verify only)",
            lambda: self.core.verify_partitions_in_txn(
                transactional_id, producer_id, producer_epoch, partitions
            ),
            lambda error: dict.fromkeys(partitions, error),
            then="it is answered {error}",
        )

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        reply = await self._call(
            "EndTxn",
            lambda request_id, now: self.core.end_txn(
                request_id, transactional_id, producer_id, producer_epoch, commit, now
            ),
        )
        return reply.error_code

    # --- what an operator asks (KIP-664): reads of the cache, answered at once ---------

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> list[TransactionDescription]:
        """DescribeTransactions: each id's state here, or its error."""
        return [describe_transaction(self.core.manager, t) for t in transactional_ids]

    def list_transactions(
        self,
        states: Iterable[str],
        producer_ids: Iterable[int],
        duration_ms: int,
        id_pattern: str | None = None,
    ) -> TransactionListings:
        """ListTransactions: the ids led here that pass the filters, the duration
        measured against this broker's clock."""
        return list_transactions(
            self.core.manager,
            tuple(states),
            tuple(producer_ids),
            duration_ms,
            self.now_ms(),
            id_pattern,
        )

    # --- plumbing ---------------------------------------------------------------------

    async def _call(
        self, operation: str, call: Callable[[int, int], TxnResult]
    ) -> TxnReply:
        request_id = self._waiters.open()

        def start() -> None:
            self._dispatch(call(request_id, self.now_ms()))

        def refuse(error: ErrorCode) -> None:
            self._waiters.answer(request_id, TxnReply(request_id, error))

        try:
            self._guard(operation, start, refuse, then="it is answered {error}")
            return await self._waiters.wait(request_id)
        finally:
            self._waiters.close(request_id)

    def _dispatch(self, result: TxnResult) -> None:
        """Start the result's writes and markers, hand out its replies."""
        for record in result.records:
            self._append(record)
        for markers in result.messages:
            self._send_markers(markers)
        for reply in result.replies:
            self._waiters.answer(reply.request_id, reply)
        self._wakeup.set()

    def _append(self, record: TxnRecord) -> None:
        transactional_id = read_key(record.key)
        reported = False

        def on_committed(error: ErrorCode) -> None:
            nonlocal reported
            reported = True
            self._guard(
                "completing a write",
                lambda: self._dispatch(
                    self.core.complete_write(
                        transactional_id, error, self.now_ms(), record.write_id
                    )
                ),
                lambda _: None,
            )

        def failed(error: ErrorCode) -> None:
            if not reported:
                on_committed(error)

        self._guard(
            f"appending to {TRANSACTION_STATE_TOPIC}-{record.partition}",
            lambda: self.topic.append(
                record.partition, [(record.key, record.value)], on_committed
            ),
            failed,
            then="the write fails with {error}",
        )

    def _send_markers(self, markers: TxnMarkers) -> None:
        def on_written() -> None:
            self._guard(
                "completing a transaction",
                lambda: self._dispatch(
                    self.core.markers_written(
                        markers.transactional_id,
                        markers.coordinator_epoch,
                        self.now_ms(),
                    )
                ),
                lambda _: None,
            )

        def still_current() -> bool:
            epoch = self.core.manager.coordinator_epoch(markers.transactional_id)
            return epoch == markers.coordinator_epoch

        self.markers.send(markers, on_written, still_current)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Abort timed-out transactions and expire idle ids when due."""
        task_status.started()

        def deadline() -> float | None:
            due = self.core.next_deadline()
            return None if due is None else due / 1000

        def fire(now: float) -> bool:
            def on_timer() -> bool:
                self._dispatch(self.core.on_timer(int(now * 1000)))
                return True

            return self._guard("the transaction timers", on_timer, lambda _: False)

        await run_timers(
            deadline, fire, self.clock, self._wakeup, retry_after=_TIMER_RETRY_S
        )

    def _guard(
        self,
        operation: str,
        call: Callable[[], _T],
        failed: Callable[[ErrorCode], _T],
        *,
        then: str = "the transaction coordinator goes on",
    ) -> _T:
        """``call()``; if it raises, ``failed(error)`` with the error the client is told
        (the group coordinator shell's policy, the same mapping of a failed write)."""
        return guard_operation(self._failures, operation, call, failed, then)
