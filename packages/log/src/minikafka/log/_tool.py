"""The logic of ``python -m minikafka.log``: Kafka's ``kafka-dump-log.sh`` (DumpLogSegments).

- :func:`dump` prints a segment's batches the way ``kafka-dump-log.sh --files`` does, one
  line per batch (``--deep`` adds one line per record, Kafka's ``--deep-iteration
  --print-data-log``), or the entries of an ``.index`` / ``.timeindex`` file, each checked
  against the segment beside it (Kafka's "Mismatches in" report). The lines are Kafka's,
  field for field, with one difference on purpose: a key or value is cut after 64
  characters, and one that is not printable UTF-8 is shown as hex (Kafka prints the raw
  bytes, whose newlines would break the one-line-per-record layout). A ``.txnindex``
  or a ``.snapshot`` is printed as Kafka prints it (:mod:`._tool_txn`).
- :func:`verify` checks what log recovery checks (each batch's length, magic, CRC-32C and
  offsets) plus that every record decodes and that segments do not overlap, and names the
  first problem.
- :func:`demo` writes a small log that rolls several segments and walks through it.

Every function takes paths and an output stream and returns an exit status, so tests and
the book call them directly. The tool only reads: it never goes through
:meth:`LogSegment.open` or :meth:`Log.open`, which create missing files, rebuild indexes
and cut a corrupt tail, the very evidence a dump is for.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path
from typing import TextIO

import attrs

from minikafka.common import TopicPartition

from ._batch import (
    CorruptRecordError,
    RecordBatchHeader,
    TimestampType,
    check_crc,
    compute_crc,
)
from ._index import MAX_RELATIVE_OFFSET, OffsetIndex, TimeIndex
from ._markers import read_end_txn_marker
from ._names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    is_partition_dir,
    offset_from_file_name,
)
from ._records import Record, decode_batch
from ._segment_read import scan_batches
from ._tool_txn import dump_snapshot, dump_txn_index

# of a printable key or value; keySize/valueSize say how long it really is
_SHOWN_CHARS = 64
_SHOWN_BYTES = 32  # of a binary one, as hex
_TRANSITION_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
_KINDS = (
    LOG_SUFFIX,
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    SNAPSHOT_SUFFIX,
)


class PathError(Exception):
    """A PATH the tool cannot use (missing, or not a segment, index or log directory)."""


# --- finding the files ------------------------------------------------------------------


def _kind(path: Path) -> str:
    """``.log``, ``.index``, ``.timeindex``, ``.txnindex`` or ``.snapshot``, looking
    through a transition suffix."""
    name = path.name
    for suffix in _TRANSITION_SUFFIXES:
        name = name.removesuffix(suffix)
    for kind in _KINDS:
        if name.endswith(kind):
            try:
                offset_from_file_name(name)
            except ValueError as e:
                raise PathError(f"{path}: {e}") from None
            return kind
    raise PathError(
        f"{path}: not a segment (.log), an index (.index, .timeindex, .txnindex), a "
        "producer snapshot (.snapshot), a partition directory or a log directory"
    )


def _partitions(path: Path) -> list[list[Path]]:
    """The segment files PATH names, one list per partition, each in offset order."""
    if not path.exists():
        raise PathError(f"{path}: no such file or directory")
    if not path.is_dir():
        if _kind(path) != LOG_SUFFIX:
            raise PathError(
                f"{path}: verify checks segments (.log); dump prints an index"
            )
        return [[path]]
    # Only live segments: a .deleted, .cleaned or .swap file is not part of the log (the
    # loader removes or completes them at start-up), so it would show false overlaps.
    logs = sorted(path.glob(f"*{LOG_SUFFIX}"), key=_base_offset)
    if logs:
        return [logs]
    # A log.dir (what `demo --dir` and the broker's log.dirs point at): every partition.
    partitions = sorted(
        (p for p in path.iterdir() if is_partition_dir(p)),
        key=lambda p: TopicPartition.parse(p.name),
    )
    found = [sorted(p.glob(f"*{LOG_SUFFIX}"), key=_base_offset) for p in partitions]
    if not any(found):
        raise PathError(
            f"{path}: holds no segment (.log) and no <topic>-<partition> directory"
        )
    return [logs for logs in found if logs]


def _base_offset(path: Path) -> int:
    try:
        return offset_from_file_name(path.name)
    except ValueError as e:
        raise PathError(f"{path}: {e}") from None


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as e:
        raise PathError(f"{path}: {e.strerror}") from None


def _read_base_offset(fd: int, position: int) -> int | None:
    """The baseOffset field of a batch that did not parse, if its 8 bytes are there."""
    raw = os.pread(fd, 8, position)
    return struct.unpack(">q", raw)[0] if len(raw) == 8 else None


# --- dump -------------------------------------------------------------------------------


def dump(path: Path, out: TextIO, *, deep: bool = False, index: bool = False) -> int:
    """Print PATH's batches (or index entries); 0, or 1 if something is corrupt."""
    kind = _kind(path) if path.is_file() else LOG_SUFFIX
    if kind == TXN_INDEX_SUFFIX:
        return dump_txn_index(path, out)
    if kind == SNAPSHOT_SUFFIX:
        return dump_snapshot(path, out)
    if kind != LOG_SUFFIX:
        return dump_index(path, out)
    status = 0
    for logs in _partitions(path):
        for log_path in logs:
            if dump_segment(log_path, out, deep=deep):
                return 1  # recovery cuts the log at its first bad batch: so do we
            if index:
                for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    index_path = log_path.with_name(
                        log_path.name.replace(LOG_SUFFIX, kind, 1)
                    )
                    if index_path.exists():
                        # A wrong index is rebuilt from the log, so the dump goes on.
                        show = (
                            dump_txn_index if kind == TXN_INDEX_SUFFIX else dump_index
                        )
                        status = max(status, show(index_path, out))
    return status


