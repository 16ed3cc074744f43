"""What an operator may ask the transaction coordinator (KIP-664, KIP-994), on a cache
replayed from records: DescribeTransactions' answer per id (its state, producer, timeout,
start and partitions, or NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST), and ListTransactions' filters (states,
unknown state names returned, producer ids, the duration against ``now``, a regular
expression the whole id must match, INVALID_REGULAR_EXPRESSION for one that does not
compile), refused as a
whole while any partition led here is loading, as Kafka's
``TransactionStateManager.listTransactionStates`` answers."""

from __future__ import annotations

import re

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.transaction import TransactionState, TransactionStateManager
from minikafka.coordination.transaction._txn_queries import (
    describe_transaction,
    list_transactions,
)

from .test_txn_state_manager import ids_on, record

S = TransactionState
NOW = 1_700_000_100_000
STARTED = NOW - 30_000


def loaded() -> tuple[TransactionStateManager, str, str, str]:
    """Partition 0 led and replayed: an id Ongoing for 30 s, one Empty (no transaction
    started), one whose last record is a tombstone."""
    manager = TransactionStateManager(num_partitions=3)
    ongoing, empty, gone = ids_on(manager, 0, 3)
    manager.load_partition(
        0,
        [
            record(ongoing, S.ONGOING, epoch=4, start=STARTED, update=STARTED),
            record(empty, S.EMPTY, epoch=1, update=STARTED),
            record(gone, S.COMPLETE_COMMIT),
            (record(gone, S.COMPLETE_COMMIT)[0], None),
        ],
    )
    return manager, ongoing, empty, gone


def test_describe_gives_the_cached_state_or_why_it_cannot() -> None:
    # Guarantee: an id led here is described as the cache holds it (start -1 when no
    # transaction has begun); an id led elsewhere, loading, unknown or empty gets
    # Kafka's error for it and nothing else.
    manager, ongoing, empty, gone = loaded()
    described = describe_transaction(manager, ongoing)
    assert described.error_code is ErrorCode.none
    assert (described.state, described.producer_id, described.producer_epoch) == (
        "Ongoing",
        7,
        4,
    )
    assert (described.timeout_ms, described.start_timestamp) == (60_000, STARTED)
    assert described.partitions == (TopicPartition("out", 0),)
    idle = describe_transaction(manager, empty)
    assert (idle.state, idle.start_timestamp, idle.partitions) == ("Empty", -1, ())
    assert (
        describe_transaction(manager, gone).error_code
        is ErrorCode.transactional_id_not_found
    )
    assert describe_transaction(manager, "").error_code is ErrorCode.invalid_request
    [elsewhere] = ids_on(manager, 1, 1)
    assert describe_transaction(manager, elsewhere).error_code is (
        ErrorCode.not_coordinator
    )
    manager.begin_loading(1)
    assert describe_transaction(manager, elsewhere).error_code is (
        ErrorCode.coordinator_load_in_progress
    )


def test_list_applies_every_filter_given() -> None:
    # Guarantee: no filter lists every id; each filter given narrows the list; a state
    # name Kafka does not know matches nothing and is returned as unknown.
    manager, ongoing, empty, _ = loaded()

    def ids(
        states: tuple[str, ...] = (),
        pids: tuple[int, ...] = (),
        duration: int = -1,
    ) -> set[str]:
        listed = list_transactions(manager, states, pids, duration, NOW)
        assert listed.error_code is ErrorCode.none
        return {t.transactional_id for t in listed.transactions}

    assert ids() == {ongoing, empty}
    assert ids(states=("Ongoing",)) == {ongoing}
    assert ids(states=("Ongoing", "Empty")) == {ongoing, empty}
    assert ids(pids=(7,)) == {ongoing, empty}
    assert ids(pids=(8,)) == set()
    # Running for more than 29 s: the Ongoing one; 30 s is not more than 30 s. An id
    # with no transaction begun (start -1) passes, as in Kafka.
    assert ids(states=("Ongoing",), duration=29_999) == {ongoing}
    assert ids(states=("Ongoing",), duration=30_000) == set()
    assert ids(duration=30_000) == {empty}
    unknown = list_transactions(manager, ("Ongoing", "Hanging"), (), -1, NOW)
    assert unknown.unknown_state_filters == ("Hanging",)
    assert [
        (t.transactional_id, t.producer_id, t.state) for t in unknown.transactions
    ] == [(ongoing, 7, "Ongoing")]


