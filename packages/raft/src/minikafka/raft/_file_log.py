"""The Raft log on disk: ``__cluster_metadata-0`` as minikafka.log segments (KIP-595's
``KafkaMetadataLog``, KIP-630's snapshot files).

Each unit (the entries appended together: one controller operation) is one record batch
whose partition leader epoch is the entries' epoch, so the log's leader-epoch cache (the
one seed 000's followers truncate with) is also where Raft finds where an epoch ends, and
a batch is never cut: the core truncates only between units (at an epoch's end, the high
watermark or a snapshot), as Kafka's log truncates whole batches. A control entry is a
control batch holding one LeaderChange record (key: version 0, type 2), as Kafka writes
it. ``flush`` is an fsync of the segments; a snapshot is a file
``<end offset>-<epoch>.checkpoint`` written to a temporary name, fsynced and renamed,
after which the log before it is deleted. What the files hold after a process crash is
what the next open finds (the page cache survives the process), so everything found
counts as flushed.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from minikafka.log import Log, LogConfig, whole_batches

from ._batches import decode_entries, unit_batch, units
from ._log import (
    Entry,
    EpochEnd,
    Snapshot,
    SnapshotId,
    check_append,
    epoch_end,
    is_new_snapshot,
    whole_units,
)

_READ_BYTES = 1 << 20


class FileRaftLog:
    """A :class:`~minikafka.raft.RaftLog` in a partition directory."""

    def __init__(self, directory: Path, config: LogConfig | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self._config = config
        self._snapshot = self._load_latest_snapshot()
        start = self._snapshot.id.end_offset if self._snapshot else 0
        self.log = Log.open(directory, config, log_start_offset=start)
        if self.log.log_end_offset < start:
            # The snapshot is newer than anything in the log: the log restarts at its end.
            self.log.truncate_fully_and_start_at(start)
        self._flushed = self.log.log_end_offset

    def close(self) -> None:
        self.log.close()

    def crash(self) -> FileRaftLog:
        """What a restart finds after the machine lost power: the unflushed entries are
        cut off the files (a process crash alone keeps them, in the page cache)."""
        self.log.truncate_to(max(self._flushed, self.start_offset))
        self.log.close()
        return FileRaftLog(self.dir, self._config)

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed

    @property
    def last_epoch(self) -> int:
        latest = self.log.leader_epoch_cache.latest_epoch
        if latest is not None and self.end_offset > self.start_offset:
            return latest
        return self._snapshot.id.epoch if self._snapshot else 0

    def _epoch_starts(self) -> list[tuple[int, int]]:
        """(epoch, first offset) of the epochs that have entries in the log."""
        starts = [
            (e.epoch, max(e.start_offset, self.start_offset))
            for e in self.log.leader_epoch_cache.entries
        ]
        # An epoch whose entries all went into the snapshot is the snapshot's business.
        return [
            (epoch, first)
            for i, (epoch, first) in enumerate(starts)
            if first < (starts[i + 1][1] if i + 1 < len(starts) else self.end_offset)
        ]

    def end_offset_for_epoch(self, epoch: int) -> EpochEnd:
        return epoch_end(self._epoch_starts(), self.end_offset, self._snapshot, epoch)

    def append(self, entries: Sequence[Entry]) -> None:
        for unit in units(entries):
            check_append(self, unit[0])
            for before, entry in itertools.pairwise(unit):
                if (entry.offset, entry.epoch) != (before.offset + 1, before.epoch):
                    raise ValueError(f"{entry} does not follow {before} in one unit")
            self.log.append_as_follower(unit_batch(unit))

    def truncate_to(self, offset: int) -> None:
        if offset < self.start_offset:
            raise ValueError(
                f"cannot truncate to {offset}, below the snapshot at {self.start_offset}"
            )
        self.log.truncate_to(offset)
        self._flushed = min(self._flushed, offset)

    def read(self, start: int, max_entries: int) -> list[Entry]:
        if start < self.start_offset:
            raise ValueError(
                f"offset {start} is below the log start {self.start_offset}"
            )
        entries: list[Entry] = []
        offset = start
        while len(entries) < max_entries and offset < self.end_offset:
            fetched = self.log.read(offset, _READ_BYTES)
            if fetched.records is None:
                break
            found = decode_entries(whole_batches(fetched.records.read_bytes()), offset)
            if not found:
                break
            entries += whole_units(found, max_entries - len(entries))
            offset = entries[-1].offset + 1
        return entries

    def flush(self) -> None:
        self.log.flush()
        self._flushed = self.end_offset

    def fsync_up_to(self, offset: int) -> None:
        """fsync the entries below ``offset`` without saying so yet (safe in a worker
        thread while the owner appends): a shell that flushes the leader's log off its
        event loop, as Kafka's Raft thread flushes apart from its state machine, calls
        :meth:`mark_flushed` once this returned."""
        self.log.fsync_up_to(offset)

    def mark_flushed(self, offset: int) -> None:
        """After :meth:`fsync_up_to` returned (on the owner's thread): the entries below
        ``offset`` are flushed, unless the log was truncated below them since."""
        end = min(offset, self.end_offset)
        if end > self._flushed:
            self.log.mark_flushed(end)
            self._flushed = end

    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def create_snapshot(self, snapshot: Snapshot) -> None:
        if not is_new_snapshot(self, snapshot):
            return
        self.write_snapshot_file(snapshot)
        self.snapshot_written(snapshot)

    def snapshot_written(self, snapshot: Snapshot) -> None:
        """After :meth:`write_snapshot_file` (on the owner's thread): the snapshot is the
        latest, and the log below it goes; unless a newer one came meanwhile (then its
        file goes)."""
        end, latest = snapshot.id.end_offset, self._snapshot
        if end < self.start_offset or (
            latest is not None and end <= latest.id.end_offset
        ):
            if latest is None or latest.id != snapshot.id:
                (self.dir / snapshot.id.file_name).unlink(missing_ok=True)
            return
        self._swap_snapshot(snapshot)
        # The Log moves its start only below its high watermark; a snapshot holds only
        # committed entries, so the Raft high watermark is at least its end.
        self.log.maybe_increment_high_watermark(end)
        self.log.maybe_increment_log_start_offset(end, "snapshot")
        self.log.delete_old_segments()

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self.write_snapshot_file(snapshot)
        self._swap_snapshot(snapshot)
        self.log.truncate_fully_and_start_at(snapshot.id.end_offset)
        self._flushed = snapshot.id.end_offset

    def write_snapshot_file(self, snapshot: Snapshot) -> None:
        """Write ``snapshot``'s file durably: to a temporary name, fsynced, renamed, the
        directory fsynced. Only files: safe in a worker thread while the owner goes on
        (a shell that keeps fsyncs off its event loop calls :meth:`snapshot_written`
        once this returned)."""
        path = self.dir / snapshot.id.file_name
        partial = path.with_name(path.name + ".part")
        with open(partial, "wb") as f:
            f.write(snapshot.payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _swap_snapshot(self, snapshot: Snapshot) -> None:
        old = self._snapshot
        self._snapshot = snapshot
        if old is not None and old.id != snapshot.id:
            (self.dir / old.id.file_name).unlink(missing_ok=True)

    def _load_latest_snapshot(self) -> Snapshot | None:
        found = [
            (snapshot_id, path)
            for path in self.dir.iterdir()
            if (snapshot_id := SnapshotId.parse(path.name)) is not None
        ]
        if not found:
            return None
        snapshot_id, path = max(found, key=lambda f: f[0].end_offset)
        return Snapshot(snapshot_id, path.read_bytes())