def dump_segment(
    path: Path, out: TextIO, *, deep: bool = False, max_batches: int | None = None
) -> int:
    """One segment, a line per batch; stops at the first corrupt batch and returns 1."""
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
        print(f"Dumping {path}", file=out)
        print(f"Log starting offset: {_base_offset(path)}", file=out)
        shown = 0
        try:
            # verify_crc=False: a bad CRC is shown as isvalid: false before we stop.
            for position, header in scan_batches(fd, 0, size, verify_crc=False):
                if max_batches is not None and shown == max_batches:
                    print("...", file=out)
                    break
                data = os.pread(fd, header.size, position)
                valid = compute_crc(data, 0, header.size) == header.crc
                print(format_batch(header, position, valid), file=out)
                shown += 1
                if not valid:
                    check_crc(data, 0, header, position)  # raises with the two CRCs
                if deep:
                    for record in _decode(data, header, position):
                        print(format_record(record, header), file=out)
        except CorruptRecordError as e:
            # The library's messages already name the position and base offset.
            print(
                f"CORRUPT: {e}\nLog recovery, if it rescans this segment, keeps its first "
                f"{e.position} bytes and drops everything after them",
                file=out,
            )
            return 1
    finally:
        os.close(fd)
    return 0


def _decode(data: bytes, header: RecordBatchHeader, position: int) -> list[Record]:
    try:
        return decode_batch(data, verify_crc=False)[1]
    except CorruptRecordError as e:
        # decode_batch names position 0 of the buffer it was given; its cause holds
        # what is wrong, and we know where the batch is in the file.
        raise CorruptRecordError(
            f"batch at position {position} (base offset {header.base_offset}): {e.__cause__ or e}",
            position,
        ) from e


def _bool(value: bool) -> str:
    return "true" if value else "false"


def format_batch(header: RecordBatchHeader, position: int, valid: bool = True) -> str:
    """One batch the way kafka-dump-log.sh prints it.

    Field for field Kafka's line: the delete horizon as Java prints an ``OptionalLong``,
    the CRC as an unsigned decimal.
    """
    horizon = header.delete_horizon_ms
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.record_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {_bool(header.is_transactional)} "
        f"isControl: {_bool(header.is_control)} deleteHorizonMs: "
        + ("OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]")
        + f" position: {position} {_timestamp_label(header)}: {header.max_timestamp} "
        f"size: {header.size} magic: {header.magic} "
        f"compresscodec: {_codec(header)} crc: {header.crc} isvalid: {_bool(valid)}"
    )


def _timestamp_label(header: RecordBatchHeader) -> str:
    if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return "LogAppendTime"
    return "CreateTime"


def _codec(header: RecordBatchHeader) -> str:
    try:
        return header.compression.name.lower()
    except ValueError:  # codec ids 5-7 are unassigned; decoding the records will fail
        return f"unknown({header.attributes & 0x07})"


def format_record(record: Record, header: RecordBatchHeader) -> str:
    """One record, as ``--deep-iteration --print-data-log`` prints it."""
    delta = record.offset - header.base_offset
    sequence = (
        (header.base_sequence + delta) % (2**31) if header.base_sequence >= 0 else -1
    )
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    header_keys = ",".join(h.key for h in record.headers)
    line = (
        f"| offset: {record.offset} {_timestamp_label(header)}: {record.timestamp} "
        f"keySize: {key_size} valueSize: {value_size} sequence: {sequence} "
        f"headerKeys: [{header_keys}]"
    )
    if header.is_control:
        # A control record's key says what it marks; Kafka prints that, not the bytes.
        return line + _control(record)
    # As Kafka: a null key or value is left out, not printed as "null".
    if record.key is not None:
        line += f" key: {show_bytes(record.key)}"
    if record.value is not None:
        line += f" payload: {show_bytes(record.value)}"
    return line


