"""The leader's per-record checks and recompression (Kafka's LogValidator).

Every test that sends a bad batch also checks that nothing was appended (the log end
offset did not move) and that the partition still takes a good batch afterwards.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import (
    CompressionType,
    CorruptRecordError,
    Header,
    InvalidRecordError,
    InvalidTimestampError,
    Log,
    LogConfig,
    Record,
    RecordBatchHeader,
    build_batch,
    compress,
    decode_batch,
)
from minikafka.log._batch import CRC_OFFSET, HEADER, LOG_OVERHEAD, MAGIC, compute_crc
from minikafka.log.testing import ManualClock, keyed_batch, read_all_records

NOW = 1_700_000_000_000
CODECS = [
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
    CompressionType.ZSTD,
]


def open_log(dir: Path, **config: object) -> Log:
    return Log.open(dir / "t-0", LogConfig(**config), clock=ManualClock(NOW))  # type: ignore[arg-type]


def raw_batch(
    payload: bytes,
    *,
    codec: CompressionType = CompressionType.NONE,
    record_count: int = 1,
    last_offset_delta: int | None = None,
    base_timestamp: int = NOW,
) -> bytearray:
    """A batch with a valid header and CRC around whatever ``payload`` is: what an attacker
    (or a buggy client) can send, since the CRC only covers the bytes as sent."""
    size = HEADER.size + len(payload)
    buf = bytearray(size)
    delta = record_count - 1 if last_offset_delta is None else last_offset_delta
    HEADER.pack_into(
        buf, 0, 0, size - LOG_OVERHEAD, -1, MAGIC, 0, codec.value, delta,
        base_timestamp, base_timestamp, -1, -1, -1, record_count,
    )  # fmt: skip
    buf[HEADER.size :] = payload
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, size))
    return buf


def records_payload(batch: bytes) -> bytes:
    """The uncompressed record bytes of a batch ``build_batch`` made without compression."""
    return batch[HEADER.size :]


def good_batch(n: int = 3, key: bytes | None = b"k") -> bytearray:
    return keyed_batch([(key, b"value-%d" % i) for i in range(n)], NOW)


def assert_rejected(
    log: Log, batch: bytearray, error: type[InvalidRecordError], code: int
) -> InvalidRecordError:
    end = log.log_end_offset
    with pytest.raises(error) as caught:
        log.append_as_leader(batch, 0)
    assert caught.value.error_code == code
    assert log.log_end_offset == end, "a rejected batch moved the log end offset"
    info = log.append_as_leader(good_batch(), 0)  # the partition is not wedged
    assert info.first_offset == end
    return caught.value


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_compressed_payload_that_does_not_decompress_is_corrupt_message(
    tmp_path: Path, codec: CompressionType
) -> None:
    """Garbage under a codec's attribute bits, with a valid CRC, is CORRUPT_MESSAGE (2)."""
    log = open_log(tmp_path)
    garbage = random.Random(15).randbytes(200)
    assert_rejected(log, raw_batch(garbage, codec=codec), CorruptRecordError, 2)
    assert [r.offset for r in read_all_records(log)] == [0, 1, 2]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_codec_frame_around_garbage_records_is_invalid_record(
    tmp_path: Path, codec: CompressionType
) -> None:
    """A payload that decompresses, but not to records, is INVALID_RECORD (87)."""
    log = open_log(tmp_path)
    garbage = compress(codec, random.Random(16).randbytes(300))
    assert_rejected(
        log, raw_batch(garbage, codec=codec, record_count=2), InvalidRecordError, 87
    )


def test_a_zstd_batch_claiming_2_31_minus_1_records_moves_nothing(
    tmp_path: Path,
) -> None:
    """The issue's attack: one real record under a header claiming 2^31-1 is refused, and
    the log end offset stays where it was instead of jumping by 2^31."""
    log = open_log(tmp_path)
    inner = records_payload(build_batch([Record(0, NOW, b"k", b"v")]))
    zstd = CompressionType.ZSTD
    lie = raw_batch(compress(zstd, inner), codec=zstd, record_count=2**31 - 1)
    error = assert_rejected(log, lie, InvalidRecordError, 87)
    assert "2147483647" in str(error)


