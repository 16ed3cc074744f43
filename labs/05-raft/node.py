"""Lab 5, exercises ``election`` and ``high_watermark`` (half of it): two rules of a
``RaftNode`` (the Raft in KRaft chapter: "A vote is a promise written to disk", "When
an entry is committed"). Each function is a method of ``RaftNode``, taking it as
``self``; ``leader.py`` holds the rest.

What you may read on ``self``: ``is_voter``, ``voters``, ``epoch``, ``state`` (a
``State``), ``leader_id``, ``voted_id``, ``log`` (``last_epoch``, ``end_offset``),
``_observe_epoch(epoch, None, now)`` (moves this node to a newer epoch, as a voter must
on seeing one) and ``_hears_from_leader(now)``.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.raft._leader import LeaderState
from minikafka.raft._messages import VoteRequest
from minikafka.raft._node import RaftNode
from minikafka.raft._states import State

FILE = "labs/05-raft/node.py"

__all__ = ["State", "log_is_up_to_date", "may_commit", "vote_decision"]


def vote_decision(self: RaftNode, request: VoteRequest, now: float) -> tuple[bool, str]:
    """Grant ``request``'s vote, or not, and say why (the reason travels in the answer
    and the trace; the tests read two of them). In this order:

    - an observer does not vote; a candidate that is not a voter gets no vote
      (``"<id> is not a voter"``);
    - a candidate from an older epoch is refused; a real (not pre-) vote from a newer
      epoch first moves this node into that epoch;
    - a candidate whose log is less complete than this voter's is refused;
    - a pre-vote (KIP-996) is refused by the leader, and by a follower that still hears
      from its leader (``f"this voter still hears from leader {self.leader_id}"``), and
      granted otherwise: it changes nothing;
    - a real vote is refused when this epoch has a leader, or when this voter voted for
      someone else in it
      (``f"already voted for {self.voted_id} in epoch {self.epoch}"``); else granted.
      (Writing the vote down is the caller's job.)
    """
    raise ExerciseNotDone("vote_decision", "one vote per epoch, logs compared", FILE)


def log_is_up_to_date(self: RaftNode, request: VoteRequest) -> bool:
    """Is the candidate's log at least as complete as this voter's? Compare the epochs
    of the last entries first, then the end offsets (``request.last_offset_epoch``,
    ``request.last_offset``)."""
    raise ExerciseNotDone("log_is_up_to_date", "a pair of numbers compared", FILE)


def may_commit(self: RaftNode, offset: int, leader: LeaderState) -> bool:
    """May the leader make ``offset`` its high watermark? Only once it covers an entry
    of the leader's own epoch (``leader.epoch_start_offset`` is where that epoch began):
    a majority holding entries of an older epoch alone does not make them safe (the Raft
    paper's figure 8)."""
    raise ExerciseNotDone("may_commit", "past the start of the leader's epoch", FILE)
