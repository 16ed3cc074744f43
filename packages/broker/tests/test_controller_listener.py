"""The controller's own listener: the metadata log and broker lifecycle over the network.

A combined node with ``controller.listener.names=CONTROLLER`` serves ControllerApis on
that listener, apart from the brokers' (KIP-595, KIP-631). Guarantees tested, on a real
node and real sockets in this trio loop, every wait bounded by a deadline:

- a broker on another node that fetches ``__cluster_metadata`` over the network (the
  observer and its shell) arrives at exactly the controller's image, keeps following it
  as topics are created (the long-polling fetch wakes on the commit), and resumes from
  its own copy after a restart;
- BrokerRegistration and BrokerHeartbeat over the wire register a second broker and
  unfence it once its metadata offset has caught up; a request from another cluster is
  refused with INCONSISTENT_CLUSTER_ID;
- the controller listener advertises only the controller's APIs, and the broker's
  listener does not advertise the controller listener to clients.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.broker_heartbeat.v0.request import BrokerHeartbeatRequest
from kio.schema.broker_heartbeat.v0.response import BrokerHeartbeatResponse
from kio.schema.broker_registration.v0 import request as registration_v0
from kio.schema.broker_registration.v0.response import BrokerRegistrationResponse
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.create_topics.v7.response import (
    CreateTopicsResponse as CreateTopicsResponseV7,
)
from kio.schema.delete_topics.v6 import request as delete_topics_v6
from kio.schema.delete_topics.v6.response import (
    DeleteTopicsResponse as DeleteTopicsResponseV6,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13 import request as fetch_v13
from kio.schema.fetch.v13.response import FetchResponse
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32, i32Timedelta, i64, u16

from minikafka.broker import BrokerServer
from minikafka.broker._controller_apis import METADATA_TOPIC_ID, SUPPORTED
from minikafka.broker._controller_channel import ControllerLocator
from minikafka.broker._controller_raft_apis import RAFT_APIS
from minikafka.broker._metadata_fetcher import fetch_metadata_forever
from minikafka.broker.testing import request_body, running_broker, single_node_config
from minikafka.controller import (
    CreatableTopic,
    CreateTopicsRequest,
    MetadataImage,
    MetadataObserver,
    ObserverUpdate,
    replay_update,
)
from minikafka.controller.testing import image_state
from minikafka.net import NetworkClient, Node
from minikafka.net.testing import FaultProxy, wait_until

DEADLINE = 20.0
TWO_LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "controller.listener.names": "CONTROLLER",
}


class RemoteBroker:
    """What a broker on another node keeps: its observer and the image it replays."""

    def __init__(self, metadata_dir: Path) -> None:
        self.observer, snapshot = MetadataObserver.open(metadata_dir)
        self.image = MetadataImage()
        self.apply(
            ObserverUpdate(
                reset_to_snapshot=snapshot, snapshot_offset=self.observer.applied_offset
            )
        )

    def apply(self, update: ObserverUpdate) -> None:
        replayed = replay_update(self.image, update)
        if replayed is not None:
            self.image = replayed[1]


@asynccontextmanager
async def following(node: BrokerServer, remote: RemoteBroker) -> AsyncIterator[None]:
    host, port = node.controller_address()
    async with (
        NetworkClient.open(client_id="broker-2") as client,
        trio.open_nursery() as n,
    ):
        n.start_soon(
            lambda: fetch_metadata_forever(
                client,
                ControllerLocator((Node(node.config.node_id, host, port),)),
                remote.observer,
                remote.apply,
                node_id=2,
                cluster_id=node.cluster_id,
            )
        )
        yield
        n.cancel_scope.cancel()


async def create(node: BrokerServer, *names: str) -> None:
    request = CreateTopicsRequest(tuple(CreatableTopic(name, 3, 1) for name in names))
    await node.local_controller.submit(request)


async def test_a_remote_broker_follows_the_metadata_log(tmp_path: Path) -> None:
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with running_broker(config) as node:
        await create(node, "orders", "payments")
        remote = RemoteBroker(tmp_path / "node-2")
        async with following(node, remote):
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
            assert image_state(remote.image) == image_state(node.local_controller.image)
            # the long poll wakes on commit
            await create(node, "created-while-following")
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
            assert "created-while-following" in {
                t.name for t in remote.image.topics.values()
            }
            assert image_state(remote.image) == image_state(node.local_controller.image)
        remote.observer.close()
        # A restart resumes from the copy on disk: nothing before its end is fetched again.
        remote = RemoteBroker(tmp_path / "node-2")
        end = remote.observer.log.log_end_offset
        assert remote.observer.position().fetch_offset == end > 0
        await create(node, "while-restarting")
        async with following(node, remote):
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
        assert image_state(remote.image) == image_state(node.local_controller.image)
        remote.observer.close()


def _registration(
    cluster_id: str, broker_id: int
) -> registration_v0.BrokerRegistrationRequest:
    return registration_v0.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id),
        cluster_id=cluster_id,
        incarnation_id=uuid.uuid4(),
        listeners=(
            registration_v0.Listener(
                name="PLAINTEXT",
                host="127.0.0.1",
                port=u16(19092),
                security_protocol=i16(0),
            ),
        ),
        features=(),
        rack=None,
    )


async def test_a_broker_registers_and_is_unfenced_over_the_wire(tmp_path: Path) -> None:
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with (
        running_broker(config) as node,
        NetworkClient.open(client_id="b2") as client,
    ):
        host, port = node.controller_address()
        controller = Node(1, host, port)
        foreign = await client.send(
            controller, _registration("AAAAAAAAAAAAAAAAAAAAAA", 2)
        )
        assert isinstance(foreign, BrokerRegistrationResponse)
        assert foreign.error_code == ErrorCode.inconsistent_cluster_id
        registered = await client.send(controller, _registration(node.cluster_id, 2))
        assert isinstance(registered, BrokerRegistrationResponse)
        assert registered.error_code == ErrorCode.none
        assert node.local_controller.image.brokers[2].fenced  # fenced until caught up
        with trio.fail_after(DEADLINE):
            while True:
                beat = await client.send(
                    controller,
                    BrokerHeartbeatRequest(
                        broker_id=BrokerId(2),
                        broker_epoch=i64(registered.broker_epoch),
                        current_metadata_offset=i64(node.local_controller.image.offset),
                        want_fence=False,
                        want_shut_down=False,
                    ),
                )
                assert isinstance(beat, BrokerHeartbeatResponse)
                assert beat.error_code == ErrorCode.none
                if not beat.is_fenced:
                    break
                # Kafka's broker heartbeats again soon while fenced
                await trio.sleep(0.05)
        await wait_until(
            lambda: not node.local_controller.image.brokers[2].fenced, DEADLINE
        )


async def test_each_listener_advertises_its_own_apis(tmp_path: Path) -> None:
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    assert [lst.name for lst in config.advertised_listeners] == ["PLAINTEXT"]
    async with (
        running_broker(config) as node,
        NetworkClient.open(client_id="t") as client,
    ):
        request = ApiVersionsRequest(
            client_software_name="minikafka-test", client_software_version="1"
        )
        host, port = node.controller_address()
        answer = await client.send(Node(1, host, port), request)
        assert isinstance(answer, ApiVersionsResponse)
        served = {
            int(k.api_key): (int(k.min_version), int(k.max_version))
            for k in answer.api_keys
        }
        # The election APIs too: a lone voter's quorum is Raft's, as Kafka's.
        assert served == {**SUPPORTED, **RAFT_APIS}
        host, port = node.bound_address()
        answer = await client.send(Node(1, host, port), request)
        assert isinstance(answer, ApiVersionsResponse)
        broker_keys = {int(k.api_key) for k in answer.api_keys}
        assert not broker_keys & {59, 62, 63}  # no controller APIs there
        assert 0 in broker_keys  # Produce


async def test_each_client_listener_is_told_its_own_addresses(tmp_path: Path) -> None:
    # The broker caches a Metadata body per image: a client on the second listener must
    # not be sent the body built for a client on the first (it may have no route there).
    config = single_node_config(
        tmp_path / "node-1",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://localhost:0",
        },
    )
    metadata = request_body(
        3,
        8,
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    async with (
        running_broker(config) as node,
        NetworkClient.open(client_id="t") as client,
    ):
        told = {}
        for name in ("PLAINTEXT", "EXTERNAL", "PLAINTEXT"):
            host, port = node.socket_server.bound_address(name)
            answer = await client.send(Node(1, host, port), metadata)
            assert isinstance(answer, MetadataResponse)
            (broker,) = answer.brokers
            told[name] = (broker.host, int(broker.port))
        assert told == {
            "PLAINTEXT": (
                "127.0.0.1",
                node.socket_server.bound_address("PLAINTEXT")[1],
            ),
            "EXTERNAL": ("localhost", node.socket_server.bound_address("EXTERNAL")[1]),
        }


async def test_a_remote_broker_behind_the_log_start_loads_the_snapshot(
    tmp_path: Path,
) -> None:
    # A snapshot after every few records: the log before it is deleted, so a new broker
    # cannot fetch from offset 0 and must take the snapshot with FetchSnapshot.
    overrides = {
        **TWO_LISTENERS,
        "metadata.log.max.record.bytes.between.snapshots": "1",
    }
    config = single_node_config(tmp_path / "node-1", overrides)
    async with running_broker(config) as node:
        for name in ("a", "b", "c"):
            await create(node, name)
        await node.local_controller.wait_snapshot_written()
        assert node.local_controller.quorum.log.log_start_offset > 0
        remote = RemoteBroker(tmp_path / "node-2")
        async with following(node, remote):
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
        assert image_state(remote.image) == image_state(node.local_controller.image)
        snapshots = list(
            (tmp_path / "node-2" / "__cluster_metadata-0").glob("*.checkpoint")
        )
        assert snapshots, "the snapshot was fetched and kept"
        remote.observer.close()


async def test_the_controller_refuses_other_topics_and_other_epochs(
    tmp_path: Path,
) -> None:
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with (
        running_broker(config) as node,
        NetworkClient.open(client_id="t") as client,
    ):
        host, port = node.controller_address()
        controller = Node(1, host, port)
        epoch = node.local_controller.quorum.epoch

        def fetch(topic_id: uuid.UUID, leader_epoch: int) -> fetch_v13.FetchRequest:
            partition = fetch_v13.FetchPartition(
                partition=i32(0),
                current_leader_epoch=i32(leader_epoch),
                fetch_offset=i64(0),
                partition_max_bytes=i32(1 << 20),
            )
            return fetch_v13.FetchRequest(
                max_wait=i32Timedelta.parse(datetime.timedelta(0)),
                min_bytes=i32(1),
                topics=(
                    fetch_v13.FetchTopic(topic_id=topic_id, partitions=(partition,)),
                ),
                forgotten_topics_data=(),
                rack_id="",
            )

        other = await client.send(controller, fetch(uuid.uuid4(), -1))
        assert isinstance(other, FetchResponse)
        # only the metadata log here
        assert other.error_code == ErrorCode.invalid_request
        for asked, error in (
            (epoch + 1, ErrorCode.unknown_leader_epoch),
            (epoch - 1, ErrorCode.fenced_leader_epoch),
        ):
            answer = await client.send(controller, fetch(METADATA_TOPIC_ID, asked))
            assert isinstance(answer, FetchResponse)
            data = answer.responses[0].partitions[0]
            assert data.error_code == error
            # who leads, and since when
            assert data.current_leader.leader_epoch == epoch
        current = await client.send(controller, fetch(METADATA_TOPIC_ID, epoch))
        assert isinstance(current, FetchResponse)
        data = current.responses[0].partitions[0]
        assert data.error_code == ErrorCode.none
        assert data.records  # from offset 0: the bootstrap records at least


async def test_a_remote_broker_rides_out_a_stalled_and_a_cut_link(
    tmp_path: Path,
) -> None:
    # The metadata fetch loop through the fault proxy: while the link is stalled (a
    # partition: nothing delivered, nothing closed) the copy stops advancing; healed, it
    # catches up; cut (reset), the loop reconnects and catches up. Guarantee: the remote
    # image never holds anything but a committed prefix of the controller's log.
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with running_broker(config) as node, trio.open_nursery() as nursery:
        host, port = node.controller_address()
        proxy = FaultProxy(host, port)
        await nursery.start(proxy.run)
        remote = RemoteBroker(tmp_path / "node-2")
        async with NetworkClient.open(client_id="broker-2") as client:
            nursery.start_soon(
                lambda: fetch_metadata_forever(
                    client,
                    ControllerLocator((Node(1, "127.0.0.1", proxy.port),)),
                    remote.observer,
                    remote.apply,
                    node_id=2,
                    cluster_id=node.cluster_id,
                    backoff=0.05,
                )
            )
            await create(node, "first")
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
            proxy.stall()
            await create(node, "while-stalled")
            stalled_at = remote.image.offset
            with trio.move_on_after(1.0):  # a window in which nothing may arrive
                await wait_until(lambda: remote.image.offset != stalled_at, DEADLINE)
            assert remote.image.offset == stalled_at
            assert "while-stalled" not in {t.name for t in remote.image.topics.values()}
            proxy.heal()
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
            proxy.cut()
            await create(node, "after-the-cut")
            await wait_until(
                lambda: remote.image.offset == node.local_controller.image.offset,
                DEADLINE,
            )
            assert image_state(remote.image) == image_state(node.local_controller.image)
            assert proxy.connections_accepted >= 2  # the loop reconnected after the cut
            nursery.cancel_scope.cancel()
        remote.observer.close()


async def test_the_controller_listener_creates_and_deletes_topics_at_every_version(
    tmp_path: Path,
) -> None:
    """CreateTopics up to v7 describes the created topic's configs (KIP-525) from the
    controller's image and this node's defaults, as the broker's listener does;
    DeleteTopics v6 deletes a topic named by its id (KIP-516) on the controller
    listener too."""
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with (
        running_broker(config) as node,
        NetworkClient.open(client_id="t") as client,
    ):
        host, port = node.controller_address()
        controller = Node(1, host, port)
        create = create_topics_v7.CreateTopicsRequest(
            topics=(
                create_topics_v7.CreatableTopic(
                    name=TopicName("made-by-the-controller"),
                    num_partitions=i32(2),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(
                        create_topics_v7.CreatableTopicConfig(
                            name="retention.ms", value="60000"
                        ),
                    ),
                ),
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
            validate_only=False,
        )
        created = await client.send(controller, create)
        assert isinstance(created, CreateTopicsResponseV7)
        [topic] = created.topics
        assert topic.error_code is ErrorCode.none
        assert (int(topic.num_partitions), int(topic.replication_factor)) == (2, 1)
        configs = {c.name: c.value for c in topic.configs or ()}
        assert configs["retention.ms"] == "60000"
        assert configs["segment.bytes"] == str(config.log.segment_bytes)
        assert topic.topic_id is not None
        await wait_until(
            lambda: node.metadata_cache.topic("made-by-the-controller") is not None,
            DEADLINE,
        )
        delete = delete_topics_v6.DeleteTopicsRequest(
            topics=(
                delete_topics_v6.DeleteTopicState(name=None, topic_id=topic.topic_id),
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        )
        deleted = await client.send(controller, delete)
        assert isinstance(deleted, DeleteTopicsResponseV6)
        assert [(r.name, r.error_code) for r in deleted.responses] == [
            ("made-by-the-controller", ErrorCode.none)
        ]
        await wait_until(
            lambda: node.metadata_cache.topic("made-by-the-controller") is None,
            DEADLINE,
        )
