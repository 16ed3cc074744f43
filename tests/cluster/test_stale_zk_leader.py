"""A ZooKeeper-mode leader cut off from the controller, with real processes: what it
answers, as Kafka's ZooKeeper-mode broker does (chaos seed 103, chaos/README.md).

Broker ``stale`` leads a partition. Paused past its ZooKeeper session, it is replaced:
the controller elects another leader at a larger leader epoch, and more records are
written there. Then the links into ``stale``'s inter-broker listener (the controller's
LeaderAndIsr and UpdateMetadata, the followers' fetches) are cut, and it is resumed: it
registers again in ZooKeeper, but no word of the new epoch can reach it. Clients still
reach it. The guarantees checked:

- **it still answers as the leader at its old epoch**, as Kafka's does (a ZooKeeper-mode
  broker changes a partition's leadership only by the controller's LeaderAndIsr, and its
  metadata only by UpdateMetadata): its Metadata names itself at the old epoch; a Fetch
  naming that epoch past its log end (the group's committed offset, written under the
  new leader) is OFFSET_OUT_OF_RANGE, and ListOffsets gives its earliest offset. A
  librdkafka consumer whose metadata came from it resets to the earliest offset, though
  it started at an offset of the new epoch: the client's doing, which Kafka's broker
  causes too; one told by the other brokers reads on from its offset;
- **a client that knows the new epoch is fenced, not reset** (KIP-320): a Fetch,
  ListOffsets or OffsetForLeaderEpoch naming the new epoch is UNKNOWN_LEADER_EPOCH, so
  it looks for fresher metadata and keeps its position;
- **once the controller reaches it, it follows**: healed, it takes the new epoch as a
  follower and is back in the ISR, and every acknowledged record is read back.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
import trio
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import ProcessCluster
from minikafka.net import ApiKey, NetworkClient, Node
from minikafka.net.testing import FaultProxies, FaultProxy
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    admin,
    create_on,
    in_sync,
    read_values,
    wait_for,
)
from tests.reference.conformance._build import make

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.external,
    pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(),
        reason="Debian's zookeeper is installed by `make test`",
    ),
]

TOPIC = "stale"


def ask(cluster: ProcessCluster, broker: int, body: Any) -> Any:
    """``body`` sent to ``broker``'s client listener; its answer."""

    async def send() -> Any:
        async with NetworkClient.open(client_id="stale-leader-test") as client:
            with trio.fail_after(WAIT):
                node = Node(broker, cluster.host, cluster.port(broker))
                return await client.send(node, body)

    return trio.run(send)


def leader(cluster: ProcessCluster, broker: int) -> tuple[int, int]:
    """(leader, leader epoch) of the partition in ``broker``'s Metadata answer."""
    answer = ask(cluster, broker, make(ApiKey.METADATA, 12, topics=[{"name": TOPIC}]))
    (partition,) = answer.topics[0].partitions
    return int(partition.leader_id), int(partition.leader_epoch)


def fetch(cluster: ProcessCluster, broker: int, offset: int, epoch: int) -> int:
    """The error code of a consumer's Fetch of the partition at ``offset``, naming
    leader epoch ``epoch``."""
    body = make(
        ApiKey.FETCH,
        12,
        replica_id=-1,
        max_bytes=1 << 20,
        session_epoch=-1,
        topics=[
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    )
    (partition,) = ask(cluster, broker, body).responses[0].partitions
    return int(partition.error_code)


def earliest(cluster: ProcessCluster, broker: int, epoch: int) -> tuple[int, int]:
    """(error code, offset) of ListOffsets' earliest, naming leader epoch ``epoch``."""
    body = make(
        ApiKey.LIST_OFFSETS,
        7,
        replica_id=-1,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "current_leader_epoch": epoch,
                        "timestamp": -2,
                    }
                ],
            }
        ],
    )
    (partition,) = ask(cluster, broker, body).topics[0].partitions
    return int(partition.error_code), int(partition.offset)


def end_of_epoch(cluster: ProcessCluster, broker: int, current: int) -> int:
    """The error code of OffsetForLeaderEpoch (a consumer's, KIP-320) naming
    ``current``."""
    body = make(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        replica_id=-1,
        topics=[
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": current,
                        "leader_epoch": current,
                    }
                ],
            }
        ],
    )
    (partition,) = ask(cluster, broker, body).topics[0].partitions
    return int(partition.error_code)


