"""Lab 5, exercise ``election``: how a KRaft voter votes, and how a candidate wins
(KIP-595's Vote, KIP-996's pre-vote; the Raft in KRaft chapter, "A vote is a promise
written to disk" and "Pre-vote and check-quorum").

Your ``Election`` takes the place of minikafka's in every ``RaftNode``: the class is
``class RaftNode(Election, LeaderReplication, FollowerFetch, SnapshotTransfer,
Resignation)``, all five over ``RaftNodeBase``, which holds what they share. What you
may use on ``self``:

- what the node is: ``node_id``, ``voters`` (sorted ids), ``is_voter``, ``config``,
  ``log`` (``last_epoch``, ``end_offset``), ``tracer``;
- its state: ``state`` (a ``State``), ``epoch``, ``leader_id``, ``voted_id``, and
  ``_known_leader`` (the leader an answer names: none once this node has resigned);
- ``_become(state, now, why=..., epoch=..., leader_id=..., voted_id=...)``: the only
  way to change state. It checks the move against the table in ``_states.py``, writes
  ``quorum-state`` (epoch, leader, vote) to disk whenever they change, resets the
  timers and the requests in flight, and sends what the new state needs (among the
  messages of the ``CoreResult`` the call returns). Entering ``CANDIDATE`` raises the
  epoch by one and votes for itself; entering ``LEADER`` calls your
  ``_begin_leadership``;
- ``_observe_epoch(epoch, leader_id, now)``: what every message tells a node; a newer
  epoch (or the leader of its own, unknown until now) moves it;
- ``_hears_from_leader(now)``: a follower that heard from its leader within the fetch
  timeout;
- ``_granted`` and ``_rejected``: the sets of voters that answered this state's
  (pre-)vote requests, emptied by every ``_become``; a Prospective or a Candidate starts
  with its own id in ``_granted``;
- ``_election_deadline`` and ``_election_backoff()``: when the next election starts, and
  a random backoff after a lost one;
- ``_leader`` (a ``LeaderState`` while leading), ``_election_retries``, and
  ``_append_as_leader(entries, now)`` (LeaderReplication's: append, flush, commit what
  that allows).

Answers to requests this node gave up on (late, duplicated) never reach
``_handle_vote_response``: the base drops them.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.raft._base import RaftNodeBase
from minikafka.raft._events import VoteAnswered
from minikafka.raft._leader import LeaderState
from minikafka.raft._log import Entry
from minikafka.raft._messages import Errors, VoteRequest, VoteResponse
from minikafka.raft._states import State

FILE = "labs/05-raft/election.py"

__all__ = ["Election", "Entry", "Errors", "LeaderState", "State", "VoteRequest"]


class Election(RaftNodeBase):
    """How a node asks for votes, grants them, counts them, and begins to lead."""

    def _vote_request(self, pre_vote: bool) -> VoteRequest:
        """What a Prospective (``pre_vote``) or a Candidate asks every other voter: a
        ``VoteRequest`` naming the epoch it stands in and its log's last epoch and end
        offset. A Candidate has already entered its epoch (``_become`` raised it); a
        Prospective names its current epoch (KIP-996: it enters no new one)."""
        raise ExerciseNotDone("Election._vote_request", "four numbers and a flag", FILE)

    def _handle_vote(self, request: VoteRequest, now: float) -> VoteResponse:
        """Answer ``request``: decide (``_vote_decision``); a granted real vote moves this
        voter to ``VOTED`` for the candidate, which writes it to ``quorum-state``,
        before the answer is built. A granted pre-vote writes nothing. Answer with
        ``_answer_vote``."""
        raise ExerciseNotDone("Election._handle_vote", "decide, write, answer", FILE)

    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        """Grant ``request``'s vote, or not, and say why (the reason travels in the
        answer and the trace; the tests read two of them). In this order:

        - an observer does not vote; a candidate that is not a voter gets no vote;
        - a candidate from an older epoch is refused; a vote or pre-vote from a newer
          epoch first moves this voter into that epoch (the sender is in it);
        - a candidate whose log is less complete than this voter's is refused;
        - a pre-vote is refused by the leader, and by a follower that still hears from
          its leader (``f"this voter still hears from leader {self.leader_id}"``), and
          granted otherwise;
        - a real vote is refused when this epoch has a leader, or when this voter voted
          for someone else in it
          (``f"already voted for {self.voted_id} in epoch {self.epoch}"``); else
          granted.
        """
        raise ExerciseNotDone("Election._vote_decision", "one vote per epoch", FILE)

    def _log_is_up_to_date(self, request: VoteRequest) -> bool:
        """Is the candidate's log at least as complete as this voter's? The epochs of
        the last entries first, then the end offsets (``request.last_offset_epoch``,
        ``request.last_offset``)."""
        raise ExerciseNotDone("Election._log_is_up_to_date", "compare pairs", FILE)

    def _handle_vote_response(
        self, source: int, response: VoteResponse, now: float
    ) -> None:
        """Count ``source``'s answer to this node's (pre-)vote request. First, the epoch
        and leader it names may move this node (``_observe_epoch``). An answer counts
        only in the state that asked (a pre-vote's in ``PROSPECTIVE``, a vote's in
        ``CANDIDATE``), once per voter. A majority of the voters (this node included)
        moves a Prospective to ``CANDIDATE`` and a Candidate to ``LEADER``. When so
        many refuse that a majority can no longer grant: a Prospective that knows a
        leader goes back to following it, one that does not becomes ``UNATTACHED``, and
        a Candidate waits out ``_election_backoff()`` before its next try (set
        ``_election_deadline``)."""
        raise ExerciseNotDone(
            "Election._handle_vote_response", "count to a majority", FILE
        )

    def _begin_leadership(self, now: float) -> None:
        """Called by ``_become`` as this node becomes the leader. Start the leader's
        bookkeeping, ``LeaderState.begin(node_id, voters, epoch_start_offset, now)``,
        where this epoch's entries start; reset ``_election_retries``; and append, as
        the leader, one control entry of the new epoch (Kafka's LeaderChange record,
        ``Entry(offset, epoch, b"", control=True)``): until an entry of its own epoch
        is committed, a new leader can commit nothing."""
        raise ExerciseNotDone(
            "Election._begin_leadership", "state, then an entry", FILE
        )

    # -- given -------------------------------------------------------------------------

    def _answer_vote(
        self, request: VoteRequest, granted: bool, reason: str, now: float
    ) -> VoteResponse:
        """The answer to ``request``, traced (the timeline shows it)."""
        if self.tracer.enabled:
            event = VoteAnswered(
                self.node_id,
                request.candidate_id,
                request.candidate_epoch,
                request.pre_vote,
                granted,
                reason,
            )
            self.tracer.emit(event, ts=now)
        return VoteResponse(
            Errors.NONE,
            self.epoch,
            self._known_leader,
            granted,
            request.pre_vote,
            reason,
        )
