"""Where a request any broker can answer goes (an idempotent producer's InitProducerId,
FindCoordinator): the least loaded broker, as Kafka's ``NetworkClient.leastLoadedNode``
chooses it, again for each attempt. The guarantee: a broker that does not answer
(cut off, paused) holds such a request for one request timeout at most, and one that
already holds an unanswered request is not asked while another broker is idle
(chaos/README.md, seed 122: the producer id asked of one broker until that failed).

The producer's tests run its shell against brokers that answer in virtual time
(``autojump_clock``) and check the order of what happened, not how long it took."""

from __future__ import annotations

import datetime
from typing import cast

import trio
import trio.testing
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.init_producer_id.v1.response import InitProducerIdResponse
from kio.schema.types import BrokerId, ProducerId
from kio.static.primitive import i16, i32, i32Timedelta

from minikafka.client import (
    ClientMetadata,
    ConsumerConfig,
    ProducerConfig,
    RecordAccumulator,
    Sender,
)
from minikafka.client._consumer import consumer_cores
from minikafka.client._consumer_shell import ConsumerShell
from minikafka.client._least_loaded import LeastLoaded
from minikafka.client._shell import ProducerShell
from minikafka.net import NetworkClient, Node, RequestTimedOut

NODES = [Node(i, "h", 9000 + i) for i in (1, 2, 3)]
REQUEST_TIMEOUT = 30.0


def loads(**by_id: int | None) -> dict[Node, int | None]:
    return {n: by_id.get(f"b{n.node_id}") for n in NODES}


def test_an_idle_ready_broker_is_chosen_over_busy_and_unconnected_ones() -> None:
    # Broker 1 holds an unanswered request, broker 2 has no connection, broker 3 is
    # connected with nothing in flight: broker 3, whichever broker the turn starts at.
    load = loads(b1=1, b2=None, b3=0)
    chooser = LeastLoaded()
    assert [chooser.choose(NODES, load.get, 0.0) for _ in range(3)] == [NODES[2]] * 3


def test_of_busy_brokers_the_one_with_fewest_unanswered_requests_is_chosen() -> None:
    load = loads(b1=3, b2=1, b3=2)
    assert LeastLoaded().choose(NODES, load.get, 0.0) == NODES[1]


def test_a_ready_broker_however_busy_is_chosen_over_no_connection() -> None:
    # Kafka's order: established connections first, a new connection last.
    load = loads(b1=None, b2=None, b3=4)
    assert LeastLoaded().choose(NODES, load.get, 0.0) == NODES[2]


def test_without_connections_the_broker_tried_longest_ago_is_chosen() -> None:
    # Nothing connected (each request failed, closing its connection): every broker in
    # turn, never the one just tried, whichever broker the turn would start at.
    load = loads()
    chooser = LeastLoaded()
    chosen = [chooser.choose(NODES, load.get, float(t)).node_id for t in range(6)]
    assert chosen == [1, 2, 3, 1, 2, 3]
    # Brokers 1, 2, 3 tried at 0, 1, 2 s, then broker 2 alone known for a while (3 s):
    # the next turn starts at broker 2, but broker 1 was tried longest ago.
    chooser = LeastLoaded()
    for t in range(3):
        chooser.choose(NODES, load.get, float(t))
    assert chooser.choose(NODES[1:2], load.get, 3.0) == NODES[1]
    assert chooser.choose(NODES, load.get, 4.0) == NODES[0]


def test_idle_brokers_are_taken_in_turn() -> None:
    # All connected and idle: each choice starts at the next broker, as the metadata
    # loop asks them, so no one broker hears every such request.
    load = loads(b1=0, b2=0, b3=0)
    chooser = LeastLoaded()
    chosen = [chooser.choose(NODES, load.get, 0.0).node_id for _ in range(4)]
    assert chosen == [1, 2, 3, 1]


class Brokers:
    """Answers InitProducerId as brokers 1-3 would, but for those in :attr:`silent`
    (cut off, or paused): a request to one of those fails after
    :data:`REQUEST_TIMEOUT` and closes its connection, as ``NetworkClient`` does.
    :meth:`load` is each connection's unanswered requests, as ``NetworkClient.load``."""

    def __init__(self, load: dict[Node, int | None]) -> None:
        self.events: list[tuple[str, int]] = []
        self.silent: set[int] = set()
        self._load = load
        self.answered = trio.Event()

    def load(self, node: Node) -> int | None:
        return self._load.get(node)

    async def send(self, node: Node, body: object) -> object:
        assert isinstance(body, InitProducerIdRequest)
        self.events.append(("InitProducerId", node.node_id))
        if node.node_id in self.silent:
            self._load[node] = (self._load.get(node) or 0) + 1
            await trio.sleep(REQUEST_TIMEOUT)
            self._load[node] = None
            self.events.append(("timed out", node.node_id))
            raise RequestTimedOut(f"InitProducerId to node {node.node_id} timed out")
        await trio.lowlevel.checkpoint()
        self.events.append(("answered", node.node_id))
        self.answered.set()
        return InitProducerIdResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            error_code=ErrorCode.none,
            producer_id=ProducerId(1000 + node.node_id),
            producer_epoch=i16(0),
        )