def test_list_by_pattern_matches_whole_ids() -> None:
    # Guarantee: (v2, KIP-1152) only ids the whole pattern matches are listed, as
    # Kafka's matcher does ("tx" alone matches no "tx-N"); an empty pattern is no
    # filter; a pattern that does not compile lists nothing, with Kafka's error.
    manager, ongoing, empty, _ = loaded()

    def ids(pattern: str | None) -> set[str]:
        listed = list_transactions(manager, (), (), -1, NOW, pattern)
        assert listed.error_code is ErrorCode.none
        return {t.transactional_id for t in listed.transactions}

    assert ids(None) == ids("") == {ongoing, empty}
    assert ids("tx") == set()
    assert ids("tx-.*") == {ongoing, empty}
    assert ids(re.escape(ongoing)) == {ongoing}
    refused = list_transactions(manager, (), (), -1, NOW, "(")
    assert refused.error_code is ErrorCode.invalid_regular_expression
    assert refused.transactions == ()


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+$",  # a repeat of a repeat: exponential backtracking in Python's re
        "(tx|t)*-1",  # a repeat of alternatives: the same
        "(?=tx).*",  # look-arounds, back-references, atomic groups, possessive
        "(tx)\\1",  # repeats: Python's, not RE2/J's (Kafka refuses them too)
        "(?>tx).*",
        "tx-.++",
        "(a?){30}a{30}",  # a counted repeat of a repeat: 2**30 ways, as exponential
        "(.*){12}x",  # a counted repeat of an unbounded one: n**12 tries
    ],
)
def test_a_pattern_that_could_backtrack_exponentially_or_kafka_refuses_is_refused(
    pattern: str,
) -> None:
    # Guarantee: the broker never runs a pattern Python's backtracking matcher could
    # take exponential time on; such a pattern gets INVALID_REGULAR_EXPRESSION, as one
    # that does not compile, and lists nothing.
    manager, *_ = loaded()
    refused = list_transactions(manager, (), (), -1, NOW, pattern)
    assert refused.error_code is ErrorCode.invalid_regular_expression
    assert refused.transactions == ()


@pytest.mark.parametrize(
    "pattern",
    [
        "tx-[0-9]{4294967296}",  # a count Python's re cannot hold (OverflowError)
        "(" * 500 + "tx" + ")" * 500,  # nesting Python's parser recurses too deep on
    ],
)
def test_a_pattern_python_cannot_compile_is_an_invalid_regular_expression(
    pattern: str,
) -> None:
    # Guarantee: whatever way the compiler fails on a client's pattern, the answer is
    # INVALID_REGULAR_EXPRESSION (as RE2/J's refusal is in Kafka), never an exception
    # out of the coordinator (which the broker would answer UNKNOWN_SERVER_ERROR).
    manager, *_ = loaded()
    refused = list_transactions(manager, (), (), -1, NOW, pattern)
    assert refused.error_code is ErrorCode.invalid_regular_expression
    assert refused.transactions == ()


def test_a_counted_repeat_of_a_fixed_width_part_is_allowed() -> None:
    # Guarantee: refusing nested repeats does not refuse a counted repeat of a part
    # that matches one way only (no backtracking inside it): it lists as it matches.
    manager, ongoing, empty, _ = loaded()
    listed = list_transactions(manager, (), (), -1, NOW, "(tx){1}(-){1}[0-9]{1,5}")
    assert listed.error_code is ErrorCode.none
    assert {t.transactional_id for t in listed.transactions} == {ongoing, empty}


def test_list_is_refused_while_a_partition_loads() -> None:
    # Guarantee: COORDINATOR_LOAD_IN_PROGRESS and no ids while any partition led here
    # is being replayed (its ids would be missing); listed again once it is loaded.
    manager, *_ = loaded()
    manager.begin_loading(2)
    refused = list_transactions(manager, (), (), -1, NOW)
    assert refused.error_code is ErrorCode.coordinator_load_in_progress
    assert refused.transactions == ()
    [late] = ids_on(manager, 2, 1)
    manager.load_partition(2, [record(late, S.EMPTY)])
    listed = list_transactions(manager, (), (), -1, NOW)
    assert late in {t.transactional_id for t in listed.transactions}