@pytest.mark.parametrize("codec", [CompressionType.NONE, *CODECS], ids=lambda c: c.name)
@pytest.mark.parametrize("claimed", [1, 3])
def test_a_record_count_that_disagrees_with_the_records_is_invalid_record(
    tmp_path: Path, codec: CompressionType, claimed: int
) -> None:
    """Two records under a header claiming one (trailing bytes) or three (premature end)."""
    log = open_log(tmp_path)
    inner = records_payload(
        build_batch([Record(0, NOW, b"a", b"1"), Record(1, NOW, b"b", b"2")])
    )
    batch = raw_batch(compress(codec, inner), codec=codec, record_count=claimed)
    assert_rejected(log, batch, InvalidRecordError, 87)


def test_offset_deltas_must_count_from_zero(tmp_path: Path) -> None:
    """Two records both at offset delta 0 would share an offset: INVALID_RECORD."""
    log = open_log(tmp_path)
    inner = bytearray(
        records_payload(build_batch([Record(0, NOW, None, b"v")] * 1)) * 2
    )
    # length 7: attributes, ts delta, offset delta, key, len, v, headers
    assert inner[0] == 14
    batch = raw_batch(bytes(inner), record_count=2)
    error = assert_rejected(log, batch, InvalidRecordError, 87)
    assert "offset delta" in str(error)


@pytest.mark.parametrize("seed", range(40))
def test_random_record_bytes_never_reach_the_log_unreadable(
    tmp_path: Path, seed: int
) -> None:
    """Whatever random record bytes are sent, either the batch is refused with a Kafka
    error, or what was stored decodes: the leader never stores what a consumer cannot read."""
    rng = random.Random(seed)
    log = open_log(tmp_path)
    batch = raw_batch(
        rng.randbytes(rng.randrange(7, 120)), record_count=rng.randrange(1, 5)
    )
    error: InvalidRecordError | None = None
    try:
        log.append_as_leader(batch, 0)
    except InvalidRecordError as e:
        error = e
    if error is not None:
        assert error.error_code in (2, 87)
        assert log.log_end_offset == 0
    read_all_records(log)  # raises if a stored batch does not decode


def test_a_record_that_lies_about_its_length_is_invalid_record(tmp_path: Path) -> None:
    """A record length past the end of the batch, and one shorter than its fields."""
    log = open_log(tmp_path)
    inner = bytearray(records_payload(build_batch([Record(0, NOW, b"key", b"value")])))
    too_long, too_short = bytearray(inner), bytearray(inner)
    too_long[0] += 2  # zigzag: +1 byte
    too_short[0] -= 2
    assert_rejected(log, raw_batch(bytes(too_long)), InvalidRecordError, 87)
    assert_rejected(log, raw_batch(bytes(too_short)), InvalidRecordError, 87)


def test_a_compacted_topic_refuses_records_without_a_key(tmp_path: Path) -> None:
    """Kafka: "Compacted topic cannot accept message without key" (INVALID_RECORD)."""
    log = open_log(tmp_path, cleanup_policy=frozenset({"compact"}))
    keyless = keyed_batch([(b"k", b"1"), (None, b"2")], NOW)
    error = assert_rejected(log, keyless, InvalidRecordError, 87)
    assert "without key" in str(error)
    gzip_keyless = keyed_batch([(None, b"x")], NOW, CompressionType.GZIP)
    assert_rejected(log, gzip_keyless, InvalidRecordError, 87)


def test_a_deleting_topic_takes_records_without_a_key(tmp_path: Path) -> None:
    """The key rule is compaction's alone."""
    log = open_log(tmp_path)
    assert log.append_as_leader(keyed_batch([(None, b"x")], NOW), 0).record_count == 1


def test_create_time_outside_the_kip_937_bounds_is_invalid_timestamp(
    tmp_path: Path,
) -> None:
    """message.timestamp.before/after.max.ms: a record too old or too far ahead is
    INVALID_TIMESTAMP (32); within the bounds it is taken."""
    log = open_log(
        tmp_path,
        message_timestamp_before_max_ms=60_000,
        message_timestamp_after_max_ms=1_000,
    )
    old = keyed_batch([(b"k", b"v")], NOW - 60_001)
    ahead = keyed_batch([(b"k", b"v")], NOW + 1_001)
    assert_rejected(log, old, InvalidTimestampError, 32)
    assert_rejected(log, ahead, InvalidTimestampError, 32)
    assert (
        log.append_as_leader(keyed_batch([(b"k", b"v")], NOW - 60_000), 0).record_count
        == 1
    )


