"""Wrong on purpose: a vote is granted but never written to quorum-state, so a voter
that restarts votes again in the same epoch (two leaders can win it)."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._store import ElectionState


class Election(_Election):
    def _persist(self, state: ElectionState, why: str) -> None:
        if why != "grants a vote":
            super()._persist(state, why)
