"""Walking the records inside a producer's batch: Kafka's LogValidator per-record checks.

The batch header and its CRC say nothing about the records: a producer (or an attacker)
can send a CRC-valid batch whose records are garbage, whose header claims more records
than it holds, or whose compressed payload does not decompress. Stored, such a batch
stops every consumer at its offset. So the leader walks every record of every batch it
receives from a client, as Kafka's ``LogValidator`` does (through ``DefaultRecordBatch``'s
iterators and ``DefaultRecord.readFrom``), before anything is appended:

- the records fill the payload exactly: each record's length varint covers its fields,
  no record runs past the payload and no bytes follow the last one;
- there are exactly ``recordCount`` of them, with offset deltas 0, 1, ..., n-1;
- varints are at most 5 bytes (varlong 10), lengths are -1 (null) or more, header keys
  are never null;
- on a compacted topic every record has a key ("Compacted topic cannot accept message
  without key");
- under ``message.timestamp.type=CreateTime``, each timestamp lies within
  ``message.timestamp.before.max.ms`` / ``after.max.ms`` of the broker's clock (KIP-937).

Kafka answers the record errors with INVALID_RECORD (87) and a timestamp out of range
with INVALID_TIMESTAMP (32). The walk reads the bytes where they lie (the request's
buffer for an uncompressed batch) and creates no object per record.
"""

from __future__ import annotations

import attrs

from minikafka.common import ErrorCode

from ._batch import InvalidRecordError, RecordBatchHeader
from ._compression import Buffer

MAX_LONG = 2**63 - 1
# A record's smallest encoding: one byte each for length, attributes, timestampDelta,
# offsetDelta, key length, value length and header count.
MIN_RECORD_SIZE = 7


class InvalidTimestampError(InvalidRecordError):
    """A CreateTime timestamp outside the topic's bounds: Kafka's INVALID_TIMESTAMP (32)."""

    error_code = ErrorCode.invalid_timestamp


@attrs.frozen
class RecordRules:
    """What a topic demands of each record, and the broker's clock to judge timestamps by."""

    require_key: bool = False  # cleanup.policy includes compact
    now_ms: int = 0
    before_max_ms: int = MAX_LONG  # unchecked unless below Long.MAX_VALUE
    after_max_ms: int = MAX_LONG

    @property
    def checks_timestamps(self) -> bool:
        return self.before_max_ms != MAX_LONG or self.after_max_ms != MAX_LONG


def _varint_slow(data: Buffer, pos: int, limit: int, what: str, bits: int) -> tuple[int, int]:
    """A zigzag varint of more than one byte; at most 5 bytes for int32, 10 for int64, as
    in Kafka's ByteUtils.readVarint/readVarlong."""
    start, shift, unsigned = pos, 0, 0
    max_bytes = (bits + 6) // 7
    while pos < limit and pos - start < max_bytes:
        byte = data[pos]
        unsigned |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            value = (unsigned >> 1) ^ -(unsigned & 1)
            if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
                raise InvalidRecordError(f"{what} {value} overflows int{bits}")
            return value, pos
        shift += 7
    if pos - start >= max_bytes:
        raise InvalidRecordError(f"{what} is longer than {max_bytes} bytes")
    raise InvalidRecordError(f"{what} is cut off by the end of its record")


