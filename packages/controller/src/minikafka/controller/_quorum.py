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

One operation's records may be many (creating 100,000 partitions is ~4 MB of them):
they are split into batches of at most ``MAX_BATCH_SIZE_BYTES`` (Kafka's Raft client caps
a batch at 8 MiB), appended one after the other, and committed together: the fsync that
commits stops only at the end of a whole operation, and an append that fails part-way
truncates the log back to where the operation began. What the disk refuses becomes a
``MetadataLogError`` saying whether the log is still trustworthy.

Snapshots (``<end offset>-<epoch>.checkpoint``, Kafka's names) hold the image as records
in ordinary record batches. Start-up loads the newest snapshot and replays only the log
after it; once a snapshot is written, the log before it may be deleted.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.log import (
    CorruptRecordError,
    KafkaStorageError,
    Log,
    LogConfig,
    Record,
    build_batch,
    iter_decoded_batches,
    whole_batches,
)

# Raft's own, one of each: the quorum's refusal to append and a snapshot's identity.
from minikafka.raft import NotLeaderError as NotLeaderError
from minikafka.raft import SnapshotId as SnapshotId
from minikafka.trace import NullTracer, Tracer

from ._events import QuorumLeaderElected
from ._records import METADATA_TOPIC, MetadataRecord, decode_record, encode_record

METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
QUORUM_STATE_FILE = "quorum-state"
_READ_CHUNK = 1 << 20
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
"""The largest batch the quorum writes (Kafka's ``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``)."""
# What a v2 record adds around its value at most, with no key and no headers: length,
# attributes, timestamp delta, offset delta, key length, value length, header count.
_RECORD_OVERHEAD = 32
_BATCH_OVERHEAD = 61

_logger = logging.getLogger(__name__)


class MetadataLogError(ApiError):
    """The metadata log refused an append (or an fsync); ``error_code`` is the answer.

    ``fatal`` is False when the log is exactly as before the append (a full disk, whose
    write was undone): the controller fails the request and goes on. True when the log
    cannot be trusted (an fsync failed, or undoing the append failed): the controller
    must stop being active until the process restarts.
    """

    def __init__(self, message: str, *, error_code: ErrorCode, fatal: bool) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.fatal = fatal


@attrs.frozen
class MetadataBatch:
    """Committed records, each with its offset."""

    records: tuple[tuple[int, MetadataRecord], ...]

    @property
    def last_offset(self) -> int:
        return self.records[-1][0]


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


def encode_snapshot(records: Sequence[MetadataRecord]) -> bytes:
    """A snapshot file's bytes: the image's records in one batch from offset 0 (an empty
    image is an empty file)."""
    return bytes(_encode_batch(records, 0, 0)) if records else b""


def _encode_batch(
    records: Sequence[MetadataRecord], base_offset: int, epoch: int
) -> bytearray:
    return _build(list(map(encode_record, records)), base_offset, epoch)


def _build(values: Sequence[bytes], base_offset: int, epoch: int) -> bytearray:
    records = [
        Record(base_offset + i, 0, None, value) for i, value in enumerate(values)
    ]
    return bytearray(build_batch(records, partition_leader_epoch=epoch))


def split_into_batches(
    values: Sequence[bytes], max_batch_bytes: int = MAX_BATCH_SIZE_BYTES
) -> list[list[bytes]]:
    """Encoded records grouped, in order, into batches of at most ``max_batch_bytes``.

    A record too large for any batch gets one of its own (the log refuses it).
    """
    batches: list[list[bytes]] = []
    current: list[bytes] = []
    size = _BATCH_OVERHEAD
    for value in values:
        record_size = len(value) + _RECORD_OVERHEAD
        if current and size + record_size > max_batch_bytes:
            batches.append(current)
            current, size = [], _BATCH_OVERHEAD
        current.append(value)
        size += record_size
    if current:
        batches.append(current)
    return batches


def decode_metadata_records(buf: bytes) -> Iterator[tuple[int, MetadataRecord]]:
    """The metadata records in ``buf``, skipping control batches (the LeaderChange a
    Raft leader writes first in its epoch is the quorum's, not the controller's)."""
    for _, header, records in iter_decoded_batches(buf):
        if header.is_control:
            continue
        for record in records:
            if record.value is None:
                raise CorruptRecordError(
                    f"metadata record at offset {record.offset} has no value"
                )
            yield record.offset, decode_record(record.value)


def last_offset_in(buf: bytes) -> int:
    """The offset of the last record of the whole batches in ``buf`` (-1 if none),
    control batches included: how far a reader of ``buf`` has come."""
    last = -1
    for _, header, _ in iter_decoded_batches(buf, verify_crc=False):
        last = header.last_offset
    return last


def latest_snapshot_id(path: Path) -> SnapshotId | None:
    """The snapshot in partition directory ``path`` with the highest end offset."""
    ids = [SnapshotId.parse(p.name) for p in path.iterdir()]
    return max(
        (i for i in ids if i is not None), key=lambda i: i.end_offset, default=None
    )


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
    appended_end: int = attrs.field(
        default=attrs.Factory(lambda self: self.log.log_end_offset, takes_self=True)
    )
    """The end of the last whole operation appended: what an fsync may commit up to."""

    @classmethod
    def open(
        cls, metadata_dir: Path, node_id: int, tracer: Tracer | None = None
    ) -> SingleVoterQuorum:
        """Open the metadata log and win this start's election; ``tracer`` (the node's)
        gets the election and the metadata log's own events."""
        tracer = NullTracer(node_id) if tracer is None else tracer
        path = Path(metadata_dir) / METADATA_PARTITION_DIR
        path.mkdir(parents=True, exist_ok=True)
        # The metadata log is never trimmed by time or size, only after a snapshot.
        # Its batches are the quorum's own, up to 8 MiB (Kafka's KafkaMetadataLog sets
        # max.message.bytes to the same figure).
        config = LogConfig(
            retention_ms=-1, retention_bytes=-1, max_message_bytes=MAX_BATCH_SIZE_BYTES
        )
        state = cls._read_state(path)
        snapshot = latest_snapshot_id(path)
        start = snapshot.end_offset if snapshot else 0
        log = Log.open(
            path, config, log_start_offset=start, recovery_point=0, tracer=tracer
        )
        if log.log_end_offset < start:  # the log was lost behind the snapshot
            log.truncate_fully_and_start_at(start)
        # Winning the election: a new epoch, durable before anything is written in it.
        epoch = (
            max(state.get("leaderEpoch", 0), log.leader_epoch_cache.latest_epoch or 0)
            + 1
        )
        quorum = cls(path, node_id, log, epoch)
        quorum._write_state()
        if tracer.enabled:
            tracer.emit(QuorumLeaderElected(node_id, epoch))
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
            raise CorruptRecordError(
                f"{path / QUORUM_STATE_FILE} is unreadable: {exc}"
            ) from exc
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
        """Append one operation's records, in as many batches as they need, or none of them.

        Raises MetadataLogError if the log refused any batch (see its ``fatal``).
        """
        if epoch != self.epoch:
            raise NotLeaderError(
                f"append in epoch {epoch}; the quorum is in epoch {self.epoch}"
            )
        start = self.log.log_end_offset
        try:
            encoded = [encode_record(r) for r in records]
            for values in split_into_batches(encoded, MAX_BATCH_SIZE_BYTES):
                self.log.append_as_leader(
                    _build(values, self.log.log_end_offset, epoch), epoch
                )
        except Exception as exc:
            raise self._undo_append(start, exc) from exc
        # Only now may a commit cover these records: an fsync running in a worker thread
        # reads this, never the log end, which passes through each batch of the operation.
        self.appended_end = self.log.log_end_offset
        return self.appended_end - 1

    def _undo_append(self, start: int, exc: Exception) -> MetadataLogError:
        """Truncate back to ``start`` after a failed append; the error to raise."""
        undone = True
        if self.log.log_end_offset > start:
            try:
                self.log.truncate_to(start)
            except OSError:
                undone = False
        clean = isinstance(exc, KafkaStorageError) and not exc.offline
        # a batch the log refused (too large...): a bug
        if not isinstance(exc, OSError):
            code, fatal = ErrorCode.unknown_server_error, not undone
        else:
            code, fatal = ErrorCode.kafka_storage_error, not (undone and clean)
        message = f"appending to the metadata log in {self.dir} failed: {exc}"
        return MetadataLogError(message, error_code=code, fatal=fatal)

    def fsync(self) -> int:
        """fsync the log to the end of the last whole operation (safe off the event loop).

        Returns the offset covered; raises MetadataLogError (fatal) if the fsync failed.
        """
        end = self.appended_end
        try:
            self.log.fsync_up_to(end)
        except OSError as exc:
            raise MetadataLogError(
                f"fsync of the metadata log in {self.dir} failed: {exc}",
                error_code=ErrorCode.kafka_storage_error,
                fatal=True,
            ) from exc
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
            data = whole_batches(fetched.records.read_bytes())
            records = [(o, r) for o, r in decode_metadata_records(data) if o >= offset]
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

    def write_snapshot(
        self, end_offset: int, records: Sequence[MetadataRecord]
    ) -> SnapshotId:
        """Write a snapshot of everything below ``end_offset`` (safe off the event loop).

        Written under a temporary name, fsynced, then renamed: a crash leaves either no
        snapshot or a whole one, never half of one.
        """
        snapshot = SnapshotId(end_offset, self.epoch)
        tmp = self.dir / (snapshot.file_name + ".part")
        try:
            with open(tmp, "wb") as out:
                if records:
                    out.write(_encode_batch(records, 0, self.epoch))
                out.flush()
                os.fsync(out.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk: give the space back, try later
            raise
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

    def close(self, *, commit: bool = True) -> None:
        """Commit what was appended and close the log; ``commit=False`` after the log
        failed: nothing more is written, and the next start recovers and commits it."""
        try:
            if commit:
                self.commit()
        except MetadataLogError as exc:
            _logger.error("%s; the next start recovers the metadata log", exc)
        finally:
            self.log.close()
