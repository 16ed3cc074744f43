"""Wrong on purpose: the leader commits whatever a majority holds, entries of older
epochs included (the Raft paper's figure 8)."""

from __future__ import annotations

from minikafka.raft._leader import LeaderState
from minikafka.raft._replication import LeaderReplication as _LeaderReplication


class LeaderReplication(_LeaderReplication):
    def _may_commit(self, offset: int, leader: LeaderState) -> bool:
        return True
