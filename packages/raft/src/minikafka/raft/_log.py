"""The replicated log as the Raft core sees it (KIP-595's log, KIP-630's snapshots).

Kafka's ``ReplicatedLog`` is the interface between ``KafkaRaftClient`` and the disk: append
as leader or follower, truncate, find where an epoch ends, read, flush, and keep snapshots
below which the log may be deleted. The core calls it synchronously, as Kafka's Raft
client does; what makes it testable is that a log is a value the core is given, and the
simulator gives it :class:`MemoryLog`, whose ``crash`` keeps exactly what was flushed.

A Raft log entry has an offset, the epoch of the leader that wrote it, and a payload the
core never looks inside (the controller's records). Entries appended together are one
*unit* (Kafka's record batch: one controller operation's records), which the log never
splits: a read that reaches into a unit returns the rest of it too, so a follower's log
ends, and the high watermark moves, only between units, and an operation commits whole
or not at all. Epochs never go down along the log,
so "where does epoch E end" (``end_offset_for_epoch``) is a search over the first
offset of each epoch: the leader-epoch cache of seed 000, again.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Protocol

import attrs

SNAPSHOT_SUFFIX = ".checkpoint"


@attrs.frozen
class Entry:
    """One record of the replicated log. A ``control`` entry is the quorum's own (the
    LeaderChange record a new leader writes first); the state machine never sees it."""

    offset: int
    epoch: int
    data: bytes
    control: bool = False
    continued: bool = False
    """More entries of the same unit follow (the last entry of a unit says False)."""


@attrs.frozen(order=True)
class SnapshotId:
    """A snapshot holds the state after every entry below ``end_offset``; ``epoch`` is
    the epoch of the last entry it covers (Kafka's ``OffsetAndEpoch``)."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        """The snapshot's file beside the log (Kafka's ``<offset>-<epoch>.checkpoint``)."""
        return f"{self.end_offset:020d}-{self.epoch:010d}{SNAPSHOT_SUFFIX}"

    @classmethod
    def parse(cls, name: str) -> SnapshotId | None:
        """The id a snapshot's file name says, or None if ``name`` is not one."""
        stem, dot, suffix = name.partition(".")
        offset, dash, epoch = stem.partition("-")
        if (
            f"{dot}{suffix}" != SNAPSHOT_SUFFIX
            or not dash
            or not (offset + epoch).isdigit()
        ):
            return None
        return cls(int(offset), int(epoch))


@attrs.frozen
class Snapshot:
    """A snapshot's identity and its bytes (the state machine's, opaque to the core)."""

    id: SnapshotId
    payload: bytes


@attrs.frozen
class EpochEnd:
    """Where ``epoch`` ends in a log: ``end_offset`` is the first offset after it.

    Asked about an epoch it does not have, a log answers the largest epoch below it and
    where that one ends: the offset up to which the two logs can agree."""

    epoch: int
    end_offset: int


class RaftLog(Protocol):
    """What the Raft core asks of its log."""

    @property
    def start_offset(self) -> int:
        """The first offset still in the log (the latest snapshot's end, or 0)."""
        ...

    @property
    def end_offset(self) -> int:
        """The offset the next entry gets (the log end offset, LEO)."""
        ...

    @property
    def flushed_end_offset(self) -> int:
        """Everything below this survives a crash."""
        ...

    @property
    def last_epoch(self) -> int:
        """The epoch of the last entry (or of the snapshot, for an empty log); 0 if none."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> EpochEnd: ...

    def append(self, entries: Sequence[Entry]) -> None:
        """Append at the end; the first entry's offset must be ``end_offset``."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at ``offset`` and after."""
        ...

    def read(self, start: int, max_entries: int) -> list[Entry]:
        """About ``max_entries`` from ``start``: more if the last one read is
        ``continued``, up to the end of its unit (:func:`whole_units`)."""
        ...

    def flush(self) -> None:
        """Make every entry durable (fsync)."""
        ...

    def latest_snapshot(self) -> Snapshot | None: ...

    def create_snapshot(self, snapshot: Snapshot) -> None:
        """Keep a snapshot of the committed state and delete the log below it."""
        ...

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the whole log by a snapshot fetched from the leader."""
        ...


def epoch_end(
    epoch_starts: Sequence[tuple[int, int]],
    end_offset: int,
    snapshot: Snapshot | None,
    epoch: int,
) -> EpochEnd:
    """Where ``epoch`` ends in a log whose epochs start at ``epoch_starts`` (ascending
    ``(epoch, first offset)`` pairs of the entries it still holds) and which ends at
    ``end_offset``: the largest epoch at most ``epoch``, and the first offset after it.
    Older than every entry, only the snapshot can answer; if it cannot either, the answer
    is (-1, -1), "below what this log can tell"."""
    epochs = [e for e, _ in epoch_starts]
    i = bisect.bisect_right(epochs, epoch)  # epoch_starts[:i] have epochs <= epoch
    if i == 0:
        if snapshot is None:
            return EpochEnd(0, 0)
        if snapshot.id.epoch <= epoch:
            return EpochEnd(snapshot.id.epoch, snapshot.id.end_offset)
        return EpochEnd(-1, -1)
    end = epoch_starts[i][1] if i < len(epochs) else end_offset
    return EpochEnd(epochs[i - 1], end)


def whole_units(entries: Sequence[Entry], max_entries: int) -> list[Entry]:
    """The first ``max_entries`` of ``entries`` and, if the last of them is
    ``continued``, the rest of its unit: a read never ends inside a unit."""
    end = min(max_entries, len(entries))
    while 0 < end < len(entries) and entries[end - 1].continued:
        end += 1
    return list(entries[:end])


def check_append(log: RaftLog, entry: Entry) -> None:
    """An entry may only continue the log, in an epoch no older than its last one."""
    if entry.offset != log.end_offset:
        raise ValueError(f"entry at {entry.offset}, the log ends at {log.end_offset}")
    if entry.epoch < log.last_epoch:
        raise ValueError(f"epoch {entry.epoch} after epoch {log.last_epoch}")


def is_new_snapshot(log: RaftLog, snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is newer than the log's; raises if it covers entries the log
    does not have on disk (a snapshot holds only committed, flushed state)."""
    end = snapshot.id.end_offset
    if not log.start_offset <= end <= log.flushed_end_offset:
        raise ValueError(
            f"a snapshot at {end} outside the flushed log [{log.start_offset}, "
            f"{log.flushed_end_offset})"
        )
    latest = log.latest_snapshot()
    return latest is None or end > latest.id.end_offset


class MemoryLog:
    """A :class:`RaftLog` in memory that knows what a crash would keep.

    ``_entries`` holds the log from ``start_offset``; ``_epoch_starts`` is the leader-epoch
    cache (the first offset of each epoch, ascending). Snapshots are durable at once, as
    Kafka writes a snapshot to a file, fsyncs it and only then renames it into place.
    """

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._start = 0
        self._flushed = 0
        self._epoch_starts: list[tuple[int, int]] = []  # (epoch, first offset)
        self._snapshot: Snapshot | None = None

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._start + len(self._entries)

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed

    @property
    def last_epoch(self) -> int:
        if self._entries:
            return self._entries[-1].epoch
        return self._snapshot.id.epoch if self._snapshot else 0

    def end_offset_for_epoch(self, epoch: int) -> EpochEnd:
        return epoch_end(self._epoch_starts, self.end_offset, self._snapshot, epoch)

    def append(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            check_append(self, entry)
            if not self._epoch_starts or self._epoch_starts[-1][0] != entry.epoch:
                self._epoch_starts.append((entry.epoch, entry.offset))
            self._entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        if offset < self._start:
            raise ValueError(
                f"cannot truncate to {offset}, below the snapshot at {self._start}"
            )
        del self._entries[offset - self._start :]
        while self._epoch_starts and self._epoch_starts[-1][1] >= offset:
            self._epoch_starts.pop()
        self._flushed = min(self._flushed, offset)

    def read(self, start: int, max_entries: int) -> list[Entry]:
        if start < self._start:
            raise ValueError(f"offset {start} is below the log start {self._start}")
        return whole_units(self._entries[start - self._start :], max_entries)

    def flush(self) -> None:
        self._flushed = self.end_offset

    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def create_snapshot(self, snapshot: Snapshot) -> None:
        if not is_new_snapshot(self, snapshot):
            return  # it has one as recent already
        end = snapshot.id.end_offset
        del self._entries[: end - self._start]
        self._start = end
        self._epoch_starts = []
        for entry in self._entries:
            if not self._epoch_starts or self._epoch_starts[-1][0] != entry.epoch:
                self._epoch_starts.append((entry.epoch, entry.offset))
        self._snapshot = snapshot

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self._entries = []
        self._epoch_starts = []
        self._start = self._flushed = snapshot.id.end_offset
        self._snapshot = snapshot

    def crash(self) -> MemoryLog:
        """What a restarted node finds: the flushed entries and the snapshot."""
        survivor = MemoryLog()
        survivor._start = self._start
        survivor._snapshot = self._snapshot
        survivor.append(self._entries[: self._flushed - self._start])
        survivor._flushed = survivor.end_offset
        return survivor
