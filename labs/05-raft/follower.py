"""Lab 5, exercise ``follower``: the follower's side of replication (KIP-595's Fetch,
KIP-630's snapshots; the Raft in KRaft chapter, "The log, the fetch and divergence").

Your ``FollowerFetch`` takes the place of minikafka's in every ``RaftNode`` (``class
RaftNode(Election, LeaderReplication, FollowerFetch, SnapshotTransfer,
Resignation)``, over ``RaftNodeBase``). A follower (a voter) or an observer (a broker)
sends a Fetch whenever it has none in flight: the base calls your ``_fetch_request``
for it, and your ``_handle_fetch_response`` with the answer. What you may use on ``self``:

- ``node_id``, ``epoch``, ``state`` (a ``State``), ``leader_id``, ``high_watermark``;
- ``log``: ``end_offset``, ``last_epoch`` (the epoch of the last entry, 0 if none),
  ``append(entries)``, ``flush()``, ``truncate_to(offset)`` (drops everything from
  ``offset`` on), ``end_offset_for_epoch(epoch)`` (an ``EpochEnd(epoch, end_offset)``:
  the largest epoch in the log up to ``epoch``, and the offset where it ends);
- ``_observe_epoch(epoch, leader_id, now)``: what every answer tells a node; a newer
  epoch or a leader it did not know moves it (to ``FOLLOWER`` of that leader);
- ``_heard_from_leader(now)``: the leader answered (restarts the fetch timer; the node
  vouches for its leader in pre-votes);
- ``_requests.failed(source, now)``: ask ``source`` again only after the retry backoff;
- ``_download``: set it to ``SnapshotDownload(snapshot_id, bytearray())`` and the node
  (its ``SnapshotTransfer``) copies that snapshot with FetchSnapshot (and installs it)
  before fetching again;
- ``_advance_hw(offset, now)``: move the high watermark up (True if it moved); entries
  below it go to the state machine as the ``Committed`` reply of the ``CoreResult`` the
  call returns.

Raise ``RaftStateError`` for what only a broken rule elsewhere can cause.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.raft._base import RaftNodeBase, SnapshotDownload
from minikafka.raft._events import LogTruncated
from minikafka.raft._messages import DivergingEpoch, Errors, FetchRequest, FetchResponse
from minikafka.raft._states import RaftStateError, State

FILE = "labs/05-raft/follower.py"

__all__ = [
    "DivergingEpoch",
    "Errors",
    "FetchRequest",
    "FollowerFetch",
    "RaftStateError",
    "SnapshotDownload",
    "State",
]


class FollowerFetch(RaftNodeBase):
    """What a follower (or an observer) asks the leader for, and what it does with the
    answer."""

    def _fetch_request(self) -> FetchRequest:
        """The next ``FetchRequest(replica_id, current_leader_epoch, fetch_offset,
        last_fetched_epoch)``: from this log's end, naming the epoch of the entry just
        before it, which the leader checks against its own log."""
        raise ExerciseNotDone(
            "FollowerFetch._fetch_request", "from the log's end", FILE
        )

    def _handle_fetch_response(
        self, source: int, response: FetchResponse, now: float
    ) -> None:
        """The leader's answer to this node's fetch. The epoch and leader it names may
        move this node first. An error means ``source`` does not lead (any more): ask
        again after the backoff. An answer counts only from the leader this node
        follows, in ``FOLLOWER``. Then, one of:

        - a diverging epoch: the logs disagree; truncate (``_truncate_to_diverging``);
        - a snapshot id: copy that snapshot first;
        - entries: append them if they start at this log's end (else they are not what
          was asked for: drop them), and flush them, since the next fetch tells the
          leader this node has them.

        With entries or none (not a correction), take the leader's high watermark, but
        no further than this log's end."""
        raise ExerciseNotDone(
            "FollowerFetch._handle_fetch_response", "three kinds of answer", FILE
        )

    def _truncate_to_diverging(self, diverging: DivergingEpoch, now: float) -> None:
        """The leader's log holds ``diverging.epoch`` up to ``diverging.end_offset`` and
        has no later epoch that this log has. Truncate to where both logs agree: the
        smaller of that offset and where that epoch ends in this log. The next fetch
        goes from there. Never below the high watermark: that would remove a committed
        entry (raise ``RaftStateError``). Trace it with ``_trace_truncation``."""
        raise ExerciseNotDone(
            "FollowerFetch._truncate_to_diverging", "where both logs agree", FILE
        )

    # -- given -------------------------------------------------------------------------

    def _trace_truncation(self, old_end: int, new_end: int, now: float) -> None:
        """Say the log went back from ``old_end`` to ``new_end`` (the timeline shows it)."""
        if self.tracer.enabled:
            event = LogTruncated(self.node_id, self.epoch, old_end, new_end)
            self.tracer.emit(event, ts=now)
