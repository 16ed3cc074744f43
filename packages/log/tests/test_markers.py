"""Transaction markers (KIP-98): one transactional control record saying COMMIT or
ABORT and the coordinator's epoch. (Byte for byte against Kafka's own:
tests/reference/test_transaction_log.py.)"""

from __future__ import annotations

import pytest

from minikafka.log import (
    EndTxnMarker,
    Record,
    decode_batch,
    end_txn_marker_batch,
    read_end_txn_marker,
)


@pytest.mark.parametrize("commit", [True, False])
def test_a_marker_is_a_transactional_control_batch_that_reads_back(
    commit: bool,
) -> None:
    marker = EndTxnMarker(commit, coordinator_epoch=7)
    batch = end_txn_marker_batch(
        marker, producer_id=42, producer_epoch=3, timestamp=1_000, base_offset=9
    )
    header, [record] = decode_batch(batch)
    assert (header.is_control, header.is_transactional) == (True, True)
    assert (header.producer_id, header.producer_epoch, header.base_offset) == (42, 3, 9)
    assert record.key == (b"\x00\x00\x00\x01" if commit else b"\x00\x00\x00\x00")
    assert read_end_txn_marker(record) == marker


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x07", "control type 2"),
        (b"\x00\x00", b"\x00\x00\x00\x00\x00\x07", "size"),
        (b"\x00\x00\x00\x01", b"\x00\x01\x00\x00\x00\x07", "version 1"),
    ],
)
def test_another_control_record_is_not_a_marker(
    key: bytes, value: bytes, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        read_end_txn_marker(Record(0, 0, key, value))
