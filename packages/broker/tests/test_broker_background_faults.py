"""A broker whose background work fails keeps serving (Kafka's non-fatal fault handlers).

Each test runs real brokers in its own trio loop and injects an exception (a method made
to raise, for one partition or once) into the path under test:

- KRaft's metadata publisher: a partition that fails to become leader is offline and the
  others lead; a delta that fails to apply is logged ("Error publishing broker metadata
  at offset N") and counted, and the next delta is applied; a broker-only node's fetch
  loop survives an answer that does not decode, and its replay survives a bad update;
- the heartbeat loop survives a heartbeat that raises;
- ZooKeeper mode: a LeaderAndIsr whose partition fails reports it KAFKA_STORAGE_ERROR,
  an UpdateMetadata that raises is answered UNKNOWN_SERVER_ERROR, a ZooKeeper event that
  raises does not stop the next one (no ZooKeeper needed: the server is not run);
- KafkaApis' parked requests: a JoinGroup or OffsetCommit whose handler raises is
  answered UNKNOWN_SERVER_ERROR on a connection that stays up;
- the group coordinator's ``__consumer_offsets`` refuses to load from a log it lacks.

Every failure is logged at ERROR once, checked with ``caplog``.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from kazoo.exceptions import SessionExpiredError
from kio.schema.errors import ErrorCode

import minikafka.broker._apis as apis_module
import minikafka.broker._metadata_fetcher as fetcher_module
import minikafka.broker._metadata_publisher as publisher_module
import minikafka.broker._server as server_module
import minikafka.broker.zk._server as zk_server_module
from minikafka.broker import BrokerServer
from minikafka.broker._config import KafkaConfig
from minikafka.broker._controller_channel import ControllerLocator
from minikafka.broker._controller_node import ControllerNode
from minikafka.broker._meta_properties import format_storage, new_cluster_id
from minikafka.broker._offsets_topic import ReplicaInternalTopic
from minikafka.broker.testing import (
    WireClient,
    element,
    free_ports,
    request_body,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.broker.zk import ZkBrokerServer
from minikafka.common import Acks, FatalFaultError, TopicPartition
from minikafka.controller import (
    BrokerHeartbeatRequest,
    CommittedDivergenceError,
    ConfigResourceType,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataDelta,
    QuorumControllerShell,
)
from minikafka.controller.zk import (
    LeaderAndIsr,
    LeaderAndIsrPartition,
    UpdateMetadata,
)
from minikafka.log.testing import value_batch
from minikafka.net import NetworkClient, Node, build
from minikafka.net.testing import wait_until
from minikafka.replication import (
    Partition,
    PartitionState,
    ProducePartitionResult,
    ReplicaManagerShell,
    ReplicationError,
)
from minikafka.zk import WatchFired

DEADLINE = 30.0
JOIN_GROUP, OFFSET_COMMIT, API_VERSIONS = 11, 8, 18


def errors_logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(
        1
        for r in caplog.records
        if r.levelno >= logging.ERROR and text in r.getMessage()
    )


async def create_topic(server: BrokerServer, name: str, partitions: int = 1) -> None:
    """CreateTopics through the controller in this process (combined mode)."""
    response = await server.local_controller.submit(
        CreateTopicsRequest((CreatableTopic(name, partitions, 1),))
    )
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code is ErrorCode.none


def produce(server: BrokerServer | ZkBrokerServer, tp: TopicPartition) -> ErrorCode:
    """One acks=1 batch through the broker's ReplicaManager: its error code."""
    answers: list[dict[TopicPartition, ProducePartitionResult]] = []
    server.replica_manager.append_records(
        30_000, Acks.LEADER, {tp: value_batch(1)}, answers.append
    )
    [answer] = answers
    return answer[tp].error_code


@asynccontextmanager
async def combined(
    tmp_path: Path, overrides: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[BrokerServer, WireClient]]:
    """A single-node broker and one connection to it."""
    async with running_broker(single_node_config(tmp_path, overrides)) as server:
        host, port = server.bound_address()
        async with NetworkClient.open(client_id="faults") as network:
            yield server, WireClient(network, Node(-1, host, port), DEADLINE)


