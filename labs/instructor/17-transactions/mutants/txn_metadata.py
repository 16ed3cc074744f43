"""Wrong on purpose: one transactional id's moves, each function wrong in one way.

Each is minikafka's ``TransactionMetadata`` method with one knob of the function above
it turned; mutants.toml switches one function in at a time, in place of minikafka's.
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

_S = TransactionState

# --- prepare (minikafka's _prepare) ---------------------------------------------------


def _prepare(
    self: TransactionMetadata,
    state: TransactionState,
    changes: dict[str, Any],
    *,
    one_at_a_time: bool = True,
    checked: bool = True,
    applied_at_once: bool = False,
) -> TxnTransitMetadata:
    if one_at_a_time and self.pending is not None:
        raise IllegalTransactionStateError("a move is pending")
    if checked:
        check_txn_transition(self.state, state)
    transit = attrs.evolve(self._transit(state), **changes)
    self.pending = transit
    if applied_at_once:
        self.state = transit.state
        self.topic_partitions = set(transit.topic_partitions)
        self.producer_epoch = transit.producer_epoch
    return transit


def prepares_over_a_pending_move(
    self: TransactionMetadata, state: TransactionState, **changes: Any
) -> TxnTransitMetadata:
    return _prepare(self, state, changes, one_at_a_time=False)


def prepare_unchecked(
    self: TransactionMetadata, state: TransactionState, **changes: Any
) -> TxnTransitMetadata:
    # complete_transition still checks: a forbidden move fails only when written.
    return _prepare(self, state, changes, checked=False)


def applies_at_prepare(
    self: TransactionMetadata, state: TransactionState, **changes: Any
) -> TxnTransitMetadata:
    return _prepare(self, state, changes, applied_at_once=True)


# --- complete_transition --------------------------------------------------------------


def completes_any_move(self: TransactionMetadata, transit: TxnTransitMetadata) -> None:
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


# --- prepare_add_partitions -----------------------------------------------------------


def _add(
    self: TransactionMetadata,
    added: frozenset[TopicPartition],
    now: int,
    *,
    union: bool = True,
    start_once: bool = True,
) -> TxnTransitMetadata:
    opening = self.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
    return self._prepare(
        _S.ONGOING,
        topic_partitions=(frozenset(self.topic_partitions) | added) if union else added,
        txn_start_timestamp=now
        if opening or not start_once
        else self.txn_start_timestamp,
        txn_last_update_timestamp=now,
    )


def partitions_replaced(
    self: TransactionMetadata, added: frozenset[TopicPartition], now: int
) -> TxnTransitMetadata:
    return _add(self, added, now, union=False)


def start_moves_with_each_add(
    self: TransactionMetadata, added: frozenset[TopicPartition], now: int
) -> TxnTransitMetadata:
    return _add(self, added, now, start_once=False)


# --- prepare_complete -----------------------------------------------------------------


def completes_as_commit(self: TransactionMetadata, now: int) -> TxnTransitMetadata:
    return self._prepare(
        _S.COMPLETE_COMMIT,
        topic_partitions=frozenset(),
        txn_last_update_timestamp=now,
    )


def keeps_the_partitions(self: TransactionMetadata, now: int) -> TxnTransitMetadata:
    target = (
        _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
    )
    return self._prepare(target, txn_last_update_timestamp=now)


# --- prepare_increment_producer_epoch -------------------------------------------------


def _increment(
    self: TransactionMetadata,
    txn_timeout_ms: int,
    expected_epoch: int | None,
    now: int,
    *,
    step: int = 1,
    keep_last: bool = True,
    retry_answered: bool = True,
    fence_others: bool = True,
    exhaustion: bool = True,
) -> TxnTransitMetadata:
    if exhaustion and self.epoch_exhausted:
        raise ProducerEpochExhaustedError("exhausted")
    bumped = self.producer_epoch + step
    if expected_epoch is None:
        epoch, last = bumped, NO_PRODUCER_EPOCH
    elif expected_epoch == self.producer_epoch or (
        self.producer_epoch == NO_PRODUCER_EPOCH
    ):
        epoch, last = bumped, self.producer_epoch if keep_last else NO_PRODUCER_EPOCH
    elif retry_answered and expected_epoch == self.last_producer_epoch:
        epoch, last = self.producer_epoch, self.last_producer_epoch
    elif fence_others:
        raise ProducerFencedError(f"epoch {expected_epoch}")
    else:
        epoch, last = bumped, self.producer_epoch
    return self._prepare(
        _S.EMPTY,
        producer_epoch=epoch,
        last_producer_epoch=last,
        txn_timeout_ms=txn_timeout_ms,
        topic_partitions=frozenset(),
        txn_start_timestamp=-1,
        txn_last_update_timestamp=now,
    )


def no_bump(
    self: TransactionMetadata, txn_timeout_ms: int, expected_epoch: int | None, now: int
) -> TxnTransitMetadata:
    return _increment(self, txn_timeout_ms, expected_epoch, now, step=0)


def forgets_the_last(
    self: TransactionMetadata, txn_timeout_ms: int, expected_epoch: int | None, now: int
) -> TxnTransitMetadata:
    return _increment(self, txn_timeout_ms, expected_epoch, now, keep_last=False)


def retry_bumps_again(
    self: TransactionMetadata, txn_timeout_ms: int, expected_epoch: int | None, now: int
) -> TxnTransitMetadata:
    return _increment(self, txn_timeout_ms, expected_epoch, now, retry_answered=False)


def stale_epoch_bumped(
    self: TransactionMetadata, txn_timeout_ms: int, expected_epoch: int | None, now: int
) -> TxnTransitMetadata:
    return _increment(self, txn_timeout_ms, expected_epoch, now, fence_others=False)


def bumps_past_the_maximum(
    self: TransactionMetadata, txn_timeout_ms: int, expected_epoch: int | None, now: int
) -> TxnTransitMetadata:
    return _increment(self, txn_timeout_ms, expected_epoch, now, exhaustion=False)


# --- prepare_fence_producer_epoch -----------------------------------------------------


def fence_without_bump(self: TransactionMetadata) -> TxnTransitMetadata:
    if self.producer_epoch >= MAX_PRODUCER_EPOCH:
        raise ProducerEpochExhaustedError("exhausted")
    return self._prepare(
        _S.PREPARE_EPOCH_FENCE,
        producer_epoch=self.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
    )


def fence_drops_the_partitions(self: TransactionMetadata) -> TxnTransitMetadata:
    if self.producer_epoch >= MAX_PRODUCER_EPOCH:
        raise ProducerEpochExhaustedError("exhausted")
    return self._prepare(
        _S.PREPARE_EPOCH_FENCE,
        producer_epoch=self.producer_epoch + 1,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        topic_partitions=frozenset(),
    )
