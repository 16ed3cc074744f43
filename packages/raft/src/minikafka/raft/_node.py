"""A KRaft quorum member as a sans-IO core: Kafka's ``KafkaRaftClient`` and ``QuorumState``
(KIP-595, KIP-630 snapshots, KIP-996 pre-vote), with time and the network as values.

A shell (or the simulator) drives a :class:`RaftNode` through the calls of every core,
each taking ``now`` and returning one :class:`~minikafka.common.CoreResult`
(:data:`~._result.RaftResult`): ``receive`` a message, ``handle_disconnect`` when a
request could not be sent, ``on_timer`` when ``next_deadline()`` is due, ``append``
entries as the leader, ``resign`` to step down. Its messages are the envelopes to send;
its replies are what the state machine (the controller) must hear, in order: a snapshot
copied from the leader to load (:class:`~._result.LoadSnapshot`), then the entries that
became committed, in log order (:class:`~._result.Committed`). It has no records: the
log and the ``quorum-state`` store are given to the node and called synchronously, as
Kafka's Raft client calls its log; every rule that needs the disk to be in a given state
first (a vote, an epoch) writes before it answers.

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
  truncates to it. A fetch below the leader's log start gets a snapshot id.
- *Snapshots* (:class:`~._snapshots.SnapshotTransfer`). The state machine's state up to
  an offset it has applied is kept as a snapshot, and the log below it may go. A
  fetcher told a snapshot id copies that snapshot from the leader with FetchSnapshot,
  chunk after chunk, installs it, and hands it to the state machine before the entries
  after it.
- *Commitment* (:class:`~._replication.LeaderReplication`). The leader's high watermark
  is the offset a majority of voters have (its own flushed log and the followers' fetch
  offsets); it moves only to an offset past the start of the leader's own epoch, never
  for entries of earlier epochs alone.
- *Check-quorum* (:class:`~._base.RaftNodeBase`). A leader not fetched from by a
  majority for 1.5 fetch timeouts resigns; a voter that still hears from its leader
  refuses pre-votes, so a node cut off and come back cannot unseat a working leader.
- *Resignation* (:class:`~._resignation.Resignation`). A leader that steps down, asked
  to (``resign``) or by check-quorum, names the other voters as its successors, the most
  complete first, in EndQuorumEpoch; a follower told so stops vouching for it, and the
  successors stand in that order, each waiting twice as long as the one before it.
"""

from __future__ import annotations

from ._base import NO_LEADER, NotLeaderError, RaftNodeBase
from ._election import Election
from ._follower import FollowerFetch
from ._leader_change import LeaderChangeRecord
from ._replication import LeaderReplication
from ._resignation import Resignation
from ._snapshots import SnapshotTransfer

__all__ = ["NO_LEADER", "NotLeaderError", "RaftNode", "RaftNodeBase"]


class RaftNode(
    Election,
    LeaderChangeRecord,
    LeaderReplication,
    FollowerFetch,
    SnapshotTransfer,
    Resignation,
):
    """One member of a KRaft quorum: a voter if ``node_id`` is in ``voters``, else an
    observer (a broker following the metadata log). Its rules are its parts'; the
    LeaderChange record comes before LeaderReplication, which appends what it filled."""