def producer(brokers: Brokers) -> ProducerShell:
    """An idempotent producer's shell over ``brokers``, knowing brokers 1-3 and no
    topic (its metadata loop has nothing to ask), on trio's clock."""
    config = ProducerConfig.from_dict(
        {"bootstrap.servers": "h:9001", "enable.idempotence": True}
    )
    metadata = ClientMetadata((Node(-1, "h", 9001),))
    metadata.nodes = {n.node_id: n for n in NODES}
    sender = Sender(config, RecordAccumulator(16384, 1 << 20, 0, 100), metadata)
    return ProducerShell(
        sender,
        cast(NetworkClient, brokers),
        on_deliveries=lambda done: None,
        clock=trio.current_time,
    )


async def producer_id_of(shell: ProducerShell, brokers: Brokers) -> int:
    """The producer id once the shell has one (its tasks running until then)."""
    async with trio.open_nursery() as nursery:
        await nursery.start(shell.run)
        await brokers.answered.wait()
        nursery.cancel_scope.cancel()
    return shell.sender.producer_id


async def test_a_new_producer_id_is_not_asked_of_a_broker_holding_a_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Seed 122's shape: broker 1 gave the producer its id, then was cut off with a
    # request on its connection that it never answers. When the producer needs a new
    # id, it asks an idle broker at once, not broker 1 for a whole request timeout.
    brokers = Brokers(loads(b1=0, b2=0, b3=0))
    shell = producer(brokers)
    assert await producer_id_of(shell, brokers) == 1001
    brokers.silent.add(1)
    brokers._load[NODES[0]] = 1  # a Produce that will never be answered
    brokers.events.clear()
    brokers.answered = trio.Event()
    with shell.lock:
        shell.sender.producer_id = shell.sender.producer_epoch = -1  # as on expiry
    assert await producer_id_of(shell, brokers) == 1002
    assert brokers.events == [("InitProducerId", 2), ("answered", 2)]


async def test_after_a_timeout_the_producer_id_is_asked_of_another_broker(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # No connection yet to any broker, and broker 1 (first in turn) never answers:
    # one request timeout, then the next broker, which answers.
    brokers = Brokers(loads())
    brokers.silent.add(1)
    assert await producer_id_of(producer(brokers), brokers) == 1002
    assert brokers.events == [
        ("InitProducerId", 1),
        ("timed out", 1),
        ("InitProducerId", 2),
        ("answered", 2),
    ]


class Coordinators:
    """Answers FindCoordinator (naming broker 2 the group's coordinator) as brokers 1-3
    would, but broker 1, frozen: its requests fail after :data:`REQUEST_TIMEOUT`,
    closing the connection. The group's other requests are never answered."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self._load: dict[Node, int | None] = loads()
        self.answered = trio.Event()

    def load(self, node: Node) -> int | None:
        return self._load.get(node)

    async def send(
        self, node: Node, body: object, *, request_timeout: float | None = None
    ) -> object:
        if not isinstance(body, FindCoordinatorRequest):
            await trio.sleep_forever()
        self.events.append(("FindCoordinator", node.node_id))
        if node.node_id == 1:
            await trio.sleep(REQUEST_TIMEOUT)
            self.events.append(("timed out", node.node_id))
            raise RequestTimedOut(f"FindCoordinator to node {node.node_id} timed out")
        self._load[node] = 0
        self.events.append(("answered", node.node_id))
        self.answered.set()
        return FindCoordinatorResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            error_code=ErrorCode.none,
            error_message=None,
            node_id=BrokerId(2),
            host="h",
            port=i32(9002),
        )


class GroupConnections:
    """The group's own client, whose requests may wait as long as a JoinGroup: what
    is sent on it is recorded, and never answered."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def load(self, node: Node) -> int | None:
        return None

    async def send(
        self, node: Node, body: object, *, request_timeout: float | None = None
    ) -> object:
        self.sent.append(type(body).__name__)
        await trio.sleep_forever()


async def test_a_consumer_asks_another_broker_for_its_coordinator_after_a_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Kafka's AbstractCoordinator.lookupCoordinator asks the least loaded broker each
    # time, with request.timeout.ms. A consumer that asked the first broker by id every
    # time would never find its coordinator while that broker is frozen, though the
    # others answer; one that asked on the group's client (whose requests may wait a
    # whole rebalance) would wait that long before asking another.
    config = ConsumerConfig.from_dict({"bootstrap.servers": "h:9001", "group.id": "g"})
    fetcher, coordinator = consumer_cores(config)
    fetcher.metadata.nodes = {n.node_id: n for n in NODES}
    brokers, group = Coordinators(), GroupConnections()
    shell = ConsumerShell(
        fetcher,
        coordinator,
        cast(NetworkClient, brokers),
        on_change=lambda: None,
        clock=trio.current_time,
        group_client=cast(NetworkClient, group),
    )
    with trio.fail_after(10 * REQUEST_TIMEOUT):  # virtual time
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.run)
            await brokers.answered.wait()
            nursery.cancel_scope.cancel()
    assert brokers.events == [
        ("FindCoordinator", 1),
        ("timed out", 1),
        ("FindCoordinator", 2),
        ("answered", 2),
    ]
    assert "FindCoordinatorRequest" not in group.sent
