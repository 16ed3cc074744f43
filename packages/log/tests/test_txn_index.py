"""The aborted-transaction index (``.txnindex``): Kafka's 34-byte entries, appended in
marker order, truncated with the log, and searched for a read_committed fetch's range.
(Byte for byte against Kafka's own file: tests/reference/test_transaction_log.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.log import AbortedTxn, CorruptIndexError, TransactionIndex

A = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=21)
B = AbortedTxn(producer_id=8, first_offset=15, last_offset=30, last_stable_offset=31)
C = AbortedTxn(producer_id=7, first_offset=40, last_offset=45, last_stable_offset=46)


def opened(tmp_path: Path, *entries: AbortedTxn) -> TransactionIndex:
    index = TransactionIndex.open(tmp_path / "00000000000000000000.txnindex", 0)
    for entry in entries:
        index.append(entry)
    return index


def test_entries_survive_a_reopen_as_kafkas_bytes(tmp_path: Path) -> None:
    # Guarantee: each entry is version 0 then four int64s, big-endian, 34 bytes.
    index = opened(tmp_path, A, B)
    index.close()
    data = index.path.read_bytes()
    assert len(data) == 68
    assert data[:34] == bytes.fromhex(
        "00000000000000000007000000000000000a00000000000000140000000000000015"
    )
    again = TransactionIndex.open(index.path, 0)
    assert again.entries() == [A, B]
    again.close()


def test_markers_come_in_order(tmp_path: Path) -> None:
    # Guarantee: an abort marker before the last one indexed is refused, and a file
    # whose entries are out of order, torn or of an unknown version is corrupt.
    index = opened(tmp_path, B)
    with pytest.raises(CorruptIndexError, match="must grow"):
        index.append(A)
    index.close()
    for damage in (
        A.to_bytes() + A.to_bytes(),
        A.to_bytes()[:-1],
        b"\x00\x01" + A.to_bytes()[2:],
    ):
        index.path.write_bytes(damage)
        with pytest.raises(CorruptIndexError):
            TransactionIndex.open(index.path, 0)


def test_truncation_drops_the_transactions_aborted_at_or_after(tmp_path: Path) -> None:
    index = opened(tmp_path, A, B, C)
    index.truncate_to(30)
    assert index.entries() == [A]
    assert index.path.stat().st_size == 34
    index.close()


def test_a_fetch_is_told_of_the_aborted_transactions_it_overlaps(
    tmp_path: Path,
) -> None:
    # Guarantee (Kafka's collectAbortedTxns): a transaction counts if its marker is at
    # or after the fetch offset and it began before the range's end; the search is
    # complete once an entry's last stable offset reaches the end.
    index = opened(tmp_path, A, B, C)
    assert index.collect_aborted(0, 12).aborted == (A,)
    assert index.collect_aborted(21, 35).aborted == (B,)
    assert index.collect_aborted(0, 100).aborted == (A, B, C)
    assert not index.collect_aborted(0, 100).complete  # a later segment may hold more
    assert index.collect_aborted(0, 21).complete  # A's LSO reached 21
    assert index.collect_aborted(46, 50).aborted == ()
    index.close()
