"""Which broker gets a request any broker can answer: an idempotent producer's
InitProducerId, a FindCoordinator, a consumer's Metadata for topic ids. Kafka's
``NetworkClient.leastLoadedNode``, which its producer's Sender asks for a transaction
manager's request that names no coordinator (``maybeSendAndPollTransactionalRequest``)
and its consumer for a FindCoordinator (``AbstractCoordinator.lookupCoordinator``).

Going through the known brokers from a starting point, the choice is:

1. the first with a connection ready and nothing on it unanswered;
2. else, of those with a connection ready, the one with the fewest requests unanswered;
3. else, of those without one, the one this chooser sent to longest ago (one it never
   sent to first).

A broker cut off, or paused, holds every request sent to it until
``request.timeout.ms``; those requests count against it, and once one times out its
connection is closed, which puts it behind every broker that still has one. So a
request that may go anywhere goes to a broker that is answering, and after a failure
to another broker, not to the same one for a whole request timeout each time (chaos/
README.md, seed 122: a producer id asked of one broker until that request failed).

Kafka starts from a random broker each time; this starts from the next one in turn, as
the metadata loop asks them (``_metadata_loop.py``), so that tests can name the
order. A connection still in its handshake counts as none here, where Kafka prefers a
connecting broker to one without a connection: a broker that accepts connections but
answers nothing (paused, or started and not serving requests yet) stays in its
handshake.

A core: it is handed each broker's load (:meth:`NetworkClient.load`) and the time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from minikafka.net import Node


@attrs.define
class LeastLoaded:
    """One per task that sends such requests: where its next choice starts, and when
    it last sent to each broker it had no connection to (Kafka's
    ``ClusterConnectionStates.lastConnectAttemptMs``)."""

    _turn: int = 0
    _tried: dict[Node, float] = attrs.field(factory=dict)

    def choose(
        self, nodes: Sequence[Node], load: Callable[[Node], int | None], now: float
    ) -> Node:
        """The broker of ``nodes`` (not empty) to send to now; ``load`` gives a
        broker's requests unanswered, None without a ready connection."""
        start = self._turn % len(nodes)
        self._turn += 1
        fewest, busy = math.inf, None
        idle: Node | None = None
        for i in range(len(nodes)):
            node = nodes[(start + i) % len(nodes)]
            unanswered = load(node)
            if unanswered == 0:
                return node  # ready, nothing unanswered: no better broker to find
            if unanswered is not None:
                if unanswered < fewest:
                    fewest, busy = unanswered, node
            elif idle is None or self._last_try(node) < self._last_try(idle):
                idle = node
        if busy is not None:
            return busy
        assert idle is not None
        self._tried[idle] = now  # a connection is made to it
        return idle

    def _last_try(self, node: Node) -> float:
        return self._tried.get(node, -math.inf)
