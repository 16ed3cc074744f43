"""Walking the records inside a producer's batch: Kafka's LogValidator per-record checks.

The batch header and its CRC say nothing about the records: a producer (or an attacker)
can send a CRC-valid batch whose records are garbage, whose header claims more records
than it holds, or whose compressed payload does not decompress. Stored, such a batch
stops every consumer at its offset. So the leader walks every record of every batch it
receives from a client, as Kafka's ``LogValidator`` does (``validateRecord`` through
``DefaultRecordBatch``'s iterators and ``DefaultRecord.readFrom``), before anything is
appended:

- the records fill the payload exactly: each record's length varint covers its fields,
  no record runs past the payload and no bytes follow the last one;
- there are exactly ``recordCount`` of them, with offset deltas 0, 1, ..., n-1;
- varints are at most 5 bytes (varlong 10), lengths are -1 (null) or more, header keys
  are never null;
- on a compacted topic every record has a key ("Compacted topic cannot accept message
  without key");
- under ``message.timestamp.type=CreateTime``, each timestamp lies within
  ``message.timestamp.before.max.ms`` / ``after.max.ms`` of the broker's clock (KIP-937;
  Kafka 4.0 removed the older ``message.timestamp.difference.max.ms``).

Kafka answers the record errors with INVALID_RECORD (87) and a timestamp out of range
with INVALID_TIMESTAMP (32).

Two ways to walk, with the same verdicts. :func:`_walk` reads one record after another
with local variables and the varints' one- and two-byte cases decoded inline, skipping
keys, values and headers by their lengths: it is the authority, and every error message
comes from it. Where records have the same shape (the same lengths, as a producer of
fixed-size records makes them), :mod:`._record_runs` proves a whole run of them at once
from byte columns, at C speed, and the walk only covers what no run does. Checks that
are settled per batch are settled once: the timestamp window is turned into bounds on
the deltas, and a run whose delta width cannot leave the window checks no timestamp.
"""

from __future__ import annotations

from typing import NoReturn

import attrs

from ._batch import RecordBatchHeader
from ._compression import Buffer
from ._record_errors import InvalidRecordError, InvalidTimestampError, MissingKeyError
from ._record_runs import MIN_RUN, Records, Window, verified_run

MAX_LONG = 2**63 - 1
# A record's smallest encoding: one byte each for length, attributes, timestampDelta,
# offsetDelta, key length, value length and header count.
MIN_RECORD_SIZE = 7
# After a run fails to start, this many records are walked one by one before the next
# attempt, doubling up to the maximum while attempts keep failing: batches whose records
# all differ (values of varying length) pay a few percent for the attempts, no more.
FIRST_WALK = 16
MAX_WALK = 1024


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

    def delta_window(self, base_timestamp: int) -> Window | None:
        """The timestamp deltas a batch starting at ``base_timestamp`` may carry, or None
        when timestamps are not checked: ``now - before <= base + delta <= now + after``."""
        if not self.checks_timestamps:
            return None
        return (
            self.now_ms - self.before_max_ms - base_timestamp,
            self.now_ms + self.after_max_ms - base_timestamp,
        )


def _varint_slow(
    data: Buffer, pos: int, limit: int, what: str, bits: int
) -> tuple[int, int]:
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


def _varint(
    data: Buffer, pos: int, limit: int, what: str, bits: int = 32
) -> tuple[int, int]:
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
    count = _claimed_count(start, end, header)
    if count < MIN_RUN:
        return walk_records(data, start, end, header, rules)
    window = rules.delta_window(header.base_timestamp)
    records: Records
    if isinstance(data, memoryview):
        # Columns are cut with strided slices, which a memoryview copies item by item
        # (six times slower than bytes'); one copy of the records is cheaper.
        records, pos, end = bytes(data[start:end]), 0, end - start
    else:
        records, pos = data, start
    index, walk = 0, FIRST_WALK
    while index < count and pos < end:
        if count - index >= MIN_RUN:
            n, size = verified_run(
                records, pos, end, index, count, rules.require_key, window
            )
            pos, index = pos + n * size, index + n
            if n >= MIN_RUN:
                walk = FIRST_WALK
                continue
        stop = min(count, index + walk)
        pos, index = _walk(records, pos, end, index, stop, header, rules, window)
        walk = min(2 * walk, MAX_WALK)
    _check_end(pos, end, index, count)


