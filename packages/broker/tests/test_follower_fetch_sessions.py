"""A follower fetches in a fetch session (KIP-227), as Kafka's followers do.

A controller-only node 0 and brokers 1 and 2 run in this trio loop; broker 1 leads four
partitions that broker 2 follows. Guarantees tested: the follower's first fetch names
all four partitions and opens a session on the leader; after it, the fetches are
incremental (epoch 1, 2, ...) and name only the partition whose fetch offset moved, or
none, while every record still reaches the follower; and when the leader loses the
session (its cache evicted it), the follower's next incremental fetch is refused
(FETCH_SESSION_ID_NOT_FOUND, logged at INFO), it fetches in full, opens a new session
and goes on replicating incrementally. Real time, every wait bounded by a deadline.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker import BrokerServer
from minikafka.broker._config import KafkaConfig
from minikafka.broker._controller_node import ControllerNode
from minikafka.broker._fetch_session_handler import (
    SessionFetchRequest,
    SessionFetchResponse,
)
from minikafka.broker._fetch_sessions import FetchSession
from minikafka.broker._meta_properties import format_storage, new_cluster_id
from minikafka.broker._replica_fetchers import ReplicaFetcherManager
from minikafka.broker.testing import free_ports
from minikafka.common import Acks, TopicPartition
from minikafka.controller import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from minikafka.log.testing import value_batch
from minikafka.net import NetworkClient, Node
from minikafka.net.testing import wait_until
from minikafka.replication import ProducePartitionResult

DEADLINE = 30.0  # seconds: three nodes on a shared 2-core machine
LEADER, FOLLOWER = 1, 2
TPS = [TopicPartition("sessions", p) for p in range(4)]


@asynccontextmanager
async def leader_and_follower(
    tmp_path: Path,
) -> AsyncIterator[tuple[BrokerServer, BrokerServer]]:
    """Controller node 0 and brokers 1 and 2, all in this trio loop."""
    [port] = free_ports(1)
    cluster_id = new_cluster_id()
    common = {
        "controller.quorum.voters": f"0@127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "broker.heartbeat.interval.ms": "200",
        "controlled.shutdown.timeout.ms": "5000",
    }
    roles = {0: ("controller", f"CONTROLLER://127.0.0.1:{port}")}
    roles |= dict.fromkeys((LEADER, FOLLOWER), ("broker", "PLAINTEXT://127.0.0.1:0"))
    configs = {
        node: KafkaConfig.from_properties(
            {
                **common,
                "node.id": str(node),
                "process.roles": role,
                "listeners": listeners,
                "log.dirs": str(tmp_path / f"node-{node}"),
            }
        )
        for node, (role, listeners) in roles.items()
    }
    for node, config in configs.items():
        format_storage(
            config.broker.log_dirs, config.metadata_log_dir, cluster_id, node
        )
    controller = ControllerNode.open(configs[0])
    brokers = [BrokerServer.open(configs[b]) for b in (LEADER, FOLLOWER)]
    async with trio.open_nursery() as nursery:
        await nursery.start(controller.run)
        with trio.fail_after(DEADLINE):
            for broker in brokers:
                await nursery.start(broker.run)
        try:
            yield brokers[0], brokers[1]
        finally:
            for broker in reversed(brokers):
                await broker.shutdown()
            await controller.shutdown()


def produce(leader: BrokerServer, tp: TopicPartition) -> None:
    answers: list[dict[TopicPartition, ProducePartitionResult]] = []
    leader.replica_manager.append_records(
        30_000, Acks.LEADER, {tp: value_batch(1)}, answers.append
    )
    assert answers[0][tp].error_code is ErrorCode.none


def log_end(server: BrokerServer, tp: TopicPartition) -> int:
    partition = server.replica_manager.get_partition(tp)
    return -1 if partition is None else partition.log.log_end_offset


async def replicate(
    leader: BrokerServer, follower: BrokerServer, tp: TopicPartition
) -> None:
    """One record to ``tp`` on the leader, waited for on the follower."""
    produce(leader, tp)
    end = log_end(leader, tp)
    await wait_until(lambda: log_end(follower, tp) == end, DEADLINE)


def follower_sessions(leader: BrokerServer) -> list[FetchSession]:
    return [s for s in leader.apis.fetch_sessions.sessions.values() if s.privileged]


def leads(server: BrokerServer, tp: TopicPartition) -> bool:
    partition = server.replica_manager.get_partition(tp)
    return partition is not None and partition.is_leader


async def test_a_follower_replicates_in_a_session_and_opens_another_when_it_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sent: list[SessionFetchRequest] = []
    real = ReplicaFetcherManager._fetch

    async def recorded(
        self: ReplicaFetcherManager,
        client: NetworkClient,
        node: Node,
        fetch: SessionFetchRequest,
    ) -> SessionFetchResponse:
        sent.append(fetch)
        return await real(self, client, node, fetch)

    monkeypatch.setattr(ReplicaFetcherManager, "_fetch", recorded)
    caplog.set_level(logging.INFO, "minikafka.broker")
    async with leader_and_follower(tmp_path) as (leader, follower):
        created = await leader.channel.submit(
            CreateTopicsRequest(
                (
                    CreatableTopic(
                        TPS[0].topic, assignments=((LEADER, FOLLOWER),) * len(TPS)
                    ),
                )
            )
        )
        assert isinstance(created, CreateTopicsResponse)
        assert created.topics[0].error_code is ErrorCode.none
        await wait_until(lambda: all(leads(leader, tp) for tp in TPS), DEADLINE)
        # The follower may have asked before the leader replayed the topic (refused,
        # and named again after the backoff): once a record of each partition has
        # reached it, every partition fetches in the session.
        for tp in TPS:
            await replicate(leader, follower, tp)
        assert sent[0].full
        assert len(sent[0].partitions) == len(TPS), "the first fetch names them all"
        [session] = follower_sessions(leader)
        assert set(session.partitions) == set(TPS)
        settled = len(sent)
        for i in range(6):
            await replicate(leader, follower, TPS[i % len(TPS)])
        # Caught up: the follower's next fetches wait out replica.fetch.wait.max.ms.
        busy = session.epoch
        await wait_until(lambda: session.epoch > busy + 2, DEADLINE)
        incremental = sent[settled:]
        assert not any(r.full for r in incremental), [r.epoch for r in incremental]
        assert max(r.epoch for r in incremental) > 1
        assert all(len(r.partitions) <= 1 for r in incremental), (
            "only the partition whose fetch offset moved is named"
        )
        assert any(len(r.partitions) == 1 for r in incremental)
        assert any(len(r.partitions) == 0 for r in incremental), "idle: none named"

        # The leader's cache loses the session (evicted for another): the follower's
        # next incremental fetch is refused, and it starts over with a full one.
        del leader.apis.fetch_sessions.sessions[session.id]
        lost = len(sent)
        await wait_until(
            lambda: [s.id for s in follower_sessions(leader)] not in ([], [session.id]),
            DEADLINE,
        )
        for i in range(6):
            await replicate(leader, follower, TPS[i % len(TPS)])
        [renewed] = follower_sessions(leader)
        await wait_until(lambda: renewed.epoch > 3, DEADLINE)
        after = sent[lost:]
        assert [len(r.partitions) for r in after if r.full] == [len(TPS)]
        assert [r.session_id for r in after if r.full] == [0], "nothing left to close"
        assert max(r.epoch for r in after) > 1
        assert all(len(r.partitions) <= 1 for r in after if not r.full)
    refused = [
        r
        for r in caplog.records
        if "FETCH_SESSION_ID_NOT_FOUND" in r.getMessage() and r.levelno == logging.INFO
    ]
    assert len(refused) == 1
    for tp in TPS:
        assert log_end(follower, tp) == log_end(leader, tp) > 0
