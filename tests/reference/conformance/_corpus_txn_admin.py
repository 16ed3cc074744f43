"""Scenarios of KIP-664's two reads of the transaction coordinator at every version
minikafka advertises: DescribeTransactions of an id with no transaction begun, of an
open one, of a committed one, and of ids the coordinator does not know (and the empty
id); ListTransactions with no filter, by state (with a state name Kafka does not know),
by producer id, from v1 by duration (KIP-994) and from v2 by a pattern of the id
(KIP-1152), one that does not compile included.

The transactions are set up as in ``_corpus_transactions.py`` (not compared). A start
time is each broker's clock: it is compared as present or -1, not by value. The Kafka
node is shared with the other reference tests, so a listing keeps only the scenario's
own ids, sorted (each broker lists in its own hash order).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, each_version
from ._corpus_transactions import _begin, _end, _open, _settled, _top
from ._normalise import to_tree
from ._scenario import Scenario, Session

_START = frozenset({"transaction_start_time"})
_WAIT = 30.0


def _describe(v: int, *ids: str) -> Any:
    return make(ApiKey.DESCRIBE_TRANSACTIONS, v, transactional_ids=list(ids))


def _first_state(answer: Any) -> int:
    return int(answer.transaction_states[0].error_code)


def _describe_empty(s: Session, v: int) -> None:
    txn_id = f"conf-dtx-v{v}-empty"
    _begin(s, txn_id)
    s.check(_describe(v, txn_id))  # start -1 on both: compared


def _describe_ongoing(s: Session, v: int) -> None:
    txn_id = f"conf-dtx-v{v}-ongoing"
    pid, epoch = _open(s, txn_id)
    s.check(_describe(v, txn_id), varies=_START)
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _describe_committed(s: Session, v: int) -> None:
    txn_id = f"conf-dtx-v{v}-committed"
    pid, epoch = _open(s, txn_id)
    _settled(s, _end(3, txn_id, pid, epoch, True), _top)
    deadline = time.monotonic() + _WAIT
    while True:  # the markers, then CompleteCommit: until it is written
        answer = s.call(_describe(v, txn_id))
        if answer.transaction_states[0].transaction_state == "CompleteCommit":
            break
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
    s.check(_describe(v, txn_id), varies=_START)


def _describe_unknown(s: Session, v: int) -> None:
    _begin(s, f"conf-dtx-v{v}-known")  # __transaction_state exists and is loaded
    s.check(_describe(v, f"conf-dtx-v{v}-nobody", ""))


DTX_CASES: dict[str, Case] = {
    "empty": _describe_empty,
    "ongoing": _describe_ongoing,
    "committed": _describe_committed,
    "unknown": _describe_unknown,
}


def _list(
    v: int,
    states: tuple[str, ...] = (),
    pids: tuple[int, ...] = (),
    duration: int = -1,
    pattern: str | None = None,
) -> Any:
    return make(
        ApiKey.LIST_TRANSACTIONS,
        v,
        state_filters=list(states),
        producer_id_filters=list(pids),
        duration_filter=duration,
        transactional_id_pattern=pattern,
    )


def _check_listed(s: Session, body: Any, prefix: str, label: str) -> None:
    """``body``'s answer, settled, with the scenario's own ids only, sorted."""
    answer = _settled(s, body, _top)
    tree = to_tree(answer)
    tree["transaction_states"] = sorted(
        (
            t
            for t in to_tree(list(answer.transaction_states))
            if str(t["transactional_id"]).startswith(prefix)
        ),
        key=lambda t: str(t["transactional_id"]),
    )
    s.normaliser.trim, s.normaliser.varies = None, frozenset()
    s.record(label, s.normaliser(tree))


def _lists(s: Session, v: int) -> None:
    prefix = f"conf-ltx-v{v}-"
    idle_pid, _ = _begin(s, prefix + "idle")
    pid, epoch = _open(s, prefix + "open")
    _check_listed(s, _list(v), prefix, "all")
    _check_listed(s, _list(v, ("Ongoing", "Hanging")), prefix, "ongoing")
    _check_listed(s, _list(v, ("Empty",), (idle_pid, pid)), prefix, "empty-of-two")
    _check_listed(s, _list(v, (), (pid,)), prefix, "by-producer")
    if v >= 1:  # KIP-994: open longer than an hour (an id with none open passes)
        _check_listed(s, _list(v, duration=3_600_000), prefix, "older-than-an-hour")
    _settled(s, _end(3, prefix + "open", pid, epoch, False), _top)


def _patterns(s: Session, v: int) -> None:
    """KIP-1152: the whole id must match; a pattern that does not compile is refused."""
    prefix = f"conf-ltp-v{v}-"
    _begin(s, prefix + "alpha")
    _begin(s, prefix + "beta")
    for label, pattern in (
        ("prefix-and-any", prefix + ".*"),
        ("one-id", prefix + "alpha"),
        ("a-prefix-alone", prefix),
        ("alternatives", f"{prefix}(alpha|gamma)"),
        ("empty", ""),
    ):
        _check_listed(s, _list(v, pattern=pattern), prefix, label)
    s.check(_list(v, pattern="("), "does-not-compile")


LTX_CASES: dict[str, Case] = {"filters": _lists, "patterns": _patterns}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(
        ApiKey.DESCRIBE_TRANSACTIONS, "describe-transactions", DTX_CASES
    )
    yield from each_version(
        ApiKey.LIST_TRANSACTIONS, "list-transactions", LTX_CASES, {"patterns": 2}
    )
