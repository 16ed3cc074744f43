"""Three controllers in one process, a Raft quorum over real sockets (seed 004).

Every link into each controller goes through a :class:`FaultProxy`, so a test can cut a
leader off. What is checked:

- one of the three becomes the active controller, and the others replay what it commits
  (their images agree, offset for offset);
- a follower cut off while the leader snapshots and drops its log comes back by copying
  the snapshot (FetchSnapshot, KIP-630) and ends with the same image, and so does a
  broker that starts after the snapshot (an observer, given only the voters' addresses);
- a leader cut off from the others cannot commit: the request it had accepted waits, and
  when check-quorum makes it resign the request fails with NOT_CONTROLLER and its
  records are reverted (seed 004's timeline revert): neither the old leader's state nor
  the new leader's has them; after the partition heals, the old leader follows the new
  one and every image is the same again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker._config import KafkaConfig
from minikafka.broker._controller_channel import ControllerLocator
from minikafka.broker._controller_node import ControllerNode
from minikafka.broker._meta_properties import format_storage, new_cluster_id
from minikafka.broker._metadata_fetcher import fetch_metadata_forever
from minikafka.broker.testing import free_ports
from minikafka.controller import (
    BrokerEndpoint,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerError,
    MetadataImage,
    MetadataObserver,
    ObserverUpdate,
    replay_update,
)
from minikafka.net import NetworkClient, Node
from minikafka.net.testing import FaultProxy
from minikafka.raft import State
from minikafka.raft._events import StateChanged
from minikafka.trace.testing import RecordingTracer

DEADLINE = 60.0


class RemoteBroker:
    """What a broker on another node keeps: its observer and the image it replays."""

    def __init__(self, metadata_dir: Path) -> None:
        self.observer, _ = MetadataObserver.open(metadata_dir)
        self.image = MetadataImage()

    def apply(self, update: ObserverUpdate) -> None:
        replayed = replay_update(self.image, update)
        if replayed is not None:
            self.image = replayed[1]


# Short timeouts: a cut-off leader resigns after 1.5 fetch timeouts.
QUORUM = {"quorum.fetch.timeout.ms": "1000", "quorum.election.timeout.ms": "500"}


@attrs.define
class Quorum:
    nodes: list[ControllerNode]
    proxies: list[FaultProxy]
    configs: list[KafkaConfig]
    tracers: list[RecordingTracer]
    cluster_id: str
    nursery: trio.Nursery

    async def restart(self, i: int) -> None:
        """Start controller ``i`` again on its directory (after ``shutdown``)."""
        self.nodes[i] = ControllerNode.open(self.configs[i], tracer=self.tracers[i])
        await self.nursery.start(self.nodes[i].run)


@asynccontextmanager
async def quorum(tmp_path: Path, **overrides: str) -> AsyncIterator[Quorum]:
    """Controllers 0, 1 and 2 running in this trio loop, each behind its proxy."""
    listen = free_ports(3)
    cluster_id = new_cluster_id()
    async with trio.open_nursery() as nursery:
        proxies = [FaultProxy("127.0.0.1", port) for port in listen]
        for proxy in proxies:
            await nursery.start(proxy.run)
        voters = ",".join(f"{i}@127.0.0.1:{p.port}" for i, p in enumerate(proxies))
        configs = []
        for i, port in enumerate(listen):
            data = tmp_path / f"node-{i}"
            configs.append(
                KafkaConfig.from_properties(
                    {
                        "node.id": str(i),
                        "process.roles": "controller",
                        "controller.quorum.voters": voters,
                        "controller.listener.names": "CONTROLLER",
                        "listeners": f"CONTROLLER://127.0.0.1:{port}",
                        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                        "log.dirs": str(data),
                        **QUORUM,
                        **overrides,
                    }
                )
            )
            format_storage([data], data, cluster_id, i)
        tracers = [RecordingTracer(i) for i in range(3)]
        nodes = [
            ControllerNode.open(c, tracer=t)
            for c, t in zip(configs, tracers, strict=True)
        ]
        for node in nodes:
            await nursery.start(node.run)
        running = Quorum(nodes, proxies, configs, tracers, cluster_id, nursery)
        try:
            yield running
        finally:
            for node in running.nodes:
                await node.shutdown()
            nursery.cancel_scope.cancel()


async def active(nodes: list[ControllerNode], among: list[int]) -> int:
    """The controller among ``among`` that is active, once one is."""
    with trio.fail_after(DEADLINE):
        while True:
            leaders = [i for i in among if nodes[i].controller.is_active]
            if leaders:
                return leaders[0]
            await trio.sleep(0.05)  # polling the nodes' state, inside the deadline


async def same_images(nodes: list[ControllerNode], at_least: int) -> None:
    """Until every controller's image is at the same offset, at least ``at_least``."""
    with trio.fail_after(DEADLINE):
        while True:
            offsets = {node.controller.image.offset for node in nodes}
            if len(offsets) == 1 and offsets.pop() >= at_least:
                return
            await trio.sleep(0.05)  # polling the nodes' state, inside the deadline


