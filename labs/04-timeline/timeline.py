"""Lab 4: write the heart of the timeline structures (seed 004 §2.1; the KRaft
controller chapter, "Timeline structures").

The pipelined controller replays a request's records into memory at once and answers
only when they commit, so its state must be readable *as of* an older offset (what is
committed) and revertible to it (a controller that loses leadership drops what never
committed). Kafka's answer, and minikafka's: a ``SnapshotRegistry`` of snapshots at Raft
offsets, and structures that record, on the first write of a key after the newest
snapshot, the key's old value in that snapshot's *delta* (``_TableDelta.old``, with
``_ABSENT`` for "no value"). Nothing is copied when a snapshot is taken.

Each function is a method of minikafka's class (``self``), switched in one exercise at a
time: ``make lab 4 EX=record``, then ``lookup``, then ``revert``.
"""

from __future__ import annotations

from typing import Any

from minikafka.common.timeline import (
    _ABSENT,
    LATEST_EPOCH,
    Snapshot,
    SnapshotRegistry,
    _TableDelta,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/04-timeline/timeline.py"

__all__ = [
    "LATEST_EPOCH",
    "_ABSENT",
    "Snapshot",
    "SnapshotRegistry",
    "_TableDelta",
    "lookup",
    "merge_from",
    "record",
    "revert_to_snapshot",
]


def record(self: Any, key: Any) -> None:
    """``_SnapshottableTable._record``: called before every change of ``key``. With no
    snapshot, nothing to do. Otherwise the newest snapshot
    (``self._registry._newest()``) needs this table's delta: ``snapshot._delta(self)``,
    or a new ``_TableDelta(self, len(self._current))`` stored in
    ``snapshot._deltas[self]``. The delta keeps ``key``'s value from before the first
    change after the snapshot, never a later one. O(1)."""
    raise ExerciseNotDone("record", "only the first write after a snapshot", FILE)


def lookup(self: Any, key: Any, epoch: int) -> Any:
    """``_SnapshottableTable._lookup``: ``key``'s value at ``epoch`` (``_ABSENT`` if it
    had none). ``LATEST_EPOCH`` is the current dict (``self._current``). Otherwise walk
    the snapshots from ``epoch`` to the newest (``self._registry._from(epoch)``): the
    first whose delta for this table holds the key knows its value at ``epoch``; if none
    does, the key has not changed since and the current value is the answer."""
    raise ExerciseNotDone("lookup", "the first delta that mentions the key", FILE)


def merge_from(self: Snapshot, newer: Snapshot) -> None:
    """``Snapshot._merge_from``: ``newer`` (the next snapshot) is deleted, and this one
    takes over its deltas (``newer._deltas``, structure -> delta). A structure this
    snapshot has no delta for takes newer's as it is; otherwise ``mine.absorb(delta)``
    (which keeps this snapshot's older entries). Empty ``newer._deltas`` after."""
    raise ExerciseNotDone("merge_from", "older entries win", FILE)


def revert_to_snapshot(self: SnapshotRegistry, epoch: int) -> None:
    """``SnapshotRegistry.revert_to_snapshot``: every structure back to its state at
    ``epoch``. Drop the newer snapshots newest first (``self._delete_at(i)`` merges each
    into the one before it), so that the snapshot at ``epoch`` holds the old value of
    every key changed since; then write those back (``snapshot._revert()``). The
    snapshot at ``epoch`` stays; an unknown epoch is a ValueError (``self._require``)."""
    raise ExerciseNotDone("revert_to_snapshot", "newest first, then _revert", FILE)
