"""The cleaner's decisions on their own (no files): which batches of transactions go,
which markers stay, and what each batch becomes (Kafka's ``CleanedTransactionMetadata``
and ``Cleaner.cleanInto`` filter)."""

from __future__ import annotations

from minikafka.log import (
    AbortedTxn,
    EndTxnMarker,
    RecordBatchHeader,
    build_batch,
    decode_batch,
    end_txn_marker_batch,
    make_records,
)
from minikafka.log._clean_filter import (
    BatchRetention,
    CleanedTransactionMetadata,
    CleanerContext,
    LastRecord,
    batch_retention,
    filter_batch,
)

NOW = 1_700_000_000_000
RETENTION = 10_000


def data(
    offset: int, producer_id: int, *, key: bytes = b"k", transactional: bool = True
) -> bytes:
    records = make_records([(key, b"v")], first_offset=offset, timestamp_ms=NOW)
    return build_batch(
        records,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=offset,
        is_transactional=transactional,
    )


def marker(offset: int, producer_id: int, commit: bool, epoch: int = 0) -> bytes:
    return end_txn_marker_batch(
        EndTxnMarker(commit, 0),
        producer_id=producer_id,
        producer_epoch=epoch,
        timestamp=NOW,
        base_offset=offset,
    )


def header(raw: bytes) -> RecordBatchHeader:
    return RecordBatchHeader.read(raw)


def read(txns: CleanedTransactionMetadata, raw: bytes) -> bool:
    h = header(raw)
    if h.is_control:
        return txns.on_control_batch(h, decode_batch(raw)[1])
    return txns.on_batch(h)


def test_an_aborted_transaction_discards_its_producers_batches_up_to_its_marker() -> (
    None
):
    # Guarantee: from an aborted transaction's first offset to its ABORT marker, its
    # producer's transactional batches are discarded, and no other batch (another
    # producer's, a non-transactional one); the marker stays, with its entry for the
    # cleaned .txnindex; the producer's next transaction is not discarded.
    aborted = AbortedTxn(
        producer_id=1, first_offset=2, last_offset=5, last_stable_offset=0
    )
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions([aborted, aborted])  # collected twice: harmless
    assert read(txns, data(0, 1)) is False  # before it: P1's committed transaction
    assert read(txns, marker(1, 1, commit=True)) is False  # whose marker stays
    assert read(txns, data(2, 1)) is True
    assert read(txns, data(3, 2)) is False
    assert read(txns, data(4, 1, transactional=False)) is False
    assert txns.take_retained() == []
    assert read(txns, marker(5, 1, commit=False)) is False
    assert txns.take_retained() == [aborted]
    assert read(txns, data(6, 1)) is False


def test_a_marker_whose_transaction_had_no_batch_in_the_pass_may_go() -> None:
    # Guarantee: an ABORT marker with no batch of its transaction read, a COMMIT
    # marker with none read since the producer's last marker, and an emptied control
    # batch may go (once their horizon passed); the ABORT's entry is not retained; a
    # control record of another kind always stays.
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions([AbortedTxn(1, 0, 0, 1)])
    assert read(txns, marker(0, 1, commit=False)) is True
    assert txns.take_retained() == []
    assert read(txns, marker(1, 2, commit=True)) is True
    assert read(txns, data(2, 2)) is False
    assert read(txns, marker(3, 2, commit=True)) is False
    assert read(txns, marker(4, 2, commit=True)) is True  # a retried one
    emptied = build_batch(
        [], base_offset=5, last_offset_delta=0, producer_id=2, is_control=True
    )
    assert read(txns, emptied) is True
    other_kind = build_batch(
        make_records([(b"\x00\x00\x00\x05", b"")], first_offset=6, timestamp_ms=NOW),
        producer_id=2,
        is_control=True,
    )
    assert read(txns, other_kind) is False


def test_batch_retention_keeps_each_producers_last_write_and_the_groups_end() -> None:
    # Guarantee (Kafka's checkBatchRetention): a producer's last data batch, or its
    # last marker when its last write is a marker of its current epoch, stays even
    # emptied; so does the batch that ends the group; a discarded batch goes whole;
    # any other goes when no record survives.
    last = {1: LastRecord(3, 0), 2: LastRecord(None, 5)}
    end = 100
    assert (
        batch_retention(header(data(3, 1)), True, last, end)
        is BatchRetention.RETAIN_EMPTY
    )
    assert batch_retention(header(data(2, 1)), True, last, end) is BatchRetention.DELETE
    assert (
        batch_retention(header(data(2, 1)), False, last, end)
        is BatchRetention.DELETE_EMPTY
    )
    assert (
        batch_retention(header(marker(7, 2, False, epoch=5)), True, last, end)
        is BatchRetention.RETAIN_EMPTY
    )
    assert (
        batch_retention(header(marker(7, 2, False, epoch=4)), True, last, end)
        is BatchRetention.DELETE
    )
    assert (
        batch_retention(header(data(99, 3)), True, last, end)
        is BatchRetention.RETAIN_EMPTY
    )


def context(
    txns: CleanedTransactionMetadata, now: int = NOW, **last: LastRecord
) -> CleanerContext:
    return CleanerContext(
        {}, txns, {int(k[1:]): v for k, v in last.items()}, now, RETENTION
    )


def test_a_marker_of_an_empty_transaction_is_stamped_then_dropped_at_its_horizon() -> (
    None
):
    # Guarantee (KIP-534): the first pass that finds a marker with no batch of its
    # transaction rewrites it with a delete horizon (now + delete.retention.ms) and
    # keeps its record; a pass before the horizon keeps it as it is; a pass at the
    # horizon drops it, or empties it when it is its producer's last write.
    raw = marker(10, 1, commit=True)
    stamped, dropped = filter_batch(
        raw, header(raw), context(CleanedTransactionMetadata()), 100
    )
    assert stamped is not None
    assert dropped == 0
    assert header(stamped).delete_horizon_ms == NOW + RETENTION
    assert decode_batch(stamped)[1] == decode_batch(raw)[1]
    early = context(CleanedTransactionMetadata(), NOW + RETENTION - 1)
    assert filter_batch(stamped, header(stamped), early, 100) == (stamped, 0)
    due = context(CleanedTransactionMetadata(), NOW + RETENTION)
    assert filter_batch(stamped, header(stamped), due, 100) == (None, 1)
    kept_empty = context(
        CleanedTransactionMetadata(), NOW + RETENTION, p1=LastRecord(None, 0)
    )
    emptied, _ = filter_batch(stamped, header(stamped), kept_empty, 100)
    assert emptied is not None
    assert header(emptied).is_control
    assert header(emptied).record_count == 0
    assert (header(emptied).base_offset, header(emptied).producer_id) == (10, 1)


def test_an_aborted_batch_goes_unless_it_holds_its_producers_last_sequence() -> None:
    # Guarantee: an aborted transaction's batch is dropped with its records, but a
    # producer's last batch is kept emptied, with its offsets, producer and sequence.
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions([AbortedTxn(1, 0, 5, 6)])
    first, last = data(0, 1), data(1, 1)
    ctx = context(txns, p1=LastRecord(1, 0))
    assert filter_batch(first, header(first), ctx, 100) == (None, 1)
    emptied, dropped = filter_batch(last, header(last), ctx, 100)
    assert emptied is not None
    assert dropped == 1
    h = header(emptied)
    assert (h.record_count, h.base_offset, h.producer_id, h.base_sequence) == (
        0,
        1,
        1,
        1,
    )
    assert h.is_transactional
    assert not h.is_control