# Kafka's ControlRecordType ids; 2-6 are the KRaft metadata log's own control records.
_CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


def _control(record: Record) -> str:
    """A control record as kafka-dump-log.sh names it: a transaction marker's outcome
    and coordinator epoch, or the type's name and id for another kind (Kafka also
    decodes the KRaft ones to JSON; we do not)."""
    key = record.key or b""
    if len(key) < 4:
        return " controlType: UNKNOWN(-1)"
    type_id = struct.unpack_from(">h", key, 2)[0]
    name = _CONTROL_TYPES.get(type_id)
    try:
        marker = read_end_txn_marker(record)
    except ValueError:
        return f" controlType: {name or 'UNKNOWN'}({type_id})"
    outcome = "COMMIT" if marker.commit else "ABORT"
    return f" endTxnMarker: {outcome} coordinatorEpoch: {marker.coordinator_epoch}"


def show_bytes(data: bytes | None) -> str:
    """Printable UTF-8 as text, anything else as hex; long ones cut, ending in ``...``."""
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable():
        return text[:_SHOWN_CHARS] + "..." if len(text) > _SHOWN_CHARS else text
    cut = "..." if len(data) > _SHOWN_BYTES else ""
    return "0x" + data[:_SHOWN_BYTES].hex() + cut


def dump_index(path: Path, out: TextIO) -> int:
    """An ``.index`` or ``.timeindex`` file's entries, checked against the segment beside it."""
    kind = _kind(path)
    base = _base_offset(path)
    fd = _open(path)
    try:
        data = os.pread(fd, os.fstat(fd).st_size, 0)
    finally:
        os.close(fd)
    is_time = kind == TIME_INDEX_SUFFIX
    entry = TimeIndex.ENTRY if is_time else OffsetIndex.ENTRY
    print(f"Dumping {path}", file=out)
    entries: list[tuple[int, int]] = []
    whole = len(data) - len(data) % entry.size
    # Read the raw entries rather than open an OffsetIndex: that rejects the very
    # damage (a torn entry, entries out of order) a dump should show.
    for i, (first, second) in enumerate(entry.iter_unpack(data[:whole])):
        relative_offset = second if is_time else first
        if i > 0 and relative_offset == 0:
            # Kafka preallocates an active segment's index (segment.index.bytes of
            # zeros) and trims it only when the segment rolls or the broker stops, so
            # a running or crashed Kafka's index ends at its first entry back at the
            # base offset; kafka-dump-log stops there too.
            break
        if is_time:
            entries.append((first, base + second))
            print(f"timestamp: {first} offset: {base + second}", file=out)
        else:
            entries.append((base + first, second))
            print(f"offset: {base + first} position: {second}", file=out)
    problems = []
    if whole != len(data):  # a torn last write
        problems.append(f"{len(data) - whole} trailing bytes are not a whole entry")
    log_path = path.with_name(path.name.replace(kind, LOG_SUFFIX, 1))
    if log_path.exists():
        problems += _index_mismatches(log_path, entries, is_time)
    else:
        print(f"(no {log_path.name} beside it: entries not checked)", file=out)
    if problems:
        print(f"Mismatches in {path}:", file=out)
        for problem in problems:
            print(f"  {problem}", file=out)
        return 1
    return 0


def _index_mismatches(
    log_path: Path, entries: list[tuple[int, int]], is_time: bool
) -> list[str]:
    """Kafka's index sanity check, in this log's terms.

    An offset index entry is (a batch's last offset, that batch's position), so the batch
    at the position must end at the offset. A time index entry is (a max timestamp so far,
    an offset in the batch that has it).
    """
    problems = []
    batches: list[tuple[int, RecordBatchHeader]] = []
    fd = _open(log_path)
    try:
        # Entries before a corrupt batch can still be checked; those after it point at
        # nothing recovery would keep.
        batches.extend(scan_batches(fd, 0, os.fstat(fd).st_size, verify_crc=False))
    except CorruptRecordError as e:
        problems.append(f"{log_path.name} is corrupt: {e}")
    finally:
        os.close(fd)
    by_position = dict(batches)
    last_offsets = [header.last_offset for _, header in batches]
    previous: tuple[int, int] | None = None
    for key, value in entries:
        if previous is not None and (key <= previous[0] or value < previous[1]):
            problems.append(
                f"entry {key} {value} does not increase on {previous[0]} {previous[1]}"
            )
        previous = key, value
        if is_time:
            i = bisect.bisect_left(last_offsets, value)
            holder = batches[i][1] if i < len(batches) else None
            if holder is None or holder.base_offset > value:
                problems.append(
                    f"timestamp: {key} offset: {value}: no batch holds the offset"
                )
            elif holder.max_timestamp != key:
                problems.append(
                    f"timestamp: {key} offset: {value}: the batch holding it has "
                    f"maxTimestamp {holder.max_timestamp}"
                )
        else:
            header = by_position.get(value)
            if header is None:
                problems.append(
                    f"offset: {key} position: {value}: no batch starts there"
                )
            elif header.last_offset != key:
                problems.append(
                    f"offset: {key} position: {value}: the batch there ends at offset "
                    f"{header.last_offset}"
                )
    return problems


