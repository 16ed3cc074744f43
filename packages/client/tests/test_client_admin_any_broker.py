"""Where the admin client sends a request any broker can answer (FindCoordinator,
DescribeCluster, Metadata): the least loaded broker, as Kafka's Admin chooses it
(``LeastLoadedNodeProvider``), and after a connection failure or a request timeout
another broker chosen again, until ``default.api.timeout.ms``. The guarantee: a broker
that stopped answering costs one request timeout, and the call is answered by another;
no call waits past ``default.api.timeout.ms``.

The admin runs against fake brokers in virtual time (``autojump_clock``); the tests
check the order of what happened, not how long it took."""

from __future__ import annotations

import datetime
from typing import cast

import pytest
import trio
import trio.testing
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_cluster.v1.response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.metadata.v8.request import MetadataRequest
from kio.schema.metadata.v8.response import MetadataResponse, MetadataResponseBroker
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i32Timedelta

from minikafka.client import AsyncAdminClient, KafkaException
from minikafka.net import DisconnectedError, NetworkClient, Node, RequestTimedOut

NODES = [Node(i, "h", 9000 + i) for i in (1, 2, 3)]
BOOTSTRAP = (Node(-1, "h", 9001),)
REQUEST_TIMEOUT = 30.0
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


class Brokers:
    """Brokers 1-3 answering Metadata, FindCoordinator (broker 3 coordinates every
    group) and DescribeCluster, but those in :attr:`silent` (frozen: a request fails
    after :data:`REQUEST_TIMEOUT` and closes the connection, as ``NetworkClient``
    does) and those in :attr:`down` (the connection refused at once). :meth:`load` is
    each connection's unanswered requests, None without one, as ``NetworkClient``'s."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.silent: set[int] = set()
        self.down: set[int] = set()
        self._load: dict[int, int | None] = {}

    def load(self, node: Node) -> int | None:
        return self._load.get(node.node_id)

    async def send(self, node: Node, body: object) -> object:
        name = type(body).__name__.removesuffix("Request")
        broker = node.node_id if node.node_id >= 0 else -node.node_id
        self.events.append((name, broker))
        if broker in self.down:
            self.events.append(("refused", broker))
            raise DisconnectedError(f"cannot connect to node {broker}")
        if broker in self.silent:
            self._load[broker] = (self._load.get(broker) or 0) + 1
            await trio.sleep(REQUEST_TIMEOUT)
            self._load[broker] = None
            self.events.append(("timed out", broker))
            raise RequestTimedOut(f"{name} to node {broker} timed out")
        self._load[broker] = 0
        await trio.lowlevel.checkpoint()
        self.events.append(("answered", broker))
        return _answer(body)


def _answer(body: object) -> object:
    if isinstance(body, MetadataRequest):
        return MetadataResponse(
            throttle_time=NO_THROTTLE,
            brokers=tuple(
                MetadataResponseBroker(
                    node_id=BrokerId(n.node_id), host=n.host, port=i32(n.port)
                )
                for n in NODES
            ),
            cluster_id="c",
            controller_id=BrokerId(1),
            topics=(),
        )
    if isinstance(body, FindCoordinatorRequest):
        return FindCoordinatorResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            node_id=BrokerId(3),
            host="h",
            port=i32(9003),
        )
    assert isinstance(body, DescribeClusterRequest)
    return DescribeClusterResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        cluster_id="c",
        controller_id=BrokerId(1),
        brokers=tuple(
            DescribeClusterBroker(
                broker_id=BrokerId(n.node_id), host=n.host, port=i32(n.port)
            )
            for n in NODES
        ),
    )


def admin(brokers: Brokers, api_timeout_ms: int = 60_000) -> AsyncAdminClient:
    """An admin client over ``brokers`` that knows brokers 1-3 (as after a Metadata
    answer), none connected yet."""
    client = AsyncAdminClient(
        cast(NetworkClient, brokers),
        BOOTSTRAP,
        int(REQUEST_TIMEOUT * 1000),
        api_timeout_ms,
    )
    client.brokers = {n.node_id: n for n in NODES}
    return client


async def test_find_coordinator_is_answered_by_another_broker_after_a_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Broker 1 (first in turn) is frozen: its FindCoordinator times out, and the call
    # goes to broker 2, which answers; then the next call goes to a broker answering,
    # not to broker 1 again.
    brokers = Brokers()
    brokers.silent.add(1)
    client = admin(brokers)
    assert await client.find_coordinator("g") == Node(3, "h", 9003)
    assert brokers.events == [
        ("FindCoordinator", 1),
        ("timed out", 1),
        ("FindCoordinator", 2),
        ("answered", 2),
    ]
    brokers.events.clear()
    assert await client.find_coordinator("g") == Node(3, "h", 9003)
    assert brokers.events == [("FindCoordinator", 2), ("answered", 2)]


async def test_describe_cluster_skips_a_frozen_broker(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The Metadata that describe_cluster refreshes first, then DescribeCluster: each
    # costs broker 1 one request timeout at most, and the answers come from broker 2.
    brokers = Brokers()
    brokers.silent.add(1)
    described = await admin(brokers).describe_cluster()
    assert described.cluster_id == "c"
    assert brokers.events == [
        ("Metadata", 1),
        ("timed out", 1),
        ("Metadata", 2),
        ("answered", 2),
        ("DescribeCluster", 2),
        ("answered", 2),
    ]


async def test_a_refused_connection_sends_the_call_to_another_broker(
    autojump_clock: trio.testing.MockClock,
) -> None:
    brokers = Brokers()
    brokers.down.add(1)
    assert await admin(brokers).find_coordinator("g") == Node(3, "h", 9003)
    assert brokers.events == [
        ("FindCoordinator", 1),
        ("refused", 1),
        ("FindCoordinator", 2),
        ("answered", 2),
    ]


async def test_the_call_fails_with_request_timed_out_when_no_broker_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Every broker frozen: each asked in turn until default.api.timeout.ms (here two
    # request timeouts and a little) runs out, then REQUEST_TIMED_OUT.
    brokers = Brokers()
    brokers.silent.update({1, 2, 3})
    client = admin(brokers, api_timeout_ms=int(REQUEST_TIMEOUT * 2500))
    with pytest.raises(KafkaException) as raised:
        await client.find_coordinator("g")
    assert raised.value.args[0].code() == ErrorCode.request_timed_out
    assert [e for e in brokers.events if e[0] == "FindCoordinator"] == [
        ("FindCoordinator", 1),
        ("FindCoordinator", 2),
        ("FindCoordinator", 3),
    ]
    assert ("answered", 3) not in brokers.events
