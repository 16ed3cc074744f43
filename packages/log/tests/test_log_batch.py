"""The record batch v2 header: layout, validation, in-place offset assignment."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from minikafka.log import (
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatchHeader,
    build_batch,
    iter_batches,
    make_records,
    read_batch_header,
)
from minikafka.log._validator import assign_offsets, validate_batches


def batch(count: int = 3, **kwargs: object) -> bytearray:
    records = make_records([(b"k", b"value")] * count, timestamp_ms=1_000)
    return bytearray(build_batch(records, **kwargs))  # type: ignore[arg-type]


def test_header_layout_is_kafkas() -> None:
    data = batch(3, producer_id=77, producer_epoch=2, base_sequence=9)
    assert RECORD_BATCH_OVERHEAD == 61
    header = read_batch_header(data, 0)
    assert header.size == len(data)
    assert struct.unpack_from(">i", data, 8)[0] == len(data) - 12  # batchLength
    assert data[16] == 2  # magic
    assert struct.unpack_from(">I", data, 17)[0] == crc32c(bytes(data[21:]))  # CRC-32C
    assert (header.record_count, header.last_offset_delta) == (3, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        77,
        2,
        9,
    )
    assert header.compression is CompressionType.NONE


def test_compression_lives_in_the_attributes() -> None:
    header = read_batch_header(batch(compression=CompressionType.ZSTD), 0)
    assert header.attributes & 0x07 == 4
    assert header.compression is CompressionType.ZSTD


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b.__setitem__(16, 1), "magic"),
        (lambda b: b.__setitem__(30, b[30] ^ 1), "CRC"),
        (lambda b: struct.pack_into(">i", b, 8, 10), "batchLength"),
        (lambda b: struct.pack_into(">i", b, 8, 10_000), "remain"),
    ],
)
def test_damaged_batches_raise_corrupt_record(damage: object, message: str) -> None:
    data = batch()
    damage(data)  # type: ignore[operator]
    with pytest.raises(CorruptRecordError, match=message) as caught:
        list(iter_batches(data))
    assert caught.value.error_code == 2  # CORRUPT_MESSAGE


def test_a_truncated_buffer_is_corrupt() -> None:
    data = batch() + batch()
    for cut in (5, 40, len(data) - 1):
        with pytest.raises(CorruptRecordError):
            list(iter_batches(data[:cut]))


def test_validation_rules_for_client_batches() -> None:
    with pytest.raises(InvalidRecordError, match="control"):
        validate_batches(
            batch(is_control=True), max_message_bytes=10**6, from_client=True
        )
    gapped = batch(1, last_offset_delta=5)
    with pytest.raises(InvalidRecordError, match="lastOffsetDelta") as caught:
        validate_batches(gapped, max_message_bytes=10**6, from_client=True)
    assert caught.value.error_code == 87  # INVALID_RECORD
    # A follower accepts a batch with gaps: compaction on the leader made them.
    assert validate_batches(gapped, max_message_bytes=10**6, from_client=False)


def test_offsets_are_assigned_in_place_without_touching_the_records() -> None:
    data = batch(2) + batch(3)
    first = read_batch_header(data, 0).size

    def records_region() -> tuple[bytes, bytes]:
        return bytes(data[61:first]), bytes(data[first + 61 :])

    records_before = records_region()
    checked = validate_batches(data, max_message_bytes=10**6, from_client=True)
    assigned, info = assign_offsets(data, checked, 1000, leader_epoch=6)
    assert [h.base_offset for _, h in assigned] == [1000, 1002]
    assert (info.first_offset, info.last_offset, info.record_count) == (1000, 1004, 5)
    assert records_region() == records_before
    for _, header in iter_batches(data, verify_crc=True):  # CRCs still hold
        assert header.partition_leader_epoch == 6


def test_header_round_trip() -> None:
    data = batch(4, base_offset=None)
    header = read_batch_header(data, 0)
    assert RecordBatchHeader.read(data) == header
    assert header.next_offset == 4