async def still_serves(client: WireClient) -> None:
    """An ApiVersions request is answered: the broker is up and serving."""
    response = await client.call(request_body(API_VERSIONS, 0))
    assert response.error_code is ErrorCode.none


# --- KRaft: the metadata publisher ------------------------------------------------------------


async def test_a_partition_that_fails_to_become_leader_is_offline_and_the_rest_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Partition.make_leader

    def make_leader(self: Partition, state: PartitionState, now: float) -> bool:
        if self.topic_partition.topic == "bad":
            raise RuntimeError("a bug in becoming the leader of bad")
        return real(self, state, now)

    monkeypatch.setattr(Partition, "make_leader", make_leader)
    async with combined(tmp_path) as (server, client):
        await create_topic(server, "bad", partitions=2)
        await create_topic(server, "good")
        good, bad = TopicPartition("good", 0), TopicPartition("bad", 1)
        await wait_until(lambda: server.replica_manager.get_partition(good) is not None)
        assert produce(server, good) is ErrorCode.none
        assert produce(server, bad) is ErrorCode.kafka_storage_error
        assert server.replica_manager.is_offline(bad)
        await still_serves(client)
    # Handled per partition by the ReplicaManager: not a failed delta.
    assert server.metadata_faults.count == 0
    assert errors_logged(caplog, "bad-0 is offline until restart") == 1
    assert errors_logged(caplog, "bad-1 is offline until restart") == 1


async def test_a_delta_that_fails_to_apply_is_logged_counted_and_the_next_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = MetadataDelta.local_changes
    failures = [RuntimeError("a bug in one delta")]

    def local_changes(self: MetadataDelta, broker_id: int) -> Any:
        changes = real(self, broker_id)
        if failures and any(tp.topic == "first" for tp in changes.leaders):
            raise failures.pop()
        return changes

    async with combined(tmp_path) as (server, client):
        monkeypatch.setattr(MetadataDelta, "local_changes", local_changes)
        await create_topic(server, "first")
        await create_topic(server, "second")
        second = TopicPartition("second", 0)
        await wait_until(
            lambda: server.replica_manager.get_partition(second) is not None
        )
        assert produce(server, second) is ErrorCode.none
        # The failed delta's partition was never made a replica here: reported as such.
        assert produce(server, TopicPartition("first", 0)) is (
            ErrorCode.unknown_topic_or_partition
        )
        assert server.metadata_cache.topic("first") is not None  # the image advanced
        await still_serves(client)
    assert server.metadata_faults.count == 1
    assert errors_logged(caplog, "Error publishing broker metadata at offset") == 1
    assert "a bug in one delta" in caplog.text


