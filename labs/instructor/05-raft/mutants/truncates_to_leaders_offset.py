"""Wrong on purpose: a follower truncates to the leader's end of the diverging epoch,
without asking where that epoch ends in its own log (it keeps entries of an epoch the
leader never had)."""

from __future__ import annotations

from minikafka.raft._follower import FollowerFetch as _FollowerFetch
from minikafka.raft._messages import DivergingEpoch
from minikafka.raft._states import RaftStateError


class FollowerFetch(_FollowerFetch):
    def _truncate_to_diverging(self, diverging: DivergingEpoch, now: float) -> None:
        if diverging.end_offset < self.high_watermark:
            raise RaftStateError("would truncate below the high watermark")
        self.log.truncate_to(diverging.end_offset)
