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
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

import minikafka.broker._apis as apis_module
from minikafka.broker import BrokerServer
from minikafka.broker._offsets_topic import ReplicaOffsetsTopic
from minikafka.broker._zk_server import ZkBrokerServer
from minikafka.broker.testing import (
    WireClient,
    element,
    request_body,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.common import Acks, TopicPartition
from minikafka.controller import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from minikafka.log.testing import value_batch
from minikafka.net import NetworkClient, Node, build
from minikafka.net.testing import wait_until
from minikafka.replication import (
    ProducePartitionResult,
    ReplicaManagerService,
    ReplicationError,
)

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

    topic = ReplicaOffsetsTopic(
        ReplicaManagerService(replica_manager_core(tmp_path)), 5000
    )
    with pytest.raises(ReplicationError) as refused:
        list(topic.read(0))
    assert refused.value.error_code is ErrorCode.not_leader_or_follower
