"""One ``transactional.id``'s state in its coordinator (KIP-98): Kafka's
``TransactionMetadata``.

The coordinator never changes a transaction in place. Each request that moves it first
*prepares* the move, a :class:`TxnTransitMetadata` (the record the coordinator writes
to ``__transaction_state``), and marks it pending; once the record is written (the
log's high watermark passed it) it *completes* the move, and only then does the cached
state change. A second request for the same id while a move is pending is answered
CONCURRENT_TRANSACTIONS, so writes to the log and the cache stay in step. Every move,
prepared or completed, is checked against the state table (:mod:`._txn_state`).

Times are milliseconds since the epoch, given by the caller (the core takes ``now`` in
every call); the transaction's start is the time its first partition was added.
"""

from __future__ import annotations

from typing import Any

import attrs

from minikafka.common import TopicPartition

from ._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
    check_txn_transition,
)

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "ProducerEpochExhaustedError",
    "ProducerFencedError",
    "TransactionMetadata",
    "TxnTransitMetadata",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 2**15 - 1
"""An epoch is an int16: the last one a producer id may reach before it is rotated."""

_S = TransactionState


class ProducerEpochExhaustedError(Exception):
    """The epoch cannot be bumped again: the producer id must be rotated."""


class ProducerFencedError(Exception):
    """An InitProducerId naming an epoch older than the last: PRODUCER_FENCED."""


@attrs.frozen
class TxnTransitMetadata:
    """A prepared move: everything the ``__transaction_state`` record of it holds."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@attrs.define
class TransactionMetadata:
    """The coordinator's cache entry for one transactional id."""

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = _S.EMPTY
    topic_partitions: set[TopicPartition] = attrs.field(factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending: TxnTransitMetadata | None = None
    """The move whose record is being written, if any."""

    # --- what each request prepares -------------------------------------------------

    @property
    def epoch_exhausted(self) -> bool:
        """The epoch is at (or one below) the maximum: the next bump rotates the id."""
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The state as it is (a retried InitProducerId that changes nothing)."""
        return self._transit(self.state)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """A new producer arrived while a transaction is open: bump the epoch so that
        the open one is fenced, and move to PrepareEpochFence; its transaction will be
        aborted with the bumped epoch."""
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            raise ProducerEpochExhaustedError(self._exhausted())
        bumped = self.producer_epoch + 1
        return self._prepare(
            _S.PREPARE_EPOCH_FENCE,
            producer_epoch=bumped,
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )

    def prepare_increment_producer_epoch(
        self, txn_timeout_ms: int, expected_epoch: int | None, now: int
    ) -> TxnTransitMetadata:
        """InitProducerId for an id between transactions: bump the epoch (fencing any
        older producer with the id) and start Empty.

        ``expected_epoch`` is the epoch a producer recovering from an error names
        (KIP-360; None for a new producer): the current one is bumped and remembered as
        the last; the last one means this bump was done already and its answer lost, so
        it is answered again unchanged; any other is an older producer, fenced."""
        if self.epoch_exhausted:
            raise ProducerEpochExhaustedError(self._exhausted())
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif expected_epoch == self.producer_epoch or (
            self.producer_epoch == NO_PRODUCER_EPOCH
        ):
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise ProducerFencedError(
                f"{self.transactional_id}: epoch {expected_epoch} is neither the current "
                f"({self.producer_epoch}) nor the last ({self.last_producer_epoch})"
            )
        return self._prepare(
            _S.EMPTY,
            producer_epoch=epoch,
            last_producer_epoch=last,
            txn_timeout_ms=txn_timeout_ms,
            topic_partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, txn_timeout_ms: int, now: int, keep_last: bool
    ) -> TxnTransitMetadata:
        """A new producer id at epoch 0 (the epoch ran out, or an idempotent producer's
        id is replaced); ``keep_last`` remembers the old id and epoch so that a retry of
        this InitProducerId is answered the same."""
        return self._prepare(
            _S.EMPTY,
            producer_id=new_producer_id,
            last_producer_id=self.producer_id if keep_last else NO_PRODUCER_ID,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if keep_last else NO_PRODUCER_EPOCH,
            txn_timeout_ms=txn_timeout_ms,
            topic_partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now,
        )

    def prepare_add_partitions(
        self, added: frozenset[TopicPartition], now: int
    ) -> TxnTransitMetadata:
        """AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets
        partition): the transaction is Ongoing; it starts now if it was not open."""
        opening = self.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
        return self._prepare(
            _S.ONGOING,
            topic_partitions=frozenset(self.topic_partitions) | added,
            txn_start_timestamp=now if opening else self.txn_start_timestamp,
            txn_last_update_timestamp=now,
        )

    def prepare_abort_or_commit(
        self, target: TransactionState, now: int
    ) -> TxnTransitMetadata:
        """EndTxn (or the coordinator's abort of a timed-out or fenced transaction):
        PrepareCommit or PrepareAbort; the markers are written next."""
        if target not in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            raise IllegalTransactionStateError(
                f"{target.value} does not end a transaction"
            )
        return self._prepare(target, txn_last_update_timestamp=now)

    def prepare_complete(self, now: int) -> TxnTransitMetadata:
        """Every marker is written: CompleteCommit or CompleteAbort, no partitions."""
        target = (
            _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        )
        return self._prepare(
            target, topic_partitions=frozenset(), txn_last_update_timestamp=now
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        """The id expired (``transactional.id.expiration.ms`` idle between
        transactions): its record is removed (a tombstone)."""
        return self._prepare(_S.DEAD, topic_partitions=frozenset())

    # --- the record written: the move takes effect ----------------------------------

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """The record of ``transit`` is written: the cache takes it. Only the pending
        move may complete, and only along the table."""
        if self.pending != transit:
            raise IllegalTransactionStateError(
                f"{self.transactional_id}: completing a move that is not pending"
            )
        check_txn_transition(self.state, transit.state)
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending = None

    def abandon_transition(self) -> None:
        """The record could not be written (the coordinator lost its partition, the log
        refused): the move is forgotten and the cache keeps its state."""
        self.pending = None

    # --- helpers ---------------------------------------------------------------------

    def _transit(self, state: TransactionState) -> TxnTransitMetadata:
        return TxnTransitMetadata(
            producer_id=self.producer_id,
            last_producer_id=self.last_producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch,
            txn_timeout_ms=self.txn_timeout_ms,
            state=state,
            topic_partitions=frozenset(self.topic_partitions),
            txn_start_timestamp=self.txn_start_timestamp,
            txn_last_update_timestamp=self.txn_last_update_timestamp,
        )

    def _prepare(self, state: TransactionState, **changes: Any) -> TxnTransitMetadata:
        """The move to ``state`` with ``changes``, marked pending; refused if another
        move is pending or the table forbids it."""
        if self.pending is not None:
            raise IllegalTransactionStateError(
                f"{self.transactional_id}: a move to {self.pending.state.value} is "
                "pending"
            )
        check_txn_transition(self.state, state)
        transit = attrs.evolve(self._transit(state), **changes)
        self.pending = transit
        return transit

    def _exhausted(self) -> str:
        return (
            f"{self.transactional_id}: producer {self.producer_id}'s epoch "
            f"{self.producer_epoch} cannot be bumped"
        )
