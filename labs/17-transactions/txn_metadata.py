"""Lab 17: one ``transactional.id``'s moves (Kafka's ``TransactionMetadata``; the
Transactions chapter).

Each function is a method of minikafka's ``TransactionMetadata`` (its first argument,
``self``), switched in by ``make lab 17 EX=prepare_and_complete`` (then
``epoch_fencing``). The coordinator never changes a transaction in place: a request
first *prepares* a move, a ``TxnTransitMetadata`` (the record it writes to
``__transaction_state``), marked pending in ``self.pending``; once the record is
written the coordinator *completes* it, and only then does the cached state change.

Exercise ``prepare_and_complete``:

- ``prepare(self, state, **changes)`` (minikafka's ``_prepare``, which every
  ``prepare_*`` method calls): the move to ``state``, the current values with
  ``changes`` applied (``attrs.evolve(self._transit(state), **changes)``), marked
  pending and returned. Refused with ``IllegalTransactionStateError`` if another move
  is pending (the coordinator answers CONCURRENT_TRANSACTIONS) or if the table does not
  allow the move (``check_txn_transition(self.state, state)``); a refusal changes
  nothing, ``self.pending`` included.
- ``complete_transition(self, transit)``: the record of ``transit`` is written. Only
  the pending move completes (another is ``IllegalTransactionStateError``, "not
  pending"), and only along the table; then every field of ``transit`` is copied into
  ``self`` (``topic_partitions`` as a set) and nothing is pending.
- ``prepare_add_partitions(self, added, now)``: AddPartitionsToTxn (and
  AddOffsetsToTxn): Ongoing, with the partitions already in the transaction and those
  ``added``; a transaction opened by this add (from Empty, CompleteCommit or
  CompleteAbort) starts ``now``, one already Ongoing keeps its start; last updated
  ``now``.
- ``prepare_complete(self, now)``: every marker is written: PrepareCommit becomes
  CompleteCommit, PrepareAbort CompleteAbort, with no partitions; last updated ``now``.

Exercise ``epoch_fencing``:

- ``prepare_increment_producer_epoch(self, txn_timeout_ms, expected_epoch, now)``:
  InitProducerId between transactions: Empty, with the timeout asked, no partitions, no
  start (-1), last updated ``now``. ``expected_epoch`` is None for a new producer:
  the epoch is bumped by one and no last epoch is kept (``NO_PRODUCER_EPOCH``). A
  producer recovering from an error (KIP-360) names an epoch: the current one (or any,
  while the id has no epoch yet) is bumped and the current one kept as
  ``last_producer_epoch``; the last one means this bump was done and its answer lost,
  so epoch and last epoch stay as they are; any other is an older producer:
  ``ProducerFencedError``. An epoch that cannot be bumped twice more
  (``self.epoch_exhausted``) raises ``ProducerEpochExhaustedError``, before anything
  else: the coordinator then gives the id a new producer id instead.
- ``prepare_fence_producer_epoch(self)``: a new producer arrived while a transaction is
  open: PrepareEpochFence with the epoch bumped by one and no last epoch, the
  transaction's partitions kept (its abort markers go to each). At
  ``MAX_PRODUCER_EPOCH`` there is none left: ``ProducerEpochExhaustedError``.
"""

from __future__ import annotations

from typing import Any

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination.transaction._txn_metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    ProducerEpochExhaustedError,
    ProducerFencedError,
    TransactionMetadata,
    TxnTransitMetadata,
)
from minikafka.coordination.transaction._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
    check_txn_transition,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/17-transactions/txn_metadata.py"

__all__ = [
    "MAX_PRODUCER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "IllegalTransactionStateError",
    "ProducerEpochExhaustedError",
    "ProducerFencedError",
    "TopicPartition",
    "TransactionState",
    "attrs",
    "check_txn_transition",
    "complete_transition",
    "prepare",
    "prepare_add_partitions",
    "prepare_complete",
    "prepare_fence_producer_epoch",
    "prepare_increment_producer_epoch",
]


# --- exercise prepare_and_complete ----------------------------------------------------


def prepare(
    self: TransactionMetadata, state: TransactionState, **changes: Any
) -> TxnTransitMetadata:
    """The move to ``state`` with ``changes``, marked pending; refused if another move
    is pending or the table forbids it."""
    raise ExerciseNotDone("prepare", "refuse, then evolve and mark pending", FILE)


def complete_transition(self: TransactionMetadata, transit: TxnTransitMetadata) -> None:
    """The record of ``transit`` is written: the cache takes it."""
    raise ExerciseNotDone(
        "complete_transition", "only the pending move, along the table", FILE
    )


def prepare_add_partitions(
    self: TransactionMetadata, added: frozenset[TopicPartition], now: int
) -> TxnTransitMetadata:
    """AddPartitionsToTxn: Ongoing with the partitions added."""
    raise ExerciseNotDone(
        "prepare_add_partitions", "Ongoing, started when opened", FILE
    )


def prepare_complete(self: TransactionMetadata, now: int) -> TxnTransitMetadata:
    """Every marker is written: CompleteCommit or CompleteAbort, no partitions."""
    raise ExerciseNotDone("prepare_complete", "Prepare* -> Complete*", FILE)


# --- exercise epoch_fencing -----------------------------------------------------------


def prepare_increment_producer_epoch(
    self: TransactionMetadata,
    txn_timeout_ms: int,
    expected_epoch: int | None,
    now: int,
) -> TxnTransitMetadata:
    """InitProducerId between transactions: bump the epoch and start Empty."""
    raise ExerciseNotDone(
        "prepare_increment_producer_epoch", "bump, or a retry, or fenced", FILE
    )


def prepare_fence_producer_epoch(self: TransactionMetadata) -> TxnTransitMetadata:
    """A new producer arrived while a transaction is open: PrepareEpochFence."""
    raise ExerciseNotDone(
        "prepare_fence_producer_epoch", "bump once, keep the partitions", FILE
    )