def registration(broker_id: int) -> BrokerRegistrationRequest:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)
    return BrokerRegistrationRequest(broker_id, uuid.uuid4(), (endpoint,))


async def test_the_standby_controllers_replay_what_the_leader_commits(
    tmp_path: Path,
) -> None:
    started = time.time()
    async with quorum(tmp_path) as running:
        nodes = running.nodes
        leader = await active(nodes, [0, 1, 2])
        # The election is in the leader's trace, stamped with the wall clock (the core
        # stamps its own clock, trio's; the shell moves it).
        elected = [
            ts
            for ts, event in running.tracers[leader].records
            if isinstance(event, StateChanged) and event.new == State.LEADER.value
        ]
        assert elected
        assert started <= elected[-1] <= time.time()
        response = await nodes[leader].controller.submit(registration(7))
        assert isinstance(response, BrokerRegistrationResponse)
        assert response.error_code is ErrorCode.none
        committed = nodes[leader].controller.image.offset
        await same_images(nodes, committed)
        for node in nodes:
            assert 7 in node.controller.image.brokers
            assert not node.controller.is_active or node is nodes[leader]


async def test_a_cut_off_leader_fails_what_it_holds_and_reverts(tmp_path: Path) -> None:
    async with quorum(tmp_path) as running:
        nodes, proxies = running.nodes, running.proxies
        leader = await active(nodes, [0, 1, 2])
        old = nodes[leader].controller
        proxies[leader].refuse(True)
        proxies[leader].cut()
        assert old.is_active  # check-quorum needs 1.5 fetch timeouts to notice
        # Accepted and applied by the leader, never committed: no follower can fetch it.
        with trio.fail_after(DEADLINE), pytest.raises(ControllerError) as failed:
            await old.submit(registration(8))
        assert failed.value.error_code is ErrorCode.not_controller
        assert old.controller.epoch is None  # resigned: no longer active
        # Reverted to the committed state: broker 8 is in no controller's state.
        assert old.controller.cluster.brokers.get(8) is None
        others = [i for i in range(3) if i != leader]
        new = nodes[await active(nodes, others)].controller
        assert new.controller.cluster.brokers.get(8) is None
        response = await new.submit(registration(9))
        assert isinstance(response, BrokerRegistrationResponse)
        # Healed: the old leader follows the new one; every image is the same.
        proxies[leader].refuse(False)
        proxies[leader].heal()
        await same_images(nodes, new.image.offset)
        for node in nodes:
            assert 9 in node.controller.image.brokers
            assert 8 not in node.controller.image.brokers


async def test_a_follower_behind_the_log_start_copies_the_snapshot(
    tmp_path: Path,
) -> None:
    # A snapshot after every commit: the leader's log start moves with each one.
    every_commit = {"metadata.log.max.record.bytes.between.snapshots": "1"}
    async with quorum(tmp_path, **every_commit) as running:
        nodes = running.nodes
        leader = await active(nodes, [0, 1, 2])
        behind = next(i for i in range(3) if i != leader)
        await nodes[behind].shutdown()
        stopped_at = nodes[behind].controller.image.offset
        server = nodes[leader].controller
        for broker_id in (7, 8, 9):
            await server.submit(registration(broker_id))
        with trio.fail_after(DEADLINE):
            while True:  # until a snapshot moved the log start past what it has
                if server.quorum.raft_log.start_offset > stopped_at + 1:
                    break
                await trio.sleep(0.05)  # polling the leader's log, inside the deadline
        await running.restart(behind)
        await same_images(running.nodes, server.image.offset)
        lagging = running.nodes[behind].controller
        assert lagging.quorum.raft_log.latest_snapshot() is not None
        assert sorted(lagging.image.brokers) == [7, 8, 9]

        # A broker arriving now starts below every voter's log start: it finds the leader
        # through whichever voter it asks first, copies the snapshot, then fetches on.
        voters = tuple(
            Node(i, "127.0.0.1", p.port) for i, p in enumerate(running.proxies)
        )
        remote = RemoteBroker(tmp_path / "broker-4")
        async with (
            NetworkClient.open(client_id="broker-4") as client,
            trio.open_nursery() as n,
        ):
            n.start_soon(
                lambda: fetch_metadata_forever(
                    client,
                    ControllerLocator(voters),
                    remote.observer,
                    remote.apply,
                    node_id=4,
                    cluster_id=running.cluster_id,
                    backoff=0.05,
                )
            )
            with trio.fail_after(DEADLINE):
                while True:
                    if remote.image.offset >= server.image.offset:
                        break
                    await trio.sleep(0.05)  # polling the observer, inside the deadline
            n.cancel_scope.cancel()
        assert sorted(remote.image.brokers) == [7, 8, 9]
        assert remote.observer.log.log_start_offset > 0  # it began at the snapshot
        remote.observer.close()
