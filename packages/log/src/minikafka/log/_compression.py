"""The five codecs of a record batch's payload, framed the way Kafka's clients frame them.

Attribute bits 0-2 of a batch (KIP-98 record format v2) name the codec that compressed
everything after the 61-byte header. Each codec has a framing of its own, and a reader must
accept every framing that Kafka's Java client, librdkafka and kafka-python write:

- GZIP: an RFC 1952 stream (``java.util.zip.GZIPOutputStream``); Java's reader also takes
  several concatenated members, so we do.
- SNAPPY: Java writes snappy-java's stream (``SnappyOutputStream``): the 16-byte header
  ``\\x82SNAPPY\\x00`` + version 1 + compatible version 1 (big-endian int32s), then chunks
  of at most 32 KiB of input, each a big-endian int32 length and a raw snappy block.
  librdkafka writes one raw snappy block with no framing. Java's ``SnappyInputStream``
  and librdkafka's reader accept both, told apart by the magic; so do we.
- LZ4: the LZ4 *frame* format with Kafka's restrictions (``Lz4BlockOutputStream``,
  ``Lz4BlockInputStream``): FLG version 1, independent blocks only, no dictionary id,
  block maximum 64 KiB-4 MiB. Content size, block checksums and a content checksum are
  accepted (python-lz4 under kafka-python writes the content size).
- ZSTD: standard zstd frames (zstd-jni's ZstdOutputStream, librdkafka's streaming
  compressor); a reader takes several concatenated frames and never needs the optional
  content size field. We write a frame as zstd-jni's stream does, without it.

``max_size`` bounds the decompressed size *while* decompressing, not after, so a small
hostile payload cannot make us allocate gigabytes (a decompression bomb).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from typing import TypeAlias

import cramjam

from minikafka.log._batch import CompressionType, CorruptRecordError

Buffer: TypeAlias = bytes | bytearray | memoryview

# Kafka's default levels (CompressionType.defaultLevel(): Deflater.DEFAULT_COMPRESSION,
# which zlib takes as 6, and zstd's 3). LZ4 has none to choose: Kafka's default level
# uses lz4-java's fast compressor, like cramjam's default block mode.
_GZIP_LEVEL = 6
_GZIP_OS_UNKNOWN = b"\xff"
_ZSTD_LEVEL = 3
_LZ4_DEFAULT_LEVEL = 9
_ZSTD_FIRST_BUFFER = 1 << 20

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
# version 1, compatible with 1
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_CHUNK = 32 * 1024  # snappy-java's default block size
_BE_INT32 = struct.Struct(">i")

_LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
# What Lz4BlockOutputStream writes for magic v2: FLG 0x60 (version 1, independent blocks,
# no checksums, no content size), BD 0x40 (64 KiB blocks), HC = second byte of
# xxHash32(FLG BD). The HC is a constant because FLG and BD are.
_LZ4_HEADER = _LZ4_MAGIC + b"\x60\x40\x82"
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000  # high bit of a block size: the block is stored as is
_LE_UINT32 = struct.Struct("<I")


def compress(codec: CompressionType, data: Buffer, level: int | None = None) -> bytes:
    """``data`` compressed and framed as Kafka's Java client frames it.

    ``level`` is KIP-390's ``compression.<codec>.level``; None is Kafka's default level.
    SNAPPY has no levels.
    """
    # a plain int works too; an unknown one is a ValueError
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        out = gzip.compress(data, compresslevel=level or _GZIP_LEVEL, mtime=0)
        # The header's OS byte: zlib names the system it runs on, Java's
        # GZIPOutputStream (JDK 16 on) 255, unknown; a reader ignores it, and with
        # Java's the batches the cleaner rewrites are Kafka's byte for byte.
        return out[:9] + _GZIP_OS_UNKNOWN + out[10:]
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(memoryview(data))
    if codec is CompressionType.LZ4:
        return _lz4_compress(memoryview(data), level)
    return _zstd_compress(data, _ZSTD_LEVEL if level is None else level)


def _zstd_compress(data: Buffer, level: int) -> bytes:
    """One zstd frame as zstd-jni's ``ZstdOutputStream`` writes it when Kafka closes
    it: streamed (no content size in the header), flushed, then ended with an empty
    last block; the same bytes as Kafka's for the same records."""
    compressor = cramjam.zstd.Compressor(level)
    compressor.compress(bytes(data))  # it takes bytes only
    flushed = bytes(compressor.flush())
    return flushed + bytes(compressor.finish())


