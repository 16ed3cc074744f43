"""Wrong on purpose: a follower truncates wherever the leader says, below its high
watermark too (committed entries removed without a word)."""

from __future__ import annotations

from minikafka.raft._follower import FollowerFetch as _FollowerFetch
from minikafka.raft._messages import DivergingEpoch


class FollowerFetch(_FollowerFetch):
    def _truncate_to_diverging(self, diverging: DivergingEpoch, now: float) -> None:
        mine = self.log.end_offset_for_epoch(diverging.epoch)
        self.log.truncate_to(min(diverging.end_offset, mine.end_offset))
