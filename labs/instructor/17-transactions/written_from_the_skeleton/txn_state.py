"""Lab 17's table and its check, written from the skeleton and the page alone, not
copied from minikafka: ``labs/tests/test_build_labs.py`` proves they pass the lab
through the same switch a learner's files take (a module's table switched in, not only
functions). An answer, so it lives with the instructors' copy."""

from __future__ import annotations

from minikafka.coordination.transaction._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
)

_T = TransactionState
BETWEEN = frozenset({_T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT})

TXN_TRANSITIONS = {
    _T.EMPTY: BETWEEN,
    _T.ONGOING: BETWEEN | {_T.ONGOING},
    _T.PREPARE_COMMIT: frozenset({_T.ONGOING}),
    _T.PREPARE_ABORT: frozenset({_T.ONGOING, _T.PREPARE_EPOCH_FENCE}),
    _T.COMPLETE_COMMIT: frozenset({_T.PREPARE_COMMIT}),
    _T.COMPLETE_ABORT: frozenset({_T.PREPARE_ABORT}),
    _T.DEAD: BETWEEN,
    _T.PREPARE_EPOCH_FENCE: frozenset({_T.ONGOING}),
}


def check_txn_transition(current, target):
    if current not in TXN_TRANSITIONS[target]:
        sources = sorted(state.value for state in TXN_TRANSITIONS[target])
        raise IllegalTransactionStateError(
            f"{current.value} -> {target.value}: only from {', '.join(sources)}"
        )
    return target
