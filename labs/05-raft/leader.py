"""Lab 5, exercise ``leader``, part two (``replication.py`` holds part one): what the
leader checks of a follower's fetch, and how far a majority of the voters has the log
(the Raft in KRaft chapter: "The log, the fetch and divergence", "When an entry is
committed"). Both replace minikafka's, in ``minikafka.raft._leader``."""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.raft._leader import LeaderState
from minikafka.raft._log import RaftLog, SnapshotId
from minikafka.raft._messages import DivergingEpoch, FetchRequest

FILE = "labs/05-raft/leader.py"

__all__ = [
    "DivergingEpoch",
    "RaftLog",
    "SnapshotId",
    "check_fetch_position",
    "majority_end_offset",
]


def check_fetch_position(
    log: RaftLog, request: FetchRequest
) -> DivergingEpoch | SnapshotId | None:
    """The leader's check of a fetch: None if the fetcher's log agrees with the leader's
    below ``request.fetch_offset``, given the epoch of its last entry
    (``request.last_fetched_epoch``; a fetcher with an empty log sends 0 and 0).

    Otherwise what puts it right: the latest snapshot's id when it asks below the
    leader's log start (``log.start_offset``, ``log.latest_snapshot()``), or, when the
    logs diverge, ``DivergingEpoch(epoch, end_offset)``: where the fetcher's last epoch
    ends in the leader's log (``log.end_offset_for_epoch(epoch)`` gives the largest
    epoch up to it and where that ends), so the fetcher truncates there. If that point
    is below the log start too, the snapshot again."""
    raise ExerciseNotDone("check_fetch_position", "end_offset_for_epoch", FILE)


def majority_end_offset(self: LeaderState, own_flushed_end: int) -> int:
    """``LeaderState.majority_end_offset``: the highest offset that a majority of the
    voters have everything below. A voter's progress is ``self.voters[id].end_offset``
    (its last fetch offset); the leader itself (``self.node_id``) counts only what it
    has flushed, ``own_flushed_end``. Observers never count."""
    raise ExerciseNotDone("majority_end_offset", "sort, then take the middle", FILE)