def produce(bootstrap: str, values: range) -> None:
    """Idempotent, acks=all, to partition 0; returns once every record is
    acknowledged."""
    failures: list[object] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0}
    )
    for value in values:
        producer.produce(
            TOPIC,
            str(value).encode(),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(WAIT) == 0, "records not acknowledged"
    assert not failures, failures


def first_offset_read(bootstrap: str, offset: int, epoch: int) -> int:
    """The offset of the first record a librdkafka consumer reads, started (assign) at
    ``offset`` with leader epoch ``epoch``, as a group member starts at a committed
    offset, with ``auto.offset.reset=earliest``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "stale-leader-test",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, offset, leader_epoch=epoch)])
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                read = message.offset()
                assert read is not None
                return read
        raise AssertionError(f"nothing read from {bootstrap} within {WAIT}s")
    finally:
        consumer.close()


def test_a_leader_cut_off_from_the_controller_answers_as_kafkas_and_fences_newer_epochs(
    make_cluster: MakeCluster,
) -> None:
    links: list[FaultProxies] = []
    cluster = make_cluster(proxies=links, mode="zookeeper")
    [proxies] = links
    controller = int(admin(cluster).list_topics(timeout=WAIT).controller_id)
    stale, other = (b for b in (0, 1, 2) if b != controller)
    create_on(cluster, TOPIC, [stale, other, controller])
    produce(cluster.bootstrap, range(10))
    assert leader(cluster, other)[0] == stale
    old_epoch = leader(cluster, stale)[1]

    # Paused past its session: the controller elects another leader.
    cluster.signal(stale, signal.SIGSTOP)
    try:
        wait_for(
            lambda: leader(cluster, other)[0] not in (stale, -1),
            "a new leader elected",
        )
        new_leader, new_epoch = leader(cluster, other)
        assert new_epoch > old_epoch
        # Nothing reaches it on the inter-broker listener from now on.
        proxies.call(stale, lambda proxy: proxy.refuse(True))
        proxies.call(stale, FaultProxy.cut)
    finally:
        cluster.signal(stale, signal.SIGCONT)
    others = ",".join(f"{cluster.host}:{cluster.port(b)}" for b in (other, controller))
    produce(others, range(10, 30))

    # It answers as the leader at its old epoch.
    assert leader(cluster, stale) == (stale, old_epoch)
    assert fetch(cluster, stale, 25, old_epoch) == ErrorCode.offset_out_of_range
    assert fetch(cluster, stale, 25, -1) == ErrorCode.offset_out_of_range
    assert earliest(cluster, stale, old_epoch) == (ErrorCode.none, 0)
    # The new leader serves offset 25, named with its epoch.
    assert fetch(cluster, new_leader, 25, new_epoch) == ErrorCode.none
    # A client naming the new epoch is fenced, never told its offset is out of range.
    assert fetch(cluster, stale, 25, new_epoch) == ErrorCode.unknown_leader_epoch
    assert earliest(cluster, stale, new_epoch)[0] == ErrorCode.unknown_leader_epoch
    assert end_of_epoch(cluster, stale, new_epoch) == ErrorCode.unknown_leader_epoch

    # librdkafka, which knows the partition's leader only from its metadata (here the
    # stale leader's), resets at its OFFSET_OUT_OF_RANGE: the committed offset's epoch
    # does not make it validate. Told by the others, it reads on from the offset.
    stale_only = f"{cluster.host}:{cluster.port(stale)}"
    assert first_offset_read(stale_only, 25, new_epoch) == 0
    assert first_offset_read(others, 25, new_epoch) == 25

    # Healed, the controller reaches it: it follows at the new epoch and catches up.
    proxies.call(stale, FaultProxy.heal)
    wait_for(lambda: leader(cluster, stale) == (new_leader, new_epoch), "it follows")
    assert fetch(cluster, stale, 25, new_epoch) == ErrorCode.not_leader_or_follower
    wait_for(in_sync(cluster, TOPIC, 0), "all three in sync again")
    assert [int(v) for v in read_values(cluster, TOPIC)] == list(range(30))
