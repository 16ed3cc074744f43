"""ZooKeeper mode in one process: three ZkBrokerServers on a real ZooKeeper.

Guarantees checked:
- one broker wins ``/controller``; a topic created through any broker gets an assignment
  znode, then (through the controller's watch) each partition a leader and ISR in its
  state znode, and every broker learns them by UpdateMetadata;
- a broker that is not the controller creates ``__consumer_offsets`` for its group
  coordinator by writing the znodes itself, and the controller brings it to life;
- records produced with acks=all are on every in-sync replica and read back in order;
- a broker refuses a LeaderAndIsr from an older controller epoch (STALE_CONTROLLER_EPOCH),
  so a zombie controller changes nothing;
- when the controller broker stops, another is elected with a higher epoch, and the
  stopped broker's leaderships had moved before it stopped (controlled shutdown);
- a partition reassigned to another broker is led there, and its old replica deleted;
- a topic grown by CreatePartitions gets its new partition, led, on every broker;
- a deleted topic's znodes and logs are gone from every broker;
- a broker that stops and comes back leads the partitions it is the preferred replica of
  again without anyone asking (``auto.leader.rebalance.enable``);
- a broker started on another cluster's log directories refuses to start, in one line.
"""

from __future__ import annotations

import io
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from kio.schema.api_versions.v4.request import (
    ApiVersionsRequest as ApiVersionsRequestV4,
)
from kio.schema.api_versions.v4.response import (
    ApiVersionsResponse as ApiVersionsResponseV4,
)
from kio.schema.errors import ErrorCode

from minikafka.broker import KafkaConfig, ZkBrokerServer
from minikafka.broker._offsets_topic import ensure_offsets_topic
from minikafka.broker.testing import free_ports
from minikafka.broker.zk import to_wire
from minikafka.common import TopicPartition
from minikafka.controller.zk import (
    LeaderAndIsr,
    LeaderAndIsrPartition,
)
from minikafka.coordination import OFFSETS_TOPIC
from minikafka.net import NetworkClient, Node
from minikafka.tools._connection import connect
from minikafka.tools._consume import ConsumeOptions, consume
from minikafka.tools._produce import ProduceOptions, produce
from minikafka.tools._reassign import execute, ongoing
from minikafka.tools._topics import create_partitions, create_topic, delete_topic
from minikafka.zk import ZkClient, ZooKeeperServer, controller_epoch
from minikafka.zk.testing import needs_zookeeper

pytestmark = [
    pytest.mark.external,
    needs_zookeeper,
]

DEADLINE = 60.0


def broker_config(
    zookeeper: ZooKeeperServer,
    broker_id: int,
    port: int,
    data: Path,
    overrides: dict[str, str] | None = None,
) -> KafkaConfig:
    return KafkaConfig.from_properties(
        {
            "zookeeper.connect": zookeeper.connect_string,
            "zookeeper.session.timeout.ms": "6000",
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(data / f"broker-{broker_id}"),
            "controlled.shutdown.timeout.ms": "10000",
            # The last broker of a cluster stopped leads what no one else can take: it
            # asks the controller again three times, 1 s apart, not Kafka's 5 s.
            "controlled.shutdown.retry.backoff.ms": "1000",
            "replica.fetch.wait.max.ms": "100",
            **(overrides or {}),
        }
    )


@asynccontextmanager
async def zk_cluster(
    zookeeper: ZooKeeperServer, data: Path, count: int = 3
) -> AsyncIterator[dict[int, ZkBrokerServer]]:
    ports = free_ports(count)
    brokers = {
        i + 1: ZkBrokerServer.open(broker_config(zookeeper, i + 1, port, data))
        for i, port in enumerate(ports)
    }
    async with trio.open_nursery() as nursery:
        for broker in brokers.values():
            await nursery.start(broker.run)
        try:
            yield brokers
        finally:
            for broker in brokers.values():
                await broker.shutdown()


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Poll the brokers' state (no event says "all brokers agree") within the deadline."""
    with trio.move_on_after(DEADLINE):
        while not check():  # noqa: ASYNC110
            await trio.sleep(0.05)
        return
    raise AssertionError(f"not within {DEADLINE} s: {what}")


def log_end(broker: ZkBrokerServer, tp: TopicPartition) -> int:
    partition = broker.replica_manager.get_partition(tp)
    return -1 if partition is None else partition.log.log_end_offset


async def the_controller(brokers: dict[int, ZkBrokerServer]) -> ZkBrokerServer:
    """The one broker that is the active controller, once there is exactly one."""
    await eventually(
        lambda: sum(b.shell.active for b in brokers.values()) == 1, "a controller"
    )
    (active,) = [b for b in brokers.values() if b.shell.active]
    return active


def bootstrap(broker: ZkBrokerServer) -> str:
    host, port = broker.bound_address()
    return f"{host}:{port}"


