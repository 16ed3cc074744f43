"""The metadata quorum: where controller records become committed (KIP-500, KIP-595, KIP-630).

``MetadataQuorum`` is what the controller and the brokers need from Raft: append records
as the leader, learn how far the log is committed, read committed records, and keep
snapshots of the image so a restart need not replay the whole history. A multi-voter
Raft implements the same protocol later; here the quorum has one voter, this node.

With one voter, "a majority has the record" means "the record is on this node's disk":
an append goes to the ``__cluster_metadata-0`` log through the page cache, and it commits
when an fsync covers it (``commit``). Each start is an election the single voter wins:
the epoch in ``quorum-state`` goes up by one, and everything already in the log is
committed by the first fsync of the new epoch, as a Raft leader commits its predecessors'
entries together with its own first one.

Snapshots (``<end offset>-<epoch>.checkpoint``, Kafka's names) hold the image as records
in ordinary record batches. Start-up loads the newest snapshot and replays only the log
after it; once a snapshot is written, the log before it may be deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from minikafka.log import (
    CorruptRecordError,
    Log,
    LogConfig,
    Record,
    build_batch,
    iter_records,
)
from minikafka.trace import emit

from ._events import QuorumLeaderElected
from ._records import METADATA_TOPIC, MetadataRecord, decode_record, encode_record

METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
QUORUM_STATE_FILE = "quorum-state"
SNAPSHOT_SUFFIX = ".checkpoint"
_READ_CHUNK = 1 << 20


class NotLeaderError(Exception):
    """An append in an epoch that is not the quorum's current one."""


@attrs.frozen
class MetadataBatch:
    """Committed records, each with its offset."""

    records: tuple[tuple[int, MetadataRecord], ...]

    @property
    def last_offset(self) -> int:
        return self.records[-1][0]


@attrs.frozen
class SnapshotId:
    end_offset: int  # the snapshot holds everything below this offset
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SNAPSHOT_SUFFIX}"

    @classmethod
    def parse(cls, name: str) -> SnapshotId | None:
        stem, _, suffix = name.partition(".")
        offset, dash, epoch = stem.partition("-")
        if f".{suffix}" != SNAPSHOT_SUFFIX or not dash or not (offset + epoch).isdigit():
            return None
        return cls(int(offset), int(epoch))


class MetadataQuorum(Protocol):
    """What the controller and brokers use of Raft (Kafka's RaftClient, trimmed)."""

    @property
    def epoch(self) -> int: ...

    @property
    def high_watermark(self) -> int:
        """Offsets below this are committed."""
        ...

    @property
    def log_end_offset(self) -> int: ...

    def append(self, epoch: int, records: Sequence[MetadataRecord]) -> int:
        """Append as the leader of ``epoch``; returns the last record's offset."""
        ...

    def read_committed(self, start_offset: int) -> Iterator[MetadataBatch]: ...

    def latest_snapshot(self) -> tuple[SnapshotId, list[MetadataRecord]] | None: ...


def _encode_batch(records: Sequence[MetadataRecord], base_offset: int, epoch: int) -> bytearray:
    values = [Record(base_offset + i, 0, None, encode_record(r)) for i, r in enumerate(records)]
    return bytearray(build_batch(values, partition_leader_epoch=epoch))


def decode_metadata_records(buf: bytes) -> Iterator[tuple[int, MetadataRecord]]:
    for record in iter_records(buf):
        if record.value is None:
            raise CorruptRecordError(f"metadata record at offset {record.offset} has no value")
        yield record.offset, decode_record(record.value)


def latest_snapshot_id(path: Path) -> SnapshotId | None:
    """The snapshot in partition directory ``path`` with the highest end offset."""
    ids = [SnapshotId.parse(p.name) for p in path.iterdir()]
    return max((i for i in ids if i is not None), key=lambda i: i.end_offset, default=None)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@attrs.define(eq=False)
