"""Wrong on purpose: a new leader appends nothing of its own epoch when it begins, so
what earlier leaders left waits for a client's append to commit."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._leader import LeaderState


class Election(_Election):
    def _begin_leadership(self, now: float) -> None:
        start = self.log.end_offset
        self._leader = LeaderState.begin(self.node_id, self.voters, start, now)
        self._election_retries = 0
