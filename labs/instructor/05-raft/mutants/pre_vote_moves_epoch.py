"""Wrong on purpose: a pre-vote from a newer epoch moves the voter into that epoch (and
writes it), as a real vote does."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteRequest


class Election(_Election):
    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        if request.pre_vote and self.is_voter and request.candidate_epoch > self.epoch:
            self._observe_epoch(request.candidate_epoch, None, now)
        return super()._vote_decision(request, now)
