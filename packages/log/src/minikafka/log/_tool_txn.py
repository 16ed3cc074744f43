"""``kafka-dump-log.sh`` for the transaction files of a partition (KIP-98): a segment's
``.txnindex`` (aborted transactions) and a ``.snapshot`` (the producers' state).

Kafka's ``DumpLogSegments`` prints one line per aborted transaction and one per
producer, and so does this, field for field: ``version producerId firstOffset
lastOffset lastStableOffset`` for an index entry; for a snapshot entry the producer,
its epochs, its open transaction (Java's ``OptionalLong`` as Kafka prints it) and its
last batch, whose first sequence is its last less the offset delta. The files are read
as bytes, never opened through the log, so that a dump shows damage as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from ._producer_state import MAX_SEQUENCE
from ._snapshot import CorruptSnapshotError, ProducerSnapshotEntry, read_snapshot
from ._txn_index import read_entries

__all__ = ["dump_snapshot", "dump_txn_index"]


def dump_txn_index(path: Path, out: TextIO) -> int:
    """Each aborted transaction of a ``.txnindex``; 1 if the file ends torn."""
    print(f"Dumping {path}", file=out)
    entries, trailing = read_entries(path.read_bytes())
    for version, txn in entries:
        print(
            f"version: {version} producerId: {txn.producer_id} firstOffset: "
            f"{txn.first_offset} lastOffset: {txn.last_offset} lastStableOffset: "
            f"{txn.last_stable_offset}",
            file=out,
        )
    if trailing:
        print(f"{trailing} trailing bytes are not a whole entry", file=out)
        return 1
    return 0


def dump_snapshot(path: Path, out: TextIO) -> int:
    """Each producer of a ``.snapshot``; 1 (and the reason) if it is corrupt."""
    print(f"Dumping {path}", file=out)
    try:
        entries = read_snapshot(path.read_bytes())
    except CorruptSnapshotError as exc:
        print(exc, file=out)
        return 1
    for entry in entries:
        print(format_snapshot_entry(entry), file=out)
    return 0


def format_snapshot_entry(entry: ProducerSnapshotEntry) -> str:
    txn = entry.current_txn_first_offset
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
        f"{f'OptionalLong[{txn}]' if txn >= 0 else 'OptionalLong.empty'} "
        f"lastTimestamp: {entry.timestamp} "
    )
    if entry.last_offset >= 0:  # Kafka keeps a batch only when there is an offset
        first = (entry.last_sequence - entry.offset_delta) % (MAX_SEQUENCE + 1)
        line += (
            f"firstSequence: {first} lastSequence: {entry.last_sequence} "
            f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
            f"timestamp: {entry.timestamp}"
        )
    return line
