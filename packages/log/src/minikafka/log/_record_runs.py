"""Proving runs of same-shaped records at once: the fast path of Kafka's LogValidator walk.

A producer of fixed-size records (the usual benchmark, and many real producers: ids,
metrics, fixed-width events) sends batches whose records differ only in their bytes, not
their shape: every record has the same length, the same key and value lengths, the same
headers, and its timestamp and offset deltas take the same number of bytes. Walking such
a batch record by record in Python costs over half a microsecond per record
(:func:`._record_checks._walk`, 5.7 ms for 1 MiB of 100-byte records); here the same
verdict is reached from byte columns (0.14 ms for the same MiB, ``bench/log_validate.py``).

Take one record, checked field by field like the walk does (:func:`_shape`), and call its
size ``S``. If the next ``m`` records have the same shape, they start at ``S``-byte
steps, and the byte at offset ``o`` of each of them is ``data[p + o : p + m*S : S]``: a
strided slice, cut and compared in C. The records are all valid exactly when:

- every *structural* byte (the varints of the record length, key length, value length,
  header count and each header's lengths) is the template's own, in every record: then
  every record parses as the template does, and is valid as it is;
- the timestamp delta's bytes carry the template's continuation bits (the same width,
  at most 9 bytes, so no int64 overflow), and that width cannot leave the timestamp
  window (``message.timestamp.before/after.max.ms``), or no window is configured;
- the offset delta's bytes are those of 0, 1, ..., n-1: compared with the expected
  column, built from repeating tables instead of encoding every number.

Attributes, keys, values and header contents are bytes no check looks at, as in Kafka's
``DefaultRecord.readFrom``. A record that breaks the run (another width, another length,
a bad field) ends it; the caller walks it record by record, so every error is reported
by the walk, with its message. Nothing per record happens in Python here.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

# Below this many records a run costs more than walking them.
MIN_RUN = 16
# The first columns of a run are cut this many records long, then four times longer each
# time every record matched: a run that breaks early costs little C work, a long one
# takes a handful of rounds.
FIRST_PROBE = 16
GROWTH = 4
# The widest structural varint taken as a template: up to 3 bytes (2^20), so no int32
# overflow needs checking; longer lengths are left to the walk.
MAX_LENGTH_BYTES = 3
MAX_TIMESTAMP_BYTES = 9  # 2^62 either way: a 10-byte varlong can overflow int64

Window: TypeAlias = tuple[int, int]  # the timestamp deltas allowed, inclusive
# Strided slices of a memoryview copy item by item: the caller passes bytes instead.
Records: TypeAlias = bytes | bytearray

# An offset delta d >= 0 is written as the varint of 2d (zigzag): one byte below 64, two
# below 8192, and so on.
_WIDTH_ENDS = (64, 8192, 1 << 20, 1 << 27, 1 << 34)
# The low 7 bits of byte 0 of 2d repeat every 64 offsets, those of byte 1 every 8192.
_DIGIT0 = bytes((2 * d) & 0x7F for d in range(64))
_DIGIT1 = bytes((d >> 6) & 0x7F for d in range(8192))
# translate(): set the continuation bit
_CONTINUED = bytes(b | 0x80 for b in range(256))
_HIGH_BIT = bytes(b >> 7 for b in range(256))  # translate(): 1 where it is set, else 0
_BYTE = tuple(bytes([b]) for b in range(256))


@attrs.frozen
class _Shape:
    """Where a record's fields lie, relative to its first byte."""

    size: int
    fixed: tuple[tuple[int, bytes], ...]  # (offset, the byte every record has there)
    timestamp_at: int
    timestamp_width: int
    offset_at: int
    offset_width: int


