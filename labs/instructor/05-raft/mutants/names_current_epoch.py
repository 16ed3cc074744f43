"""Wrong on purpose: a follower's fetch names its current epoch, not the epoch of its
log's last entry, so the leader cannot see where their logs part."""

from __future__ import annotations

from minikafka.raft._follower import FollowerFetch as _FollowerFetch
from minikafka.raft._messages import FetchRequest


class FollowerFetch(_FollowerFetch):
    def _fetch_request(self) -> FetchRequest:
        epoch = self.epoch if self.log.end_offset else 0
        return FetchRequest(self.node_id, self.epoch, self.log.end_offset, epoch)