def test_a_refused_timestamp_names_every_record_out_of_bounds(tmp_path: Path) -> None:
    """As Kafka's LogValidator, every record a per-record rule refuses is named with its
    index (Produce v8's record_errors, KIP-467), not only the first."""
    log = open_log(tmp_path, message_timestamp_after_max_ms=1_000)
    ahead = keyed_batch([(b"k", b"a"), (b"k", b"b"), (b"k", b"c")], NOW + 5_000)
    refused = assert_rejected(log, ahead, InvalidTimestampError, 32)
    assert [index for index, _why in refused.record_errors] == [0, 1, 2]
    assert all("out of range" in why for _index, why in refused.record_errors)


def test_by_default_a_record_more_than_an_hour_ahead_is_refused(tmp_path: Path) -> None:
    """Kafka 4.0's default message.timestamp.after.max.ms (one hour); no bound behind."""
    log = open_log(tmp_path)
    hour = 3_600_000
    assert_rejected(
        log, keyed_batch([(b"k", b"v")], NOW + hour + 1), InvalidTimestampError, 32
    )
    assert log.append_as_leader(keyed_batch([(b"k", b"v")], NOW + hour), 0)
    assert log.append_as_leader(keyed_batch([(b"k", b"v")], 0), 0)


def test_log_append_time_does_not_judge_the_producers_timestamps(
    tmp_path: Path,
) -> None:
    """Under LogAppendTime the broker's clock replaces them, so they are not checked."""
    log = open_log(
        tmp_path,
        message_timestamp_type="LogAppendTime",
        message_timestamp_before_max_ms=1,
    )
    assert (
        log.append_as_leader(keyed_batch([(b"k", b"v")], 0), 0).log_append_time == NOW
    )


def test_a_decompression_bomb_is_refused_while_inflating(tmp_path: Path) -> None:
    """A few KiB of zstd that would inflate past the limit (64 MiB) is CORRUPT_MESSAGE."""
    log = open_log(tmp_path)
    bomb = compress(CompressionType.ZSTD, bytes(65 * 1024 * 1024))
    assert len(bomb) < 64 * 1024
    assert_rejected(
        log, raw_batch(bomb, codec=CompressionType.ZSTD), CorruptRecordError, 2
    )


# --- compression.type: recompression on the leader -----------------------------------------


@pytest.mark.parametrize(
    "source", [CompressionType.NONE, *CODECS], ids=lambda c: c.name
)
@pytest.mark.parametrize("target", ["zstd", "gzip", "uncompressed"])
def test_the_leader_stores_the_topics_codec(
    tmp_path: Path, source: CompressionType, target: str
) -> None:
    """compression.type=<codec>: whatever the producer used, the stored batch is in the
    topic's codec, with a valid CRC, the same records, and offsets assigned."""
    log = open_log(tmp_path, compression_type=target)
    log.append_as_leader(good_batch(2), 0)
    pairs = [(b"k%d" % i, b"v" * i) for i in range(20)]
    info = log.append_as_leader(keyed_batch(pairs, NOW, source), 0)
    assert (info.first_offset, info.last_offset) == (2, 21)
    expected = {"zstd": CompressionType.ZSTD, "gzip": CompressionType.GZIP}.get(
        target, CompressionType.NONE
    )
    stored = [(segment.read_batch(p, h), h) for segment, p, h in log.batches()]
    assert all(h.compression is expected for _, h in stored)
    header, records = decode_batch(stored[-1][0])  # checks the CRC
    assert [(r.offset, r.key, r.value) for r in records] == [
        (2 + i, k, v) for i, (k, v) in enumerate(pairs)
    ]
    assert header.base_offset == 2


def test_producer_keeps_the_producers_bytes(tmp_path: Path) -> None:
    """compression.type=producer (the default): no rewrite, the producer's bytes with
    only baseOffset and partitionLeaderEpoch assigned (Kafka's in-place path)."""
    log = open_log(tmp_path)
    batch = keyed_batch([(b"k", b"v" * 100)] * 5, NOW, CompressionType.GZIP)
    sent = bytes(batch)
    log.append_as_leader(batch, 7)
    [(segment, position, header)] = log.batches()
    stored = segment.read_batch(position, header)
    assert stored[16:] == sent[16:]
    assert header.partition_leader_epoch == 7


