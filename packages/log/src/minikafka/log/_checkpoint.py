"""Kafka's text checkpoint files: small files a broker rewrites whole to remember an offset.

Every checkpoint has the same shape (Kafka's ``CheckpointFile``, server-common)::

    0            <- format version
    2            <- number of entries that follow
    orders 0 42  <- one entry per line, fields separated by spaces
    orders 1 17

Two entry formats exist. ``OffsetCheckpointFile`` (``recovery-point-offset-checkpoint``,
``replication-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint``: one per log directory) holds ``<topic> <partition> <offset>``;
``LeaderEpochCheckpointFile`` (``leader-epoch-checkpoint``: one per partition, KIP-101)
holds ``<epoch> <startOffset>``. Both are one ``CheckpointFile`` with a different
``EntryFormatter``, as in Kafka.

A checkpoint is never edited in place: ``write`` writes ``<path>.tmp``, fsyncs it, renames it
over ``<path>`` and fsyncs the directory (Kafka's ``Utils.atomicMoveWithFallback`` with
``needFlushParentDir``), so a crash leaves either the old file or the new one, never half of
each. A leftover ``.tmp`` is an unfinished write and is never read.

A write that fails (a full disk, no descriptor left: ``ENOSPC``, ``EMFILE``) therefore
leaves the previous checkpoint as it was. It is never silent: the LogManager logs it at
ERROR with the file and the errno and writes again at the next interval; a partition's
``leader-epoch-checkpoint``, written on the append path when an epoch begins, keeps what
it could not write and is retried by the LogManager's recovery-point task.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import attrs

from minikafka.common import TopicPartition

T = TypeVar("T")

_logger = logging.getLogger(__name__)

CURRENT_VERSION = 0
"""Both entry formats are at version 0 (``OffsetCheckpointFile.CURRENT_VERSION``)."""

TMP_SUFFIX = ".tmp"

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Java's Integer.parseInt / Long.parseLong accept an optional sign and decimal digits only;
# Python's int() would also take "1_000" and surrounding spaces.
_DECIMAL = re.compile(r"[+-]?[0-9]+")
# Java's BufferedReader.readLine ends a line at \n, \r or \r\n (str.splitlines knows more).
_LINE_END = re.compile(r"\r\n|\r|\n")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be understood; names the file and, when known, the line.

    Kafka turns the same conditions into an IOException, which takes the log directory
    offline; here the caller decides.
    """

    def __init__(self, path: Path, line_number: int | None, reason: str) -> None:
        where = f"{path}" if line_number is None else f"{path}, line {line_number}"
        super().__init__(f"malformed checkpoint file {where}: {reason}")
        self.path = path
        self.line_number = line_number
        self.reason = reason


def parse_int(text: str, low: int, high: int, what: str) -> int:
    """A decimal integer in ``[low, high]``, or ValueError saying which field was wrong."""
    if not _DECIMAL.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a decimal integer")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside [{low}, {high}]")
    return value


def _check_range(value: int, low: int, high: int, what: str) -> None:
    # Checked on write too, so that every file we write can be read back.
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside [{low}, {high}]")


@attrs.frozen
class EntryFormatter(Generic[T]):
    """How one entry becomes one line and back (Kafka's ``CheckpointFile.EntryFormatter``).

    ``from_line`` raises ValueError for a line it cannot parse; ``CheckpointFile`` adds the
    file name and line number.
    """

    to_line: Callable[[T], str]
    from_line: Callable[[str], T]


