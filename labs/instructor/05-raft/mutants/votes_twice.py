"""Wrong on purpose: a voter that already voted in this epoch votes again for another
candidate (one vote per epoch forgotten)."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteRequest


class Election(_Election):
    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        granted, reason = super()._vote_decision(request, now)
        if reason.startswith("already voted"):
            return True, "log up to date"
        return granted, reason
