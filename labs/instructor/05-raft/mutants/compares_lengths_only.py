"""Wrong on purpose: logs are compared by their end offsets alone, not by the epoch of
their last entries first."""

from __future__ import annotations

from minikafka.raft._election import Election as _Election
from minikafka.raft._messages import VoteRequest


class Election(_Election):
    def _log_is_up_to_date(self, request: VoteRequest) -> bool:
        return request.last_offset >= self.log.end_offset