def _varint(data: Buffer, pos: int, limit: int, what: str, bits: int = 32) -> tuple[int, int]:
    # Almost every length and delta fits one byte: decode those here, the rest slowly.
    if pos < limit:
        byte = data[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
    return _varint_slow(data, pos, limit, what, bits)


def check_records(
    data: Buffer,
    start: int,
    end: int,
    header: RecordBatchHeader,
    rules: RecordRules,
) -> None:
    """Raise InvalidRecordError unless ``data[start:end]`` holds exactly the batch's records.

    ``data`` is the batch's uncompressed record bytes: the request's own buffer for an
    uncompressed batch (no copy), the decompressed payload otherwise.
    """
    count = header.record_count
    if count > (end - start) // MIN_RECORD_SIZE:
        # Checked first, so that a small payload claiming 2^31 - 1 records is refused
        # without walking it: every record takes 7 bytes at least.
        raise InvalidRecordError(f"batch claims {count} records in {end - start} bytes of records")
    check_timestamps = rules.checks_timestamps
    pos, index = start, 0
    while pos < end:
        if index == count:
            raise InvalidRecordError(
                f"{end - pos} bytes follow the {count} records the batch declares"
            )
        # Each varint's one-byte case (almost all of them) is decoded inline: a function
        # call per field would double the cost of the walk.
        if (b := data[pos]) < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            length, pos = _varint_slow(data, pos, end, "record length", 32)
        record_end = pos + length
        if length < MIN_RECORD_SIZE - 1 or record_end > end:
            raise InvalidRecordError(
                f"record {index} declares {length} bytes; {end - pos} remain in the batch"
            )
        pos += 1  # attributes: no record-level attribute is defined
        timestamp_delta, pos = _varint(data, pos, record_end, "timestamp delta", 64)
        if pos < record_end and (b := data[pos]) < 0x80:
            offset_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            offset_delta, pos = _varint_slow(data, pos, record_end, "offset delta", 32)
        if offset_delta != index:
            # A producer numbers its records 0..n-1; anything else would give two records
            # one offset, or leave holes a consumer cannot explain.
            raise InvalidRecordError(f"record {index} has offset delta {offset_delta}")
        if pos < record_end and (b := data[pos]) < 0x80:
            key_length, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            key_length, pos = _varint_slow(data, pos, record_end, "key length", 32)
        if key_length == -1:
            if rules.require_key:
                raise InvalidRecordError(
                    f"Compacted topic cannot accept message without key (record {index})"
                )
        elif key_length < 0:
            raise InvalidRecordError(f"record {index} has key length {key_length}")
        else:
            pos += key_length
        value_length, pos = _varint(data, pos, record_end, "value length")
        if value_length < -1:
            raise InvalidRecordError(f"record {index} has value length {value_length}")
        pos += max(value_length, 0)
        if pos < record_end and (b := data[pos]) < 0x80:
            header_count, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            header_count, pos = _varint_slow(data, pos, record_end, "header count", 32)
        if not 0 <= header_count <= (record_end - pos) // 2:  # 2 bytes per header at least
            raise InvalidRecordError(f"record {index} claims {header_count} headers")
        for _ in range(header_count):
            key_size, pos = _varint(data, pos, record_end, "header key length")
            if key_size < 0:  # DefaultRecord: "Invalid negative header key size"
                raise InvalidRecordError(f"record {index} has a header with a null key")
            value_size, pos = _varint(data, pos + key_size, record_end, "header value length")
            if value_size < -1:
                raise InvalidRecordError(f"record {index} has header value length {value_size}")
            pos += max(value_size, 0)
        if pos != record_end:
            # Kafka: "Invalid record size: expected to read N bytes in record payload, but
            # instead read M" (fields that end early, or that run past the length).
            raise InvalidRecordError(
                f"record {index} declares {length} bytes but its fields take "
                f"{length + pos - record_end}"
            )
        if check_timestamps:
            _check_timestamp(header.base_timestamp + timestamp_delta, index, rules)
        index += 1
    if index != count:
        # DefaultRecordBatch: "Incorrect declared batch size, premature EOF reached".
        raise InvalidRecordError(f"batch declares {count} records but holds {index}")


def _check_timestamp(timestamp: int, index: int, rules: RecordRules) -> None:
    if rules.now_ms - timestamp > rules.before_max_ms or (
        timestamp - rules.now_ms > rules.after_max_ms
    ):
        raise InvalidTimestampError(
            f"timestamp {timestamp} of record {index} is out of range: it must lie within "
            f"[{rules.now_ms - rules.before_max_ms}, {rules.now_ms + rules.after_max_ms}] "
            "(message.timestamp.before.max.ms / after.max.ms)"
        )