def record_errors(
    data: Buffer,
    start: int,
    end: int,
    header: RecordBatchHeader,
    rules: RecordRules,
) -> tuple[tuple[int, str], ...]:
    """Every record of the batch a per-record rule refuses, as ``(index, why)``.

    Called only once a batch is refused (its cost does not matter): Kafka's LogValidator
    checks each record's key and timestamp and answers all the failures together, where
    the walk above stops at the first. It reads up to the first record whose structure
    is broken, which the walk reports on its own.
    """
    window = rules.delta_window(header.base_timestamp)
    found: list[tuple[int, str]] = []
    pos = start
    for index in range(header.record_count):
        try:
            length, pos = _varint(data, pos, end, "record length")
            record_end = pos + length
            timestamp_delta, at = _varint(data, pos + 1, record_end, "timestamp", 64)
            _offset_delta, at = _varint(data, at, record_end, "offset delta")
            key_length, at = _varint(data, at, record_end, "key length")
        except InvalidRecordError:
            break
        if rules.require_key and key_length == -1:
            found.append((index, "Compacted topic cannot accept message without key"))
        if window is not None and not window[0] <= timestamp_delta <= window[1]:
            found.append(
                (
                    index,
                    f"timestamp {header.base_timestamp + timestamp_delta} is out of "
                    "range (message.timestamp.before.max.ms / after.max.ms)",
                )
            )
        pos = record_end
    return tuple(found)


def walk_records(
    data: Buffer,
    start: int,
    end: int,
    header: RecordBatchHeader,
    rules: RecordRules,
) -> None:
    """:func:`check_records` without runs: every record walked one by one. The reference
    the runs are tested against, and what a batch of records of varying shapes costs."""
    count = _claimed_count(start, end, header)
    window = rules.delta_window(header.base_timestamp)
    pos, index = _walk(data, start, end, 0, count, header, rules, window)
    _check_end(pos, end, index, count)


def _claimed_count(start: int, end: int, header: RecordBatchHeader) -> int:
    count = header.record_count
    if count > (end - start) // MIN_RECORD_SIZE:
        # Checked first, so that a small payload claiming 2^31 - 1 records is refused
        # without walking it: every record takes 7 bytes at least.
        raise InvalidRecordError(
            f"batch claims {count} records in {end - start} bytes of records"
        )
    return count


def _check_end(pos: int, end: int, index: int, count: int) -> None:
    if pos < end:
        raise InvalidRecordError(
            f"{end - pos} bytes follow the {count} records the batch declares"
        )
    if index != count:
        # DefaultRecordBatch: "Incorrect declared batch size, premature EOF reached".
        raise InvalidRecordError(f"batch declares {count} records but holds {index}")


