"""Lab 17's moves of ``TransactionMetadata``, written from the skeleton and the page
alone, not copied from minikafka (``labs/tests/test_build_labs.py`` runs the lab with
them switched in). An answer, so it lives with the instructors' copy."""

from __future__ import annotations

import attrs

from minikafka.coordination.transaction._txn_metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    ProducerEpochExhaustedError,
    ProducerFencedError,
    TxnTransitMetadata,
)
from minikafka.coordination.transaction._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
    check_txn_transition,
)

_S = TransactionState
_BETWEEN = (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)


def prepare(self, state, **changes):
    if self.pending is not None:
        raise IllegalTransactionStateError("another move is pending")
    check_txn_transition(self.state, state)
    self.pending = attrs.evolve(self._transit(state), **changes)
    return self.pending


def complete_transition(self, transit):
    if transit != self.pending:
        raise IllegalTransactionStateError("this move is not pending")
    check_txn_transition(self.state, transit.state)
    for field in attrs.fields(TxnTransitMetadata):
        setattr(self, field.name, getattr(transit, field.name))
    self.topic_partitions = set(transit.topic_partitions)
    self.pending = None


def prepare_add_partitions(self, added, now):
    opened = self.state in _BETWEEN
    return self._prepare(
        _S.ONGOING,
        topic_partitions=frozenset(self.topic_partitions | set(added)),
        txn_start_timestamp=now if opened else self.txn_start_timestamp,
        txn_last_update_timestamp=now,
    )


def prepare_complete(self, now):
    done = {_S.PREPARE_COMMIT: _S.COMPLETE_COMMIT, _S.PREPARE_ABORT: _S.COMPLETE_ABORT}
    return self._prepare(
        done.get(self.state, _S.COMPLETE_ABORT),
        topic_partitions=frozenset(),
        txn_last_update_timestamp=now,
    )


def prepare_increment_producer_epoch(self, txn_timeout_ms, expected_epoch, now):
    if self.epoch_exhausted:
        raise ProducerEpochExhaustedError(self.transactional_id)
    if expected_epoch is None:
        epoch, last = self.producer_epoch + 1, NO_PRODUCER_EPOCH
    elif self.producer_epoch in (expected_epoch, NO_PRODUCER_EPOCH):
        epoch, last = self.producer_epoch + 1, self.producer_epoch
    elif expected_epoch == self.last_producer_epoch:
        epoch, last = self.producer_epoch, self.last_producer_epoch
    else:
        raise ProducerFencedError(f"{self.transactional_id}: epoch {expected_epoch}")
    return self._prepare(
        _S.EMPTY,
        producer_epoch=epoch,
        last_producer_epoch=last,
        txn_timeout_ms=txn_timeout_ms,
        topic_partitions=frozenset(),
        txn_start_timestamp=-1,
        txn_last_update_timestamp=now,
    )


def prepare_fence_producer_epoch(self):
    if self.producer_epoch >= MAX_PRODUCER_EPOCH:
        raise ProducerEpochExhaustedError(self.transactional_id)
    return self._prepare(
        _S.PREPARE_EPOCH_FENCE,
        producer_epoch=self.producer_epoch + 1,
        last_producer_epoch=NO_PRODUCER_EPOCH,
    )
