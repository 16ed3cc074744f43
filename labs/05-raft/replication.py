"""Lab 5, exercise ``leader``, part one: the leader's side of replication (KIP-595's
Fetch; the Raft in KRaft chapter, "The log, the fetch and divergence" and "When an entry
is committed"). ``leader.py`` holds part two: the check of a fetch's position and the
offset a majority has.

Your ``LeaderReplication`` takes the place of minikafka's in every ``RaftNode``
(``class RaftNode(Election, LeaderReplication, FollowerFetch, SnapshotTransfer,
Resignation)``, over ``RaftNodeBase``). What you may use on ``self``:

- ``node_id``, ``epoch``, ``config`` (``fetch_max_entries``, ``fetch_max_wait``),
  ``log`` (``end_offset``, ``flushed_end_offset``, ``append``, ``flush``, ``read``),
  ``high_watermark``, ``_known_leader``;
- ``_leader``: a ``LeaderState`` while this node leads, else None. ``record_fetch(
  replica_id, fetch_offset, leader_end_offset, now)`` keeps a replica's progress (and
  says whether it is a voter); ``majority_end_offset(own_flushed_end)`` (yours, in
  ``leader.py``); ``epoch_start_offset``; ``parked``, replica id -> (the fetch's
  envelope, when it must be answered anyway), and ``take_parked()``;
- ``_reply(envelope, message)``: answer a request (one of the messages of the
  ``CoreResult`` the call returns);
- ``_advance_hw(offset, now)``: move the high watermark up (True if it moved; it never
  moves down). Entries below it go to the state machine as the result's ``Committed``
  reply.

A fetch is answered with a ``FetchResponse(error, leader_epoch, leader_id,
high_watermark, records, diverging_epoch, snapshot_id)``; ``Errors`` has Kafka's codes.
"""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.labs import ExerciseNotDone
from minikafka.raft._base import RaftNodeBase
from minikafka.raft._leader import LeaderState, check_fetch_position
from minikafka.raft._log import Entry
from minikafka.raft._messages import (
    DivergingEpoch,
    Envelope,
    Errors,
    FetchRequest,
    FetchResponse,
)

FILE = "labs/05-raft/replication.py"

__all__ = [
    "DivergingEpoch",
    "Entry",
    "Envelope",
    "Errors",
    "FetchRequest",
    "FetchResponse",
    "LeaderReplication",
    "LeaderState",
    "check_fetch_position",
]


class LeaderReplication(RaftNodeBase):
    """The leader's answer to a fetch, the followers' progress, the high watermark."""

    def _answer_fetch(self, envelope: Envelope, now: float, *, park: bool) -> None:
        """Answer the ``FetchRequest`` in ``envelope`` (``park``: it has just arrived;
        False when a fetch held until now is answered).

        - A node that does not lead answers ``NOT_LEADER_OR_FOLLOWER`` (or
          ``UNKNOWN_LEADER_EPOCH`` to a fetch from a newer epoch than its own). The
          leader answers a fetch of an older epoch ``FENCED_LEADER_EPOCH``, of a newer
          one ``UNKNOWN_LEADER_EPOCH``: no entries.
        - When ``check_fetch_position`` finds the fetcher's log disagrees, the answer
          carries the diverging epoch, or the snapshot id, and no entries.
        - Otherwise a fetch that has just arrived tells how far the replica has every
          entry: record it, and a voter's progress may move the high watermark. Then
          answer with up to ``fetch_max_entries`` entries from the fetch offset; with
          none to give, a fresh fetch is held (parked) until the leader appends or
          ``fetch_max_wait`` passes (a long poll).

        Every answer carries this leader's high watermark."""
        raise ExerciseNotDone("LeaderReplication._answer_fetch", "check, record", FILE)

    def _append_as_leader(self, entries: Sequence[Entry], now: float) -> None:
        """Append ``entries`` to the leader's log. The leader counts only what is on its
        disk toward a majority: flush, then see whether the high watermark moves, then
        answer the fetches held for new entries."""
        raise ExerciseNotDone("LeaderReplication._append_as_leader", "", FILE)

    def _maybe_advance_leader_hw(self, now: float) -> None:
        """Move the high watermark to the offset a majority of voters has, if the
        commitment rule (``_may_commit``) allows it; when it moves, the held fetches
        are answered, so followers learn the new high watermark at once."""
        raise ExerciseNotDone(
            "LeaderReplication._maybe_advance_leader_hw", "a majority, if allowed", FILE
        )

    def _may_commit(self, offset: int, leader: LeaderState) -> bool:
        """May the leader make ``offset`` its high watermark? Only once it covers an
        entry of the leader's own epoch (``leader.epoch_start_offset`` is where that
        epoch began): a majority holding entries of older epochs alone does not make
        them safe (the Raft paper's figure 8)."""
        raise ExerciseNotDone("LeaderReplication._may_commit", "one comparison", FILE)

    # -- given -------------------------------------------------------------------------

    def _wake_parked(self, now: float) -> None:
        """Answer every held fetch now (with what the log holds now)."""
        if self._leader is not None:
            for request in self._leader.take_parked():
                self._answer_fetch(request, now, park=False)
