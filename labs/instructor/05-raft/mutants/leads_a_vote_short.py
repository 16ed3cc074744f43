"""Wrong on purpose: a candidate counts half the voters as a majority (one vote short
with an even split, so two can win an epoch)."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteResponse
from minikafka.raft._states import State


class Election(_Election):
    def _handle_vote_response(
        self, source: int, response: VoteResponse, now: float
    ) -> None:
        self._observe_epoch(response.leader_epoch, response.leader_id, now)
        expected = State.PROSPECTIVE if response.pre_vote else State.CANDIDATE
        if self.state is not expected or not response.vote_granted:
            super()._handle_vote_response(source, response, now)
            return
        self._granted.add(source)
        if len(self._granted) >= len(self.voters) // 2:
            if expected is State.PROSPECTIVE:
                self._become(State.CANDIDATE, now, why="a majority granted pre-votes")
            else:
                self._become(State.LEADER, now, why="a majority voted for it")
