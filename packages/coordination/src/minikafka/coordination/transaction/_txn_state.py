"""A transaction's state in its coordinator, as a table (KIP-98's transaction states).

The transaction coordinator keeps one ``TransactionMetadata`` per ``transactional.id``,
and each is in one of eight states. Kafka's ``TransactionState`` names, for each state,
the states it may be entered from (``validPreviousStates``) and refuses any other move
with an ``IllegalStateException``; here that table is data, with one short reason per
edge, so the book can draw the diagram from the table the coordinator runs on. The
values are Kafka's names, as DescribeTransactions and ListTransactions report them, and
each state's id is the byte ``__transaction_state`` stores (``transaction_status``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "TXN_TRANSITIONS",
    "TXN_TRANSITION_REASONS",
    "IllegalTransactionStateError",
    "TransactionState",
    "check_txn_transition",
]


class TransactionState(enum.Enum):
    """A transaction's state; the value is Kafka's name for it."""

    EMPTY = "Empty"
    """A producer id and epoch, no transaction open."""
    ONGOING = "Ongoing"
    """A transaction is open: partitions (and the group's offsets) were added to it."""
    PREPARE_COMMIT = "PrepareCommit"
    """EndTxn(commit) is logged: the commit markers are being written."""
    PREPARE_ABORT = "PrepareAbort"
    """EndTxn(abort), a timeout or a fencing is logged: abort markers are being written."""
    COMPLETE_COMMIT = "CompleteCommit"
    """Every partition has its commit marker; the next transaction may begin."""
    COMPLETE_ABORT = "CompleteAbort"
    """Every partition has its abort marker; the next transaction may begin."""
    DEAD = "Dead"
    """The transactional id expired (``transactional.id.expiration.ms``) and is removed."""
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    """A new producer with this id arrived while a transaction was open: the old epoch is
    being fenced and its transaction aborted (never written: logged as PrepareAbort)."""

    @property
    def id(self) -> int:
        """The byte ``__transaction_state`` stores for this state."""
        return _IDS[self]

    @property
    def expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may expire: only between
        transactions (Kafka's ``isExpirationAllowed``)."""
        return self in _EXPIRABLE

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state, known in _IDS.items():
            if known == state_id:
                return state
        raise ValueError(f"no transaction state has id {state_id}")

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return TXN_TRANSITIONS[self]


_T = TransactionState

_IDS: Mapping[TransactionState, int] = {
    _T.EMPTY: 0,
    _T.ONGOING: 1,
    _T.PREPARE_COMMIT: 2,
    _T.PREPARE_ABORT: 3,
    _T.COMPLETE_COMMIT: 4,
    _T.COMPLETE_ABORT: 5,
    _T.DEAD: 6,
    _T.PREPARE_EPOCH_FENCE: 7,
}
_EXPIRABLE = frozenset({_T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT})

TXN_TRANSITIONS: Mapping[TransactionState, frozenset[TransactionState]] = {
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
"""Target state -> the states it may be entered from
(``TransactionState.validPreviousStates``)."""

TXN_TRANSITION_REASONS: Mapping[tuple[TransactionState, TransactionState], str] = {
    (_T.EMPTY, _T.EMPTY): "InitProducerId: epoch bumped",
    (_T.COMPLETE_COMMIT, _T.EMPTY): "InitProducerId after a commit",
    (_T.COMPLETE_ABORT, _T.EMPTY): "InitProducerId after an abort",
    (_T.EMPTY, _T.ONGOING): "first partition added",
    (_T.COMPLETE_COMMIT, _T.ONGOING): "next transaction's first partition",
    (_T.COMPLETE_ABORT, _T.ONGOING): "next transaction's first partition",
    (_T.ONGOING, _T.ONGOING): "more partitions added",
    (_T.ONGOING, _T.PREPARE_COMMIT): "EndTxn(commit)",
    (_T.ONGOING, _T.PREPARE_ABORT): "EndTxn(abort) or timeout",
    (_T.ONGOING, _T.PREPARE_EPOCH_FENCE): "a new producer fences the open one",
    (_T.PREPARE_EPOCH_FENCE, _T.PREPARE_ABORT): "its transaction aborted",
    (_T.PREPARE_COMMIT, _T.COMPLETE_COMMIT): "every commit marker written",
    (_T.PREPARE_ABORT, _T.COMPLETE_ABORT): "every abort marker written",
    (_T.EMPTY, _T.DEAD): "transactional id expired",
    (_T.COMPLETE_COMMIT, _T.DEAD): "transactional id expired",
    (_T.COMPLETE_ABORT, _T.DEAD): "transactional id expired",
}
"""Why a transaction makes each transition: one short label per edge."""


class IllegalTransactionStateError(Exception):
    """A move the table does not allow (Kafka: ``IllegalStateException``)."""


def check_txn_transition(
    current: TransactionState, target: TransactionState
) -> TransactionState:
    """Return ``target`` if a transaction in ``current`` may move there, else raise."""
    if current not in TXN_TRANSITIONS[target]:
        allowed = ", ".join(sorted(s.value for s in TXN_TRANSITIONS[target]))
        raise IllegalTransactionStateError(
            f"a transaction must be in {allowed} before moving to {target.value}, not "
            f"{current.value}"
        )
    return target
