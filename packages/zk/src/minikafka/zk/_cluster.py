"""What a new controller reads from ZooKeeper before it acts (Kafka 2.8's
``KafkaController.initializeControllerContext``; seed 001).

In ZooKeeper mode the cluster's state is the znodes: who is alive (``/brokers/ids``), which
topics exist and where their replicas are (``/brokers/topics``), each partition's leader
and ISR (``.../partitions/<p>/state``), and what is being deleted
(``/admin/delete_topics``). A controller that has just won the election reads all of it,
and sets a watch on each list as it reads it, so that every later change reaches its event
queue: a broker joining or leaving, a topic created or deleted, partitions added.
:func:`read_cluster` is that read; :class:`ZkCluster` is what it found.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from kazoo.exceptions import NoNodeError

from ._client import ZkClient
from ._znodes import (
    BROKER_IDS,
    DELETE_TOPICS,
    TOPICS,
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    broker_path,
    partition_state_path,
    topic_path,
)


@attrs.frozen
class LiveBroker:
    registration: BrokerRegistration
    epoch: int  # the czxid of its registration: new each time it registers


@attrs.frozen
class ZkCluster:
    brokers: Mapping[int, LiveBroker]
    topics: Mapping[str, TopicAssignment]
    # (topic, partition) -> the state znode's content and version (None: not written yet,
    # a partition still NewPartition)
    partitions: Mapping[tuple[str, int], tuple[PartitionState, int] | None]
    deleting: frozenset[str]


async def read_cluster(client: ZkClient, *, watch: bool = True) -> ZkCluster:
    """Read the cluster's znodes; with ``watch``, set the watches a controller needs
    (the broker list, the topic list, each topic's assignment, the deletion list)."""
    for path in (BROKER_IDS, TOPICS, DELETE_TOPICS):
        await client.ensure_path(path)
    brokers: dict[int, LiveBroker] = {}
    for child in await client.get_children(BROKER_IDS, watch=watch):
        try:
            data, stat = await client.get(broker_path(int(child)))
        except NoNodeError:
            continue  # its session ended between the two reads
        registration = BrokerRegistration.decode(int(child), data)
        brokers[registration.broker_id] = LiveBroker(registration, stat.created_zxid)
    topics: dict[str, TopicAssignment] = {}
    partitions: dict[tuple[str, int], tuple[PartitionState, int] | None] = {}
    for topic in await client.get_children(TOPICS, watch=watch):
        try:
            data, _ = await client.get(topic_path(topic), watch=watch)
        except NoNodeError:
            continue
        assignment = TopicAssignment.decode(topic, data)
        topics[topic] = assignment
        for partition in sorted(assignment.partitions):
            try:
                raw, stat = await client.get(partition_state_path(topic, partition))
            except NoNodeError:
                partitions[(topic, partition)] = None
                continue
            partitions[(topic, partition)] = (
                PartitionState.decode(topic, partition, raw),
                stat.version,
            )
    deleting = frozenset(await client.get_children(DELETE_TOPICS, watch=watch))
    return ZkCluster(brokers, topics, partitions, deleting)
