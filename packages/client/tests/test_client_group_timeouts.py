"""How long a consumer's group requests wait: a JoinGroup up to the rebalance timeout
and a little more (the coordinator answers it only when the whole group has rejoined),
every other group request (Heartbeat, SyncGroup, OffsetFetch, OffsetCommit, LeaveGroup)
``request.timeout.ms``, as Kafka's ``AbstractCoordinator`` gives them. The guarantee: a
coordinator that stops answering is noticed after ``request.timeout.ms`` and looked up
again, not after ``max.poll.interval.ms`` and more; a slow rebalance still completes.

The shell runs against a fake coordinator in virtual time (``autojump_clock``); the fake
fails a request past the timeout it was sent with, as ``NetworkClient`` does."""

from __future__ import annotations

import datetime
from typing import cast

import trio
import trio.testing
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.join_group.v5.request import JoinGroupRequest
from kio.schema.join_group.v5.response import JoinGroupResponse
from kio.schema.sync_group.v3.request import SyncGroupRequest
from kio.schema.sync_group.v3.response import SyncGroupResponse
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i32Timedelta

from minikafka.client import ConsumerConfig
from minikafka.client._consumer import consumer_cores, subscribe_cores
from minikafka.client._consumer_shell import ConsumerShell
from minikafka.coordination import Assignment, encode_assignment
from minikafka.net import NetworkClient, Node, RequestTimedOut

NODES = [Node(i, "h", 9000 + i) for i in (1, 2, 3)]
REQUEST_TIMEOUT_MS = 30_000  # the consumer's request.timeout.ms default
MAX_POLL_INTERVAL_MS = 300_000  # max.poll.interval.ms: the rebalance timeout
JOIN_WAIT = 100.0  # seconds the coordinator holds the JoinGroup: a slow rebalance
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


class Cluster:
    """Brokers 1-3 on the consumer's two clients: FindCoordinator (on the fetch client,
    to any broker) names broker 2; on the group's client, broker 2 holds the JoinGroup
    :data:`JOIN_WAIT` seconds, answers the SyncGroup, then freezes: every later request
    is held until the timeout it was sent with, then fails and closes the connection.
    The metadata loop's requests are never answered. :attr:`events` is what happened,
    in order, with the timeout each request had."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float | None]] = []
        self.frozen = False
        self.frozen_at = self.found_again_at = 0.0
        self.found_again = trio.Event()
        self.request_timeout = REQUEST_TIMEOUT_MS / 1000

    def load(self, node: Node) -> int | None:
        return 0

    async def send(
        self, node: Node, body: object, *, request_timeout: float | None = None
    ) -> object:
        name = type(body).__name__.removesuffix("Request")
        if name == "Metadata":  # the metadata loop's: not the group's business
            await trio.sleep_forever()
        waits = self.request_timeout if request_timeout is None else request_timeout
        self.events.append((name, waits))
        if isinstance(body, FindCoordinatorRequest):
            if ("timed out", None) in self.events and not self.found_again.is_set():
                self.found_again_at = trio.current_time()
                self.found_again.set()
            return FindCoordinatorResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.none,
                error_message=None,
                node_id=BrokerId(2),
                host="h",
                port=i32(9002),
            )
        with trio.move_on_after(waits):
            return await self._answer(body)
        self.events.append(("timed out", None))
        raise RequestTimedOut(f"{name} to the coordinator timed out after {waits}s")

    async def _answer(self, body: object) -> object:
        if isinstance(body, JoinGroupRequest) and not self.frozen:
            await trio.sleep(JOIN_WAIT)
            self.events.append(("answered", None))
            return JoinGroupResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.none,
                generation_id=i32(1),
                protocol_name="range",
                leader="leader",
                member_id="me",
                members=(),
            )
        if isinstance(body, SyncGroupRequest) and not self.frozen:
            self.frozen = True  # the coordinator freezes from here on
            self.frozen_at = trio.current_time()
            self.events.append(("answered", None))
            return SyncGroupResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.none,
                assignment=encode_assignment(Assignment(())),
            )
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_frozen_coordinator_is_looked_up_again_after_the_request_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The member joins (its JoinGroup held 100 s, longer than request.timeout.ms but
    # within the rebalance timeout), syncs, then its coordinator stops answering. Its
    # next request (a heartbeat) fails after request.timeout.ms, and the member asks
    # for its coordinator again: the group's requests do not wait the JoinGroup's
    # 305 s (max.poll.interval.ms + 5 s) to notice.
    config = ConsumerConfig.from_dict(
        {
            "bootstrap.servers": "h:9001",
            "group.id": "g",
            "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
        }
    )
    fetcher, coordinator = consumer_cores(config)
    fetcher.metadata.nodes = {n.node_id: n for n in NODES}
    subscribe_cores(fetcher, coordinator, ["t"])
    cluster = Cluster()
    shell = ConsumerShell(
        fetcher,
        coordinator,
        cast(NetworkClient, cluster),
        on_change=lambda: None,
        clock=trio.current_time,
        group_client=cast(NetworkClient, cluster),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(shell.run)
        await cluster.found_again.wait()
        nursery.cancel_scope.cancel()
    join_timeout = (MAX_POLL_INTERVAL_MS + 5_000) / 1000
    request_timeout = REQUEST_TIMEOUT_MS / 1000
    group_requests = [e for e in cluster.events if e[0] != "FindCoordinator"]
    assert group_requests[:5] == [
        ("JoinGroup", join_timeout),  # waits up to the rebalance timeout, and more
        ("answered", None),  # after JOIN_WAIT, past request.timeout.ms
        ("SyncGroup", request_timeout),
        ("answered", None),
        ("Heartbeat", request_timeout),
    ]
    lookup = cluster.events.index(("timed out", None)) + 1
    assert cluster.events[lookup] == ("FindCoordinator", request_timeout)
    # In virtual time: the heartbeat interval, one request timeout and the group
    # loop's wake-up after the freeze, well within max.poll.interval.ms.
    assert cluster.found_again_at - cluster.frozen_at < 2 * request_timeout
    # Every request after the JoinGroup waited request.timeout.ms at most.
    assert all(
        waits == request_timeout
        for name, waits in cluster.events
        if waits is not None and name != "JoinGroup"
    )
