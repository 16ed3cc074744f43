"""Which voter a broker asks: the active controller as far as it knows (KIP-595,
KIP-631).

Shared by the broker's channel to the controller
(:class:`~._controller_channel.RemoteController`) and its metadata fetcher
(:mod:`._metadata_fetcher`): a voter that does not lead names the leader in its Fetch
answer, and a voter that did not answer sends the next request to the next voter.
"""

from __future__ import annotations

import attrs

from minikafka.controller import RaftNodeShell
from minikafka.net import Node


@attrs.define(eq=False)
class ControllerLocator:
    """Which of the voters is the active controller, as far as this broker knows."""

    voters: tuple[Node, ...]
    leader_epoch: int = -1
    """The quorum's epoch of the leader last heard of (-1: none yet)."""
    quorum: RaftNodeShell | None = None
    """The Raft quorum of this very node, if it is one of the voters (a combined node
    among several): the leader it knows of comes first, as fresh as anything heard."""
    _index: int = 0

    @property
    def node(self) -> Node:
        quorum = self.quorum
        if quorum is not None and quorum.leader_id is not None:
            self.leader_is(quorum.leader_id, quorum.epoch)
        return self.voters[self._index]

    def leader_is(self, leader_id: int, epoch: int) -> None:
        """A voter named the leader of ``epoch`` (-1: it knows of none)."""
        if epoch < self.leader_epoch:
            return  # an answer from a voter that has not heard of the newer epoch
        self.leader_epoch = epoch
        for i, voter in enumerate(self.voters):
            if voter.node_id == leader_id:
                self._index = i

    def failed(self, node: Node) -> None:
        """``node`` did not answer (or does not lead and names no leader): try the next."""
        if node == self.node and len(self.voters) > 1:
            self._index = (self._index + 1) % len(self.voters)