def decompress(
    codec: CompressionType, data: Buffer, max_size: int | None = None
) -> bytes:
    """The bytes ``data`` decompresses to; CorruptRecordError if it is not a valid stream
    of ``codec`` or would decompress to more than ``max_size`` bytes."""
    codec = CompressionType(codec)
    view = memoryview(data)
    try:
        if codec is CompressionType.NONE:
            out = bytes(view)
        elif not view:
            # every codec writes at least a header
            raise CorruptRecordError("empty payload")
        elif codec is CompressionType.GZIP:
            out = _gzip_decompress(view, max_size)
        elif codec is CompressionType.SNAPPY:
            out = _snappy_decompress(view, max_size)
        elif codec is CompressionType.LZ4:
            out = _lz4_decompress(view, max_size)
        else:
            out = _zstd_decompress(view, max_size)
    except (cramjam.DecompressionError, zlib.error) as e:
        message = f"{codec.name} payload of {len(view)} bytes is corrupt: {e}"
        raise CorruptRecordError(message) from e
    except CorruptRecordError as e:
        raise CorruptRecordError(
            f"{codec.name} payload of {len(view)} bytes: {e}"
        ) from e
    if max_size is not None and len(out) > max_size:
        raise CorruptRecordError(
            f"{codec.name} payload decompresses to {len(out)} bytes, over the limit of {max_size}"
        )
    return out


def _check_budget(total: int, max_size: int | None) -> None:
    if max_size is not None and total > max_size:
        raise CorruptRecordError(
            f"decompresses to more than the limit of {max_size} bytes"
        )


def _gzip_decompress(view: memoryview, max_size: int | None) -> bytes:
    out = bytearray()
    rest: bytes | memoryview = view
    while True:  # one pass per gzip member
        # 16 + 15: expect a gzip header and trailer
        inflater = zlib.decompressobj(wbits=31)
        # max_length stops inflating one byte past the budget: we never hold more.
        limit = 0 if max_size is None else max_size - len(out) + 1
        out += inflater.decompress(rest, limit)
        _check_budget(len(out), max_size)
        if not inflater.eof:
            raise CorruptRecordError("gzip stream is truncated")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)


def _xerial_compress(view: memoryview) -> bytes:
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_CHUNK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_CHUNK]))
        parts += (_BE_INT32.pack(len(block)), block)
    return b"".join(parts)


