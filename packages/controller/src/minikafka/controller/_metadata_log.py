"""The metadata log: what ``__cluster_metadata-0`` holds and how it is read (KIP-500,
KIP-595, KIP-630).

``MetadataQuorum`` is what the controller and the brokers need from Raft: append records
as the leader, learn how far the log is committed, read committed records, and keep
snapshots of the image so a restart need not replay the whole history. There is one
metadata quorum, :class:`~minikafka.controller.RaftNodeShell` (a ``minikafka.raft`` node
on a ``FileRaftLog``), of one voter or several; what it, the broker's copy
(``MetadataObserver``) and the offline replay share is here: how the log is configured,
how records and snapshots are encoded, and how committed records are read back.

One operation's records are one unit of the Raft log, one batch of at most
``MAX_BATCH_SIZE_BYTES`` (Kafka's Raft client caps a batch at 8 MiB), committed whole or
not at all: an operation that would not fit one is refused with
``RecordBatchTooLargeError`` (RECORD_LIST_TOO_LARGE), as Kafka's atomic append refuses it.

Snapshots (``<end offset>-<epoch>.checkpoint``, Kafka's names) hold the image as records
in ordinary record batches. Start-up loads the newest snapshot and replays only the log
after it; once a snapshot is written, the log before it may be deleted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.log import (
    CorruptRecordError,
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

from ._records import METADATA_TOPIC, MetadataRecord, decode_record, encode_record

METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
_READ_CHUNK = 1 << 20
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
"""The largest batch the quorum writes (Kafka's ``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``)."""
METADATA_LOG_CONFIG = LogConfig(
    retention_ms=-1, retention_bytes=-1, max_message_bytes=MAX_BATCH_SIZE_BYTES
)
"""How every copy of the metadata log is opened: never trimmed by time or size, only
below a snapshot, and its batches are the quorum's own, up to 8 MiB (Kafka's
``KafkaMetadataLog`` sets ``max.message.bytes`` to the same figure)."""
# What a v2 record adds around its value at most, with no key and no headers: length,
# attributes, timestamp delta, offset delta, key length, value length, header count.
_RECORD_OVERHEAD = 32
_BATCH_OVERHEAD = 61


class RecordBatchTooLargeError(ApiError):
    """One operation's records would not fit one batch of the metadata log, the unit a
    Raft quorum commits whole (Kafka's ``RecordBatchTooLargeException`` from its Raft
    client's atomic append): the request fails, the controller goes on."""

    error_code = ErrorCode.record_list_too_large


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

    @property
    def log(self) -> Log:
        """The ``__cluster_metadata-0`` log."""
        ...

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


def read_committed(
    log: Log, start_offset: int, high_watermark: int
) -> Iterator[MetadataBatch]:
    """The metadata records of ``log`` from ``start_offset`` below ``high_watermark``, a
    batch at a time (control batches left out)."""
    offset = max(start_offset, log.log_start_offset)
    while offset < high_watermark:
        fetched = log.read(offset, _READ_CHUNK, max_offset=high_watermark)
        if fetched.records is None:
            return
        data = whole_batches(fetched.records.read_bytes())
        records = [(o, r) for o, r in decode_metadata_records(data) if o >= offset]
        if not records:
            return
        yield MetadataBatch(tuple(records))
        offset = records[-1][0] + 1


def latest_snapshot_id(path: Path) -> SnapshotId | None:
    """The snapshot in partition directory ``path`` with the highest end offset."""
    ids = [SnapshotId.parse(p.name) for p in path.iterdir()]
    return max(
        (i for i in ids if i is not None), key=lambda i: i.end_offset, default=None
    )
