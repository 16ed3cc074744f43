"""Lab 17, exercise ``state_table``: the one table every move of a transaction is
checked against (KIP-98's transaction states; Kafka's ``TransactionState``).

A transaction is in one of eight states (``TransactionState``, minikafka's, already
written: EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT,
COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE). Kafka names, for each state, the states it
may be entered from (``validPreviousStates``); here that is data, written by
``make lab 17 EX=state_table``:

- ``TXN_TRANSITIONS``: target state -> the frozenset of states it may be entered from,
  one entry for each of the eight states. The lab's page says which request makes each
  move; minikafka's ``TXN_TRANSITION_REASONS`` (one label per edge) must name exactly
  your table's edges.
- ``check_txn_transition(current, target)``: return ``target`` if a transaction in
  ``current`` may move there, else raise ``IllegalTransactionStateError`` with a
  message naming the states ``target`` may be entered from (their ``.value``, Kafka's
  names). The coordinator calls it on every move it prepares and on every move it
  completes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from minikafka.coordination.transaction._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/17-transactions/txn_state.py"

__all__ = [
    "TXN_TRANSITIONS",
    "IllegalTransactionStateError",
    "TransactionState",
    "check_txn_transition",
]

_T = TransactionState


class _NotWritten(Mapping[TransactionState, frozenset[TransactionState]]):
    """A table that says it is not written yet when read: replace it with yours."""

    def _not_done(self) -> ExerciseNotDone:
        return ExerciseNotDone(
            "TXN_TRANSITIONS", "each state -> the states it is entered from", FILE
        )

    def __getitem__(self, key: TransactionState) -> frozenset[TransactionState]:
        raise self._not_done()

    def __iter__(self) -> Iterator[TransactionState]:
        raise self._not_done()

    def __len__(self) -> int:
        raise self._not_done()


TXN_TRANSITIONS: Mapping[TransactionState, frozenset[TransactionState]] = _NotWritten()
"""Target state -> the states it may be entered from (write it as a dict literal)."""


def check_txn_transition(
    current: TransactionState, target: TransactionState
) -> TransactionState:
    """Return ``target`` if a transaction in ``current`` may move there, else raise."""
    raise ExerciseNotDone(
        "check_txn_transition", "look current up in TXN_TRANSITIONS[target]", FILE
    )