def _snappy_decompress(view: memoryview, max_size: int | None) -> bytes:
    if len(view) < len(_XERIAL_HEADER) or view[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        # librdkafka's raw block. Its header declares the output length: check it first.
        _check_budget(cramjam.snappy.decompress_raw_len(view), max_size)
        return bytes(cramjam.snappy.decompress_raw(view))
    # The version fields are ignored, as librdkafka and kafka-python do (some writers
    # put them little-endian).
    out = bytearray()
    position = len(_XERIAL_HEADER)
    while position < len(view):
        if len(view) - position < 4:
            raise CorruptRecordError(f"snappy chunk length at {position} is truncated")
        (length,) = _BE_INT32.unpack_from(view, position)
        position += 4
        if length < 0 or length > len(view) - position:
            raise CorruptRecordError(
                f"snappy chunk at {position} declares {length} bytes"
            )
        chunk = view[position : position + length]
        _check_budget(len(out) + cramjam.snappy.decompress_raw_len(chunk), max_size)
        out += cramjam.snappy.decompress_raw(chunk)
        position += length
    return bytes(out)


def _lz4_compress(view: memoryview, level: int | None = None) -> bytes:
    # Kafka's default level (9) uses lz4-java's fast compressor; another level its high
    # compressor at that level (KIP-390).
    fast = level is None or level == _LZ4_DEFAULT_LEVEL
    parts = [_LZ4_HEADER]
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        if fast:
            block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        else:
            block = bytes(
                cramjam.lz4.compress_block(
                    chunk, mode="high_compression", compression=level, store_size=False
                )
            )
        # incompressible: store it, as Lz4BlockOutputStream does
        if len(block) >= len(chunk):
            parts += (_LE_UINT32.pack(len(chunk) | _LZ4_UNCOMPRESSED), bytes(chunk))
        else:
            parts += (_LE_UINT32.pack(len(block)), block)
    parts.append(_LE_UINT32.pack(0))  # EndMark
    return b"".join(parts)


def _lz4_decompress(view: memoryview, max_size: int | None) -> bytes:
    """Block by block, like Lz4BlockInputStream, so each block's output is bounded.

    The xxHash32 checksums (header, blocks, content) are skipped, not verified: the
    batch's CRC-32C already covers every one of these bytes.
    """
    if len(view) < 7 or view[:4] != _LZ4_MAGIC:
        raise CorruptRecordError("not an LZ4 frame (bad magic)")
    flg, bd = view[4], view[5]
    # Lz4BlockOutputStream.FLG.validate / BD.validate: the frames Kafka reads.
    if flg >> 6 != 1:
        raise CorruptRecordError(f"LZ4 frame version {flg >> 6}; only version 1 exists")
    if flg & 0x03:
        raise CorruptRecordError("LZ4 frame sets reserved FLG bits or a dictionary id")
    if not flg & 0x20:
        raise CorruptRecordError(
            "LZ4 frame uses dependent blocks, which Kafka does not support"
        )
    if bd & 0x8F or not 4 <= (bd >> 4) & 0x07 <= 7:
        raise CorruptRecordError(f"LZ4 frame has an invalid BD byte {bd:#04x}")
    block_checksum, content_size, content_checksum = flg & 0x10, flg & 0x08, flg & 0x04
    max_block = 1 << (2 * ((bd >> 4) & 0x07) + 8)
    position = 6 + (8 if content_size else 0) + 1  # FLG BD [content size] HC
    out = bytearray()
    scratch = bytearray(max_block)
    while True:
        if len(view) - position < 4:
            raise CorruptRecordError("LZ4 frame is truncated (no EndMark)")
        (size,) = _LE_UINT32.unpack_from(view, position)
        position += 4
        stored, size = size & _LZ4_UNCOMPRESSED, size & ~_LZ4_UNCOMPRESSED
        if size == 0:  # EndMark
            if content_checksum and len(view) - position < 4:
                raise CorruptRecordError("LZ4 content checksum is truncated")
            position += 4 if content_checksum else 0
            break
        if size > max_block:
            raise CorruptRecordError(
                f"LZ4 block of {size} bytes exceeds the maximum {max_block}"
            )
        if len(view) - position < size + (4 if block_checksum else 0):
            raise CorruptRecordError("LZ4 block is truncated")
        block = view[position : position + size]
        if stored:
            out += block
        else:
            n = cramjam.lz4.decompress_block_into(block, scratch, output_len=max_block)
            out += memoryview(scratch)[:n]
        _check_budget(len(out), max_size)
        position += size + (4 if block_checksum else 0)
    if position != len(view):
        raise CorruptRecordError(
            f"{len(view) - position} bytes follow the LZ4 frame's end"
        )
    return bytes(out)


def _zstd_decompress(view: memoryview, max_size: int | None) -> bytes:
    if max_size is None:
        return bytes(cramjam.zstd.decompress(view))
    # cramjam decompresses into a fixed buffer and fails rather than overflow it, so an
    # oversized stream is never inflated past the buffer. Start small (a bytearray is
    # zeroed, so a max_size buffer per batch would be costly) and grow up to max_size + 1;
    # cramjam raises the same error for "corrupt" and "buffer full", so retry on either.
    capacity = min(max_size + 1, max(_ZSTD_FIRST_BUFFER, 8 * len(view)))
    while True:
        target = bytearray(capacity)
        try:
            n = cramjam.zstd.decompress_into(view, target)
        except cramjam.DecompressionError as e:
            if capacity > max_size:
                raise CorruptRecordError(
                    f"is corrupt or decompresses to more than the limit of {max_size} bytes: {e}"
                ) from e
            capacity = min(max_size + 1, capacity * 4)
            continue
        _check_budget(n, max_size)
        return bytes(memoryview(target)[:n])
