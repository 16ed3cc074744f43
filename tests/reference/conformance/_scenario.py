"""A scenario: requests sent to one broker, of which some answers are compared.

A scenario is a function of a :class:`Session`; the runner calls it once per broker,
each with its own session on its own connection. ``session.call`` is set-up (its answer
is used, not compared: a member id to rejoin with, a producer id to produce with);
``session.check`` sends a request whose answer is compared field by field. Because the
function reads each broker's own answers, the same text drives both brokers into the
same state even where the brokers choose different ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from kio.static.protocol import RequestPayload

from minikafka.net import ApiKey

from ._build import make
from ._normalise import Normaliser, Tree, to_tree
from ._wire import Closed, Connection

CLOSED = "<connection closed>"


@attrs.frozen
class Scenario:
    id: str
    """``api.vN.case``: stable, so COMPAT.md's table can name it."""
    run: Callable[[Session], None]
    parks: bool = False
    """The broker holds an answer for a while (a JoinGroup waits for the initial
    rebalance delay): the runner gives it a connection and a thread of its own."""


@attrs.define(eq=False)
class Session:
    """One scenario against one broker."""

    connection: Connection
    checks: dict[str, Tree] = attrs.field(factory=dict)
    normaliser: Normaliser = attrs.field(factory=Normaliser)
    extra: list[Connection] = attrs.field(factory=list)
    topic_ids: dict[str, Any] = attrs.field(factory=dict)

    def call(self, body: RequestPayload) -> Any:
        return self.connection.call(body)

    def check(
        self,
        body: RequestPayload,
        label: str = "",
        *,
        trim: str | None = None,
        varies: frozenset[str] = frozenset(),
    ) -> Any:
        """Sends ``body``; its normalised answer is compared (``None`` if the broker
        closed the connection, which is compared too). ``trim``: the answer lists every
        topic or group, keep those whose name starts with it; ``varies``: fields this
        scenario's answer may legitimately differ in (the scenario says why)."""
        label = label or type(body).__name__.removesuffix("Request")
        if label in self.checks:
            label = f"{label}#{len(self.checks) + 1}"
        try:
            response = self.connection.call(body)
        except Closed:
            self.checks[label] = CLOSED
            return None
        self.normaliser.trim = trim
        self.normaliser.varies = varies
        self.checks[label] = self.normaliser(to_tree(response))
        return response

    def other(self) -> Connection:
        """A second connection to the same broker (a second group member); the runner
        closes it after the scenario."""
        connection = Connection(self.connection.address)
        self.extra.append(connection)
        return connection

    def close_extra(self) -> None:
        for connection in self.extra:
            connection.close()

    def topic_id(self, name: str) -> Any:
        """The id this broker gave topic ``name`` (each broker gives its own; the zero id
        for a topic it does not have), for requests that name topics by id (KIP-516)."""
        if name not in self.topic_ids:
            answer = self.call(
                make(
                    ApiKey.METADATA,
                    12,
                    topics=[{"name": name}],
                    allow_auto_topic_creation=False,
                )
            )
            self.topic_ids[name] = answer.topics[0].topic_id
        return self.topic_ids[name]

    def record(self, label: str, value: Tree) -> None:
        """Compares a value the scenario derived itself (e.g. "no answer came")."""
        self.checks[label] = value

    def wait_topics(
        self, names: Iterable[str], partitions: int = 1, timeout: float = 30.0
    ) -> None:
        """Until this broker's Metadata names a leader for each partition of ``names``
        (a broker learns a new topic from its controller a moment after CreateTopics)."""
        wanted = list(names)
        deadline = time.monotonic() + timeout
        while True:
            answer = self.call(
                make(
                    ApiKey.METADATA,
                    8,
                    topics=[{"name": n} for n in wanted],
                    allow_auto_topic_creation=False,
                )
            )
            ready = all(
                int(t.error_code) == 0
                and len(t.partitions) >= partitions
                and all(
                    int(p.leader_id) >= 0 and int(p.error_code) == 0
                    for p in t.partitions
                )
                for t in answer.topics
            )
            if ready:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.connection.address}: {wanted} not ready: {answer}"
                )
            time.sleep(0.05)

    def result(self) -> Tree:
        if len(self.checks) == 1:
            return next(iter(self.checks.values()))
        return dict(self.checks)
