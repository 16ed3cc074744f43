"""The records inside a record batch: build a batch from records, decode one back.

The broker's produce and fetch paths never come here (they move whole batches, see
``_batch``); tools, compaction, tests and the client do. The layout is KIP-98's record
format v2 (Kafka's ``DefaultRecord``), after the batch header and, for a compressed batch,
inside the compressed payload:

    length          varint   bytes of the record after this field
    attributes      int8     unused, written 0
    timestampDelta  varlong  timestamp - batch baseTimestamp
    offsetDelta     varint   offset - batch baseOffset
    key             varint length (-1 = null) + bytes
    value           varint length (-1 = null) + bytes
    headers         varint count, then per header: varint length + UTF-8 key,
                    varint length (-1 = null) + value

Varints are zigzag-encoded (protobuf's sint32/sint64). KIP-534: when attribute bit 0x40 is
set, baseTimestamp holds the batch's delete horizon instead of the first record's
timestamp, and the timestamp deltas are relative to it (``MemoryRecordsBuilder`` sets
``baseTimestamp = deleteHorizonMs`` before the first append).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import attrs

from minikafka.log._batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_MASK,
    HEADER,
    LOG_OVERHEAD,
    MAGIC,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    CompressionType,
    CorruptRecordError,
    RecordBatchHeader,
    TimestampType,
    check_crc,
    compute_crc,
    read_batch_header,
    whole_batches_size,
)
from minikafka.log._compression import Buffer, compress, decompress

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_UINT32 = struct.Struct(">I")
# A record's smallest encoding: one byte each for length, attributes, timestampDelta,
# offsetDelta, key length, value length and header count.
_MIN_RECORD_SIZE = 7


@attrs.frozen
class Header:
    key: str
    value: bytes | None


class Record(NamedTuple):
    """One record with its absolute offset and timestamp (ms), as a consumer sees it.

    A named tuple rather than an attrs class: a consumer makes one per record, hundreds
    of thousands a second, and a tuple is made several times faster."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def make_records(
    pairs: Iterable[tuple[bytes | None, bytes | None]],
    *,
    first_offset: int = 0,
    timestamp_ms: int,
) -> list[Record]:
    """``(key, value)`` pairs as records at consecutive offsets, all stamped ``timestamp_ms``."""
    return [
        Record(first_offset + i, timestamp_ms, k, v) for i, (k, v) in enumerate(pairs)
    ]


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> int:
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name} {value} is outside [{bounds[0]}, {bounds[1]}]")
    return value


