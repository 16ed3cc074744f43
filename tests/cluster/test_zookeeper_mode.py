"""ZooKeeper mode with real processes on a real ZooKeeper (seed 001).

Three brokers (``minikafka broker`` processes in ZooKeeper mode) and Debian's ZooKeeper,
as ``make cluster MODE=zk`` runs them, with a 6 s ZooKeeper session. The guarantees
checked:

- **one controller at a time, fenced by its epoch**: a controller paused past its session
  (a zombie) is replaced by another with a higher ``/controller_epoch``; a request sent
  with the zombie's epoch is refused by the brokers (STALE_CONTROLLER_EPOCH), and the
  zombie, resumed, resigns and rejoins as a plain broker; a controller killed is replaced
  too, and the partitions it led get new leaders;
- **acknowledged means durable** across all of it: every record an idempotent
  ``acks=all`` producer saw acknowledged is read back, once each, in order;
- **seed 001's sequence**: a topic's creation and its deletion move every partition and
  replica through the state machines in the seed's order, read from the controller's
  trace;
- **ZooKeeper restarted**: the brokers and the controller reconnect, nothing is lost,
  and the cluster still creates topics;
- **a session that expires is a failure**: a broker paused past its session is taken
  out of the cluster and, resumed, registers again with a new broker epoch and rejoins
  every ISR.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
import trio
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import ProcessCluster
from minikafka.broker.zk import to_wire
from minikafka.controller.zk import (
    LeaderAndIsr,
    LeaderAndIsrPartition,
)
from minikafka.net import NetworkClient, Node
from minikafka.zk import ZkClient, broker_path, controller_epoch
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    admin,
    create_topic,
    in_sync,
    read_values,
    state,
    wait_for,
)

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.external,
    pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(),
        reason="Debian's zookeeper is installed by `make test`",
    ),
]

T = TypeVar("T")
SESSION_S = 6.0  # FAST's zookeeper.session.timeout.ms


def in_zookeeper(
    cluster: ProcessCluster, read: Callable[[ZkClient], Awaitable[T]]
) -> T:
    """What ``read`` finds in the cluster's ZooKeeper (a session of the test's own)."""

    async def run() -> T:
        client = ZkClient(cluster.zookeeper.connect_string, session_timeout=SESSION_S)
        await client.connect(connect_timeout=WAIT)
        try:
            return await read(client)
        finally:
            await client.close()

    return trio.run(run)


def epoch(cluster: ProcessCluster) -> int:
    return in_zookeeper(cluster, controller_epoch)


def controller_id(cluster: ProcessCluster) -> int:
    return int(admin(cluster).list_topics(timeout=10).controller_id)


def broker_epoch(cluster: ProcessCluster, broker: int) -> int:
    async def read(client: ZkClient) -> int:
        stat = await client.exists(broker_path(broker))
        return -1 if stat is None else stat.created_zxid

    return in_zookeeper(cluster, read)


def produce(cluster: ProcessCluster, topic: str, values: range) -> None:
    """Idempotent, acks=all; returns once every record is acknowledged."""
    failures: list[object] = []
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "log_level": 0,
        }
    )
    for value in values:
        producer.produce(
            topic,
            str(value).encode(),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(WAIT) == 0, "records not acknowledged"
    assert not failures, failures


def numbers(cluster: ProcessCluster, topic: str) -> list[int]:
    return [int(v) for v in read_values(cluster, topic)]


def stale_leader_and_isr(
    cluster: ProcessCluster, to: int, zombie: int, old_epoch: int
) -> object:
    """What a zombie controller would send: a LeaderAndIsr of its (old) epoch."""
    request = LeaderAndIsr(
        zombie,
        old_epoch,
        -1,
        (
            LeaderAndIsrPartition(
                "t", None, 0, old_epoch, zombie, 1000, (zombie,), 0, (0, 1, 2)
            ),
        ),
        (),
    )

    async def send() -> object:
        async with NetworkClient.open(client_id="zombie") as client:
            node = Node(to, cluster.host, cluster.port(to))
            return await client.send(node, to_wire(request))

    return trio.run(send)


def test_a_zombie_controller_is_fenced_and_a_killed_one_replaced(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(mode="zookeeper")
    create_topic(cluster, "t", 1, {"min.insync.replicas": "2"})
    produce(cluster, "t", range(200))
    first, first_epoch = controller_id(cluster), epoch(cluster)

    # A zombie: paused past its session, so ZooKeeper ends the session, /controller goes
    # with it, and another broker wins a newer epoch.
    cluster.signal(first, signal.SIGSTOP)
    try:
        wait_for(lambda: epoch(cluster) > first_epoch, "a new controller epoch")
        wait_for(lambda: controller_id(cluster) not in (first, -1), "a new controller")
        second, second_epoch = controller_id(cluster), epoch(cluster)
        answer = stale_leader_and_isr(cluster, second, first, first_epoch)
        assert getattr(answer, "error_code", None) == ErrorCode.stale_controller_epoch
        produce(cluster, "t", range(200, 400))  # the cluster works without the zombie
    finally:
        cluster.signal(first, signal.SIGCONT)
    # Resumed, it learns its session expired: it resigns and registers again.
    wait_for(lambda: broker_epoch(cluster, first) > 0, f"{first} registered again")
    wait_for(in_sync(cluster, "t", 0), f"{first} back in the ISR")
    assert controller_id(cluster) == second
    assert epoch(cluster) == second_epoch

    # A controller killed outright: replaced once its session ends.
    cluster.kill(second)
    wait_for(lambda: epoch(cluster) > second_epoch, "a third controller epoch")
    wait_for(lambda: controller_id(cluster) not in (second, -1), "a third controller")
    wait_for(
        lambda: state(cluster, "t").leader not in (second, -1),
        "t-0 led by a live broker",
    )
    produce(cluster, "t", range(400, 600))
    cluster.start(second)
    assert numbers(cluster, "t") == list(range(600))  # all, once each, in order


def transitions(traces: Path, topic: str) -> list[tuple[str, int, int, str, str]]:
    """The controller's state transitions of ``topic``, in the order it made them."""
    found = []
    for path in sorted(traces.glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "transition" and event.get("topic") == topic:
                found.append(event)
    found.sort(key=lambda e: float(e["ts"]))
    return [
        (e["machine"], e["partition"], e["replica"], e["from_state"], e["to_state"])
        for e in found
    ]


def test_creation_and_deletion_follow_seed_001_in_the_trace(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(mode="zookeeper")
    client = admin(cluster)
    create_topic(cluster, "seq", 2)
    client.delete_topics(["seq"], operation_timeout=30)["seq"].result(timeout=WAIT)
    wait_for(
        lambda: "seq" not in admin(cluster).list_topics(timeout=10).topics, "seq gone"
    )
    cluster.down()  # a broker writes its trace buffer out when it exits
    events = transitions(cluster.root / "traces", "seq")

    def of(machine: str, partition: int, replica: int = -1) -> list[str]:
        steps = [e for e in events if e[:3] == (machine, partition, replica)]
        return [steps[0][3]] + [e[4] for e in steps] if steps else []

    for p in range(2):
        assert of("partition", p) == [
            "NonExistentPartition",
            "NewPartition",
            "OnlinePartition",
            "OfflinePartition",
            "NonExistentPartition",
        ]
        for replica in range(3):
            assert of("replica", p, replica) == [
                "NonExistentReplica",
                "NewReplica",
                "OnlineReplica",
                "OfflineReplica",
                "ReplicaDeletionStarted",
                "ReplicaDeletionSuccessful",
                "NonExistentReplica",
            ]
    # Seed 001 section 4.3's order: every partition New, then every replica New, then
    # every partition Online, then every replica Online.
    kinds = [(e[0], e[4]) for e in events[: 2 * 2 + 2 * 3 * 2]]
    assert kinds == (
        [("partition", "NewPartition")] * 2
        + [("replica", "NewReplica")] * 6
        + [("partition", "OnlinePartition")] * 2
        + [("replica", "OnlineReplica")] * 6
    )


def test_zookeeper_restarted_and_a_broker_session_expired_lose_nothing(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(mode="zookeeper")
    create_topic(cluster, "t", 1, {"min.insync.replicas": "2"})
    produce(cluster, "t", range(200))

    # ZooKeeper killed and started again within the sessions' timeout.
    cluster.zookeeper.kill()
    cluster.zookeeper.start()
    produce(cluster, "t", range(200, 400))
    create_topic(cluster, "after", 1)  # the controller still works through ZooKeeper

    # A broker paused past its session is out of the cluster; resumed, it registers
    # again (a new broker epoch) and catches up.
    follower = next(
        b for b in state(cluster, "t").isr if b != state(cluster, "t").leader
    )
    before = broker_epoch(cluster, follower)
    cluster.signal(follower, signal.SIGSTOP)
    try:
        wait_for(
            lambda: broker_epoch(cluster, follower) == -1, f"{follower}'s session over"
        )
        wait_for(
            lambda: follower not in state(cluster, "t").isr,
            f"{follower} out of the ISR",
        )
        produce(cluster, "t", range(400, 600))
    finally:
        cluster.signal(follower, signal.SIGCONT)
    wait_for(
        lambda: broker_epoch(cluster, follower) > before, f"{follower} registered again"
    )
    wait_for(in_sync(cluster, "t", 0), f"{follower} back in the ISR")
    assert numbers(cluster, "t") == list(range(600))
