"""Wrong on purpose: the transaction state table and its check, each wrong in one way.

Each table is minikafka's (``TXN_TRANSITIONS``) with one edge added; each check is
``check_txn_transition`` with one thing left out. mutants.toml switches one in at a
time, in place of minikafka's.
"""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.coordination.transaction._txn_state import (
    IllegalTransactionStateError,
    TransactionState,
)

_T = TransactionState

_KAFKAS: Mapping[TransactionState, frozenset[TransactionState]] = {
    _T.EMPTY: frozenset({_T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT}),
    _T.ONGOING: frozenset(
        {_T.ONGOING, _T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT}
    ),
    _T.PREPARE_COMMIT: frozenset({_T.ONGOING}),
    _T.PREPARE_ABORT: frozenset({_T.ONGOING, _T.PREPARE_EPOCH_FENCE}),
    _T.COMPLETE_COMMIT: frozenset({_T.PREPARE_COMMIT}),
    _T.COMPLETE_ABORT: frozenset({_T.PREPARE_ABORT}),
    _T.DEAD: frozenset({_T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT}),
    _T.PREPARE_EPOCH_FENCE: frozenset({_T.ONGOING}),
}


def _with(
    target: TransactionState, extra: TransactionState
) -> Mapping[TransactionState, frozenset[TransactionState]]:
    return {**_KAFKAS, target: _KAFKAS[target] | {extra}}


# An EndTxn(commit) with nothing added is let through.
commit_from_empty = _with(_T.PREPARE_COMMIT, _T.EMPTY)
# The zombie's transaction, fenced, may still commit.
fenced_may_commit = _with(_T.PREPARE_COMMIT, _T.PREPARE_EPOCH_FENCE)
# A transaction whose markers are still being written takes new partitions.
begins_while_ending = _with(_T.ONGOING, _T.PREPARE_COMMIT)
# An open transaction's id may expire.
expires_open_transactions = _with(_T.DEAD, _T.ONGOING)


def allows_everything(
    current: TransactionState, target: TransactionState
) -> TransactionState:
    return target


def says_nothing_useful(
    current: TransactionState, target: TransactionState
) -> TransactionState:
    if current not in _KAFKAS[target]:
        raise IllegalTransactionStateError(f"cannot move to {target.value}")
    return target
