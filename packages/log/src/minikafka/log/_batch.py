"""The record batch v2 header, as it lies on disk and on the wire (KIP-98 message format).

Seed 000's produce and fetch paths move *batches*: the broker checks a batch's header and
CRC, writes its offset into the header and appends the bytes; it never decodes the
records inside. This module is that header and nothing more.

    offset  size  field
         0     8  baseOffset            \\  not covered by the CRC: the broker
         8     4  batchLength            |  rewrites baseOffset and
        12     4  partitionLeaderEpoch  /   partitionLeaderEpoch in place
        16     1  magic (= 2)
        17     4  crc (CRC-32C of bytes 21..end)
        21     2  attributes
        23     4  lastOffsetDelta
        27     8  baseTimestamp
        35     8  maxTimestamp
        43     8  producerId
        51     2  producerEpoch
        53     4  baseSequence
        57     4  recordCount
        61     -  records

``batchLength`` counts the bytes after itself, so a batch occupies ``batchLength + 12``
bytes (Kafka's ``LOG_OVERHEAD``).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator

import attrs
from crc32c import crc32c

# The errors live in a module of their own, which the optional mypyc build leaves Python.
from minikafka.log._record_errors import CorruptRecordError as CorruptRecordError
from minikafka.log._record_errors import InvalidRecordError as InvalidRecordError

HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
# baseOffset + batchLength: what a reader needs to find the next batch
LOG_OVERHEAD = 12
MAGIC = 2
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # the CRC covers from here to the end of the batch
MAX_TIMESTAMP_OFFSET = 35
PARTITION_LEADER_EPOCH_OFFSET = 12
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1  # a producer without idempotence (KIP-98)
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")


class CompressionType(enum.IntEnum):
    """Attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """Attribute bit 3: who set the batch's timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


COMPRESSION_MASK = 0x07
_CODECS = tuple(CompressionType)  # indexed by the attribute bits: values 0-4 in order
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
# KIP-534: baseTimestamp holds the tombstones' delete horizon
DELETE_HORIZON_MASK = 0x40


@attrs.frozen
class RecordBatchHeader:
    """The 61-byte header of one batch, decoded with one ``struct`` call."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @classmethod
    def read(
        cls, buf: bytes | bytearray | memoryview, position: int = 0
    ) -> RecordBatchHeader:
        """Decode the header at ``position``; the caller has checked that 61 bytes exist."""
        return cls(*HEADER.unpack_from(buf, position))

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """The last record's sequence: baseSequence + lastOffsetDelta, wrapping past 2^31 - 1
        to 0 (Kafka's ``DefaultRecordBatch.lastSequence``); -1 for a batch without one."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 2**31

    @property
    def compression(self) -> CompressionType:
        bits = self.attributes & COMPRESSION_MASK
        # A table, not the enum's constructor (looked up on every append); 5-7 are no
        # codec, and the constructor's ValueError says so.
        return _CODECS[bits] if bits < len(_CODECS) else CompressionType(bits)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & TIMESTAMP_TYPE_MASK) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when set, the time after which the cleaner may drop tombstones."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None


def compute_crc(buf: bytes | bytearray | memoryview, position: int, size: int) -> int:
    """CRC-32C (Castagnoli, in C) over attributes..end of the batch at ``position``."""
    view = memoryview(buf)[position + ATTRIBUTES_OFFSET : position + size]
    return crc32c(view)


def read_batch_header(
    buf: bytes | bytearray | memoryview,
    position: int,
    origin: int = 0,
    *,
    whole: bool = True,
) -> RecordBatchHeader:
    """The header at ``position`` after checking that the whole batch lies in ``buf``.

    This is the structural check (Kafka's ``ByteBufferLogInputStream.nextBatch`` and
    ``DefaultRecordBatch.ensureValid`` minus the CRC): a length that points past the
    buffer means a torn write or garbage, a magic other than 2 is a format we do not
    store. ``origin`` is where ``buf`` starts in its file, for the error's position.
    ``whole=False`` needs only the header in ``buf`` (the caller checked the length
    against the file).
    """
    remaining = len(buf) - position
    at = origin + position
    if remaining < LOG_OVERHEAD:
        raise CorruptRecordError(
            f"{remaining} bytes at position {at} cannot hold a batch's offset and "
            "length",
            at,
        )
    _, batch_length = _OFFSET_AND_LENGTH.unpack_from(buf, position)
    size = batch_length + LOG_OVERHEAD
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"batch at position {at} declares batchLength {batch_length}, "
            f"less than the {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD} bytes of its own "
            "header",
            at,
        )
    if size > remaining if whole else remaining < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"batch at position {at} declares {size} bytes but only {remaining} remain",
            at,
        )
    header = RecordBatchHeader.read(buf, position)
    if header.magic != MAGIC:
        raise CorruptRecordError(
            f"batch at position {at} has magic {header.magic}; only magic 2 is stored",
            at,
        )
    return header


def check_crc(
    buf: bytes | bytearray | memoryview,
    position: int,
    header: RecordBatchHeader,
    origin: int = 0,
) -> None:
    """Raise CorruptRecordError unless the stored CRC matches the bytes."""
    actual = compute_crc(buf, position, header.size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"batch at position {origin + position} (base offset {header.base_offset}) "
            "has "
            f"CRC {header.crc:#010x} but its bytes give {actual:#010x}",
            origin + position,
        )


def whole_batches_size(buf: bytes | bytearray | memoryview) -> int:
    """How many bytes at the start of ``buf`` are whole batches: where a reader of a
    record set it did not write itself stops.

    A Fetch response is cut at ``fetch.max.bytes`` or ``replica.fetch.max.bytes``, and
    the cut may fall inside a batch: Kafka's ``ByteBufferLogInputStream.nextBatch``
    stops before a batch whose length points past the buffer (or whose offset and
    length are not all there yet), and the reader fetches it again from its start.
    What is in the whole part is still checked: a length smaller than a batch's own
    header cannot be a cut, it is corruption (Kafka's "Record size is less than the
    minimum record overhead"), raised as CorruptRecordError at its position.
    """
    position = 0
    end = len(buf)
    while end - position >= LOG_OVERHEAD:
        _, batch_length = _OFFSET_AND_LENGTH.unpack_from(buf, position)
        size = batch_length + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"batch at position {position} declares batchLength {batch_length}, "
                f"less than the {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD} bytes of its "
                "own header",
                position,
            )
        if size > end - position:
            break  # cut off by the size limit: the rest comes in the next fetch
        position += size
    return position


def iter_batches(
    buf: bytes | bytearray | memoryview, *, verify_crc: bool = True
) -> Iterator[tuple[int, RecordBatchHeader]]:
    """Every batch in ``buf`` as ``(position, header)``; raises on the first bad one."""
    position = 0
    end = len(buf)
    while position < end:
        header = read_batch_header(buf, position)
        if verify_crc:
            check_crc(buf, position, header)
        yield position, header
        position += header.size


def write_offset_and_epoch(
    buf: bytearray | memoryview, position: int, base_offset: int, leader_epoch: int
) -> None:
    """Assign a batch its place in the log in place: the CRC does not cover these
    fields."""
    _INT64.pack_into(buf, position, base_offset)
    _INT32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)


def set_log_append_time(
    buf: bytearray | memoryview, position: int, header: RecordBatchHeader, now_ms: int
) -> None:
    """``message.timestamp.type=LogAppendTime``: the broker's clock becomes maxTimestamp.

    Both the attributes and maxTimestamp lie under the CRC, so it is recomputed.
    """
    attributes = (header.attributes & ~TIMESTAMP_TYPE_MASK) | TIMESTAMP_TYPE_MASK
    _INT16.pack_into(buf, position + ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, now_ms)
    _UINT32.pack_into(
        buf, position + CRC_OFFSET, compute_crc(buf, position, header.size)
    )