def _write_varint(out: bytearray, value: int) -> None:
    zigzag = value << 1 if value >= 0 else (-value << 1) - 1
    while zigzag > 0x7F:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def _encode_records(
    records: Sequence[Record], base_offset: int, base_timestamp: int
) -> bytes:
    out = bytearray()
    body = bytearray()
    previous = base_offset - 1
    for record in records:
        # MemoryRecordsBuilder: "Offsets must increase monotonically"; gaps are fine.
        if record.offset <= previous:
            raise ValueError(
                f"record offset {record.offset} does not follow {previous}"
            )
        previous = record.offset
        body.clear()
        body.append(0)  # attributes: no record-level attribute is defined
        _write_varint(
            body,
            _check_range("timestamp delta", record.timestamp - base_timestamp, _INT64),
        )
        _write_varint(
            body, _check_range("offset delta", record.offset - base_offset, _INT32)
        )
        _write_bytes(body, record.key)
        _write_bytes(body, record.value)
        _write_varint(body, len(record.headers))
        for header in record.headers:
            _write_bytes(body, header.key.encode("utf-8"))
            _write_bytes(body, header.value)
        _write_varint(out, len(body))
        out += body
    return bytes(out)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    compression: CompressionType = CompressionType.NONE,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """One v2 batch holding ``records``, CRC included; ValueError if it cannot be encoded.

    ``base_offset`` defaults to the first record's offset and ``last_offset_delta`` to the
    last record's delta; compaction passes the original ones so that the batch keeps its
    offset (and producer sequence) range with records removed from it. ``max_timestamp``
    defaults to the largest record timestamp (pass the broker's clock for LogAppendTime).
    Only structure is checked (increasing offsets, fields that fit); the rules a broker
    enforces (timestamps, producer state) are not, so tests can build batches to reject.

    Empty ``records`` needs explicit ``base_offset`` and ``last_offset_delta``: the empty
    batch compaction keeps to remember a producer's last sequence. Like Kafka's
    ``DefaultRecordBatch.writeEmptyHeader`` it has no payload, so ``compression`` is
    ignored (attributes say NONE), and baseTimestamp is -1 unless a delete horizon is set.
    """
    if not records and (base_offset is None or last_offset_delta is None):
        raise ValueError(
            "an empty batch needs an explicit base_offset and last_offset_delta"
        )
    if base_offset is None:
        base_offset = records[0].offset
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset
    if records and last_offset_delta < records[-1].offset - base_offset:
        raise ValueError(
            f"last_offset_delta {last_offset_delta} ends before the last record"
        )
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)

    payload = _encode_records(records, base_offset, base_timestamp)
    if not records:
        compression = CompressionType.NONE
    elif compression is not CompressionType.NONE:
        payload = compress(compression, payload)
    attributes = compression.value
    attributes |= (
        TIMESTAMP_TYPE_MASK if timestamp_type is TimestampType.LOG_APPEND_TIME else 0
    )
    attributes |= TRANSACTIONAL_MASK if is_transactional else 0
    attributes |= CONTROL_MASK if is_control else 0
    attributes |= DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0

    size = RECORD_BATCH_OVERHEAD + len(payload)
    buf = bytearray(size)
    try:
        HEADER.pack_into(
            buf,
            0,
            base_offset,
            size - LOG_OVERHEAD,
            partition_leader_epoch,
            MAGIC,
            0,  # the CRC, computed below once everything it covers is in place
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as e:
        raise ValueError(f"a batch header field is out of range: {e}") from e
    buf[RECORD_BATCH_OVERHEAD:] = payload
    _UINT32.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return bytes(buf)


class _Reader:
    """A cursor over decoded record bytes that raises CorruptRecordError, never IndexError."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)

    def varint(self, what: str, bits: int = 32) -> int:
        """A zigzag varint holding an int32 (at most 5 bytes) or an int64 (10 bytes); longer
        ones are corrupt, as in Kafka's ByteUtils.readVarint/readVarlong."""
        start = self.pos
        if start < self.end:
            byte = self.data[start]
            if byte < 0x80:
                # One byte, the common case (attributes-sized deltas, short lengths, no
                # headers): nothing to accumulate and nothing that can overflow.
                self.pos = start + 1
                return (byte >> 1) ^ -(byte & 1)
            # two: lengths < 8 KiB
            if start + 1 < self.end and self.data[start + 1] < 0x80:
                unsigned = (byte & 0x7F) | (self.data[start + 1] << 7)
                self.pos = start + 2
                return (unsigned >> 1) ^ -(unsigned & 1)
        shift, unsigned = 0, 0
        max_bytes = (bits + 6) // 7
        for pos in range(start, min(start + max_bytes, self.end)):
            byte = self.data[pos]
            unsigned |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.pos = pos + 1
                value = (unsigned >> 1) ^ -(unsigned & 1)
                if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
                    raise CorruptRecordError(
                        f"{what} {value} at byte {start} overflows int{bits}"
                    )
                return value
            shift += 7
        if start + max_bytes <= self.end:
            raise CorruptRecordError(
                f"{what} at byte {start} is longer than {max_bytes} bytes"
            )
        raise CorruptRecordError(f"{what} at byte {start} is truncated")

    def take(self, length: int, what: str) -> bytes:
        if length > self.end - self.pos:
            raise CorruptRecordError(
                f"{what} at byte {self.pos} declares {length} bytes, {self.end - self.pos} remain"
            )
        self.pos += length
        return self.data[self.pos - length : self.pos]

    def nullable_bytes(self, what: str, length_what: str) -> bytes | None:
        # Both labels are constants: a label built per call (an f-string) would cost a
        # string per field of every record read.
        length = self.varint(length_what)
        if length == -1:
            return None
        if length < 0:
            raise CorruptRecordError(f"{what} at byte {self.pos} has length {length}")
        return self.take(length, what)


def _read_record(
    reader: _Reader, header: RecordBatchHeader, log_append_time: bool
) -> Record:
    length = reader.varint("record length")
    if not 0 <= length <= reader.end - reader.pos:
        raise CorruptRecordError(
            f"record at byte {reader.pos} declares {length} bytes, {reader.end - reader.pos} remain"
        )
    outer_end, reader.end = reader.end, reader.pos + length
    reader.take(1, "record attributes")  # unused, as in Kafka
    timestamp_delta = reader.varint("timestamp delta", bits=64)
    offset_delta = reader.varint("offset delta")
    key = reader.nullable_bytes("key", "key length")
    value = reader.nullable_bytes("value", "value length")
    count = reader.varint("header count")
    # a header takes 2 bytes or more
    if not 0 <= count <= (reader.end - reader.pos) // 2:
        raise CorruptRecordError(
            f"header count {count} at byte {reader.pos} is impossible"
        )
    headers = []
    for _ in range(count):
        raw_key = reader.nullable_bytes("header key", "header key length")
        if raw_key is None:  # Kafka: "Invalid negative header key size"
            raise CorruptRecordError(f"header key at byte {reader.pos} is null")
        try:
            header_key = raw_key.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptRecordError(
                f"header key before byte {reader.pos} is not UTF-8"
            ) from e
        headers.append(
            Header(
                header_key, reader.nullable_bytes("header value", "header value length")
            )
        )
    if reader.pos != reader.end:
        raise CorruptRecordError(
            f"record declares {length} bytes but its fields end {reader.end - reader.pos} early"
        )
    reader.end = outer_end
    # DefaultRecordBatch.RecordIterator: under LogAppendTime every record carries the
    # batch's maxTimestamp, whatever its delta says.
    timestamp = (
        header.max_timestamp
        if log_append_time
        else header.base_timestamp + timestamp_delta
    )
    return Record(
        header.base_offset + offset_delta, timestamp, key, value, tuple(headers)
    )


def _read_plain_records(
    data: bytes, header: RecordBatchHeader, log_append_time: bool
) -> list[Record] | None:
    """The records of a (decompressed) payload read the quick way, or None if anything is
    out of the ordinary (a varint of three bytes or more, a record header, a length that
    does not add up, bytes missing): then the careful reader reads it all again and
    says what is wrong.

    A consumer reads millions of records, and a method call per varint was most of the
    cost (the client's consumer benchmark). Here each of a record's five varints is read
    inline, and only in its one- or two-byte form, so that none can overflow; the
    careful reader keeps every check for everything else.
    """
    records: list[Record] = []
    append = records.append
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    append_time = header.max_timestamp if log_append_time else None
    pos, end = 0, len(data)
    try:
        for _ in range(header.record_count):
            byte = data[pos]  # the record's length
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif (next_byte := data[pos + 1]) < 0x80:
                unsigned = (byte & 0x7F) | (next_byte << 7)
                length, pos = (unsigned >> 1) ^ -(unsigned & 1), pos + 2
            else:
                return None
            record_end = pos + length
            byte = data[pos + 1]  # the timestamp delta, after the attributes byte
            if byte < 0x80:
                timestamp_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            elif (next_byte := data[pos + 2]) < 0x80:
                unsigned = (byte & 0x7F) | (next_byte << 7)
                timestamp_delta, pos = (unsigned >> 1) ^ -(unsigned & 1), pos + 3
            else:
                return None
            byte = data[pos]  # the offset delta
            if byte < 0x80:
                offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif (next_byte := data[pos + 1]) < 0x80:
                unsigned = (byte & 0x7F) | (next_byte << 7)
                offset_delta, pos = (unsigned >> 1) ^ -(unsigned & 1), pos + 2
            else:
                return None
            byte = data[pos]  # the key's size, then the key
            if byte < 0x80:
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif (next_byte := data[pos + 1]) < 0x80:
                unsigned = (byte & 0x7F) | (next_byte << 7)
                size, pos = (unsigned >> 1) ^ -(unsigned & 1), pos + 2
            else:
                return None
            if size < -1 or pos + size > record_end:
                return None
            key = None if size == -1 else data[pos : pos + size]
            pos += max(size, 0)
            byte = data[pos]  # the value's size, then the value
            if byte < 0x80:
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif (next_byte := data[pos + 1]) < 0x80:
                unsigned = (byte & 0x7F) | (next_byte << 7)
                size, pos = (unsigned >> 1) ^ -(unsigned & 1), pos + 2
            else:
                return None
            if size < -1 or pos + size > record_end:
                return None
            value = None if size == -1 else data[pos : pos + size]
            pos += max(size, 0)
            # headers, or a length that lies
            if data[pos] != 0 or pos + 1 != record_end:
                return None
            pos = record_end
            timestamp = (
                base_timestamp + timestamp_delta if append_time is None else append_time
            )
            append(Record(base_offset + offset_delta, timestamp, key, value))
    except IndexError:  # bytes missing: the careful reader says where
        return None
    return records if pos == end else None


def _decode_payload(
    header: RecordBatchHeader, payload: memoryview, max_size: int | None
) -> list[Record]:
    codec_id = header.attributes & COMPRESSION_MASK
    try:
        codec = CompressionType(codec_id)
    except ValueError:
        raise CorruptRecordError(f"unknown compression codec {codec_id}") from None
    count = header.record_count
    if count < 0:
        raise CorruptRecordError(f"negative recordCount {count}")
    if count == 0 and not payload:
        return []  # an empty batch kept by compaction
    data = decompress(codec, payload, max_size)
    if count > len(data) // _MIN_RECORD_SIZE:
        raise CorruptRecordError(f"recordCount {count} cannot fit in {len(data)} bytes")
    log_append_time = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    quick = _read_plain_records(data, header, log_append_time)
    if quick is not None:
        return quick
    reader = _Reader(data)
    records = [_read_record(reader, header, log_append_time) for _ in range(count)]
    if reader.pos != len(data):
        raise CorruptRecordError(
            f"{len(data) - reader.pos} bytes follow the {count} records"
        )
    return records


def decode_batch(
    buf: Buffer,
    position: int = 0,
    *,
    verify_crc: bool = True,
    max_size: int | None = None,
) -> tuple[RecordBatchHeader, list[Record]]:
    """The batch at ``position`` and all its records; CorruptRecordError if malformed.

    ``max_size`` bounds the decompressed payload (see ``_compression``).
    """
    header = read_batch_header(buf, position)
    if verify_crc:
        check_crc(buf, position, header)
    payload = memoryview(buf)[position + RECORD_BATCH_OVERHEAD : position + header.size]
    try:
        return header, _decode_payload(header, payload, max_size)
    except CorruptRecordError as e:
        raise CorruptRecordError(
            f"batch at position {position} (base offset {header.base_offset}): {e}",
            position,
        ) from e


def whole_batches(data: bytes) -> bytes:
    """The batches at the start of ``data`` that are whole: a fetched record set, or a
    read of a chunk of a log, may end inside a batch (:func:`whole_batches_size`)."""
    return data[: whole_batches_size(data)]


def iter_decoded_batches(
    buf: Buffer, *, verify_crc: bool = True, max_size: int | None = None
) -> Iterator[tuple[int, RecordBatchHeader, list[Record]]]:
    """Every batch in ``buf`` as ``(position, header, records)``; raises on the first bad one."""
    position = 0
    while position < len(buf):
        header, records = decode_batch(
            buf, position, verify_crc=verify_crc, max_size=max_size
        )
        yield position, header, records
        position += header.size


def iter_records(
    buf: Buffer, *, verify_crc: bool = True, max_size: int | None = None
) -> Iterator[Record]:
    """Every record of every batch in ``buf``, in order."""
    for _, _, records in iter_decoded_batches(
        buf, verify_crc=verify_crc, max_size=max_size
    ):
        yield from records
