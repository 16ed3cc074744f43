"""The batch codecs: round trips, the framings Kafka's clients write, bombs and garbage."""

from __future__ import annotations

import gzip
import os
import struct
import types

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from minikafka.log._batch import CompressionType, CorruptRecordError
from minikafka.log._compression import compress, decompress

CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c is not CompressionType.NONE]

SAMPLES = [
    b"",
    b"x",
    b"hello kafka " * 50,
    os.urandom(70_000),  # incompressible, more than one LZ4 block and two snappy chunks
    b"".join(str(i).encode() for i in range(300_000)),  # compressible, many blocks
]


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 for inputs under 16 bytes: enough to check an LZ4 frame descriptor's HC."""
    p1, p2, p3, p4, p5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
    mask = 0xFFFFFFFF
    assert len(data) < 16

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = (seed + p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, i)
        h = rotl((h + word * p3) & mask, 17) * p4 & mask
        i += 4
    for byte in data[i:]:
        h = rotl((h + byte * p5) & mask, 11) * p1 & mask
    h ^= h >> 15
    h = h * p2 & mask
    h ^= h >> 13
    h = h * p3 & mask
    return h ^ (h >> 16)


def _lz4_frame(
    flg: int, bd: int, body: bytes, content_size: int | None = None
) -> bytes:
    """An LZ4 frame with a correct header checksum around already-framed blocks."""
    descriptor = bytes([flg, bd])
    if content_size is not None:
        descriptor += struct.pack("<Q", content_size)
    hc = (_xxh32(descriptor) >> 8) & 0xFF
    return b"\x04\x22\x4d\x18" + descriptor + bytes([hc]) + body


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_round_trip(codec: CompressionType, index: int) -> None:
    data = SAMPLES[index]
    compressed = compress(codec, data)
    assert decompress(codec, compressed) == data
    assert decompress(codec, memoryview(compressed), max_size=len(data)) == data


@settings(max_examples=40, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=3000))
def test_round_trip_property(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, bytearray(data))) == data


def test_gzip_is_plain_rfc1952_and_accepts_concatenated_members() -> None:
    data = b"gzip me " * 100
    assert gzip.decompress(compress(CompressionType.GZIP, data)) == data
    two_members = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(CompressionType.GZIP, two_members) == b"first second"


def test_snappy_writes_xerial_framing_in_32k_chunks() -> None:
    data = bytes(range(256)) * 300  # 76800 bytes: three chunks of 32 KiB input at most
    out = compress(CompressionType.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    position, chunks = 16, []
    while position < len(out):
        (length,) = struct.unpack_from(">i", out, position)
        chunks.append(
            bytes(
                cramjam.snappy.decompress_raw(out[position + 4 : position + 4 + length])
            )
        )
        position += 4 + length
    assert [len(c) for c in chunks] == [32768, 32768, 11264]
    assert b"".join(chunks) == data


def test_snappy_framing_matches_kafka_python_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kafka-python's xerial code (kafka/codec.py) over cramjam's raw snappy when
    # python-snappy is missing: the same raw blocks, so the framing must agree exactly.
    if not kafka_codec.has_snappy():
        shim = types.SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        )
        monkeypatch.setattr(kafka_codec, "snappy", shim)
    for data in SAMPLES[1:]:
        ours = compress(CompressionType.SNAPPY, data)
        assert kafka_codec.snappy_encode(data) == ours
        assert kafka_codec.snappy_decode(ours) == data
        assert (
            decompress(CompressionType.SNAPPY, kafka_codec.snappy_encode(data)) == data
        )


def test_gzip_agrees_with_kafka_python() -> None:
    for data in SAMPLES:
        assert kafka_codec.gzip_decode(compress(CompressionType.GZIP, data)) == data
        assert decompress(CompressionType.GZIP, kafka_codec.gzip_encode(data)) == data


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them() -> None:
    data = b"librdkafka writes one raw snappy block " * 20
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_snappy_ignores_xerial_version_fields() -> None:
    # Some writers (kafka-python once among them) put version and compat little-endian.
    data = b"version fields" * 10
    block = bytes(cramjam.snappy.compress_raw(data))
    framed = (
        b"\x82SNAPPY\x00"
        + struct.pack("<ii", 1, 1)
        + struct.pack(">i", len(block))
        + block
    )
    assert decompress(CompressionType.SNAPPY, framed) == data


