"""A leader's graceful resignation (KIP-595's EndQuorumEpoch, Kafka's ``ResignedState``):
a leader that steps down, asked to (a controlled shutdown) or by check-quorum, names its
followers as preferred successors, the most complete first, and tells every voter until
each has answered. A follower told so stops waiting for the leader, and the successors
stand in that order, each position waiting twice as long as the one before it, so the
most complete follower is likely the next leader, within milliseconds rather than a
fetch timeout."""

from __future__ import annotations

from ._base import RaftNodeBase
from ._messages import EndQuorumEpochRequest, EndQuorumEpochResponse, Errors
from ._result import RaftResult
from ._states import State


class Resignation(RaftNodeBase):
    """How a leader steps down, and what a voter does when its leader says it has."""

    def resign(self, now: float) -> RaftResult:
        """Step down gracefully (a controlled shutdown): EndQuorumEpoch to the voters."""
        if self.state is State.LEADER:
            self._resign("shutting down", now)
        return self._result(now)

    def _resign(self, why: str, now: float) -> None:
        assert self._leader is not None
        self._successors = self._leader.preferred_successors()
        self._become(State.RESIGNED, now, why=why)

    def _handle_end_quorum_epoch(
        self, request: EndQuorumEpochRequest, now: float
    ) -> EndQuorumEpochResponse:
        if request.leader_epoch < self.epoch:
            return EndQuorumEpochResponse(
                Errors.FENCED_LEADER_EPOCH, self.epoch, self._known_leader
            )
        self._observe_epoch(request.leader_epoch, request.leader_id, now)
        if self.state is State.FOLLOWER and self.leader_id == request.leader_id:
            # The leader is going: stop waiting for it (its fetch timer runs out soon) and
            # stop vouching for it in pre-votes. The most complete successors stand
            # first, each position waiting twice as long as the one before it.
            self._last_leader_contact = None
            successors = request.preferred_successors
            wait = self._random_election_timeout()
            if self.node_id in successors:
                position = successors.index(self.node_id)
                wait = min(
                    self.config.retry_backoff * 2**position,
                    self.config.election_backoff_max,
                )
            self._fetch_deadline = now + wait
        return EndQuorumEpochResponse(Errors.NONE, self.epoch, self._known_leader)