def verified_run(
    data: Records,
    pos: int,
    end: int,
    index: int,
    count: int,
    require_key: bool,
    window: Window | None,
) -> tuple[int, int]:
    """How many records from record ``index`` at ``pos`` are proved valid as a run, and
    their size: ``(0, 0)`` when record ``index`` cannot start one."""
    shape = _shape(data, pos, end, index, require_key, window)
    if shape is None:
        return 0, 0
    size = shape.size
    width_end = _WIDTH_ENDS[shape.offset_width - 1]
    limit = min(count - index, width_end - index, (end - pos) // size)
    done, probe = 0, FIRST_PROBE
    while done < limit:
        n = min(probe, limit - done)
        good = _matching(data, pos + done * size, index + done, n, shape)
        done += good
        if good < n:
            break
        probe *= GROWTH
    return done, size


def _matching(data: Records, pos: int, first: int, n: int, shape: _Shape) -> int:
    """How many of the ``n`` records at ``pos`` (the first being record ``first``) have
    ``shape`` with the right offset deltas: the length of the run's valid prefix."""
    size = shape.size
    stop = pos + n * size
    good = n
    for at, byte in shape.fixed:
        column = data[pos + at : stop : size]
        if column != byte * good:
            good = _first_difference(column, byte * good)
            stop = pos + good * size
    width = shape.timestamp_width
    for digit in range(width):
        column = data[pos + shape.timestamp_at + digit : stop : size]
        if digit == width - 1:
            if column.isascii():  # the last byte: no continuation bit
                continue
            expected = b"\x00" * good
        else:
            expected = b"\x01" * good
        bits = column.translate(_HIGH_BIT)
        if bits != expected:
            good = _first_difference(bits, expected)
            stop = pos + good * size
    width = shape.offset_width
    for digit in range(width):
        column = data[pos + shape.offset_at + digit : stop : size]
        expected = offset_delta_column(first, good, width, digit)
        if column != expected:
            good = _first_difference(column, expected)
            stop = pos + good * size
    return good


def _first_difference(a: Records, b: bytes) -> int:
    """The index of the first byte where ``a`` and ``b`` (as long, and different) differ."""
    x = int.from_bytes(a, "big") ^ int.from_bytes(b, "big")
    return len(b) - 1 - (x.bit_length() - 1) // 8


def offset_delta_column(first: int, n: int, width: int, digit: int) -> bytes:
    """Byte ``digit`` of the varints of offset deltas ``first .. first + n - 1``, each
    ``width`` bytes long: what that column of a run of records must hold."""
    if digit == 0:
        column = _cycle(_DIGIT0, first, n)
    elif digit == 1:
        column = _cycle(_DIGIT1, first, n)
    else:
        # Byte 2 and up change every 2^13 offsets or more rarely: a few repeats.
        shift, stop, parts = 7 * digit - 1, first + n, []
        d = first
        while d < stop:
            following = min(((d >> shift) + 1) << shift, stop)
            parts.append(_BYTE[(d >> shift) & 0x7F] * (following - d))
            d = following
        column = b"".join(parts)
    return column.translate(_CONTINUED) if digit < width - 1 else column


def _cycle(period: bytes, first: int, n: int) -> bytes:
    start = first % len(period)
    return (period * ((start + n) // len(period) + 1))[start : start + n]


def _shape(
    data: Records,
    pos: int,
    end: int,
    index: int,
    require_key: bool,
    window: Window | None,
) -> _Shape | None:
    """Record ``index``'s shape if it is valid and can serve as a run's template, else
    None (and the walk will judge it). The same checks as the walk, without messages."""
    fixed: list[int] = []
    length, at = _small_varint(data, pos, end, fixed, pos)
    record_end = at + length
    if length < 6 or record_end > end:
        return None
    timestamp_at = at + 1 - pos  # after the attributes
    timestamp_width = _width(data, at + 1, record_end, MAX_TIMESTAMP_BYTES)
    if not timestamp_width:
        return None
    if window is not None:
        # Any delta of this width lies in [-2^(7w-1), 2^(7w-1) - 1].
        half = 1 << (7 * timestamp_width - 1)
        if not (window[0] <= -half and half - 1 <= window[1]):
            return None
    at += 1 + timestamp_width
    offset_at = at - pos
    offset_width = _width(data, at, record_end, 5)
    if not offset_width or _zigzag(data, at, offset_width) != index:
        return None  # a wrong delta: the walk reports it
    if index >= _WIDTH_ENDS[offset_width - 1] or (
        offset_width > 1 and index < _WIDTH_ENDS[offset_width - 2]
    ):
        return None  # not in its shortest form, which is all the columns are built for
    at += offset_width
    key_length, at = _small_varint(data, at, record_end, fixed, pos)
    if key_length < -1 or (key_length == -1 and require_key):
        return None
    at += max(key_length, 0)
    value_length, at = _small_varint(data, at, record_end, fixed, pos)
    if value_length < -1:
        return None
    at += max(value_length, 0)
    headers, at = _small_varint(data, at, record_end, fixed, pos)
    if not 0 <= headers <= (record_end - at) // 2:
        return None
    for _ in range(headers):
        key_size, at = _small_varint(data, at, record_end, fixed, pos)
        if key_size < 0:
            return None
        value_size, at = _small_varint(data, at + key_size, record_end, fixed, pos)
        if value_size < -1:
            return None
        at += max(value_size, 0)
    if at != record_end:
        return None
    return _Shape(
        size=record_end - pos,
        fixed=tuple((offset, _BYTE[data[pos + offset]]) for offset in fixed),
        timestamp_at=timestamp_at,
        timestamp_width=timestamp_width,
        offset_at=offset_at,
        offset_width=offset_width,
    )


_NOT_A_TEMPLATE = -(1 << 40)  # a value every caller's range check refuses


def _small_varint(
    data: Records, at: int, limit: int, fixed: list[int], origin: int
) -> tuple[int, int]:
    """A structural varint of up to MAX_LENGTH_BYTES at ``at``, its bytes' offsets from
    ``origin`` added to ``fixed``; a value below any valid one if it is not there."""
    width = _width(data, at, limit, MAX_LENGTH_BYTES)
    if not width:
        return _NOT_A_TEMPLATE, limit
    fixed.extend(range(at - origin, at - origin + width))
    return _zigzag(data, at, width), at + width


def _width(data: Records, at: int, limit: int, max_bytes: int) -> int:
    """How many bytes the varint at ``at`` takes, or 0 if it is longer than ``max_bytes``
    or runs past ``limit``."""
    for width in range(1, max_bytes + 1):
        if at + width > limit:
            return 0
        if data[at + width - 1] < 0x80:
            return width
    return 0


def _zigzag(data: Records, at: int, width: int) -> int:
    unsigned = 0
    for i in range(width):
        unsigned |= (data[at + i] & 0x7F) << (7 * i)
    return (unsigned >> 1) ^ -(unsigned & 1)
