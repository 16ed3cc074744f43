"""Wrong on purpose: a pre-vote moves the voter into the epoch after the prospective's,
the one it would stand in (and writes it), as if the prospective were already a
Candidate: a node that cannot win still raises every voter's epoch."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteRequest


class Election(_Election):
    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        if request.pre_vote and self.is_voter and request.candidate_epoch >= self.epoch:
            self._observe_epoch(request.candidate_epoch + 1, None, now)
        return super()._vote_decision(request, now)
