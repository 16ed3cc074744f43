"""Wrong on purpose: the leader answers a fetch of another epoch with entries, as if it
were of its own."""

from __future__ import annotations

import attrs

from minikafka.raft._messages import Envelope, FetchRequest
from minikafka.raft._replication import LeaderReplication as _LeaderReplication


class LeaderReplication(_LeaderReplication):
    def _answer_fetch(self, envelope: Envelope, now: float, *, park: bool) -> None:
        request = envelope.message
        if self._leader is not None and isinstance(request, FetchRequest):
            request = attrs.evolve(request, current_leader_epoch=self.epoch)
            envelope = attrs.evolve(envelope, message=request)
        super()._answer_fetch(envelope, now, park=park)