async def test_a_zookeeper_mode_cluster_creates_replicates_fails_over_and_deletes(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    async with zk_cluster(zookeeper, tmp_path) as brokers:
        first = await the_controller(brokers)

        # Created through a broker that is not the controller: forwarded to it.
        other = next(b for b in brokers.values() if b is not first)
        async with connect(bootstrap(other), client_id="test") as cluster:
            assert await create_topic(cluster, "t", partitions=3, replication_factor=3)
            # KIP-584's features came with KRaft's metadata.version: a ZooKeeper-mode
            # broker (Kafka 2.8's) lists none in ApiVersions v4.
            host, port = other.bound_address()
            asked = ApiVersionsRequestV4(
                client_software_name="test", client_software_version="1"
            )
            answer = await cluster.client.send(Node(-1, host, port), asked)
            assert isinstance(answer, ApiVersionsResponseV4)
            assert (answer.supported_features, answer.finalized_features) == ((), ())
        every_broker_knows = lambda: all(  # noqa: E731
            (topic := b.metadata_cache.topic("t")) is not None
            and len(topic.partitions) == 3
            and all(
                p.leader >= 0 and len(p.isr) == 3 for p in topic.partitions.values()
            )
            for b in brokers.values()
        )
        await eventually(every_broker_knows, "every broker knows t's leaders")

        # A group coordinator on a broker that is not the controller needs
        # __consumer_offsets: it writes the topic's znodes itself (as Kafka 2.8's brokers
        # do), and the controller's watch creates its partitions on every broker.
        assert await ensure_offsets_topic(
            other.channel, other.metadata_cache, other.config
        ) in (
            ErrorCode.none,
            ErrorCode.coordinator_not_available,  # written; not yet led on this broker
        )
        await eventually(
            lambda: all(
                (topic := b.metadata_cache.topic(OFFSETS_TOPIC)) is not None
                and all(p.leader >= 0 for p in topic.partitions.values())
                for b in brokers.values()
            ),
            "every broker knows __consumer_offsets, led",
        )

        # acks=all: acknowledged means on every in-sync replica.
        lines = [f"record-{i}".encode() for i in range(30)]

        async def source() -> AsyncIterator[bytes]:
            for line in lines:
                yield line

        result = await produce(
            bootstrap(other), ProduceOptions("t", partition=0), source()
        )
        assert (result.sent, result.failed) == (len(lines), 0)
        tp = TopicPartition("t", 0)
        await eventually(
            lambda: all(log_end(b, tp) == 30 for b in brokers.values()),
            "every replica has the 30 records",
        )
        out = io.BytesIO()
        options = ConsumeOptions("t", 0, "earliest", max_messages=30)
        with trio.fail_after(DEADLINE):
            await consume(bootstrap(first), options, out)
        read = out.getvalue().splitlines()
        assert read == lines  # order per partition

        # Reassigned (KIP-236): r-0 moves from one broker to another, which catches up
        # before the old replica is deleted and the new one leads.
        async with connect(bootstrap(other), client_id="test") as cluster:
            assert await create_topic(cluster, "r", partitions=1, replication_factor=1)
            await eventually(lambda: leaders(other, "r") not in ([], [-1]), "r-0 led")
            origin = leaders(other, "r")[0]
            target = next(b for b in brokers if b != origin)
            await execute(cluster, {("r", 0): (target,)})
            await eventually(
                lambda: all(leaders(b, "r") == [target] for b in brokers.values()),
                f"r-0 led by {target} on every broker",
            )
            assert await ongoing(cluster) == {}
        assert (
            brokers[origin].replica_manager.get_partition(TopicPartition("r", 0))
            is None
        )

        # A zombie: a request from an older controller epoch is refused whole.
        stale = LeaderAndIsr(
            first.config.node_id,
            first.shell.epoch - 1,
            -1,
            (
                LeaderAndIsrPartition(
                    "t", uuid.uuid4(), 0, 0, 1, 99, (1,), 0, (1, 2, 3)
                ),
            ),
            (),
        )
        async with NetworkClient.open(client_id="zombie") as client:
            host, port = other.bound_address()
            answer = await client.send(
                Node(other.config.node_id, host, port), to_wire(stale)
            )
        assert getattr(answer, "error_code", None) == ErrorCode.stale_controller_epoch
        assert other.metadata.leader_epochs[tp] < 99

        # The controller stops (controlled shutdown): its leaderships move first, and
        # another broker becomes the controller with a higher epoch.
        epoch = first.shell.epoch
        first_id = first.config.node_id
        await first.shutdown()
        rest = {i: b for i, b in brokers.items() if b is not first}
        assert (await the_controller(rest)).shell.epoch > epoch
        zk = ZkClient(zookeeper.connect_string)
        await zk.connect()
        try:
            assert await controller_epoch(zk) > epoch
        finally:
            await zk.close()
        await eventually(
            lambda: all(first_id not in leaders(b, "t") for b in rest.values()),
            "no partition is led by the stopped broker",
        )

        # Deleted: gone from the brokers' metadata and disks. (t has a replica on the
        # stopped broker: its deletion waits for it; u lives on the two that run.)
        async with connect(bootstrap(other), client_id="test") as cluster:
            assert await create_topic(cluster, "u", partitions=2, replication_factor=2)
            # Grown: the assignment znode changes, its watch creates the new partition.
            assert await create_partitions(cluster, "u", 3)
            await eventually(
                lambda: all(len(leaders(b, "u")) == 3 for b in rest.values()),
                "every broker knows u's three partitions",
            )
            assert all(leader >= 0 for b in rest.values() for leader in leaders(b, "u"))
            assert await delete_topic(cluster, "u")
        assert all(b.metadata_cache.topic("u") is None for b in rest.values())
        for b in rest.values():
            assert b.replica_manager.get_partition(TopicPartition("u", 0)) is None


def leaders(broker: ZkBrokerServer, topic: str) -> list[int]:
    found = broker.metadata_cache.topic(topic)
    return [] if found is None else [p.leader for p in found.partitions.values()]


async def test_a_returning_broker_leads_its_preferred_partitions_again_on_its_own(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    # auto.leader.rebalance.enable is on by default; the check every second, not 300.
    ports = free_ports(3)
    overrides = {"leader.imbalance.check.interval.seconds": "1"}

    def config(broker_id: int) -> KafkaConfig:
        return broker_config(
            zookeeper, broker_id, ports[broker_id - 1], tmp_path, overrides
        )

    def preferred_lead(broker: ZkBrokerServer) -> bool:
        topic = broker.metadata_cache.topic("t")
        return topic is not None and all(
            p.leader == p.replicas[0] and len(p.isr) == 3
            for p in topic.partitions.values()
        )

    brokers = {i: ZkBrokerServer.open(config(i)) for i in (1, 2, 3)}
    async with trio.open_nursery() as nursery:
        for broker in brokers.values():
            await nursery.start(broker.run)
        try:
            await eventually(
                lambda: any(b.shell.active for b in brokers.values()), "a controller"
            )
            async with connect(bootstrap(brokers[1]), client_id="test") as cluster:
                assert await create_topic(
                    cluster, "t", partitions=3, replication_factor=3
                )
            await eventually(
                lambda: all(preferred_lead(b) for b in brokers.values()),
                "t led as placed",
            )
            # A broker that is not the controller and is some partition's preferred
            # leader stops (controlled shutdown moves its leaderships) and comes back.
            topic = brokers[1].metadata_cache.topic("t")
            assert topic is not None
            firsts = {p.replicas[0] for p in topic.partitions.values()}
            bounced = next(
                i for i, b in brokers.items() if i in firsts and not b.shell.active
            )
            await brokers[bounced].shutdown()
            rest = [b for i, b in brokers.items() if i != bounced]
            await eventually(
                lambda: all(bounced not in leaders(b, "t") for b in rest),
                f"broker {bounced}'s leaderships moved away",
            )
            brokers[bounced] = ZkBrokerServer.open(config(bounced))
            await nursery.start(brokers[bounced].run)
            # No ElectLeaders: the controller's imbalance check gives them back once the
            # returning broker is in sync again.
            await eventually(
                lambda: all(preferred_lead(b) for b in brokers.values()),
                f"broker {bounced} leads its preferred partitions again",
            )
        finally:
            for broker in brokers.values():
                await broker.shutdown()


def test_a_broker_refuses_log_dirs_of_another_cluster_with_one_line(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    # Guarantee: a ZooKeeper-mode broker pointed at another cluster's data stops before
    # writing anything, naming the mismatch (Kafka's InconsistentClusterIdException),
    # exit status 1, no traceback.
    data = tmp_path / "data"
    data.mkdir()
    meta = "version=0\nbroker.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n"
    (data / "meta.properties").write_text(meta, encoding="utf-8")
    overrides = {
        "zookeeper.connect": zookeeper.connect_string,
        "broker.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data),
    }
    argv = [sys.executable, "-m", "minikafka.broker", "broker"]
    for key, value in overrides.items():
        argv += ["--override", f"{key}={value}"]
    run = subprocess.run(
        argv, capture_output=True, text=True, timeout=DEADLINE, check=False
    )
    assert run.returncode == 1, run.stderr
    assert "cannot start: The Cluster ID" in run.stderr
    assert "doesn't match stored clusterId AAAAAAAAAAAAAAAAAAAAAA" in run.stderr
    assert "Traceback" not in run.stderr
    assert (data / "meta.properties").read_text(encoding="utf-8") == meta