@attrs.define(eq=False)
class CheckpointFile(Generic[T]):
    """One checkpoint file: ``read`` all its entries, ``write`` all of them at once."""

    path: Path = attrs.field(converter=Path)
    formatter: EntryFormatter[T]
    version: int = CURRENT_VERSION
    # Kafka serialises read and write on one lock; a write may run on a worker thread
    # (trio.to_thread) while another one starts, and both would write the same .tmp file.
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, repr=False)

    @property
    def tmp_path(self) -> Path:
        return self.path.with_name(self.path.name + TMP_SUFFIX)

    def write(self, entries: Collection[T]) -> None:
        lines = [str(self.version), str(len(entries))]
        lines.extend(self.formatter.to_line(entry) for entry in entries)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        with self._lock:
            try:
                # "w" truncates, so a .tmp left by a crashed write is simply
                # overwritten.
                with open(self.tmp_path, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                # The previous checkpoint is untouched; a half-written .tmp (a full
                # disk) would only take space. The first error is the one to report.
                with contextlib.suppress(OSError):
                    self.tmp_path.unlink(missing_ok=True)
                raise
            # rename(2) replaces the target atomically; fsyncing the directory makes the
            # rename itself durable, otherwise a crash could bring back the old file.
            os.replace(self.tmp_path, self.path)
            _fsync_dir(self.path.parent)

    def read(self) -> list[T]:
        with self._lock:
            try:
                raw = self.path.read_bytes()
            except FileNotFoundError:
                # Kafka creates an empty file when it opens a checkpoint; either way a log
                # directory that has never been checkpointed has nothing in it.
                return []
        return self._parse(raw)

    def _parse(self, raw: bytes) -> list[T]:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line_number = raw[: e.start].count(b"\n") + 1
            raise CheckpointError(self.path, line_number, "not valid UTF-8") from None
        lines = _LINE_END.split(text)
        if lines[-1] == "":
            lines.pop()  # the terminator of the last line, not an empty line
        # Kafka's CheckpointReadBuffer: an empty file, or one with only a version line,
        # reads as no entries; after the count line, every line must be an entry.
        if not lines:
            return []
        version = self._header_int(lines[0], 1, "version")
        if version != self.version:
            raise CheckpointError(
                self.path, 1, f"unrecognised version {version}, expected {self.version}"
            )
        if len(lines) == 1:
            return []
        expected = self._header_int(lines[1], 2, "entry count")
        entries: list[T] = []
        for line_number, line in enumerate(lines[2:], start=3):
            try:
                entries.append(self.formatter.from_line(line))
            except ValueError as e:
                raise CheckpointError(
                    self.path, line_number, f"bad entry {line!r}: {e}"
                ) from None
        if len(entries) != expected:
            raise CheckpointError(
                self.path, 2, f"expected {expected} entries but found {len(entries)}"
            )
        return entries

    def _header_int(self, line: str, line_number: int, what: str) -> int:
        try:
            return parse_int(line, 0, _INT32_MAX, what)
        except ValueError as e:
            raise CheckpointError(self.path, line_number, str(e)) from None


def log_checkpoint_failure(path: Path, exc: OSError) -> None:
    """The one ERROR line a failed checkpoint write gets: the file, the errno, what next."""
    code = exc.errno
    name = errno.errorcode.get(code, "?") if code is not None else "?"
    _logger.error(
        "cannot write checkpoint %s: %s (errno %s %s); the previous checkpoint is kept "
        "and the write is retried at the next interval",
        path,
        exc.strerror or exc,
        code,
        name,
    )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- <topic> <partition> <offset> -----------------------------------------------------


def _offset_to_line(entry: tuple[TopicPartition, int]) -> str:
    tp, offset = entry
    # Kafka's legal topic characters are [a-zA-Z0-9._-]; a space would split the line.
    if not tp.topic or any(c.isspace() for c in tp.topic):
        raise ValueError(f"topic {tp.topic!r} cannot be written to a checkpoint file")
    _check_range(tp.partition, 0, _INT32_MAX, "partition")
    _check_range(offset, _INT64_MIN, _INT64_MAX, "offset")
    return f"{tp.topic} {tp.partition} {offset}"


def _offset_from_line(line: str) -> tuple[TopicPartition, int]:
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(
            f"expected 3 fields <topic> <partition> <offset>, found {len(parts)}"
        )
    partition = parse_int(parts[1], 0, _INT32_MAX, "partition")
    offset = parse_int(parts[2], _INT64_MIN, _INT64_MAX, "offset")
    return TopicPartition(parts[0], partition), offset


OFFSET_FORMATTER: EntryFormatter[tuple[TopicPartition, int]] = EntryFormatter(
    _offset_to_line, _offset_from_line
)


@attrs.define(eq=False)
class OffsetCheckpointFile:
    """A per-log-directory map from partition to offset (Kafka's ``OffsetCheckpointFile``)."""

    path: Path = attrs.field(converter=Path)
    _file: CheckpointFile[tuple[TopicPartition, int]] = attrs.field(
        init=False, repr=False
    )

    @_file.default
    def _open_file(self) -> CheckpointFile[tuple[TopicPartition, int]]:
        return CheckpointFile(self.path, OFFSET_FORMATTER)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        # Sorted so that the file is deterministic and easy to read; Kafka writes HashMap order.
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[TopicPartition, int]:
        # As Kafka's HashMap, a partition listed twice keeps its last offset.
        return dict(self._file.read())


# --- <epoch> <startOffset> ------------------------------------------------------------


@attrs.frozen(order=True)
class EpochEntry:
    """Leader epoch ``epoch`` began at offset ``start_offset`` (Kafka's ``EpochEntry``)."""

    epoch: int
    start_offset: int


def _epoch_to_line(entry: EpochEntry) -> str:
    _check_range(entry.epoch, 0, _INT32_MAX, "epoch")
    _check_range(entry.start_offset, 0, _INT64_MAX, "start offset")
    return f"{entry.epoch} {entry.start_offset}"


def _epoch_from_line(line: str) -> EpochEntry:
    parts = line.split()
    if len(parts) != 2:
        raise ValueError(f"expected 2 fields <epoch> <startOffset>, found {len(parts)}")
    # The cache never holds a negative epoch or offset (LeaderEpochFileCache.assign rejects
    # them), so a negative one in the file is corruption, reported here with its line.
    epoch = parse_int(parts[0], 0, _INT32_MAX, "epoch")
    start_offset = parse_int(parts[1], 0, _INT64_MAX, "start offset")
    return EpochEntry(epoch, start_offset)


EPOCH_FORMATTER: EntryFormatter[EpochEntry] = EntryFormatter(
    _epoch_to_line, _epoch_from_line
)


@attrs.define(eq=False)
class LeaderEpochCheckpointFile:
    """A partition's ``leader-epoch-checkpoint`` (Kafka's ``LeaderEpochCheckpointFile``)."""

    path: Path = attrs.field(converter=Path)
    _file: CheckpointFile[EpochEntry] = attrs.field(init=False, repr=False)
    _pending: list[EpochEntry] | None = attrs.field(
        init=False, default=None, repr=False
    )

    @_file.default
    def _open_file(self) -> CheckpointFile[EpochEntry]:
        return CheckpointFile(self.path, EPOCH_FORMATTER)

    def write(self, entries: Sequence[EpochEntry]) -> None:
        """Write the entries; a failure is logged and kept for :meth:`write_pending`.

        Not raised: the write happens on the append path when an epoch begins, where
        the batch is already in the log, and the cache in memory is right. The file is
        what a restart reads, so the LogManager retries it at its next checkpoint
        interval, and a shutdown with it still unwritten is not a clean one.
        """
        try:
            self._file.write(entries)
        except OSError as exc:
            log_checkpoint_failure(self.path, exc)
            self._pending = list(entries)
        else:
            self._pending = None

    def write_pending(self) -> bool:
        """Retry a failed write; True when the file holds the latest entries."""
        if self._pending is not None:
            self.write(self._pending)
        return self._pending is None

    def read(self) -> list[EpochEntry]:
        return self._file.read()
