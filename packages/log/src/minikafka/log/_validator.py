"""Checking what arrives before it is appended, and assigning offsets (Kafka's LogValidator).

A leader trusts nothing a producer sends: every batch's length, magic and CRC-32C are
checked, its record count must agree with its offset range, and it must fit
``max.message.bytes``. Then every record inside is walked (:mod:`._record_checks`),
decompressing a compressed batch with a bound on its size: a CRC only proves that the
bytes arrived as sent, not that a consumer can read them.

Then the leader gives each batch its offsets by writing ``baseOffset`` (and
``partitionLeaderEpoch``) into the header in place. The CRC starts at ``attributes``,
after both fields, precisely so that this needs no re-checksum: the batch stays the
producer's bytes, compressed or not (Kafka's "in place" assignment). Only when the
topic's ``compression.type`` names a codec other than the batch's does the leader
rewrite it: the same record bytes, compressed with the topic's codec, under a header
with new attributes, length and CRC (Kafka recompresses in the same case).

A follower appends batches that already carry the leader's offsets; it checks their
structure the same way and that their offsets only move forward, and never recompresses.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import attrs

from minikafka.common import ErrorCode

from ._batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    InvalidRecordError,
    RecordBatchHeader,
    compute_crc,
    iter_batches,
    set_log_append_time,
    write_offset_and_epoch,
)
from ._compression import compress, decompress
from ._producer_state import BatchMetadata
from ._record_checks import RecordRules, check_records, record_errors

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

MAX_OFFSET = 2**63 - 1
# length, attributes, timestamp/offset deltas, key, value, header count
MIN_RECORD_BYTES = 7
# A compressed batch may decompress to this much and no more (a decompression bomb is
# refused while inflating, see _compression): generous for any real producer, whose
# batches are bounded by its batch.size and the broker's max.message.bytes.
MIN_DECOMPRESSED_LIMIT = 64 * 1024 * 1024
DECOMPRESSION_RATIO_LIMIT = 16


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than ``max.message.bytes``: Kafka's MESSAGE_TOO_LARGE (10)."""

    error_code = ErrorCode.message_too_large


class UnexpectedAppendOffsetError(InvalidRecordError):
    """A follower's batch that would move the log end backwards."""


