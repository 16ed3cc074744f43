"""A real ZooKeeper (Debian's package) driven from trio: what ZooKeeper mode rests on.

- the server starts on a port of its own and answers ``ruok``;
- an ephemeral znode lives exactly as long as its session (how Kafka knows a broker or
  the controller is gone);
- creating a znode that exists fails (how a controller election is won by one broker);
- a conditional write over a stale version fails (KIP-497's ISR updates);
- a watch fires once, on the client's single event channel, and the event names the path;
- a server that goes away is seen as a suspended session;
- a request that loses its connection is run again once connected, in the same session,
  and waits no longer than the session's timeout (Kafka's retryRequestsUntilConnected).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest
import trio
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from minikafka.zk import (
    SESSION_SUSPENDED,
    BadVersionError,
    BrokerRegistration,
    Check,
    Create,
    Delete,
    Elected,
    LeaderIsrAndControllerEpoch,
    Lost,
    NodeExistsError,
    SessionChanged,
    TopicAssignment,
    WatchFired,
    ZkClient,
    ZkEvent,
    ZooKeeperServer,
    active_controller,
    controller_epoch,
    encode_topic_config,
    read_cluster,
    register_broker,
    retry_until_connected,
    try_to_elect,
)
from minikafka.zk._client import _connect_string
from minikafka.zk.testing import drop_connection, needs_zookeeper

pytestmark = [
    pytest.mark.external,
    needs_zookeeper,
]

DEADLINE = 30.0


@asynccontextmanager
async def connected(server: ZooKeeperServer) -> AsyncIterator[ZkClient]:
    client = ZkClient(server.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=DEADLINE)
    try:
        yield client
    finally:
        await client.close()


async def next_event(client: ZkClient, kind: type[ZkEvent], state: str = "") -> ZkEvent:
    """The next event of ``kind`` (a SessionChanged to ``state``, if given)."""
    with trio.fail_after(DEADLINE):
        async for event in client.events:
            if isinstance(event, kind) and (
                not state
                or (isinstance(event, SessionChanged) and event.state == state)
            ):
                return event
    raise AssertionError("the event channel closed")


async def test_an_ephemeral_znode_lives_as_long_as_its_session(
    zookeeper: ZooKeeperServer,
) -> None:
    assert zookeeper.four_letters("ruok") == "imok"
    async with connected(zookeeper) as watcher:
        await watcher.ensure_path("/brokers/ids")
        async with connected(zookeeper) as broker:
            await broker.create("/brokers/ids/1", b"{}", ephemeral=True)
            _, stat = await watcher.get("/brokers/ids/1")
            assert stat.ephemeral_owner == broker.session_id
            assert await watcher.get_children("/brokers/ids", watch=True) == ["1"]
        # The session closed: ZooKeeper removed the znode and told the watcher.
        fired = await next_event(watcher, WatchFired)
        assert fired == WatchFired("CHILD", "/brokers/ids")
        assert await watcher.get_children("/brokers/ids") == []


async def test_the_first_to_create_wins_and_stale_writes_fail(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as first, connected(zookeeper) as second:
        await first.create("/controller", b'{"brokerid":1}', ephemeral=True)
        with pytest.raises(NodeExistsError):
            await second.create("/controller", b'{"brokerid":2}', ephemeral=True)
        await first.create("/state", b"v0")
        _, stat = await first.get("/state", watch=True)
        await second.set("/state", b"v1", version=stat.version)
        with pytest.raises(BadVersionError):  # first read version 0; it is 1 now
            await first.set("/state", b"v1'", version=stat.version)
        assert await next_event(first, WatchFired) == WatchFired("CHANGED", "/state")
        data, _ = await first.get("/state")
        assert data == b"v1"


async def test_a_transaction_makes_parents_and_deletes_whole_subtrees_under_one_check(
    zookeeper: ZooKeeperServer,
) -> None:
    """How the controller writes: every write of one event in one transaction, guarded by
    a check of ``/controller_epoch``'s version; a partition's state znode created with
    its parents, a deleted topic's znode removed with everything under it."""
    state = "/brokers/topics/t/partitions/0/state"
    async with connected(zookeeper) as client:
        await client.create("/controller_epoch", b"1")
        await client.transaction(
            [Check("/controller_epoch", 0), Create(state, b"{}", parents=True)]
        )
        assert await client.get_children("/brokers/topics/t/partitions") == ["0"]
        await client.set("/controller_epoch", b"2")  # another controller's epoch
        with pytest.raises(BadVersionError):
            await client.transaction(
                [
                    Check("/controller_epoch", 0),
                    Delete("/brokers/topics/t", recursive=True),
                ]
            )
        # the stale controller deleted nothing
        assert await client.exists(state) is not None
        await client.transaction(
            [Check("/controller_epoch", 1), Delete("/brokers/topics/t", recursive=True)]
        )
        assert await client.exists("/brokers/topics/t") is None
        assert await client.get_children("/brokers/topics") == []


