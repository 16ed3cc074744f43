"""Records inside a batch: round trips, kafka-python compatibility, and corrupt input."""

from __future__ import annotations

import struct
import types

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from minikafka.log._batch import (
    CRC_OFFSET,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    CorruptRecordError,
    RecordBatchHeader,
    TimestampType,
    check_crc,
    compute_crc,
    read_batch_header,
)
from minikafka.log._compression import compress
from minikafka.log._records import (
    Header,
    Record,
    _read_plain_records,
    _read_record,
    _Reader,
    build_batch,
    decode_batch,
    iter_decoded_batches,
    iter_records,
    make_records,
)

CODECS = list(CompressionType)
NOW = 1_700_000_000_000


def _kafka_python_supports(
    codec: CompressionType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make kafka-python able to use ``codec`` or skip the test.

    Without python-snappy, cramjam's raw snappy stands in for it: kafka-python's own
    xerial framing code still runs, which is what the test is about. LZ4 and ZSTD need
    kafka-python's frame libraries (lz4, zstandard), which this venv lacks.
    """
    if codec is CompressionType.SNAPPY and not kafka_codec.has_snappy():
        shim = types.SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        )
        monkeypatch.setattr(kafka_codec, "snappy", shim)
    elif codec is CompressionType.LZ4 and not kafka_codec.has_lz4():
        pytest.skip("kafka-python has no lz4 library in this venv (pip package lz4)")
    elif codec is CompressionType.ZSTD and not kafka_codec.has_zstd():
        pytest.skip(
            "kafka-python has no zstd library in this venv (pip package zstandard)"
        )


@pytest.fixture(params=CODECS, ids=lambda c: c.name)
def kafka_python_codec(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> CompressionType:
    """Every codec in turn, with kafka-python made able to use it (or the test skipped)."""
    codec: CompressionType = request.param
    _kafka_python_supports(codec, monkeypatch)
    return codec


optional_bytes = st.none() | st.binary(max_size=40)
headers = st.lists(
    st.builds(Header, st.text(max_size=10), optional_bytes), max_size=3
).map(tuple)


@st.composite
def record_lists(draw: st.DrawFn) -> list[Record]:
    """Increasing offsets with gaps, timestamps that go back as well as forward."""
    offset = draw(st.integers(0, 2**40))
    base_time = draw(st.integers(0, 2**45))
    records = []
    for _ in range(draw(st.integers(1, 8))):
        timestamp = base_time + draw(st.integers(-100_000, 100_000))
        records.append(
            Record(
                offset,
                timestamp,
                draw(optional_bytes),
                draw(optional_bytes),
                draw(headers),
            )
        )
        offset += draw(st.integers(1, 1000))
    return records


def _kafka_python_records(batch: bytes) -> list[Record]:
    """Our batch read back by kafka-python, after its own CRC check."""
    kafka_batch = MemoryRecords(batch).next_batch()
    assert kafka_batch.validate_crc()
    return [
        Record(
            r.offset,
            r.timestamp,
            r.key,
            r.value,
            tuple(Header(k, v) for k, v in r.headers),
        )
        for r in kafka_batch
    ]


def _rewrite(
    batch: bytes,
    payload: bytes,
    *,
    record_count: int | None = None,
    attributes: int | None = None,
) -> bytes:
    """``batch`` with another payload (and header fields) and a CRC that matches it."""
    buf = bytearray(batch[:RECORD_BATCH_OVERHEAD] + payload)
    struct.pack_into(">i", buf, 8, len(buf) - LOG_OVERHEAD)
    if attributes is not None:
        struct.pack_into(">h", buf, 21, attributes)
    if record_count is not None:
        struct.pack_into(">i", buf, 57, record_count)
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
    return bytes(buf)


# --- round trips --------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(records=record_lists(), codec=st.sampled_from(CODECS))
def test_round_trip(records: list[Record], codec: CompressionType) -> None:
    batch = build_batch(
        records,
        compression=codec,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        partition_leader_epoch=3,
    )
    header = read_batch_header(batch, 0)
    check_crc(batch, 0, header)
    assert header.size == len(batch)
    assert header.compression is codec
    assert header.record_count == len(records)
    assert header.base_offset == records[0].offset
    assert header.last_offset == records[-1].offset
    assert header.base_timestamp == records[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        7,
        1,
        0,
    )
    assert header.partition_leader_epoch == 3
    assert decode_batch(batch) == (header, records)


@settings(max_examples=30, deadline=None)
@given(records=record_lists())
def test_kafka_python_reads_what_we_build(records: list[Record]) -> None:
    for codec in (CompressionType.NONE, CompressionType.GZIP):
        assert _kafka_python_records(build_batch(records, compression=codec)) == records


def test_kafka_python_reads_every_codec(kafka_python_codec: CompressionType) -> None:
    codec = kafka_python_codec
    records = [
        Record(100 + 3 * i, NOW - i, b"key%d" % i, b"value " * 50, (Header("h", b"v"),))
        for i in range(50)
    ]
    assert _kafka_python_records(build_batch(records, compression=codec)) == records


def test_we_read_what_kafka_python_builds(kafka_python_codec: CompressionType) -> None:
    codec = kafka_python_codec
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec.value,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    expected = []
    for i in range(40):
        key = None if i % 5 == 0 else b"k%d" % i
        value = None if i % 7 == 0 else b"a compressible value " * 10
        hdrs = ((f"h{i}", b"x"), ("null", None)) if i % 3 == 0 else ()
        builder.append(
            i, timestamp=NOW + (i % 4) - 2, key=key, value=value, headers=list(hdrs)
        )
        expected.append(
            Record(
                i, NOW + (i % 4) - 2, key, value, tuple(Header(k, v) for k, v in hdrs)
            )
        )
    batch = bytes(builder.build())
    header, records = decode_batch(batch)
    # kafka-python falls back to NONE if it does not help
    assert header.compression is codec
    assert records == expected
    assert header.last_offset_delta == 39


def test_delete_horizon_is_the_base_timestamp_and_the_deltas_origin() -> None:
    # KIP-534 / MemoryRecordsBuilder: baseTimestamp = deleteHorizonMs, deltas from it.
    records = [Record(10, NOW + 5, b"k", None), Record(11, NOW - 3, b"j", b"v")]
    horizon = NOW + 86_400_000
    batch = build_batch(records, delete_horizon_ms=horizon)
    header, decoded = decode_batch(batch)
    assert header.attributes & 0x40
    assert header.delete_horizon_ms == horizon == header.base_timestamp
    assert header.max_timestamp == NOW + 5
    assert decoded == records
    # The first record's timestampDelta is NOW + 5 - horizon (a negative varlong), which
    # kafka-python (unaware of the flag) adds to baseTimestamp and gets the same answer.
    assert _kafka_python_records(batch) == records


def test_log_append_time_gives_every_record_the_max_timestamp() -> None:
    records = make_records(
        [(b"a", b"1"), (b"b", b"2")], first_offset=5, timestamp_ms=NOW
    )
    batch = build_batch(
        records, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=NOW + 99
    )
    header, decoded = decode_batch(batch)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in decoded] == [NOW + 99, NOW + 99]


def test_compaction_keeps_offset_range_and_flags() -> None:
    kept = [Record(103, NOW, b"k", b"v"), Record(107, NOW + 1, b"j", None)]
    batch = build_batch(
        kept,
        base_offset=100,
        last_offset_delta=9,
        is_transactional=True,
        producer_id=5,
        producer_epoch=0,
        base_sequence=40,
        compression=CompressionType.ZSTD,
    )
    header, decoded = decode_batch(batch)
    assert (header.base_offset, header.last_offset, header.next_offset) == (
        100,
        109,
        110,
    )
    assert header.is_transactional
    assert not header.is_control
    assert decoded == kept


def test_empty_batch_needs_its_offset_range() -> None:
    with pytest.raises(ValueError, match="empty batch"):
        build_batch([])
    batch = build_batch(
        [],
        base_offset=50,
        last_offset_delta=4,
        max_timestamp=NOW,
        compression=CompressionType.GZIP,
        producer_id=9,
        producer_epoch=2,
        base_sequence=10,
    )
    header, records = decode_batch(batch)
    assert records == []
    assert len(batch) == RECORD_BATCH_OVERHEAD
    # DefaultRecordBatch.writeEmptyHeader: no codec, baseTimestamp -1, maxTimestamp kept.
    assert header.compression is CompressionType.NONE
    assert (header.base_timestamp, header.max_timestamp) == (-1, NOW)
    assert (header.last_offset, header.record_count, header.producer_id) == (54, 0, 9)
    assert _kafka_python_records(batch) == []


def test_build_rejects_what_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(5, NOW, None, b"a"), Record(5, NOW, None, b"b")])
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(5, NOW, None, b"a")], base_offset=6, last_offset_delta=0)
    with pytest.raises(ValueError, match="last_offset_delta"):
        build_batch(
            [Record(5, NOW, None, b"a"), Record(9, NOW, None, b"b")],
            last_offset_delta=2,
        )
    with pytest.raises(ValueError, match="offset delta"):
        build_batch([Record(0, NOW, None, b"a"), Record(2**31, NOW, None, b"b")])
    with pytest.raises(ValueError, match="out of range"):
        build_batch([Record(0, NOW, None, b"a")], producer_epoch=40_000)


def test_make_records() -> None:
    assert make_records(
        [(b"k", None), (None, b"v")], first_offset=3, timestamp_ms=NOW
    ) == [
        Record(3, NOW, b"k", None),
        Record(4, NOW, None, b"v"),
    ]


def test_iterating_over_several_batches() -> None:
    first = make_records([(b"a", b"1"), (b"b", b"2")], first_offset=0, timestamp_ms=NOW)
    second = make_records([(b"c", b"3")], first_offset=2, timestamp_ms=NOW + 1)
    one = build_batch(first, compression=CompressionType.LZ4)
    two = build_batch(second, compression=CompressionType.SNAPPY)
    buf = one + two
    assert list(iter_records(buf)) == first + second
    positions = [
        (p, h.base_offset, r) for p, h, r in iter_decoded_batches(memoryview(buf))
    ]
    assert positions == [(0, 0, first), (len(one), 2, second)]
    assert decode_batch(buf, len(one))[1] == second


# --- corrupt input ------------------------------------------------------------

SAMPLE = build_batch(
    [
        Record(0, NOW, b"key", b"value", (Header("h", b"x"),)),
        Record(1, NOW + 1, None, None),
    ]
)
SAMPLE_PAYLOAD = SAMPLE[RECORD_BATCH_OVERHEAD:]


def test_every_truncation_is_corrupt() -> None:
    for end in range(len(SAMPLE)):
        with pytest.raises(CorruptRecordError):
            decode_batch(SAMPLE[:end])


def test_every_flipped_byte_under_the_crc_is_caught() -> None:
    for position in range(21, len(SAMPLE)):
        mangled = bytearray(SAMPLE)
        mangled[position] ^= 0x04
        with pytest.raises(CorruptRecordError, match="CRC"):
            decode_batch(mangled)


def _record(body: bytes) -> bytes:
    """A record with ``body`` after its length varint (lengths below 64 fit one byte)."""
    assert len(body) < 64
    return bytes([len(body) * 2]) + body


# attributes 0, timestampDelta 0, offsetDelta 0, key null, value null, 0 headers
GOOD_BODY = b"\x00\x00\x00\x01\x01\x00"
# the same with a 10-byte key: 17 bytes in all
LONG_RECORD = _record(b"\x00\x00\x00\x14" + b"k" * 10 + b"\x01\x00")


@pytest.mark.parametrize(
    ("payload", "count", "message"),
    [
        (b"\xff" * 6 + b"\x00\x00", 1, "record length .* longer than 5"),
        (LONG_RECORD + b"\xff\xff", 2, "record length at byte 17 is truncated"),
        (b"\x01" + GOOD_BODY, 1, "declares -1"),
        (b"\x7e" + GOOD_BODY, 1, "declares 63"),
        (_record(b"\x00" + b"\x80" * 11), 1, "timestamp delta .* longer than 10"),
        (
            _record(b"\x00\x00\xfe\xff\xff\xff\x7f\x01\x01\x00"),
            1,
            "offset delta .* overflows",
        ),
        (_record(b"\x00\x00\x00\x03\x01\x00"), 1, "key at byte .* length -2"),
        (
            _record(b"\x00\x00\x00\x01\x08ab\x00"),
            1,
            "value at byte .* declares 4 bytes",
        ),
        (_record(b"\x00\x00\x00\x01\x01\x01"), 1, "header count -1"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x01\x01"), 1, "header key .* null"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"), 1, "not UTF-8"),
        (_record(GOOD_BODY + b"\x00"), 1, "fields end 1 early"),
        (_record(GOOD_BODY), 2, "recordCount 2 cannot fit"),
        (_record(GOOD_BODY) + _record(GOOD_BODY), 1, "bytes follow the 1 records"),
        (LONG_RECORD * 2, 3, "record length at byte 34 is truncated"),
        (_record(GOOD_BODY), -1, "negative recordCount"),
    ],
)
def test_malformed_records_under_a_valid_crc(
    payload: bytes, count: int, message: str
) -> None:
    batch = _rewrite(SAMPLE, payload, record_count=count)
    # the CRC is fine: the parser must catch it
    check_crc(batch, 0, read_batch_header(batch, 0))
    with pytest.raises(CorruptRecordError, match=message) as caught:
        decode_batch(batch)
    assert caught.value.error_code == 2


def test_well_formed_hand_made_record_decodes() -> None:
    # Guards the table above: GOOD_BODY itself is a valid record.
    _, records = decode_batch(_rewrite(SAMPLE, _record(GOOD_BODY), record_count=1))
    assert records == [Record(0, NOW, None, None)]


def test_unknown_codec_and_garbage_compressed_payload() -> None:
    with pytest.raises(CorruptRecordError, match="unknown compression codec 5"):
        decode_batch(_rewrite(SAMPLE, SAMPLE_PAYLOAD, attributes=5))
    for codec in (c for c in CompressionType if c is not CompressionType.NONE):
        garbage = _rewrite(
            SAMPLE, b"this is not compressed data", attributes=codec.value
        )
        with pytest.raises(CorruptRecordError, match=codec.name):
            decode_batch(garbage)


def test_decompression_bomb_inside_a_batch() -> None:
    bomb = compress(CompressionType.ZSTD, bytes(4 << 20))
    batch = _rewrite(SAMPLE, bomb, attributes=CompressionType.ZSTD.value)
    with pytest.raises(CorruptRecordError, match="limit"):
        decode_batch(batch, max_size=1 << 20)


def test_corruption_is_reported_at_the_batch_position() -> None:
    buf = SAMPLE + _rewrite(SAMPLE, b"\x01", record_count=1)
    with pytest.raises(CorruptRecordError, match=f"position {len(SAMPLE)}") as caught:
        list(iter_records(buf))
    assert caught.value.position == len(SAMPLE)


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3
    ),
)
def test_mangled_payloads_raise_only_corrupt_record_error(
    codec: CompressionType, edits: list[tuple[int, int]]
) -> None:
    records = [
        Record(i, NOW + i, b"k%d" % i, b"v" * i, (Header("h", None),)) for i in range(5)
    ]
    batch = build_batch(records, compression=codec)
    payload = bytearray(batch[RECORD_BATCH_OVERHEAD:])
    for where, byte in edits:
        payload[where % len(payload)] = byte
    try:
        header, decoded = decode_batch(
            _rewrite(batch, bytes(payload)), max_size=1 << 16
        )
    except CorruptRecordError:
        return
    assert isinstance(header, RecordBatchHeader)
    assert len(decoded) == 5


# --- the quick reader and the careful one agree -------------------------------------


def _careful(
    data: bytes, header: RecordBatchHeader
) -> list[Record] | CorruptRecordError:
    reader = _Reader(data)
    try:
        records = [
            _read_record(reader, header, False) for _ in range(header.record_count)
        ]
    except CorruptRecordError as e:
        return e
    if reader.pos != len(data):
        return CorruptRecordError("trailing bytes")
    return records


_FIELD = st.one_of(
    st.none(), st.binary(max_size=300), st.binary(min_size=8000, max_size=9000)
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_FIELD, _FIELD, st.integers(0, 20_000)), min_size=1, max_size=12
    ),
    st.integers(0, 2**40),
    st.booleans(),
    st.data(),
)
def test_the_quick_record_reader_reads_what_the_careful_one_reads(
    fields: list[tuple[bytes | None, bytes | None, int]],
    base_timestamp: int,
    with_header: bool,
    data: st.DataObject,
) -> None:
    """``_read_plain_records`` (one- and two-byte varints read inline) must
    return exactly the careful reader's records, or None, never something else; and on
    damaged bytes, None wherever the careful reader finds the damage."""
    records = [
        Record(
            i * 3,
            base_timestamp + gap,
            key,
            value,
            (Header("h", b"1"),) if with_header else (),
        )
        for i, (key, value, gap) in enumerate(fields)
    ]
    batch = build_batch(records)
    header = read_batch_header(batch, 0)
    payload = bytes(batch[RECORD_BATCH_OVERHEAD:])
    careful = _careful(payload, header)
    quick = _read_plain_records(payload, header, False)
    assert not isinstance(careful, CorruptRecordError)
    assert quick is None or quick == careful
    if not with_header and all(gap < 8192 for *_, gap in fields):
        small = all(len(k or b"") < 8192 and len(v or b"") < 8192 for k, v, _ in fields)
        if small:
            assert quick == careful  # the ordinary case takes the quick path
    # Damage one byte: the quick reader either agrees or gives up, never decides alone.
    at = data.draw(st.integers(0, len(payload) - 1))
    damaged = (
        payload[:at]
        + bytes([payload[at] ^ data.draw(st.integers(1, 255))])
        + payload[at + 1 :]
    )
    careful = _careful(damaged, header)
    quick = _read_plain_records(damaged, header, False)
    if isinstance(careful, CorruptRecordError):
        assert quick is None
    else:
        assert quick is None or quick == careful


@pytest.mark.parametrize("delta", [-2, 2])
def test_the_quick_reader_gives_up_on_a_record_length_that_lies(delta: int) -> None:
    records = [Record(i, NOW, b"k%d" % i, b"value %d" % i) for i in range(3)]
    batch = build_batch(records)
    header = read_batch_header(batch, 0)
    payload = bytearray(batch[RECORD_BATCH_OVERHEAD:])
    assert payload[0] < 0x80  # a one-byte zigzag length: +-2 is a length +-1
    payload[0] += delta
    assert isinstance(_careful(bytes(payload), header), CorruptRecordError)
    assert _read_plain_records(bytes(payload), header, False) is None
