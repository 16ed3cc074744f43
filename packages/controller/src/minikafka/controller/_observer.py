"""A broker's copy of the metadata log: the observer's half of KIP-595's Fetch.

A broker that is not a controller keeps its own ``__cluster_metadata-0`` (in
``metadata.log.dir``) and fills it by fetching from the quorum's leader, as a follower
fills a partition: it asks from its log end, naming the epoch of its last record, and
appends what comes back with the leader's offsets and epochs. It never votes; the
leader's high watermark tells it what is committed, and only committed records are
handed out to be replayed into the broker's MetadataImage (the single node's path, fed remotely).

What the leader may answer instead (:mod:`._metadata_fetch`): a diverging epoch, and the
observer truncates its uncommitted tail (Kafka's ``truncateToEndOffset``); or a snapshot
id, and the observer loads that snapshot (FetchSnapshot) and starts its log at the
snapshot's end, replaying the image from nothing.

The copy is not fsynced: it holds nothing the leader cannot send again, and a restart
recovers its log (the unflushed tail is checked like any other log's), loads its latest
snapshot, and replays the log only once the leader's high watermark is known again.

A core in the house style: each call takes what arrived and returns what to do; the
shell sends the fetches and replays what :meth:`MetadataObserver.on_fetch` returns.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import UNDEFINED_EPOCH, Log, whole_batches
from minikafka.trace import NullTracer, Tracer

from ._image import MetadataDelta, MetadataImage
from ._metadata_fetch import DivergingEpoch, MetadataFetchAnswer
from ._metadata_log import (
    MAX_BATCH_SIZE_BYTES,
    METADATA_LOG_CONFIG,
    METADATA_PARTITION_DIR,
    SnapshotId,
    decode_metadata_records,
    last_offset_in,
    latest_snapshot_id,
)
from ._records import MetadataRecord


class CommittedDivergenceError(Exception):
    """The leader disowns records this observer had as committed."""


@attrs.frozen
class FetchPosition:
    """What the next Fetch asks for: the log end, and the epoch of the record before it."""

    fetch_offset: int
    last_fetched_epoch: int


@attrs.frozen
class ObserverUpdate:
    """What one answer changed: committed records to replay, in order, and whether the
    image must be rebuilt from nothing first (a snapshot replaced the log)."""

    committed: tuple[tuple[int, MetadataRecord], ...] = ()
    reset_to_snapshot: tuple[MetadataRecord, ...] | None = None
    snapshot_offset: int = -1
    """With ``reset_to_snapshot``: the last offset the snapshot covers (its end - 1)."""
    truncated_to: int | None = None
    snapshot_wanted: SnapshotId | None = None


@attrs.define(eq=False)
class MetadataObserver:
    """One broker's replica of the metadata log, fetched from the quorum's leader."""

    dir: Path
    log: Log
    applied_offset: int
    """The last offset handed out to replay (-1: none)."""
    high_watermark: int = -1
    """The leader's, as last heard, capped at this copy's log end; -1 until a fetch."""

    @classmethod
    def open(
        cls, metadata_dir: Path, tracer: Tracer | None = None
    ) -> tuple[MetadataObserver, tuple[MetadataRecord, ...]]:
        """Open (or create) the copy; also returns the latest snapshot's records, which
        the broker replays before anything fetched."""
        path = Path(metadata_dir) / METADATA_PARTITION_DIR
        path.mkdir(parents=True, exist_ok=True)
        snapshot = latest_snapshot_id(path)
        start = snapshot.end_offset if snapshot else 0
        log = Log.open(
            path,
            METADATA_LOG_CONFIG,
            log_start_offset=start,
            tracer=tracer or NullTracer(),
        )
        if log.log_end_offset < start:
            log.truncate_fully_and_start_at(start)
        records: tuple[MetadataRecord, ...] = ()
        if snapshot is not None:
            data = (path / snapshot.file_name).read_bytes()
            records = tuple(r for _, r in decode_metadata_records(data))
        return cls(path, log, start - 1), records

    def position(self) -> FetchPosition:
        end = self.log.log_end_offset
        epoch = self.log.leader_epoch_cache.latest_epoch
        snapshot = latest_snapshot_id(self.dir)
        if epoch is None:
            # Nothing in the log itself: the epoch before the log start is the snapshot's.
            epoch = snapshot.epoch if snapshot is not None else UNDEFINED_EPOCH
        return FetchPosition(end, epoch)

    def on_fetch(self, answer: MetadataFetchAnswer) -> ObserverUpdate:
        """Apply the leader's answer to a fetch sent at :meth:`position`."""
        if answer.error is not ErrorCode.none:
            return ObserverUpdate()  # the shell backs off and asks again
        if answer.snapshot_id is not None:
            return ObserverUpdate(snapshot_wanted=answer.snapshot_id)
        if answer.diverging_epoch is not None:
            return ObserverUpdate(truncated_to=self._truncate(answer.diverging_epoch))
        if answer.records:
            self.log.append_as_follower(answer.records)
        return ObserverUpdate(committed=self._advance(answer.high_watermark))

    def on_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> ObserverUpdate:
        """Load a whole snapshot fetched with FetchSnapshot: the log restarts at its end
        and the image is rebuilt from its records (and then from what is fetched)."""
        records = tuple(r for _, r in decode_metadata_records(data))  # checks every CRC
        tmp = self.dir / (snapshot_id.file_name + ".part")
        tmp.write_bytes(data)
        os.replace(tmp, self.dir / snapshot_id.file_name)
        for path in self.dir.iterdir():
            other = SnapshotId.parse(path.name)
            if other is not None and other.end_offset < snapshot_id.end_offset:
                path.unlink()
        self.log.truncate_fully_and_start_at(snapshot_id.end_offset)
        self.applied_offset = snapshot_id.end_offset - 1
        self.high_watermark = snapshot_id.end_offset
        return ObserverUpdate(
            reset_to_snapshot=records, snapshot_offset=self.applied_offset
        )

    def close(self) -> None:
        self.log.close()

    # --- inside ------------------------------------------------------------------------

    def _truncate(self, diverging: DivergingEpoch) -> int:
        """Kafka's ``truncateToEndOffset``: back to where this copy and the leader agree."""
        log = self.log
        if diverging.epoch == UNDEFINED_EPOCH:
            target = diverging.end_offset
        else:
            epoch, end = log.leader_epoch_cache.end_offset_for(
                diverging.epoch, log.log_end_offset
            )
            target = min(end, diverging.end_offset) if epoch == diverging.epoch else end
        if target <= self.applied_offset:
            # Committed records never diverge in Raft: a leader saying so has lost what
            # it had committed (a wiped disk). Replaying on would mix two histories.
            raise CommittedDivergenceError(
                f"the leader's log diverges at offset {target}, below offset "
                f"{self.applied_offset}, already committed and replayed here"
            )
        log.truncate_to(max(target, log.log_start_offset))
        return target

    def _advance(
        self, leader_high_watermark: int
    ) -> tuple[tuple[int, MetadataRecord], ...]:
        """Move the HW up to the leader's (never past this copy's end, never back) and
        return the committed records not handed out yet."""
        hw = min(leader_high_watermark, self.log.log_end_offset)
        if hw <= self.high_watermark:
            return ()
        self.high_watermark = hw
        self.log.update_high_watermark(hw)
        return tuple(self._read(self.applied_offset + 1, hw))

    def _read(self, start: int, end: int) -> Sequence[tuple[int, MetadataRecord]]:
        out: list[tuple[int, MetadataRecord]] = []
        offset = start
        while offset < end:
            fetched = self.log.read(offset, MAX_BATCH_SIZE_BYTES, max_offset=end)
            if fetched.records is None:
                break
            data = whole_batches(fetched.records.read_bytes())
            out += [
                (o, r) for o, r in decode_metadata_records(data) if offset <= o < end
            ]
            # Control batches (a Raft leader's LeaderChange) hold no records to replay,
            # but the reader passes them: what is applied is where the read ended.
            last = min(last_offset_in(data), end - 1)
            if last < offset:
                break
            offset = last + 1
        self.applied_offset = max(self.applied_offset, offset - 1)
        return out


def replay_update(
    image: MetadataImage, update: ObserverUpdate
) -> tuple[MetadataDelta, MetadataImage] | None:
    """The delta and the new image after ``update``, or None if it changed nothing; a
    snapshot rebuilds the image from nothing before the committed records go on top."""
    if update.reset_to_snapshot is not None:
        delta = MetadataDelta(MetadataImage())
        for record in update.reset_to_snapshot:
            delta.replay(record)
        delta.offset = update.snapshot_offset
    elif update.committed:
        delta = MetadataDelta(image)
    else:
        return None
    for offset, record in update.committed:
        delta.replay(record, offset)
    return delta, delta.apply()