async def test_a_server_going_away_suspends_the_session(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as client:
        zookeeper.kill()
        # The connection is gone; the session may survive (it has not timed out), so
        # ZooKeeper mode's owner keeps its role until it hears LOST.
        suspended = await next_event(client, SessionChanged, SESSION_SUSPENDED)
        assert suspended == SessionChanged(SESSION_SUSPENDED)


async def test_a_request_that_loses_its_connection_is_run_again_once_connected(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as client:
        sessions: list[int] = []

        async def request() -> object:
            sessions.append(client.session)
            if len(sessions) == 1:
                # in flight when the connection drops
                drop_connection(client)
                await next_event(client, SessionChanged, SESSION_SUSPENDED)
                raise ConnectionLoss()
            return await client.exists("/")

        assert await retry_until_connected(client, request) is not None
        assert sessions == [0, 0]


async def test_a_request_waits_for_its_connection_no_longer_than_the_session(
    zookeeper: ZooKeeperServer,
) -> None:
    """ZooKeeper expires a session it has not heard from for its timeout: a request
    that has waited that long for a connection gives up, as the session's end."""
    async with connected(zookeeper) as client:
        zookeeper.kill()
        await next_event(client, SessionChanged, SESSION_SUSPENDED)
        started = trio.current_time()
        with trio.fail_after(DEADLINE), pytest.raises(SessionExpiredError):
            await retry_until_connected(client, lambda: client.exists("/"))
        assert trio.current_time() - started >= client.session_timeout * 0.9


def test_a_connect_waits_a_third_of_the_session_timeout_for_one_server() -> None:
    """Guarantee: a restarting server that takes the connection and never answers
    holds the client a third of the session timeout, not all of it (kazoo divides
    the timeout by the servers listed), so the session it resumes has not expired by
    the time it asks again; an ensemble of three or more and a chroot are kept."""
    assert _connect_string("127.0.0.1:2181") == ",".join(["127.0.0.1:2181"] * 3)
    assert _connect_string("a:1, b:2") == "a:1,b:2,a:1,b:2"
    assert _connect_string("a:1,b:2,c:3/kafka") == "a:1,b:2,c:3/kafka"
    assert _connect_string("a:1/kafka") == "a:1,a:1,a:1/kafka"


async def test_one_controller_per_epoch_and_the_next_after_a_session_ends(
    zookeeper: ZooKeeperServer,
) -> None:
    """Seed 001's election: two brokers race for /controller; exactly one wins, in epoch
    1; when its session ends the other wins epoch 2 (it heard of the deletion through its
    watch); the epoch never goes back."""
    async with connected(zookeeper) as two:
        async with connected(zookeeper) as one:
            outcomes = [await try_to_elect(one, 1), await try_to_elect(two, 2)]
            assert outcomes == [Elected(1, 1), Lost(1)]
            assert await active_controller(two, watch=True) == 1
        # Broker 1's session ended (a crash would end it at its timeout): /controller is
        # gone, the watch says so, and broker 2 wins the next epoch.
        assert await next_event(two, WatchFired) == WatchFired("DELETED", "/controller")
        assert await try_to_elect(two, 2) == Elected(2, 2)
        assert await controller_epoch(two) == 2
        assert await active_controller(two) == 2


async def test_a_broker_id_is_registered_once(zookeeper: ZooKeeperServer) -> None:
    registration = BrokerRegistration(
        3, ("PLAINTEXT://127.0.0.1:9094",), {"PLAINTEXT": "PLAINTEXT"}
    )
    async with connected(zookeeper) as broker, connected(zookeeper) as impostor:
        await register_broker(broker, registration)
        await register_broker(broker, registration)  # its own, again: fine (a retry)
        with pytest.raises(NodeExistsError):
            await register_broker(impostor, registration)
        data, _ = await impostor.get("/brokers/ids/3")
        assert BrokerRegistration.decode(3, data).endpoints == registration.endpoints


async def test_a_new_controller_reads_the_cluster_and_watches_it(
    zookeeper: ZooKeeperServer,
) -> None:
    """What the elected controller reads (seed 001: brokers, assignments, partition
    states, deletions) and the watches that bring it every later change."""
    async with connected(zookeeper) as admin, connected(zookeeper) as controller:
        registration = BrokerRegistration(
            1, ("PLAINTEXT://127.0.0.1:9092",), {"PLAINTEXT": "PLAINTEXT"}
        )
        await register_broker(admin, registration)
        await admin.ensure_path("/brokers/topics")
        await admin.create(
            "/brokers/topics/orders", TopicAssignment({0: (1,), 1: (1,)}).encode()
        )
        state = LeaderIsrAndControllerEpoch(1, 0, (1,), 1)
        await admin.create(
            "/brokers/topics/orders/partitions/0/state", state.encode(), makepath=True
        )
        overrides = {"unclean.leader.election.enable": "true"}
        await admin.create(
            "/config/topics/orders", encode_topic_config(overrides), makepath=True
        )
        cluster = await read_cluster(controller)
        assert cluster.brokers[1].registration == attrs.evolve(
            registration, timestamp_ms=cluster.brokers[1].registration.timestamp_ms
        )
        assert cluster.brokers[1].epoch > 0  # the registration's czxid
        assert cluster.topics["orders"].partitions == {0: (1,), 1: (1,)}
        assert cluster.partitions == {("orders", 0): (state, 0), ("orders", 1): None}
        assert cluster.deleting == frozenset()
        assert cluster.configs == {"orders": overrides}  # what unclean election reads
        # A topic created after the read reaches the controller as a watch on the list.
        await admin.create(
            "/brokers/topics/payments", TopicAssignment({0: (1,)}).encode()
        )
        assert await next_event(controller, WatchFired) == WatchFired(
            "CHILD", "/brokers/topics"
        )
