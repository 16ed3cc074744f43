"""Test helpers for the Raft core (ARCHITECTURE.md: ``<name>.testing``): a quorum on a
perfect network, stepped by hand, for tests and book cells that want one rule at a time
(the simulator is for everything at once)."""

from __future__ import annotations

from collections import deque

from ._log import MemoryLog
from ._messages import Envelope
from ._node import RaftNode
from ._result import Committed, RaftResult
from ._states import State
from ._store import MemoryStateStore


class Wire:
    """Nodes 1..n on a perfect network; ``cut`` drops everything to and from a node."""

    def __init__(self, voters: int, observers: int = 0) -> None:
        ids = range(1, voters + observers + 1)
        self.voters = list(range(1, voters + 1))
        self.logs = {n: MemoryLog() for n in ids}
        self.stores = {n: MemoryStateStore() for n in ids}
        self.nodes = {n: self.start(n, 0.0) for n in ids}
        self.queue: deque[Envelope] = deque()
        self.cut: set[int] = set()
        self.committed: dict[int, list[bytes]] = {n: [] for n in ids}

    def start(self, n: int, now: float) -> RaftNode:
        return RaftNode(
            n,
            self.voters,
            self.logs[n],
            self.stores[n],
            now,
        )

    def take(self, node: int, result: RaftResult) -> None:
        self.queue.extend(result.messages)
        for reply in result.replies:
            if isinstance(reply, Committed):
                self.committed[node] += [e.data for e in reply.entries]

    def settle(self, now: float) -> None:
        """Deliver until nothing is in flight, at ``now``."""
        while self.queue:
            envelope = self.queue.popleft()
            if {envelope.source, envelope.destination} & self.cut:
                continue
            self.take(
                envelope.destination,
                self.nodes[envelope.destination].receive(envelope, now),
            )

    def tick(self, now: float) -> None:
        for n, node in self.nodes.items():
            deadline = node.next_deadline()
            if n not in self.cut and deadline is not None and deadline <= now:
                self.take(n, node.on_timer(now))
        self.settle(now)

    def run_until(self, until: float, step: float = 0.05, start: float = 0.0) -> None:
        now = start
        while now < until:
            now = round(now + step, 6)
            self.tick(now)

    def leader(self) -> RaftNode:
        (leader,) = [n for n in self.nodes.values() if n.state is State.LEADER]
        return leader
