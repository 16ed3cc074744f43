"""Wrong on purpose: a pre-vote is granted although this voter still hears from its
leader (a node cut off and come back unseats a working leader)."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteRequest


class Election(_Election):
    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        granted, reason = super()._vote_decision(request, now)
        if request.pre_vote and reason.startswith("this voter still hears"):
            return True, "pre-vote: log up to date"
        return granted, reason