@attrs.frozen
class LogAppendInfo:
    """What an append did: the offsets it was given and what the broker answers with.

    ``duplicate``: an idempotent producer's retry of a batch the log already holds
    (KIP-98). Nothing was written (``valid_bytes`` is 0); the offsets, timestamps and
    counts are the original batch's, which the producer is answered with, no error.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    record_count: int
    batch_count: int
    valid_bytes: int
    duplicate: bool = False

    @property
    def empty(self) -> bool:
        return self.batch_count == 0


Batches = list[tuple[int, RecordBatchHeader]]


def validate_batches(
    buf: bytes | bytearray | memoryview, *, max_message_bytes: int, from_client: bool
) -> Batches:
    """Every batch of ``buf`` as ``(position, header)``, or the error for the first bad
    one.

    Structure and CRC for everybody; for batches from a client also the rules a
    producer can break (Kafka's ``LogValidator.validateBatch``).
    """
    batches: Batches = []
    for position, header in iter_batches(buf, verify_crc=True):
        if header.size > max_message_bytes:
            raise RecordTooLargeError(
                f"batch at position {position} is {header.size} bytes, more than "
                f"max.message.bytes={max_message_bytes}",
                position,
            )
        _validate_offsets(position, header)
        if from_client:
            _validate_client_batch(position, header)
        elif batches and header.base_offset <= batches[-1][1].last_offset:
            raise UnexpectedAppendOffsetError(
                f"batch at position {position} starts at offset {header.base_offset}, "
                "not "
                f"after the previous batch's last offset {batches[-1][1].last_offset}",
                position,
            )
        batches.append((position, header))
    return batches


_LAST_CODEC = max(CompressionType)  # once, not an iteration of the enum per batch


def _validate_offsets(position: int, header: RecordBatchHeader) -> None:
    """What any stored batch must satisfy, whoever sent it: offsets that exist and move on."""
    if (
        header.base_offset < 0
        or header.last_offset_delta < 0
        or header.record_count < 0
    ):
        raise InvalidRecordError(
            f"batch at position {position} has base offset {header.base_offset}, "
            f"lastOffsetDelta {header.last_offset_delta}, recordCount {header.record_count}",
            position,
        )
    if header.last_offset > MAX_OFFSET:
        raise InvalidRecordError(
            f"batch at position {position} ends past offset 2^63-1", position
        )
    if header.attributes & COMPRESSION_MASK > _LAST_CODEC:
        raise InvalidRecordError(
            f"batch at position {position} names compression codec "
            f"{header.attributes & COMPRESSION_MASK}, which does not exist",
            position,
        )
    if header.compression is CompressionType.NONE and header.record_count > (
        (header.size - RECORD_BATCH_OVERHEAD) // MIN_RECORD_BYTES
    ):
        # Uncompressed, every record takes at least 7 bytes: a count the bytes cannot
        # hold is a lie that would move the log end offset by millions.
        raise InvalidRecordError(
            f"batch at position {position} claims {header.record_count} records in "
            f"{header.size - RECORD_BATCH_OVERHEAD} bytes",
            position,
        )


def _validate_client_batch(position: int, header: RecordBatchHeader) -> None:
    if header.record_count <= 0:
        raise InvalidRecordError(
            f"batch at position {position} reports {header.record_count} records",
            position,
        )
    # "Inconsistent batch offset range and count of records": a producer numbers its
    # records 0..n-1, so lastOffsetDelta must be recordCount - 1.
    if header.last_offset_delta != header.record_count - 1:
        raise InvalidRecordError(
            f"batch at position {position} has lastOffsetDelta "
            f"{header.last_offset_delta} "
            f"but {header.record_count} records",
            position,
        )
    if header.is_control:
        raise InvalidRecordError(
            f"batch at position {position} is a control batch; clients may not send "
            "those",
            position,
        )


def decompressed_limit(max_message_bytes: int) -> int:
    """The most a batch from a client may decompress to."""
    return max(MIN_DECOMPRESSED_LIMIT, DECOMPRESSION_RATIO_LIMIT * max_message_bytes)


def validate_records(
    buf: bytes | bytearray | memoryview,
    batches: Sequence[tuple[int, RecordBatchHeader]],
    rules: RecordRules,
    max_decompressed: int,
) -> list[bytes | None]:
    """Walk every record of every batch; the decompressed payload of each compressed
    one.

    A payload that does not decompress is CORRUPT_MESSAGE (2); records that do not match
    their header are INVALID_RECORD (87). The payloads are returned so that a batch to
    be recompressed is not decompressed twice.
    """
    payloads: list[bytes | None] = []
    for position, header in batches:
        start, end = position + RECORD_BATCH_OVERHEAD, position + header.size
        data: bytes | bytearray | memoryview = buf
        try:
            if header.compression is CompressionType.NONE:
                check_records(buf, start, end, header, rules)  # in the request's buffer
                payloads.append(None)
                continue
            data = decompress(
                header.compression, memoryview(buf)[start:end], max_decompressed
            )
            start, end = 0, len(data)
            check_records(data, start, end, header, rules)
            payloads.append(data)
        except InvalidRecordError as e:
            # The same class (and so the same error code), with the batch named and,
            # when a record broke a per-record rule, every record that does, as Kafka
            # lists them.
            raise type(e)(
                f"batch at position {position}: {e}",
                position,
                record_errors(data, start, end, header, rules) if e.per_record else (),
            ) from e
    return payloads


def recompress(
    buf: bytearray | memoryview,
    batches: Sequence[tuple[int, RecordBatchHeader]],
    payloads: Sequence[bytes | None],
    target: CompressionType,
    level: int | None,
    max_message_bytes: int,
) -> tuple[bytearray, Batches]:
    """The batches with every one not already in ``target`` rewritten in it.

    A record's bytes do not depend on the codec around them, so the rewrite needs no
    record decoded: the uncompressed record bytes are compressed with ``target`` and put
    under the original header with the codec bits, batchLength and CRC changed. The
    offsets are assigned afterwards, as for any batch.
    """
    out = bytearray()
    result: Batches = []
    for (position, header), payload in zip(batches, payloads, strict=True):
        if header.compression is target:
            out += buf[position : position + header.size]
        else:
            records = payload
            if records is None:  # uncompressed: the records are the payload itself
                records = bytes(
                    buf[position + RECORD_BATCH_OVERHEAD : position + header.size]
                )
            body = compress(target, records, level)
            start = len(out)
            out += buf[position : position + RECORD_BATCH_OVERHEAD]
            out += body
            size = RECORD_BATCH_OVERHEAD + len(body)
            _INT32.pack_into(out, start + 8, size - LOG_OVERHEAD)  # batchLength
            attributes = (header.attributes & ~COMPRESSION_MASK) | target.value
            _INT16.pack_into(out, start + ATTRIBUTES_OFFSET, attributes)
            _UINT32.pack_into(out, start + CRC_OFFSET, compute_crc(out, start, size))
    # Headers are read back once the buffer is complete (its positions are final).
    position = 0
    for _ in batches:
        new = RecordBatchHeader.read(out, position)
        if new.size > max_message_bytes:
            # Kafka checks the batch it stores: a recompressed batch can grow.
            raise RecordTooLargeError(
                f"batch at position {position} is {new.size} bytes once recompressed, "
                "more "
                f"than max.message.bytes={max_message_bytes}",
                position,
            )
        result.append((position, new))
        position += new.size
    return out, result


def assign_offsets(
    buf: bytearray | memoryview,
    batches: Sequence[tuple[int, RecordBatchHeader]],
    next_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None = None,
) -> tuple[Batches, LogAppendInfo]:
    """Give the batches consecutive offsets from ``next_offset``, in place, header only."""
    assigned: Batches = []
    offset = next_offset
    for position, header in batches:
        write_offset_and_epoch(buf, position, offset, leader_epoch)
        if log_append_time_ms is not None:
            # CRC moves too
            set_log_append_time(buf, position, header, log_append_time_ms)
        # Read back rather than copied with the new values: one struct call is cheaper
        # than attrs.evolve on every append, and it is the header as it will be stored.
        new = RecordBatchHeader.read(buf, position)
        assigned.append((position, new))
        offset = new.next_offset
    return assigned, append_info(assigned, log_append_time_ms)


def append_info(
    batches: Sequence[tuple[int, RecordBatchHeader]],
    log_append_time_ms: int | None = None,
) -> LogAppendInfo:
    """What an append of these batches (with their offsets) did."""
    if not batches:
        return LogAppendInfo(-1, -1, -1, -1, -1, 0, 0, 0)
    max_timestamp, offset_of_max, record_count = -1, -1, 0
    for _, header in batches:  # one pass: run on every append
        record_count += header.record_count
        if header.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
    first, last = batches[0][1], batches[-1][1]
    return LogAppendInfo(
        first_offset=first.base_offset,
        last_offset=last.last_offset,
        max_timestamp=max_timestamp,
        offset_of_max_timestamp=offset_of_max,
        log_append_time=-1 if log_append_time_ms is None else log_append_time_ms,
        record_count=record_count,
        batch_count=len(batches),
        valid_bytes=batches[-1][0] + last.size - batches[0][0],
    )


def duplicate_append_info(original: BatchMetadata) -> LogAppendInfo:
    """The answer to a retried batch: the offsets and time the original was given."""
    return LogAppendInfo(
        first_offset=original.first_offset,
        last_offset=original.last_offset,
        max_timestamp=original.max_timestamp,
        offset_of_max_timestamp=original.last_offset,
        # Kafka answers a retry with the original's maxTimestamp as its append time
        # whatever the topic's timestamp type (under LogAppendTime that is the
        # time it was appended; under CreateTime the producer's own timestamp).
        log_append_time=original.max_timestamp,
        record_count=original.last_offset - original.first_offset + 1,
        batch_count=1,
        valid_bytes=0,
        duplicate=True,
    )