def test_lz4_writes_kafkas_frame_descriptor() -> None:
    out = compress(CompressionType.LZ4, b"abc" * 1000)
    # magic, FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB), HC
    assert out[:7] == b"\x04\x22\x4d\x18\x60\x40\x82"
    assert out[6] == (_xxh32(b"\x60\x40") >> 8) & 0xFF
    assert out[-4:] == b"\x00\x00\x00\x00"  # EndMark, no content checksum


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_lz4_frames_are_valid_for_a_full_lz4_frame_reader(index: int) -> None:
    # cramjam's frame decoder checks the header checksum and the block structure.
    data = SAMPLES[index]
    assert bytes(cramjam.lz4.decompress(compress(CompressionType.LZ4, data))) == data


def test_lz4_stores_incompressible_blocks_raw() -> None:
    data = os.urandom(1000)
    out = compress(CompressionType.LZ4, data)
    (size,) = struct.unpack_from("<I", out, 7)
    assert size == 0x80000000 | 1000
    assert out[11:1011] == data


def test_lz4_reads_block_checksums_and_content_size() -> None:
    data = b"checksummed blocks " * 5000
    compressor = cramjam.lz4.Compressor(content_checksum=True, block_linked=False)
    compressor.compress(data)
    framed = bytes(compressor.finish())
    assert framed[4] & 0x34 == 0x34  # independent blocks, block and content checksums
    assert decompress(CompressionType.LZ4, framed) == data

    # python-lz4 (kafka-python's lz4 module) stores the content size: FLG bit 3.
    body = compress(CompressionType.LZ4, data)[7:]
    with_size = _lz4_frame(0x68, 0x40, body, content_size=len(data))
    assert bytes(cramjam.lz4.decompress(with_size)) == data
    assert decompress(CompressionType.LZ4, with_size) == data


def test_lz4_rejects_dependent_blocks_like_kafka() -> None:
    linked = bytes(cramjam.lz4.compress(b"linked " * 100))
    assert not linked[4] & 0x20
    with pytest.raises(CorruptRecordError, match="dependent blocks"):
        decompress(CompressionType.LZ4, linked)


@pytest.mark.parametrize(
    ("flg", "bd", "message"),
    [
        (0xA0, 0x40, "version"),
        (0x61, 0x40, "dictionary"),
        (0x60, 0x30, "BD"),
        (0x60, 0x41, "BD"),
    ],
)
def test_lz4_rejects_descriptors_kafka_rejects(flg: int, bd: int, message: str) -> None:
    body = compress(CompressionType.LZ4, b"abc")[7:]
    with pytest.raises(CorruptRecordError, match=message):
        decompress(CompressionType.LZ4, _lz4_frame(flg, bd, body))


def test_zstd_reads_concatenated_frames() -> None:
    frames = bytes(cramjam.zstd.compress(b"one ")) + compress(
        CompressionType.ZSTD, b"two"
    )
    assert decompress(CompressionType.ZSTD, frames) == b"one two"
    assert decompress(CompressionType.ZSTD, frames, max_size=7) == b"one two"


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_max_size_stops_a_decompression_bomb(codec: CompressionType) -> None:
    bomb = compress(codec, bytes(8 << 20))  # 8 MiB of zeros in a few KiB
    assert len(bomb) < 500_000
    with pytest.raises(CorruptRecordError, match=str(1 << 20)):
        decompress(codec, bomb, max_size=1 << 20)
    assert len(decompress(codec, bomb, max_size=8 << 20)) == 8 << 20


def test_max_size_applies_to_uncompressed_payloads_too() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.NONE, b"12345", max_size=4)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_garbage_empty_and_truncated_payloads_are_corrupt(
    codec: CompressionType,
) -> None:
    valid = compress(codec, b"some records " * 200)
    for payload in (
        b"",
        b"not compressed at all",
        valid[: len(valid) // 2],
        valid[:-1],
    ):
        with pytest.raises(CorruptRecordError, match=codec.name):
            decompress(codec, payload)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_trailing_bytes_after_the_stream_are_corrupt(codec: CompressionType) -> None:
    valid = compress(codec, b"some records " * 200)
    with pytest.raises(CorruptRecordError):
        decompress(codec, valid + b"\x01\x02\x03\x04\x05")


@settings(max_examples=150, deadline=None)
@given(
    codec=st.sampled_from(COMPRESSED),
    data=st.binary(max_size=2000),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 10**6),
)
def test_mangled_payloads_raise_only_corrupt_record_error(
    codec: CompressionType, data: bytes, edits: list[tuple[int, int]], cut: int
) -> None:
    mangled = bytearray(compress(codec, data))
    for where, byte in edits:
        mangled[where % len(mangled)] = byte
    del mangled[cut % (len(mangled) + 1) :]
    try:
        out = decompress(codec, mangled, max_size=10_000)
    except CorruptRecordError:
        return
    assert len(out) <= 10_000