def _walk(
    data: Buffer,
    pos: int,
    end: int,
    index: int,
    stop: int,
    header: RecordBatchHeader,
    rules: RecordRules,
    window: Window | None,
) -> tuple[int, int]:
    """Check records ``index``, ``index + 1``, ... from ``pos`` until record ``stop`` or
    the end of the records; return where it stopped (position, next record's index).

    Each varint's one-byte case (almost all of them), and the two-byte case of the
    lengths and offset deltas that grow past 63, is decoded inline: a function call per
    field would double the cost of the walk.
    """
    require_key = rules.require_key
    check_timestamps = window is not None
    low, high = window if window is not None else (0, 0)
    while pos < end and index < stop:
        if (b := data[pos]) < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
            u = (b & 0x7F) | c << 7
            length, pos = (u >> 1) ^ -(u & 1), pos + 2
        else:
            length, pos = _varint_slow(data, pos, end, "record length", 32)
        record_end = pos + length
        if length < MIN_RECORD_SIZE - 1 or record_end > end:
            raise InvalidRecordError(
                f"record {index} declares {length} bytes; {end - pos} remain in the batch"
            )
        # attributes (no record-level attribute is defined), then the timestamp delta:
        # both inside the record, which is 6 bytes at least.
        if (b := data[pos + 1]) < 0x80:
            timestamp_delta, pos = (b >> 1) ^ -(b & 1), pos + 2
        else:
            timestamp_delta, pos = _varint_slow(
                data, pos + 1, record_end, "timestamp delta", 64
            )
        # The offset delta must be the record's index, whose zigzag form is 2 * index: the
        # raw varint is compared with that, and decoded only to report a wrong one.
        if pos < record_end and (b := data[pos]) < 0x80:
            if b != index << 1:
                _offset_delta_error(index, (b >> 1) ^ -(b & 1))
            pos += 1
        elif pos + 1 < record_end and (c := data[pos + 1]) < 0x80:
            if (u := (b & 0x7F) | c << 7) != index << 1:
                _offset_delta_error(index, (u >> 1) ^ -(u & 1))
            pos += 2
        else:
            offset_delta, pos = _varint_slow(data, pos, record_end, "offset delta", 32)
            if offset_delta != index:
                _offset_delta_error(index, offset_delta)
        if pos < record_end and (b := data[pos]) < 0x80:
            key_length, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            key_length, pos = _varint_slow(data, pos, record_end, "key length", 32)
        if key_length >= 0:
            pos += key_length
        elif key_length == -1:
            if require_key:
                raise MissingKeyError(
                    f"Compacted topic cannot accept message without key (record {index})"
                )
        else:
            raise InvalidRecordError(f"record {index} has key length {key_length}")
        if pos < record_end and (b := data[pos]) < 0x80:
            value_length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif pos + 1 < record_end and (c := data[pos + 1]) < 0x80:
            u = (b & 0x7F) | c << 7
            value_length, pos = (u >> 1) ^ -(u & 1), pos + 2
        else:
            value_length, pos = _varint_slow(data, pos, record_end, "value length", 32)
        if value_length >= 0:
            pos += value_length
        elif value_length < -1:
            raise InvalidRecordError(f"record {index} has value length {value_length}")
        if pos < record_end and (b := data[pos]) < 0x80:
            header_count, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            header_count, pos = _varint_slow(data, pos, record_end, "header count", 32)
        if header_count:
            pos = _skip_headers(data, pos, record_end, index, header_count)
        if pos != record_end:
            # Kafka: "Invalid record size: expected to read N bytes in record payload, but
            # instead read M" (fields that end early, or that run past the length).
            raise InvalidRecordError(
                f"record {index} declares {length} bytes but its fields take "
                f"{length + pos - record_end}"
            )
        if check_timestamps and not low <= timestamp_delta <= high:
            _timestamp_error(header.base_timestamp + timestamp_delta, index, rules)
        index += 1
    return pos, index


def _offset_delta_error(index: int, offset_delta: int) -> NoReturn:
    # A producer numbers its records 0..n-1; anything else would give two records one
    # offset, or leave holes a consumer cannot explain.
    raise InvalidRecordError(f"record {index} has offset delta {offset_delta}")


def _skip_headers(
    data: Buffer, pos: int, record_end: int, index: int, count: int
) -> int:
    """Past ``count`` headers (key length, key, value length, value) of record ``index``."""
    if not 0 <= count <= (record_end - pos) // 2:  # 2 bytes per header at least
        raise InvalidRecordError(f"record {index} claims {count} headers")
    for _ in range(count):
        key_size, pos = _varint(data, pos, record_end, "header key length")
        if key_size < 0:  # DefaultRecord: "Invalid negative header key size"
            raise InvalidRecordError(f"record {index} has a header with a null key")
        value_size, pos = _varint(
            data, pos + key_size, record_end, "header value length"
        )
        if value_size < -1:
            raise InvalidRecordError(
                f"record {index} has header value length {value_size}"
            )
        pos += max(value_size, 0)
    return pos


def _timestamp_error(timestamp: int, index: int, rules: RecordRules) -> NoReturn:
    raise InvalidTimestampError(
        f"timestamp {timestamp} of record {index} is out of range: it must lie within "
        f"[{rules.now_ms - rules.before_max_ms}, {rules.now_ms + rules.after_max_ms}] "
        "(message.timestamp.before.max.ms / after.max.ms)"
    )