async def test_a_heartbeat_that_raises_is_sent_again_at_the_next_interval(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = QuorumControllerShell.submit
    heartbeats: list[str] = []

    async def submit(self: QuorumControllerShell, request: Any) -> Any:
        if isinstance(request, BrokerHeartbeatRequest):
            if 1 <= len(heartbeats) <= 3:  # three failures in a row, the same bug
                heartbeats.append("failed")
                raise RuntimeError("a bug in the heartbeat")
            heartbeats.append("sent")
        return await real(self, request)

    monkeypatch.setattr(QuorumControllerShell, "submit", submit)
    overrides = {"broker.heartbeat.interval.ms": "50"}
    async with combined(tmp_path, overrides) as (_, client):
        await wait_until(lambda: heartbeats.count("sent") >= 3, DEADLINE)
        await still_serves(client)
    assert heartbeats[:5] == ["sent", "failed", "failed", "failed", "sent"]
    assert errors_logged(caplog, "Error sending a heartbeat") == 1


# --- KRaft: a broker-only node's metadata fetch -----------------------------------------------


@asynccontextmanager
async def controller_and_broker(
    tmp_path: Path,
) -> AsyncIterator[tuple[ControllerNode, BrokerServer]]:
    """A controller-only node 0 and a broker-only node 1, both in this trio loop."""
    [port] = free_ports(1)
    cluster_id = new_cluster_id()
    common = {
        "controller.quorum.voters": f"0@127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "broker.heartbeat.interval.ms": "200",
        "controlled.shutdown.timeout.ms": "5000",
    }
    configs = [
        KafkaConfig.from_properties(
            {
                **common,
                "node.id": "0",
                "process.roles": "controller",
                "listeners": f"CONTROLLER://127.0.0.1:{port}",
                "log.dirs": str(tmp_path / "controller"),
            }
        ),
        KafkaConfig.from_properties(
            {
                **common,
                "node.id": "1",
                "process.roles": "broker",
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(tmp_path / "broker"),
            }
        ),
    ]
    for node, config in enumerate(configs):
        format_storage(
            config.broker.log_dirs, config.metadata_log_dir, cluster_id, node
        )
    controller = ControllerNode.open(configs[0])
    broker = BrokerServer.open(configs[1])
    async with trio.open_nursery() as nursery:
        await nursery.start(controller.run)
        with trio.fail_after(DEADLINE):
            await nursery.start(broker.run)
        try:
            yield controller, broker
        finally:
            await broker.shutdown()
            await controller.shutdown()


async def create_remote_topic(broker: BrokerServer, name: str) -> TopicPartition:
    """CreateTopics forwarded to the controller; returns partition 0 once this broker
    leads it (so its metadata fetch and replay work)."""
    response = await broker.channel.submit(
        CreateTopicsRequest((CreatableTopic(name, 1, 1),))
    )
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code is ErrorCode.none
    tp = TopicPartition(name, 0)
    await wait_until(lambda: broker.replica_manager.get_partition(tp) is not None, 20)
    return tp


async def test_the_metadata_fetch_survives_an_answer_that_does_not_decode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fetcher_module.fetch_once
    failures: list[Exception] = []

    async def fetch_once(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return await real(*args, **kwargs)

    monkeypatch.setattr(fetcher_module, "fetch_once", fetch_once)
    async with controller_and_broker(tmp_path) as (_, broker):
        # The same undecodable answer twice: logged once, fetched again each time.
        failures += [ValueError("an answer that does not decode")] * 2
        await wait_until(lambda: not failures, DEADLINE)
        tp = await create_remote_topic(broker, "after")
        assert produce(broker, tp) is ErrorCode.none
    assert errors_logged(caplog, "Error fetching the metadata log") == 1
    assert broker.metadata_faults.count == 0


async def test_a_record_that_fails_to_replay_is_skipped_and_the_others_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FaultyDelta(MetadataDelta):
        """The broker's deltas (the controller in this process keeps its own)."""

        def replay(self, record: Any, offset: int | None = None) -> None:
            if getattr(record, "name", None) == "lost":
                raise RuntimeError("a record this broker cannot replay")
            super().replay(record, offset)

    async with controller_and_broker(tmp_path) as (_, broker):
        monkeypatch.setattr(publisher_module, "MetadataDelta", FaultyDelta)
        await broker.channel.submit(
            CreateTopicsRequest((CreatableTopic("lost", 1, 1),))
        )
        tp = await create_remote_topic(broker, "after")
        assert produce(broker, tp) is ErrorCode.none
        # The topic's record was skipped, and so were the records about it that came
        # later (no such topic here): each logged and counted.
        assert broker.metadata_cache.topic("lost") is None
        assert broker.metadata_faults.count >= 2
        assert errors_logged(
            caplog, "Error loading metadata log record from offset"
        ) == (broker.metadata_faults.count)
        assert "a record this broker cannot replay" in caplog.text


# --- ZooKeeper mode: the controller's requests and ZooKeeper's events --------------------------


TOPIC_ID = uuid.UUID(int=7)


def zk_broker(tmp_path: Path) -> ZkBrokerServer:
    """A ZooKeeper-mode broker that is never run: its request handlers are called
    directly, as its KafkaApis would (ZooKeeper itself is never reached)."""
    config = KafkaConfig.from_properties(
        {
            "zookeeper.connect": "127.0.0.1:1",
            "broker.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "zk-broker"),
        }
    )
    server = ZkBrokerServer.open(config)
    # The topic's configs are known: LeaderAndIsr need not read them from ZooKeeper.
    image = server.metadata.image
    configs = {**image.configs, (ConfigResourceType.TOPIC, "t"): {}}
    server.metadata.image = attrs.evolve(image, configs=configs)
    return server


def lead(*partitions: int) -> LeaderAndIsr:
    return LeaderAndIsr(
        0,
        1,
        -1,
        tuple(
            LeaderAndIsrPartition("t", TOPIC_ID, p, 1, 1, 0, (1,), 0, (1,), is_new=True)
            for p in partitions
        ),
        (),
    )


def partition_errors(response: Any) -> dict[int, ErrorCode]:
    return {
        int(p.partition_index): p.error_code
        for t in response.topics
        for p in t.partition_errors
    }


async def test_zk_leader_and_isr_reports_the_partition_that_failed_and_leads_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = zk_broker(tmp_path)
    real = Partition.make_leader

    def make_leader(self: Partition, state: PartitionState, now: float) -> bool:
        if self.topic_partition.partition == 1:
            raise RuntimeError("a bug in leading t-1")
        return real(self, state, now)

    monkeypatch.setattr(Partition, "make_leader", make_leader)
    response = await server.on_leader_and_isr(lead(0, 1))
    assert response.error_code is ErrorCode.none
    assert partition_errors(response) == {
        0: ErrorCode.none,
        1: ErrorCode.kafka_storage_error,
    }
    assert produce(server, TopicPartition("t", 0)) is ErrorCode.none
    assert errors_logged(caplog, "t-1 is offline until restart") == 1


async def test_zk_requests_that_raise_are_answered_unknown_server_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = zk_broker(tmp_path)

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in the broker's metadata")

    monkeypatch.setattr(type(server.metadata), "update_metadata", broken)
    monkeypatch.setattr(type(server.metadata), "leader_and_isr", broken)
    update = UpdateMetadata(0, 1, -1, (), ())
    assert server.on_update_metadata(update).error_code is (
        ErrorCode.unknown_server_error
    )
    response = await server.on_leader_and_isr(lead(0))
    assert response.error_code is ErrorCode.unknown_server_error
    monkeypatch.undo()
    response = await server.on_leader_and_isr(lead(0))
    assert response.error_code is ErrorCode.none  # and the next one is applied
    assert server.metadata_faults.count == 2
    assert errors_logged(caplog, "Error applying UpdateMetadata") == 1
    assert errors_logged(caplog, "Error applying LeaderAndIsr") == 1


@attrs.define
class Events:
    """What ``_zookeeper_events`` reads of the ZkClient: its events."""

    events: trio.MemoryReceiveChannel[WatchFired]


async def test_a_zookeeper_event_that_raises_does_not_stop_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = zk_broker(tmp_path)
    handled: list[str] = []

    def watch_fired(_self: object, event: WatchFired) -> None:
        handled.append(event.path)
        if event.path != "/brokers/ids":
            raise RuntimeError("a bug in a watch")

    monkeypatch.setattr(type(server.shell), "watch_fired", watch_fired)
    send, receive = trio.open_memory_channel[WatchFired](10)
    monkeypatch.setattr(server, "zk", Events(receive))
    for path in ("/controller", "/admin/reassign_partitions", "/brokers/ids"):
        send.send_nowait(WatchFired("CHANGED", path))
    send.close()
    await server._zookeeper_events()
    assert handled == ["/controller", "/admin/reassign_partitions", "/brokers/ids"]
    assert server.metadata_faults.count == 2  # the same failure twice: logged once
    assert errors_logged(caplog, "Error handling the ZooKeeper event") == 1


# --- KafkaApis: a parked request whose handler raises -----------------------------------------


def join_body(group: str) -> Any:
    cls = request_class(JOIN_GROUP, 5)
    protocol_cls = element(cls, "protocols")
    return build(
        cls,
        group_id=group,
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id="",
        group_instance_id="static-1",
        protocol_type="consumer",
        protocols=(build(protocol_cls, name="range", metadata=b""),),
    )


def commit_body(group: str) -> Any:
    cls = request_class(OFFSET_COMMIT, 7)
    topic_cls = element(cls, "topics")
    partition_cls = element(topic_cls, "partitions")
    return build(
        cls,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(
            build(
                topic_cls,
                name="orders",
                partitions=tuple(
                    build(
                        partition_cls,
                        partition_index=p,
                        committed_offset=5,
                        committed_leader_epoch=-1,
                        committed_metadata=None,
                    )
                    for p in (0, 1)
                ),
            ),
        ),
    )


async def test_a_parked_request_whose_handler_raises_is_answered_and_the_connection_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides = {
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "1",
    }

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in a group handler")

    async with combined(tmp_path, overrides) as (server, client):
        await create_topic(server, "orders", partitions=2)
        await create_topic(server, "__consumer_offsets")
        await wait_until(
            lambda: server.groups.core.group_status("members") is ErrorCode.none,
            DEADLINE,
        )
        monkeypatch.setattr(apis_module, "handle_join_group", broken)
        monkeypatch.setattr(apis_module, "handle_offset_commit", broken)
        joined = await client.call(join_body("members"))
        committed = await client.call(commit_body("standalone"))
        monkeypatch.undo()
        # The same connection: answered, and the next requests are served.
        joined_again = await client.call(join_body("members"))
        committed_again = await client.call(commit_body("standalone"))
    assert joined.error_code is ErrorCode.unknown_server_error
    assert [p.error_code for p in committed.topics[0].partitions] == [
        ErrorCode.unknown_server_error
    ] * 2
    assert joined_again.error_code is ErrorCode.none
    assert [p.error_code for p in committed_again.topics[0].partitions] == [
        ErrorCode.none
    ] * 2
    assert errors_logged(caplog, "JoinGroup request from") == 1
    assert errors_logged(caplog, "OffsetCommit request from") == 1


# --- the group coordinator's __consumer_offsets ------------------------------------------------


def test_the_offsets_topic_refuses_to_load_a_partition_whose_log_is_not_here(
    tmp_path: Path,
) -> None:
    from minikafka.replication.testing import replica_manager_core

    topic = ReplicaInternalTopic(
        ReplicaManagerShell(replica_manager_core(tmp_path)), 5000
    )
    with pytest.raises(ReplicationError) as refused:
        list(topic.read(0))
    assert refused.value.error_code is ErrorCode.not_leader_or_follower


# --- what is not a fault to survive -------------------------------------------------------------


async def test_a_metadata_log_that_disowns_committed_records_is_a_fatal_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Committed records never diverge in Raft: this node's copy cannot be trusted, and
    # the fetch loop must not retry it forever (Kafka's raft client fails the process).
    [port] = free_ports(1)
    config = KafkaConfig.from_properties(
        {
            "node.id": "1",
            "process.roles": "broker",
            "controller.quorum.voters": f"0@127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "broker"),
        }
    )
    format_storage(config.broker.log_dirs, config.metadata_log_dir, new_cluster_id(), 1)
    broker = BrokerServer.open(config)

    async def diverged(*_: object, **__: object) -> None:
        raise CommittedDivergenceError("the leader's log diverges below offset 7")

    monkeypatch.setattr(server_module, "fetch_metadata_forever", diverged)
    try:
        fatal = pytest.RaisesExc(FatalFaultError, match="following the metadata log")
        with pytest.RaisesGroup(fatal, flatten_subgroups=True):
            await broker._follow_metadata(ControllerLocator(()))
    finally:
        assert broker.observer is not None
        broker.observer.close()


# --- ZooKeeper mode: the session expiring while the broker starts -------------------------


async def test_a_zookeeper_session_expiring_during_start_up_stops_the_broker_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZooKeeper paused past the session timeout while a broker starts: Kafka's start-up
    fails on the SESSIONEXPIRED answer; minikafka's stops with the line a supervisor
    (and the chaos harness) reads as "no ZooKeeper answered", not with a traceback."""
    server = zk_broker(tmp_path)

    async def connected(_self: object, connect_timeout: float = 30.0) -> None:
        return None

    async def expired(_self: object) -> None:
        raise SessionExpiredError()

    monkeypatch.setattr(type(server.zk), "connect", connected)
    monkeypatch.setattr(zk_server_module, "_cluster_id", _a_cluster_id)
    monkeypatch.setattr(type(server.config_changes), "start", expired)
    with pytest.raises(BaseExceptionGroup) as raised:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
    errors, others = raised.value.split(ConnectionError)
    assert errors is not None, raised.value
    assert others is None, raised.value
    leaves = list(_leaves(errors))
    assert len(leaves) == 1
    message = str(leaves[0])
    assert "no ZooKeeper answered at zookeeper.connect=127.0.0.1:1" in message
    assert "the session expired" in message


async def _a_cluster_id(zk: object) -> str:
    return new_cluster_id()


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc
