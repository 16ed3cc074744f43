"""Wrong on purpose: a follower takes the leader's high watermark whole, past the end of
its own log."""

from __future__ import annotations

from minikafka.raft._follower import FollowerFetch as _FollowerFetch
from minikafka.raft._messages import FetchResponse


class FollowerFetch(_FollowerFetch):
    def _handle_fetch_response(
        self, source: int, response: FetchResponse, now: float
    ) -> None:
        super()._handle_fetch_response(source, response, now)
        plain = response.diverging_epoch is None and response.snapshot_id is None
        if plain and source == self.leader_id:
            self._advance_hw(response.high_watermark, now)