class SingleVoterQuorum:
    """The one-voter quorum on a log package ``Log`` in ``<metadata dir>/__cluster_metadata-0``."""

    dir: Path
    node_id: int
    log: Log
    epoch: int
    high_watermark: int = 0

    @classmethod
    def open(cls, metadata_dir: Path, node_id: int) -> SingleVoterQuorum:
        path = Path(metadata_dir) / METADATA_PARTITION_DIR
        path.mkdir(parents=True, exist_ok=True)
        # The metadata log is never trimmed by time or size, only after a snapshot.
        config = LogConfig(retention_ms=-1, retention_bytes=-1)
        state = cls._read_state(path)
        snapshot = latest_snapshot_id(path)
        start = snapshot.end_offset if snapshot else 0
        log = Log.open(path, config, log_start_offset=start, recovery_point=0)
        if log.log_end_offset < start:  # the log was lost behind the snapshot
            log.truncate_fully_and_start_at(start)
        # Winning the election: a new epoch, durable before anything is written in it.
        epoch = max(state.get("leaderEpoch", 0), log.leader_epoch_cache.latest_epoch or 0) + 1
        quorum = cls(path, node_id, log, epoch)
        quorum._write_state()
        emit(QuorumLeaderElected(node_id, epoch))
        quorum.commit()  # everything from earlier epochs is committed with this fsync
        return quorum

    # --- quorum-state --------------------------------------------------------------------

    @staticmethod
    def _read_state(path: Path) -> dict[str, int]:
        try:
            data = json.loads((path / QUORUM_STATE_FILE).read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise CorruptRecordError(f"{path / QUORUM_STATE_FILE} is unreadable: {exc}") from exc
        return {k: v for k, v in data.items() if isinstance(v, int)}

    def _write_state(self) -> None:
        state = {
            "clusterId": "",
            "leaderId": self.node_id,
            "leaderEpoch": self.epoch,
            "votedId": self.node_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": self.node_id}],
            "data_version": 0,
        }
        tmp = self.dir / (QUORUM_STATE_FILE + ".tmp")
        with open(tmp, "w") as out:
            json.dump(state, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.dir / QUORUM_STATE_FILE)
        _fsync_dir(self.dir)

    # --- the write path --------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def append(self, epoch: int, records: Sequence[MetadataRecord]) -> int:
        if epoch != self.epoch:
            raise NotLeaderError(f"append in epoch {epoch}; the quorum is in epoch {self.epoch}")
        info = self.log.append_as_leader(
            _encode_batch(records, self.log.log_end_offset, epoch), epoch
        )
        return info.last_offset

    def fsync(self) -> int:
        """fsync the log to its end (safe off the event loop); returns the offset covered."""
        end = self.log.log_end_offset
        self.log.fsync_up_to(end)
        return end

    def mark_committed(self, end: int) -> int:
        """After ``fsync`` returned ``end``: commit everything below it (on the owning thread)."""
        self.log.mark_flushed(end)
        self.high_watermark = max(self.high_watermark, end)
        self.log.update_high_watermark(self.high_watermark)
        return self.high_watermark

    def commit(self) -> int:
        return self.mark_committed(self.fsync())

    # --- the read path ---------------------------------------------------------------------

    def read_committed(self, start_offset: int) -> Iterator[MetadataBatch]:
        offset = max(start_offset, self.log.log_start_offset)
        while offset < self.high_watermark:
            fetched = self.log.read(offset, _READ_CHUNK, max_offset=self.high_watermark)
            if fetched.records is None:
                return
            records = [
                (o, r)
                for o, r in decode_metadata_records(fetched.records.read_bytes())
                if o >= offset
            ]
            if not records:
                return
            yield MetadataBatch(tuple(records))
            offset = records[-1][0] + 1

    # --- snapshots (KIP-630) ---------------------------------------------------------------

    def latest_snapshot(self) -> tuple[SnapshotId, list[MetadataRecord]] | None:
        snapshot = latest_snapshot_id(self.dir)
        if snapshot is None:
            return None
        data = (self.dir / snapshot.file_name).read_bytes()
        return snapshot, [record for _, record in decode_metadata_records(data)]

    def write_snapshot(self, end_offset: int, records: Sequence[MetadataRecord]) -> SnapshotId:
        """Write a snapshot of everything below ``end_offset`` (safe off the event loop).

        Written under a temporary name, fsynced, then renamed: a crash leaves either no
        snapshot or a whole one, never half of one.
        """
        snapshot = SnapshotId(end_offset, self.epoch)
        tmp = self.dir / (snapshot.file_name + ".part")
        with open(tmp, "wb") as out:
            if records:
                out.write(_encode_batch(records, 0, self.epoch))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.dir / snapshot.file_name)
        _fsync_dir(self.dir)
        return snapshot

    def snapshot_written(self, snapshot: SnapshotId) -> None:
        """Drop older snapshots and the log segments the new one makes unnecessary."""
        for path in self.dir.iterdir():
            other = SnapshotId.parse(path.name)
            if other is not None and other.end_offset < snapshot.end_offset:
                path.unlink()
        if self.log.maybe_increment_log_start_offset(snapshot.end_offset, "snapshot"):
            self.log.delete_old_segments()
            self.log.purge_deleted_segments(now=2**62)  # nothing reads those segments

    def close(self) -> None:
        self.commit()
        self.log.close()
