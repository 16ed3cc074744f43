"""A partition's open transactions and its last stable offset (KIP-98): every check
states the rule of Kafka's ProducerStateManager it holds."""

from __future__ import annotations

import pytest

from minikafka.log import (
    AbortedTxn,
    CompletedTxn,
    EndTxnMarker,
    InvalidProducerEpochError,
    OngoingTransactions,
    TransactionCoordinatorFencedError,
    build_batch,
    decode_batch,
    make_records,
)

COMMIT, ABORT = EndTxnMarker(True, 0), EndTxnMarker(False, 0)


def append(
    txns: OngoingTransactions, producer_id: int, offset: int, count: int = 2
) -> None:
    """A transactional batch of ``producer_id`` at ``offset``."""
    records = make_records([(None, b"v")] * count, first_offset=offset, timestamp_ms=0)
    batch = build_batch(
        records,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    header, _ = decode_batch(batch)
    txns.on_batch(header)


def test_the_lso_is_the_oldest_undecided_transactions_first_offset() -> None:
    # Guarantee: open transactions hold the LSO at the first offset of the oldest; a
    # marker decides its producer's, which holds the LSO until the marker is below the
    # high watermark; with none undecided the LSO is the high watermark.
    txns = OngoingTransactions()
    assert txns.last_stable_offset(high_watermark=10) == 10
    append(txns, 1, offset=10)
    append(txns, 2, offset=12)
    append(txns, 1, offset=14)  # producer 1's transaction continues: still from 10
    assert txns.last_stable_offset(high_watermark=16) == 10
    completed = txns.on_marker(1, 0, COMMIT, offset=16)
    assert completed == CompletedTxn(1, 10, 16, aborted=False)
    assert txns.last_stable_offset(high_watermark=16) == 10  # marker not replicated
    txns.on_high_watermark(17)
    assert txns.last_stable_offset(high_watermark=17) == 12  # producer 2's is open
    txns.on_marker(2, 0, ABORT, offset=17)
    txns.on_high_watermark(18)
    assert txns.first_unstable_offset() is None
    assert txns.last_stable_offset(high_watermark=18) == 18


def test_an_abort_becomes_an_index_entry_with_the_lso_it_left() -> None:
    # Guarantee: the aborted transaction's .txnindex entry spans its first record to its
    # marker, and its LSO is the oldest other open transaction's start, or the offset
    # after the marker when none is open.
    txns = OngoingTransactions()
    append(txns, 1, offset=0)
    append(txns, 2, offset=2)
    aborted = txns.on_marker(1, 0, ABORT, offset=4)
    assert txns.aborted_entry(aborted) == AbortedTxn(1, 0, 4, 2)
    alone = txns.on_marker(2, 0, ABORT, offset=5)
    assert txns.aborted_entry(alone) == AbortedTxn(2, 2, 5, 6)


def test_markers_of_fenced_epochs_are_refused() -> None:
    # Guarantee: a marker under an older producer epoch is INVALID_PRODUCER_EPOCH; one
    # from an older coordinator epoch than the producer's last marker is
    # TRANSACTION_COORDINATOR_FENCED.
    txns = OngoingTransactions()
    append(txns, 1, offset=0)
    txns.on_marker(1, 3, EndTxnMarker(True, 5), offset=2)
    with pytest.raises(InvalidProducerEpochError):
        txns.check_marker(1, 2, EndTxnMarker(True, 5))
    with pytest.raises(TransactionCoordinatorFencedError):
        txns.check_marker(1, 3, EndTxnMarker(True, 4))
    txns.check_marker(1, 4, EndTxnMarker(False, 6))  # newer of both: fine


def test_truncation_forgets_what_lay_beyond() -> None:
    # Guarantee: a truncation removes the transactions that began at or after it, and
    # reopens one whose marker it cut off.
    txns = OngoingTransactions()
    append(txns, 1, offset=0)
    append(txns, 2, offset=5)
    txns.on_marker(1, 0, COMMIT, offset=7)
    txns.truncate_to(5)
    assert txns.first_unstable_offset() == 0  # producer 1's, its marker gone
    txns.truncate_to(0)
    assert txns.first_unstable_offset() is None
