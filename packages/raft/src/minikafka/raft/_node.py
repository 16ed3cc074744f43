"""A KRaft quorum member as a sans-IO core: Kafka's ``KafkaRaftClient`` and ``QuorumState``
(KIP-595, KIP-630 snapshots, KIP-996 pre-vote), with time and the network as values.

A shell (or the simulator) drives a :class:`RaftNode` through four calls, each taking
``now`` and returning an :class:`Output`: ``receive`` a message, ``handle_timer`` when
``timer()`` is due, ``append`` entries as the leader, ``resign`` to step down. The Output
says what to send and which entries became committed, in log order, for the state
machine (the controller) to apply. The log and the ``quorum-state`` store are given to the
node and called synchronously, as Kafka's Raft client calls its log; every rule that
needs the disk to be in a given state first (a vote, an epoch) writes before it answers.

The rules, each in a class of its own that :class:`RaftNode` is made of (what they
share, the state, its moves and the timers, is :class:`~._base.RaftNodeBase`):

- *Elections* (:class:`~._election.Election`). A voter whose election timer (or, as a
  follower, fetch timer) runs out asks for pre-votes; a majority lets it enter the next
  epoch as a candidate, vote for itself and ask for votes. A voter grants one vote per
  epoch, to a candidate whose log is at least as complete as its own (last epoch, then
  end offset), and writes the vote down before answering. A majority makes the candidate
  the leader, which appends a control entry in its new epoch and announces itself with
  BeginQuorumEpoch.
- *Replication* (:class:`~._replication.LeaderReplication` for the leader,
  :class:`~._follower.FollowerFetch` for followers and observers). Followers and
  observers fetch from the leader with the offset they need and the epoch of the entry
  before it. The leader checks that its log holds that epoch up to there; if not, it
  answers where the epoch ends in its log (``diverging_epoch``) and the fetcher
  truncates to it. A fetch below the leader's log start gets a snapshot id, and the
  fetcher copies the snapshot with FetchSnapshot.
- *Commitment* (:class:`~._replication.LeaderReplication`). The leader's high watermark
  is the offset a majority of voters have (its own flushed log and the followers' fetch
  offsets); it moves only to an offset past the start of the leader's own epoch, never
  for entries of earlier epochs alone.
- *Check-quorum* (:class:`~._base.RaftNodeBase`). A leader not fetched from by a
  majority for 1.5 fetch timeouts resigns; a voter that still hears from its leader
  refuses pre-votes, so a node cut off and come back cannot unseat a working leader.
"""

from __future__ import annotations

from ._base import NO_LEADER, NotLeaderError, Output, RaftNodeBase
from ._election import Election
from ._follower import FollowerFetch
from ._replication import LeaderReplication

__all__ = ["NO_LEADER", "NotLeaderError", "Output", "RaftNode", "RaftNodeBase"]


class RaftNode(Election, LeaderReplication, FollowerFetch):
    """One member of a KRaft quorum: a voter if ``node_id`` is in ``voters``, else an
    observer (a broker following the metadata log). Its rules are its three parts'."""