def test_recompression_keeps_the_producer_id_and_sequence(tmp_path: Path) -> None:
    """An idempotent producer's batch keeps its producer fields when recompressed, so a
    retry is still recognised as a duplicate."""
    log = open_log(tmp_path, compression_type="lz4")
    batch = keyed_batch(
        [(b"k", b"v")] * 3, NOW, producer_id=9, producer_epoch=1, base_sequence=0
    )
    retry = bytearray(batch)
    log.append_as_leader(batch, 0)
    [(_, _, header)] = log.batches()
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        9,
        1,
        0,
    )
    assert header.compression is CompressionType.LZ4
    assert log.append_as_leader(retry, 0).duplicate


def test_a_follower_never_recompresses(tmp_path: Path) -> None:
    """The follower stores the leader's batches as they are, whatever its own config says."""
    leader = open_log(tmp_path / "leader")
    follower = open_log(tmp_path / "follower", compression_type="zstd")
    leader.append_as_leader(
        keyed_batch([(b"k", b"v")] * 4, NOW, CompressionType.GZIP), 0
    )
    fetched = leader.read(0, 1 << 20).records
    assert fetched is not None
    follower.append_as_follower(fetched.read_bytes())
    assert [h.compression for _, _, h in follower.batches()] == [CompressionType.GZIP]


def test_a_recompressed_batch_over_max_message_bytes_is_too_large(
    tmp_path: Path,
) -> None:
    """Kafka checks the batch it stores: incompressible data that grows when gzipped."""
    payload = random.Random(3).randbytes(2000)
    size = len(keyed_batch([(b"k", payload)], NOW))
    log = open_log(tmp_path, compression_type="gzip", max_message_bytes=size)
    with pytest.raises(InvalidRecordError) as caught:
        log.append_as_leader(keyed_batch([(b"k", payload)], NOW), 0)
    assert caught.value.error_code == 10  # MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0


# --- the builder's batches always validate --------------------------------------------------

_bytes = st.one_of(st.none(), st.binary(max_size=40))
_header = st.builds(Header, st.text(max_size=8), _bytes)
_record = st.tuples(
    st.binary(min_size=1, max_size=20), _bytes, st.lists(_header, max_size=3)
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    records=st.lists(_record, min_size=1, max_size=12),
    codec=st.sampled_from(list(CompressionType)),
    target=st.sampled_from(["producer", "uncompressed", "snappy", "zstd"]),
    deltas=st.lists(st.integers(-(10**6), 10**6), min_size=12, max_size=12),
)
def test_every_batch_the_builder_makes_validates(
    records: list[tuple[bytes, bytes | None, list[Header]]],
    codec: CompressionType,
    target: str,
    deltas: list[int],
) -> None:
    """Round trip: whatever build_batch makes (keys, null values, headers, any codec, any
    timestamps) a compacted leader accepts, and reads back unchanged in any target codec."""
    import tempfile

    built = [
        Record(i, NOW + deltas[i], key, value, tuple(headers))
        for i, (key, value, headers) in enumerate(records)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        log = open_log(
            Path(tmp), cleanup_policy=frozenset({"compact"}), compression_type=target
        )
        info = log.append_as_leader(bytearray(build_batch(built, compression=codec)), 0)
        assert info.record_count == len(built)
        assert read_all_records(log) == built
        log.close()


def test_the_header_fields_survive_recompression(tmp_path: Path) -> None:
    """Transactional flag, base timestamp and max timestamp stay what the producer sent."""
    log = open_log(tmp_path, compression_type="snappy")
    records = [Record(0, NOW - 5, b"a", b"1"), Record(1, NOW, b"b", b"2")]
    batch = build_batch(
        records, producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    sent = RecordBatchHeader.read(batch)
    log.append_as_leader(bytearray(batch), 0)
    [(_, _, stored)] = log.batches()
    assert stored.is_transactional
    assert stored.compression is CompressionType.SNAPPY
    assert (stored.base_timestamp, stored.max_timestamp) == (
        sent.base_timestamp,
        sent.max_timestamp,
    )
