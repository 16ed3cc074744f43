"""The leader-epoch cache: where each leader epoch began in this replica's log.

Truncating a follower to the high watermark after a leader change can lose committed data
or leave replicas diverged (KIP-101). Instead every batch carries the epoch of the leader
that appended it, and each log keeps the ordered list of ``(epoch, start offset)`` pairs:
the first offset written in each epoch. A follower asks the leader, with
OffsetsForLeaderEpoch, "where did my latest epoch end in your log?" and truncates to that
offset. KIP-279 refined the answer: the leader returns the largest epoch it knows that is
at most the requested one, together with that epoch's end offset, so the follower can walk
back through several leader changes.

This is Kafka's ``LeaderEpochFileCache``
(storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java),
persisted in the partition's ``leader-epoch-checkpoint``. Two invariants hold at all times:
epochs strictly increase and start offsets strictly increase along the list.
"""

from __future__ import annotations

import bisect

import attrs

from ._checkpoint import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
"""OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH (= RecordBatch.NO_PARTITION_LEADER_EPOCH)."""
UNDEFINED_EPOCH_OFFSET = -1
"""OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET: "no answer, use the high watermark"."""


def _epoch_of(entry: EpochEntry) -> int:
    return entry.epoch


def _start_of(entry: EpochEntry) -> int:
    return entry.start_offset


@attrs.define(eq=False)
class LeaderEpochFileCache:
    """The (epoch, start offset) entries of one partition's log, oldest first."""

    _checkpoint: LeaderEpochCheckpointFile | None
    # Kafka keeps a TreeMap keyed by epoch; because start offsets increase with epochs, a
    # list sorted by either key is the same list, and bisect gives floor/higher lookups.
    _entries: list[EpochEntry] = attrs.field(init=False, factory=list)

    @classmethod
    def open(cls, checkpoint: LeaderEpochCheckpointFile | None) -> LeaderEpochFileCache:
        """Load the cache from its checkpoint (None: in memory only)."""
        cache = cls(checkpoint)
        if checkpoint is not None:
            # Kafka's constructor replays the file through assign() without rewriting it,
            # which also drops any entries that would break monotonicity.
            for entry in checkpoint.read():
                cache._assign(entry)
        return cache

    # --- reads ------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        """The epoch of the newest entry: the current leader epoch that has data."""
        latest = self.latest_entry
        return None if latest is None else latest.epoch

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the batch at ``offset``: the last entry starting at or before it.

        None when ``offset`` precedes the earliest entry (Kafka's ``epochForOffset``).
        """
        i = bisect.bisect_right(self._entries, offset, key=_start_of)
        return self._entries[i - 1].epoch if i > 0 else None

    def end_offset_for(
        self, requested_epoch: int, log_end_offset: int
    ) -> tuple[int, int]:
        """The OffsetsForLeaderEpoch answer: ``(epoch, end offset)`` for
        ``requested_epoch``.

        Kafka's ``endOffsetFor``: the epoch returned is the largest known epoch at most
        the requested one; its end offset is the start offset of the next known epoch,
        or the log end offset when that epoch is the latest.
        """
        if requested_epoch == UNDEFINED_EPOCH:
            # A bootstrapping follower, or one on a message format without epochs.
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            # The leader is still writing its latest epoch, so it ends at the log end. A
            # consumer validating its position after a leader change asks exactly this.
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._entries, requested_epoch, key=_epoch_of)
        if higher == len(self._entries):
            # Newer than every epoch we know (or the cache is empty): no answer.
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        next_start = self._entries[higher].start_offset
        if higher == 0:
            # Older than every epoch we know: its data is gone from this log (retention
            # or truncation from the start moved the first entry). Answer with the
            # requested epoch and the start of the first known epoch, so the follower
            # truncates to at most our earliest data and replicates from there. (Kafka's
            # javadoc still says UNDEFINED_EPOCH_OFFSET here; the code, and we, return
            # this.)
            return requested_epoch, next_start
        # KIP-279: the floor epoch (largest known <= requested) ends where the next
        # begins.
        return self._entries[higher - 1].epoch, next_start

    # --- mutations: each rewrites the checkpoint when it changed anything --------------

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` begins at ``start_offset``; called for every appended batch.

        Almost always a no-op: the batch belongs to the latest epoch, which already has an
        earlier start offset. Once assigned, an epoch's start offset only moves down.
        """
        # The no-op, found before an entry is built: _assign's own first test.
        latest = self.latest_entry
        if (
            latest is not None
            and latest.epoch == epoch
            and latest.start_offset <= start_offset
        ):
            return
        if self._assign(EpochEntry(epoch, start_offset)):
            self._flush()

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: drop every epoch starting at or after it.

        Kafka's ``truncateFromEndAsyncFlush``; an undefined (negative) offset changes nothing.
        """
        if end_offset < 0:
            return
        keep = bisect.bisect_left(self._entries, end_offset, key=_start_of)
        if keep < len(self._entries):
            del self._entries[keep:]
            # Kafka flushes this in the background to keep fsync off the fetcher thread and
            # relies on log recovery to redo the truncation after a crash; writing now is
            # simpler and never leaves stale entries in the file.
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start offset advanced to ``start_offset`` (retention, DeleteRecords).

        Entries starting at or before it are dropped, except the last of them, which now
        starts at ``start_offset``: the epoch of the new first batch is still known.
        Exclusive: ``truncate_from_start(6)`` keeps an entry at offset 6 (Kafka's
        ``truncateFromStartAsyncFlush``).
        """
        below = bisect.bisect_right(self._entries, start_offset, key=_start_of)
        if below == 0:
            return
        floor = EpochEntry(self._entries[below - 1].epoch, start_offset)
        if below == 1 and self._entries[0] == floor:
            return  # Kafka rewrites an identical entry here; there is nothing to persist.
        self._entries[:below] = [floor]
        self._flush()

    def clear(self) -> None:
        """Forget every entry (Kafka's ``clearAndFlush``, used when a log is wiped)."""
        self._entries.clear()
        self._flush()

    # --- internals --------------------------------------------------------------------

    def _assign(self, entry: EpochEntry) -> bool:
        """Apply one entry without flushing; True if the cache changed."""
        if entry.epoch < 0 or entry.start_offset < 0:
            # Kafka throws IllegalArgumentException: a batch always carries a real epoch.
            raise ValueError(f"invalid partition leader epoch entry {entry}")
        latest = self.latest_entry
        # isUpdateNeeded: a new epoch, or the latest epoch starting earlier than recorded.
        if (
            latest is not None
            and entry.epoch == latest.epoch
            and entry.start_offset >= latest.start_offset
        ):
            return False
        # maybeTruncateNonMonotonicEntries: remove from the end every entry whose epoch or
        # start offset is not below the new one. Kafka prefers truncating the cache to the
        # point of conflict over raising or ignoring the append, so that both epochs and
        # offsets keep increasing and the lookups above stay simple.
        keep = len(self._entries)
        while keep > 0 and (
            self._entries[keep - 1].epoch >= entry.epoch
            or self._entries[keep - 1].start_offset >= entry.start_offset
        ):
            keep -= 1
        del self._entries[keep:]
        self._entries.append(entry)
        return True

    def _flush(self) -> None:
        if self._checkpoint is not None:
            self._checkpoint.write(self._entries)
