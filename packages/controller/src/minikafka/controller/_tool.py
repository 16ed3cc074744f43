"""``replay``: print the image a metadata log holds, without changing a byte of it.

Reads ``<dir>/__cluster_metadata-0`` (or that directory itself): the newest snapshot,
then every batch of every segment after it, in offset order, checking each batch's CRC.
It opens no ``Log`` and writes no ``quorum-state``, so it is safe on a running broker's
directory; a torn batch at the end of the log (a crash mid-write) ends the replay with a
note, which is what recovery would cut at the next start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import attrs

from minikafka.log import CorruptRecordError

from ._image import MetadataDelta, MetadataImage
from ._metadata_log import (
    METADATA_PARTITION_DIR,
    SnapshotId,
    decode_metadata_records,
    latest_snapshot_id,
)
from ._records import MetadataRecordError


class ReplayError(Exception):
    """A directory that holds no metadata log."""


@attrs.frozen
class ReplayResult:
    image: MetadataImage
    records_replayed: int
    snapshot: SnapshotId | None
    stopped_at: str | None  # why the replay ended early, if it did


def _partition_dir(path: Path) -> Path:
    if (path / METADATA_PARTITION_DIR).is_dir():
        return path / METADATA_PARTITION_DIR
    if path.is_dir() and path.name == METADATA_PARTITION_DIR:
        return path
    raise ReplayError(f"{path} holds no {METADATA_PARTITION_DIR} directory")


def replay_metadata_dir(path: Path) -> ReplayResult:
    directory = _partition_dir(path)
    snapshot = latest_snapshot_id(directory)
    delta = MetadataDelta(MetadataImage())
    count = 0
    if snapshot is not None:
        for _, record in decode_metadata_records(
            (directory / snapshot.file_name).read_bytes()
        ):
            delta.replay(record)
        delta.offset = snapshot.end_offset - 1
    stopped_at = None
    for segment in sorted(directory.glob("*.log")):
        try:
            for offset, record in decode_metadata_records(segment.read_bytes()):
                if offset > delta.offset:
                    delta.replay(record, offset)
                    count += 1
        except (CorruptRecordError, MetadataRecordError) as exc:
            stopped_at = f"{segment.name}: {exc}"
            break
    return ReplayResult(delta.apply(), count, snapshot, stopped_at)


def print_replay(path: Path, out: TextIO) -> int:
    result = replay_metadata_dir(path)
    if result.snapshot is not None:
        print(f"snapshot {result.snapshot.file_name}", file=out)
    print(f"replayed {result.records_replayed} records from the log", file=out)
    print(result.image.describe(), file=out)
    if result.stopped_at is not None:
        print(f"stopped early at {result.stopped_at}", file=out)
        return 1
    return 0
