"""``AsyncProducer``'s transactions (KIP-98, KIP-447): the synchronous Producer's calls,
awaited.

The same :class:`~._transactions.TransactionManager` decides, the same shell task sends;
a call waits for its outcome on trio's thread instead of a condition variable. A trio
program bounds the wait with its own cancel scope (``trio.move_on_after``) rather than
a ``timeout`` argument: a call cancelled that way stays pending, and calling it again
waits on it, as a timed-out call of the synchronous Producer does.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from minikafka.common import TopicPartition

from ._accumulator import RecordAccumulator
from ._message import PURGE_QUEUE, STATE, KafkaError, KafkaException
from ._message import TopicPartition as OffsetPosition
from ._sender import Delivery, Sender
from ._shell import PRODUCER_CLOCK, ProducerShell
from ._transactions import TransactionManager
from ._txn_plans import ConsumerGroupMetadata, TxnCompleted


class AsyncProducerTransactions:
    """Mixed into :class:`~._async.AsyncProducer`, which gives what is declared here."""

    _sender: Sender
    _shell: ProducerShell | None

    def _deliver(self, deliveries: list[Delivery]) -> None:
        raise NotImplementedError  # the producer's

    def _init_transactions_state(self) -> None:
        self._txn_results: dict[int, KafkaError | None] = {}
        self._txn_changed = trio.Event()
        self._pending_calls: dict[str, int] = {}

    def _transaction_done(self, done: list[TxnCompleted]) -> None:
        """The shell's callback: outcomes of the calls waiting (trio's thread)."""
        for completed in done:
            self._txn_results[completed.operation] = completed.error
        self._txn_changed.set()
        self._txn_changed = trio.Event()

    def _transactions(self) -> TransactionManager:
        transactions = self._sender.transactions
        if transactions is None:
            raise KafkaException(
                KafkaError(STATE, "the producer has no transactional.id")
            )
        return transactions

    async def _wait_for(self, operation: int, call: str) -> None:
        assert self._shell is not None, "use `async with AsyncProducer.open(...)`"
        self._shell.wake()
        self._pending_calls[call] = operation  # until it completes, even if cancelled
        while operation not in self._txn_results:
            await self._txn_changed.wait()
        del self._pending_calls[call]
        error = self._txn_results.pop(operation)
        if error is not None:
            raise KafkaException(error)

    async def init_transactions(self) -> None:
        """Register the transactional id with its coordinator (see ``Producer``)."""
        transactions = self._transactions()
        operation = self._pending_calls.get("init_transactions")
        if operation is None:
            operation = transactions.init_transactions()
        await self._wait_for(operation, "init_transactions")

    def begin_transaction(self) -> None:
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(
        self,
        positions: Sequence[OffsetPosition],
        group_metadata: ConsumerGroupMetadata,
    ) -> None:
        """Commit these offsets for the consumer's group with the transaction."""
        transactions = self._transactions()
        operation = self._pending_calls.get("send_offsets_to_transaction")
        if operation is None:
            offsets = {
                TopicPartition(p.topic, p.partition): p.offset for p in positions
            }
            operation = transactions.send_offsets(offsets, group_metadata)
        await self._wait_for(operation, "send_offsets_to_transaction")

    async def commit_transaction(self) -> None:
        """Send every record of the transaction, then commit it."""
        transactions = self._transactions()
        operation = self._pending_calls.get("commit_transaction")
        if operation is None:
            operation = transactions.begin_commit()
        accumulator: RecordAccumulator = self._sender.accumulator
        accumulator.begin_flush()  # no lingering: the EndTxn waits for the batches
        try:
            await self._wait_for(operation, "commit_transaction")
        finally:
            accumulator.end_flush()

    async def abort_transaction(self) -> None:
        """Abort the transaction: records not yet sent fail with ``_PURGE_QUEUE``."""
        transactions = self._transactions()
        operation = self._pending_calls.get("abort_transaction")
        if operation is None:
            operation = transactions.begin_abort()
        purged = self._sender.abort(
            KafkaError(PURGE_QUEUE, "the transaction was aborted"), PRODUCER_CLOCK()
        )
        self._deliver(list(purged.replies))
        await self._wait_for(operation, "abort_transaction")