# --- verify -----------------------------------------------------------------------------


@attrs.frozen
class Problem(Exception):
    """The first thing wrong with a log: where it is and what it is."""

    file: Path
    position: int
    base_offset: int | None
    what: str

    def __str__(self) -> str:
        base = "?" if self.base_offset is None else self.base_offset
        return f"CORRUPT: {self.file} position {self.position} baseOffset {base}: {self.what}"


@attrs.define
class Totals:
    batches: int = 0
    records: int = 0
    bytes: int = 0
    segments: int = 0


def verify(path: Path, out: TextIO) -> int:
    """Check every batch of PATH; print ``OK: ...`` and return 0, or the problem and 1."""
    totals = Totals()
    try:
        for logs in _partitions(path):
            # the previous segment and its next offset
            ended: tuple[Path, int] | None = None
            for log_path in logs:
                base = _base_offset(log_path)
                if ended is not None and base < ended[1]:
                    raise Problem(
                        log_path,
                        0,
                        base,
                        f"segment starts at offset {base}, but {ended[0].name} before it "
                        f"holds offsets up to {ended[1] - 1}: the segments overlap",
                    )
                ended = log_path, verify_segment(log_path, totals)
    except Problem as problem:
        print(problem, file=out)
        return 1
    print(
        f"OK: {totals.batches} batches, {totals.records} records, {totals.bytes} bytes "
        f"in {totals.segments} segments",
        file=out,
    )
    return 0


def verify_segment(path: Path, totals: Totals) -> int:
    """Check one segment, adding to ``totals``; returns the offset after its last batch.

    Raises :class:`Problem` at the first batch log recovery would cut (torn, bad length,
    magic or CRC, offsets going backwards) or whose records do not decode.
    """
    base = _base_offset(path)
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
        expected = base  # the smallest base offset the next batch may have
        try:
            # The header path with its CRC: what the broker checks before an append.
            for position, header in scan_batches(fd, 0, size, verify_crc=True):
                what = _offset_problem(header, base, expected)
                if what is not None:
                    raise Problem(path, position, header.base_offset, what)
                # The CRC matched, but the producer may still have sent records that do
                # not decode (a bad compressed stream): a consumer would fail on them.
                records = _decode(os.pread(fd, header.size, position), header, position)
                previous = header.base_offset - 1
                for record in records:
                    if not previous < record.offset <= header.last_offset:
                        raise Problem(
                            path,
                            position,
                            header.base_offset,
                            f"record offset {record.offset} is not after {previous} and "
                            f"within the batch's lastOffset {header.last_offset}",
                        )
                    previous = record.offset
                totals.batches += 1
                totals.records += len(records)
                expected = header.next_offset
        except CorruptRecordError as e:
            raise Problem(
                path, e.position, _read_base_offset(fd, e.position), str(e)
            ) from None
        totals.bytes += size
        totals.segments += 1
        return expected
    finally:
        os.close(fd)


def _offset_problem(header: RecordBatchHeader, base: int, expected: int) -> str | None:
    if header.last_offset_delta < 0:
        return f"lastOffsetDelta {header.last_offset_delta} is negative"
    if header.base_offset < expected:
        after = (
            "the segment's base offset" if expected == base else "the previous batch"
        )
        return f"baseOffset {header.base_offset} is below {expected}, where {after} says to start"
    if header.last_offset - base > MAX_RELATIVE_OFFSET:
        return (
            f"lastOffset {header.last_offset} is too far from the segment base {base}"
        )
    # Compaction may leave fewer records than offsets, never more.
    if not 0 <= header.record_count <= header.last_offset_delta + 1:
        return (
            f"recordCount {header.record_count} does not fit offsets "
            f"{header.base_offset}..{header.last_offset}"
        )
    return None
