"""What an operator may ask the transaction coordinator (KIP-664, KIP-994, KIP-1152):
Kafka's ``TransactionCoordinator.handleDescribeTransactions`` and
``TransactionStateManager.listTransactionStates``, as two reads of the cache.

``describe`` answers for one transactional id: the error a client of this broker would
get for it (NOT_COORDINATOR when its partition of ``__transaction_state`` is not led
here, COORDINATOR_LOAD_IN_PROGRESS while it is replayed, TRANSACTIONAL_ID_NOT_FOUND for
an id this coordinator does not know, or one being expired), or its state, producer,
timeout, start time and partitions as the cache holds them. ``list_transactions`` walks
every id of every partition led here, keeping those that pass the three filters of
ListTransactions: the states (a name Kafka does not know is returned, not matched), the
producer ids, (v1, KIP-994) how long the transaction has run, against ``now``, and (v2,
KIP-1152) a regular expression of the id. Kafka compiles it with RE2/J, whose matching
time is linear in the id; this module with Python's ``re``, which backtracks, so
:func:`compile_id_pattern` refuses what RE2/J does not know (back-references,
look-arounds, atomic groups, possessive repeats) and what would make ``re`` backtrack
exponentially (a repeat, counted or not, of a repeat or of alternatives, as in ``(a+)+``,
``(a|b)*`` or ``(a?){30}``). While any partition is still being replayed the whole list
is COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers, since ids of that partition would be
missing from it.

Both only read: they take the time as an argument and change nothing.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Collection
from typing import Any

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._txn_state import TransactionState
from ._txn_state_manager import TransactionStateManager, TransactionUnavailableError

__all__ = [
    "TransactionDescription",
    "TransactionListing",
    "TransactionListings",
    "compile_id_pattern",
    "describe_transaction",
    "list_transactions",
]

_NAMES = {state.value: state for state in TransactionState}


@attrs.frozen
class TransactionDescription:
    """DescribeTransactions' answer for one id. With an error the other fields are
    zero and empty, as Kafka's answer leaves them (its message's defaults)."""

    transactional_id: str
    error_code: ErrorCode
    state: str = ""
    producer_id: int = 0
    producer_epoch: int = 0
    timeout_ms: int = 0
    start_timestamp: int = 0
    """When the transaction's first partition was added (ms); -1 before any was."""
    partitions: tuple[TopicPartition, ...] = ()


@attrs.frozen
class TransactionListing:
    """One id as ListTransactions lists it."""

    transactional_id: str
    producer_id: int
    state: str


@attrs.frozen
class TransactionListings:
    """ListTransactions' answer."""

    error_code: ErrorCode
    transactions: tuple[TransactionListing, ...] = ()
    unknown_state_filters: tuple[str, ...] = ()


def describe_transaction(
    manager: TransactionStateManager, transactional_id: str
) -> TransactionDescription:
    """One id's state in this coordinator, or why it cannot be given."""
    if not transactional_id:
        return TransactionDescription(transactional_id, ErrorCode.invalid_request)
    try:
        meta = manager.get(transactional_id)
    except TransactionUnavailableError as exc:
        return TransactionDescription(transactional_id, exc.error_code)
    if meta is None or meta.state is TransactionState.DEAD:
        # Dead: the id is being expired, as good as gone.
        return TransactionDescription(
            transactional_id, ErrorCode.transactional_id_not_found
        )
    return TransactionDescription(
        transactional_id,
        ErrorCode.none,
        meta.state.value,
        meta.producer_id,
        meta.producer_epoch,
        meta.txn_timeout_ms,
        meta.txn_start_timestamp,
        tuple(sorted(meta.topic_partitions)),
    )


# Python's own parser of its regular expressions (no typing stubs: a private module).
_PARSER: Any = importlib.import_module("re._parser")
_REFUSED = {"ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS", "ATOMIC_GROUP"}
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT"}


def compile_id_pattern(text: str) -> re.Pattern[str]:
    """``text`` compiled, or ``re.error`` if it does not compile or uses what RE2/J (and
    so Kafka) refuses or what ``re`` could take exponential time to match."""
    try:
        compiled = re.compile(text)
        _check(_PARSER.parse(text), inside_repeat=False)
    except (OverflowError, RecursionError) as exc:
        # a count too large for re, or groups nested deeper than its parser recurses
        raise re.error(str(exc)) from None
    return compiled


def _check(parsed: Any, *, inside_repeat: bool) -> None:
    for op, argument in parsed:
        name = str(op)
        if name in _REFUSED or name == "POSSESSIVE_REPEAT":
            raise re.error(f"{name.lower()} is not supported")
        if name in _REPEATS:
            low, high, body = argument
            if high != low and inside_repeat:
                raise re.error("a repeat inside a repeat may backtrack exponentially")
            # A counted repeat ((a?){30}) tries its body's choices once per copy, as
            # an open one does: what it repeats must not itself choose.
            _check(body, inside_repeat=inside_repeat or high > 1)
        elif name == "SUBPATTERN":
            _check(argument[-1], inside_repeat=inside_repeat)
        elif name == "BRANCH":
            if inside_repeat:
                raise re.error(
                    "alternatives inside a repeat may backtrack exponentially"
                )
            for alternative in argument[1]:
                _check(alternative, inside_repeat=False)


def list_transactions(
    manager: TransactionStateManager,
    states: Collection[str],
    producer_ids: Collection[int],
    duration_ms: int,
    now: int,
    id_pattern: str | None = None,
) -> TransactionListings:
    """The ids led here that pass every filter given: ``states`` (Kafka's names),
    ``producer_ids``, ``duration_ms`` (>= 0: only transactions that started more than
    that long before ``now``; as in Kafka, an id with no transaction started has start
    -1 and so passes it) and ``id_pattern`` (v2, KIP-1152: a regular expression the
    whole id must match; empty or None: every id; one that does not compile is
    INVALID_REGULAR_EXPRESSION)."""
    if any(not manager.is_loaded(p) for p in manager.loaded_partitions()):
        return TransactionListings(ErrorCode.coordinator_load_in_progress)
    try:
        pattern = compile_id_pattern(id_pattern) if id_pattern else None
    except re.error:
        return TransactionListings(ErrorCode.invalid_regular_expression)
    unknown = tuple(name for name in dict.fromkeys(states) if name not in _NAMES)
    wanted = {_NAMES[name] for name in states if name in _NAMES}
    pids = set(producer_ids)
    found = tuple(
        TransactionListing(meta.transactional_id, meta.producer_id, meta.state.value)
        for meta in manager.transactions()
        if meta.state is not TransactionState.DEAD
        and (not pids or meta.producer_id in pids)
        and (not states or meta.state in wanted)
        and (duration_ms < 0 or now - meta.txn_start_timestamp > duration_ms)
        and (pattern is None or pattern.fullmatch(meta.transactional_id) is not None)
    )
    return TransactionListings(ErrorCode.none, found, unknown)
