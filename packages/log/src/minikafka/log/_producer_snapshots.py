"""The Log's producer-state snapshots: when ``<offset>.snapshot`` files are written,
which one recovery starts from, and when they go (KIP-98; Kafka's
``ProducerStateManager.takeSnapshot``, ``truncateAndReload`` and ``loadFromSnapshot``).

A snapshot (:mod:`._snapshot`, Kafka's format) is the producers' state *as of* its
offset: every batch below it counted, none at or above it. The Log writes one at each
segment roll (as of the new segment's base offset) and at a clean close (as of the log
end). Opening the log then reads the latest snapshot at or below the log end and
replays only the batches after it, instead of every header from the log start.

What a snapshot keeps of a producer is its *last* batch (sequence range, offsets,
timestamp), its coordinator epoch and the first offset of its open transaction; the
in-memory state keeps five batches. So after a restart (or a truncation that reloads
a snapshot), a retry of an older in-flight batch is no longer recognised as a
duplicate: it is answered OUT_OF_ORDER_SEQUENCE_NUMBER, as Kafka answers it, and the
producer handles that. Transactions a marker ended but the high watermark had not yet
passed are not kept either (Kafka's ``unreplicatedTxns`` are not in the file): after
a restart only the replayed markers hold the LSO back.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._events import ProducerStateLoaded
from ._log_txns import replay_segments
from ._names import SNAPSHOT_SUFFIX, offset_from_file_name, segment_file_name
from ._ongoing_txns import OngoingTransactions
from ._producer_state import (
    MAX_SEQUENCE,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from ._snapshot import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    read_snapshot,
    snapshot_bytes,
)

__all__ = [
    "delete_snapshots",
    "load_latest_snapshot",
    "rebuild_producer_state",
    "snapshot_offsets",
    "take_snapshot",
    "write_snapshot",
]

if TYPE_CHECKING:
    from ._log import Log

_logger = logging.getLogger(__name__)


def snapshot_path(dir: Path, offset: int) -> Path:
    return dir / segment_file_name(offset, SNAPSHOT_SUFFIX)


def snapshot_offsets(dir: Path) -> list[int]:
    """The offsets of the snapshots in ``dir``, oldest first (a file not named after
    an offset is not one of them)."""
    offsets = []
    for path in dir.glob(f"*{SNAPSHOT_SUFFIX}"):
        try:
            offsets.append(offset_from_file_name(path.name))
        except ValueError:
            continue
    return sorted(offsets)


def snapshot_entries(
    state: ProducerStateManager, ongoing: OngoingTransactions
) -> list[ProducerSnapshotEntry]:
    """One entry per producer: its last batch, its coordinator epoch and its open
    transaction (Kafka writes the same fields, in the same order, for each)."""
    entries = []
    for producer_id, entry in state.producers.items():
        coordinator_epoch, txn_first_offset = ongoing.snapshot_fields(producer_id)
        last = entry.batch_metadata[-1] if entry.batch_metadata else None
        entries.append(
            ProducerSnapshotEntry(
                producer_id,
                entry.producer_epoch,
                last_sequence=last.last_seq if last else -1,
                last_offset=last.last_offset if last else -1,
                offset_delta=last.last_offset - last.first_offset if last else 0,
                timestamp=entry.last_timestamp,
                coordinator_epoch=coordinator_epoch,
                current_txn_first_offset=txn_first_offset,
            )
        )
    return entries


def write_snapshot(
    dir: Path, offset: int, state: ProducerStateManager, ongoing: OngoingTransactions
) -> None:
    """Write ``<offset>.snapshot`` (replacing one of the same offset).

    Not fsynced, unlike Kafka's at close: a snapshot only shortens the next start, and
    one a crash left torn or empty fails its CRC and is passed over for the one before
    it (or the log start), so durability buys nothing but a millisecond or two per
    partition at every shutdown (seconds for a broker of thousands of partitions).
    """
    data = snapshot_bytes(snapshot_entries(state, ongoing))
    fd = os.open(snapshot_path(dir, offset), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def delete_snapshots(
    dir: Path, *, above: int | None = None, below: int | None = None
) -> None:
    """Remove the snapshots past a truncation (``above``) or older than the first
    segment (``below``)."""
    for offset in snapshot_offsets(dir):
        if (above is not None and offset > above) or (
            below is not None and offset < below
        ):
            snapshot_path(dir, offset).unlink(missing_ok=True)


def load_latest_snapshot(
    dir: Path,
    state: ProducerStateManager,
    ongoing: OngoingTransactions,
    *,
    log_start: int,
    upper_bound: int,
) -> int | None:
    """Load the latest usable snapshot at or below ``upper_bound`` into ``state`` and
    ``ongoing`` (both empty); returns its offset, or None: replay from the log start.

    A corrupt snapshot is deleted with a warning and the one before it tried, as
    Kafka does. One below the log start is not used: the batches from the log start
    say everything (and the producers it names may all have gone with retention).
    """
    for offset in reversed(snapshot_offsets(dir)):
        if offset > upper_bound:
            continue
        if offset < log_start:
            return None
        path = snapshot_path(dir, offset)
        try:
            entries = read_snapshot(path.read_bytes())
        except CorruptSnapshotError as exc:
            _logger.warning("ignoring the corrupt producer snapshot %s: %s", path, exc)
            path.unlink(missing_ok=True)
            continue
        for entry in entries:
            _restore(state, ongoing, entry, log_start)
        if entries:
            # A truncation below the snapshot may remove a batch it counted.
            state.last_producer_offset = offset - 1
        return offset
    return None


def _restore(
    state: ProducerStateManager,
    ongoing: OngoingTransactions,
    saved: ProducerSnapshotEntry,
    log_start: int,
) -> None:
    """One producer back from a snapshot: its last batch only (see the module)."""
    has_batch = saved.last_sequence >= 0
    if (
        has_batch
        and saved.last_offset < log_start
        and saved.current_txn_first_offset < 0
    ):
        return  # every batch of it is gone, as a replay from the log start finds
    entry = ProducerStateEntry(saved.producer_id, saved.producer_epoch)
    if has_batch:
        delta = saved.offset_delta
        entry.batch_metadata.append(
            BatchMetadata(
                (saved.last_sequence - delta) % (MAX_SEQUENCE + 1),
                saved.last_sequence,
                saved.last_offset - delta,
                saved.last_offset,
                saved.timestamp,
            )
        )
    entry.last_timestamp = saved.timestamp
    state.producers[saved.producer_id] = entry
    ongoing.restore(
        saved.producer_id,
        saved.producer_epoch,
        saved.coordinator_epoch,
        saved.current_txn_first_offset,
    )


def rebuild_producer_state(log: Log) -> None:
    """Load the latest producer snapshot at or below the log end and replay the
    batches after it, or from the log start without one.

    Only headers are read, and each marker's one record; ``replayed_batches`` counts
    them. A segment whose ``.txnindex`` is stale (recovery rescanned the segment, or
    the file was damaged) has it rewritten from its markers, as Kafka's
    ``LogSegment.recover`` does: the snapshot used is then at or below its base.
    """
    log.producer_state.clear()
    log.ongoing_txns = OngoingTransactions()
    leo = log.log_end_offset
    stale = [segment for segment in log.segments if segment.txn_index_stale]
    for segment in stale:
        if segment.txn_index is not None:
            segment.txn_index.truncate_to(segment.base_offset)
        segment.txn_index_stale = False
    bound = min(leo, stale[0].base_offset) if stale else leo
    delete_snapshots(log.dir, above=leo)
    snapshot = load_latest_snapshot(
        log.dir,
        log.producer_state,
        log.ongoing_txns,
        log_start=log.log_start_offset,
        upper_bound=bound,
    )
    start = log.replayed_from = log.log_start_offset if snapshot is None else snapshot
    log.replayed_batches = replay_segments(
        log.producer_state,
        log.ongoing_txns,
        log.segments[log.local.segment_index_for(start) :],
        start,
        stale,
    )
    log.ongoing_txns.on_high_watermark(log.high_watermark)
    if log.tracer.enabled:
        tp = log.topic_partition
        event = ProducerStateLoaded(
            tp.topic,
            tp.partition,
            -1 if snapshot is None else snapshot,
            log.replayed_batches,
            leo,
        )
        log.tracer.emit(event, log.clock() / 1000)


def take_snapshot(log: Log, offset: int) -> None:
    """Write the Log's producers as of ``offset`` (at a roll, at close). A failure is
    only logged: it costs a longer replay at the next start, never data (the batches
    are already written)."""
    try:
        write_snapshot(log.dir, offset, log.producer_state, log.ongoing_txns)
    except OSError as exc:
        _logger.warning("no producer snapshot at %d in %s: %s", offset, log.dir, exc)
