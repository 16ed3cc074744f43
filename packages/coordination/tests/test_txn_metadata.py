"""A transaction's state table and one transactional id's moves (KIP-98): every check
states the rule of Kafka's TransactionState and TransactionMetadata it holds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.coordination.transaction import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TXN_TRANSITION_REASONS,
    TXN_TRANSITIONS,
    IllegalTransactionStateError,
    ProducerEpochExhaustedError,
    ProducerFencedError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    check_txn_transition,
)

S = TransactionState
A, B = TopicPartition("out", 0), TopicPartition("out", 1)


def new(epoch: int = 0) -> TransactionMetadata:
    return TransactionMetadata(
        "tx", 1000, NO_PRODUCER_ID, epoch, NO_PRODUCER_EPOCH, 60_000
    )


def move(meta: TransactionMetadata, transit: TxnTransitMetadata) -> None:
    meta.complete_transition(transit)


def test_the_table_is_kafkas_and_every_edge_has_a_reason() -> None:
    # Guarantee: the table is Kafka's validPreviousStates, and the book's labels cover
    # exactly its edges; ids are the bytes __transaction_state stores.
    edges = {
        (before, after)
        for after, befores in TXN_TRANSITIONS.items()
        for before in befores
    }
    assert edges == set(TXN_TRANSITION_REASONS)
    assert TXN_TRANSITIONS[S.PREPARE_COMMIT] == {S.ONGOING}
    assert TXN_TRANSITIONS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert [s.id for s in S] == list(range(8))
    assert all(S.from_id(s.id) is s for s in S)
    assert {s for s in S if s.expiration_allowed} == {
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }
    with pytest.raises(IllegalTransactionStateError, match="Ongoing"):
        check_txn_transition(S.EMPTY, S.PREPARE_COMMIT)


KAFKAS_TABLE = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
"""Kafka's ``TransactionState.validPreviousStates`` for the first transaction protocol
(KIP-98; KIP-890 part 1), written out here apart from the code, so that the check below
does not test the table against itself. Kafka 4's table also lets Empty, CompleteCommit
and CompleteAbort move to PrepareAbort, for the second protocol's (KIP-890 part 2)
EndTxn v5, which minikafka does not serve."""


@pytest.mark.parametrize("target", list(S), ids=lambda s: s.value)
def test_every_pair_of_states_is_checked_against_kafkas_table(
    target: TransactionState,
) -> None:
    # Guarantee: of all 64 moves, check_txn_transition allows exactly Kafka's (a
    # commit only from Ongoing, a fenced transaction only to its abort, Dead only
    # between transactions) and refuses every other, naming where the target may be
    # entered from.
    assert TXN_TRANSITIONS[target] == KAFKAS_TABLE[target]
    for current in S:
        if current in KAFKAS_TABLE[target]:
            assert check_txn_transition(current, target) is target
            continue
        with pytest.raises(IllegalTransactionStateError) as refused:
            check_txn_transition(current, target)
        for allowed in KAFKAS_TABLE[target]:
            assert allowed.value in str(refused.value), (current, target)


def test_a_transaction_commits_through_prepare_and_complete() -> None:
    # Guarantee: adding partitions opens the transaction (its start is the first add),
    # EndTxn prepares the commit, and the markers' completion empties it; the cache
    # changes only when a move completes.
    meta = new()
    move(meta, meta.prepare_add_partitions(frozenset({A}), now=10))
    move(meta, meta.prepare_add_partitions(frozenset({B}), now=20))
    assert (meta.state, meta.topic_partitions, meta.txn_start_timestamp) == (
        S.ONGOING,
        {A, B},
        10,
    )
    prepared = meta.prepare_abort_or_commit(S.PREPARE_COMMIT, now=30)
    assert meta.state is S.ONGOING  # written, not yet completed
    move(meta, prepared)
    move(meta, meta.prepare_complete(now=40))
    assert (meta.state, meta.topic_partitions) == (S.COMPLETE_COMMIT, set())


def test_one_move_at_a_time() -> None:
    # Guarantee: while a move's record is being written, no other move is prepared
    # (Kafka answers CONCURRENT_TRANSACTIONS), and only the pending move completes.
    meta = new()
    pending = meta.prepare_add_partitions(frozenset({A}), now=1)
    with pytest.raises(IllegalTransactionStateError, match="pending"):
        meta.prepare_add_partitions(frozenset({B}), now=2)
    other = new().prepare_add_partitions(frozenset({B}), now=2)
    with pytest.raises(IllegalTransactionStateError, match="not pending"):
        meta.complete_transition(other)
    meta.abandon_transition()  # the write failed: nothing changed
    assert (meta.state, meta.topic_partitions) == (S.EMPTY, set())
    move(meta, meta.prepare_add_partitions(frozenset({A}), now=3))
    assert pending.state is meta.state is S.ONGOING


def test_a_new_producer_fences_an_open_transaction_with_a_bumped_epoch() -> None:
    # Guarantee: fencing bumps the epoch once, and the transaction it fences can only
    # be aborted (PrepareEpochFence -> PrepareAbort), never committed.
    meta = new(epoch=4)
    move(meta, meta.prepare_add_partitions(frozenset({A}), now=1))
    move(meta, meta.prepare_fence_producer_epoch())
    assert (meta.state, meta.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 5)
    with pytest.raises(IllegalTransactionStateError):
        meta.prepare_abort_or_commit(S.PREPARE_COMMIT, now=2)
    move(meta, meta.prepare_abort_or_commit(S.PREPARE_ABORT, now=2))
    move(meta, meta.prepare_complete(now=3))
    assert meta.state is S.COMPLETE_ABORT


def test_init_producer_id_bumps_the_epoch_and_fences_older_ones() -> None:
    # Guarantee (KIP-360): a new producer gets the next epoch; one naming the current
    # epoch gets the next and the current is remembered; naming the remembered one is a
    # retry answered unchanged; any older epoch is fenced.
    meta = new(epoch=2)
    move(meta, meta.prepare_increment_producer_epoch(60_000, None, now=1))
    assert (meta.producer_epoch, meta.last_producer_epoch) == (3, NO_PRODUCER_EPOCH)
    move(meta, meta.prepare_increment_producer_epoch(60_000, 3, now=2))
    assert (meta.producer_epoch, meta.last_producer_epoch) == (4, 3)
    move(meta, meta.prepare_increment_producer_epoch(60_000, 3, now=3))
    assert (meta.producer_epoch, meta.last_producer_epoch) == (4, 3)
    with pytest.raises(ProducerFencedError):
        meta.prepare_increment_producer_epoch(60_000, 1, now=4)


def test_an_exhausted_epoch_asks_for_a_new_producer_id() -> None:
    # Guarantee: an epoch near the int16 maximum is not bumped; the id is rotated to a
    # new one at epoch 0, remembering the old for a retried request.
    meta = new(epoch=2**15 - 2)
    with pytest.raises(ProducerEpochExhaustedError):
        meta.prepare_increment_producer_epoch(60_000, None, now=1)
    move(meta, meta.prepare_producer_id_rotation(2000, 60_000, now=1, keep_last=True))
    assert (meta.producer_id, meta.producer_epoch) == (2000, 0)
    assert (meta.last_producer_id, meta.last_producer_epoch) == (1000, 2**15 - 2)


OPS = st.lists(
    st.sampled_from(
        ["init", "add", "commit", "abort", "complete", "fence", "expire", "abandon"]
    ),
    max_size=40,
)


def prepare(
    meta: TransactionMetadata, op: str, now: int, data: st.DataObject
) -> TxnTransitMetadata:
    """The move a request named ``op`` prepares."""
    if op == "init":
        return meta.prepare_increment_producer_epoch(60_000, None, now)
    if op == "add":
        return meta.prepare_add_partitions(
            frozenset({data.draw(st.sampled_from([A, B]))}), now
        )
    if op in ("commit", "abort"):
        target = S.PREPARE_COMMIT if op == "commit" else S.PREPARE_ABORT
        return meta.prepare_abort_or_commit(target, now)
    if op == "complete":
        return meta.prepare_complete(now)
    if op == "fence":
        return meta.prepare_fence_producer_epoch()
    return meta.prepare_dead()


@settings(max_examples=300, deadline=None)
@given(OPS, st.data())
def test_any_sequence_of_requests_keeps_the_invariants(
    ops: list[str], data: st.DataObject
) -> None:
    # Guarantee: whatever requests arrive, in any order, a transaction's state moves
    # only along the table; a producer id's epoch never goes down; a transaction holds
    # partitions only while it is open or ending; and a refused move changes nothing.
    meta, now = new(), 0
    for op in ops:
        now += 1
        before = (meta.state, meta.producer_id, meta.producer_epoch)
        snapshot = meta.pending
        try:
            if op == "abandon":
                meta.abandon_transition()
                continue
            transit = prepare(meta, op, now, data)
        except (IllegalTransactionStateError, ProducerEpochExhaustedError):
            assert (meta.state, meta.producer_id, meta.producer_epoch) == before
            assert meta.pending is snapshot
            continue
        if data.draw(st.integers(0, 9)) > 0:  # mostly written; else still pending
            move(meta, transit)
            assert before[0] in TXN_TRANSITIONS[meta.state]
        if meta.producer_id == before[1]:
            assert meta.producer_epoch >= before[2]
        if meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.DEAD):
            assert not meta.topic_partitions
        if meta.state is S.ONGOING:
            assert meta.topic_partitions
            assert meta.txn_start_timestamp > 0
