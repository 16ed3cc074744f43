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

from collections.abc import Iterable, Mapping

import attrs

from ._client import ZkClient
from ._znodes import (
    BROKER_CONFIGS,
    BROKER_IDS,
    DELETE_TOPICS,
    TOPICS,
    BrokerRegistration,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    broker_config_path,
    broker_path,
    broker_resource,
    decode_broker_config,
    decode_topic_config,
    partition_state_path,
    topic_config_path,
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
    partitions: Mapping[tuple[str, int], tuple[LeaderIsrAndControllerEpoch, int] | None]
    deleting: frozenset[str]
    configs: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    """Each topic's overrides (``/config/topics/<topic>``): the controller reads
    ``unclean.leader.election.enable`` from them."""
    broker_configs: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    """The dynamic broker configs (KIP-226) by resource name: ``""`` the cluster-wide
    default (``/config/brokers/<default>``), an id that broker's own; where a topic
    does not set ``unclean.leader.election.enable``, the controller reads them."""


async def read_cluster(client: ZkClient, *, watch: bool = True) -> ZkCluster:
    """Read the cluster's znodes; with ``watch``, set the watches a controller needs
    (the broker list, the topic list, each topic's assignment, the deletion list)."""
    for path in (BROKER_IDS, TOPICS, DELETE_TOPICS):
        await client.ensure_path(path)
    brokers = await read_brokers(client, watch=watch)
    names = await client.get_children(TOPICS, watch=watch)
    topics = await read_topics(client, names, watch=watch)
    paths = {
        (topic, p): partition_state_path(topic, p)
        for topic, assignment in topics.items()
        for p in sorted(assignment.partitions)
    }
    states = await client.get_many(list(paths.values()))
    partitions: dict[
        tuple[str, int], tuple[LeaderIsrAndControllerEpoch, int] | None
    ] = {}
    for (topic, p), path in paths.items():
        found = states[path]
        partitions[(topic, p)] = (
            None
            if found is None
            else (
                LeaderIsrAndControllerEpoch.decode(topic, p, found[0]),
                found[1].version,
            )
        )
    deleting = frozenset(await client.get_children(DELETE_TOPICS, watch=watch))
    configs = await read_topic_configs(client, topics)
    return ZkCluster(
        brokers,
        topics,
        partitions,
        deleting,
        configs,
        await read_broker_configs(client),
    )


async def read_brokers(
    client: ZkClient, *, watch: bool = True
) -> dict[int, LiveBroker]:
    """Every registered broker, with its epoch (the czxid of its registration)."""
    children = await client.get_children(BROKER_IDS, watch=watch)
    found = await client.get_many(
        [broker_path(int(c)) for c in children if c.isdigit()]
    )
    brokers: dict[int, LiveBroker] = {}
    for child in children:
        read = found.get(broker_path(int(child))) if child.isdigit() else None
        if read is None:
            continue  # its session ended between the two reads
        registration = BrokerRegistration.decode(int(child), read[0])
        brokers[registration.broker_id] = LiveBroker(registration, read[1].created_zxid)
    return brokers


async def read_topics(
    client: ZkClient, names: Iterable[str], *, watch: bool = True
) -> dict[str, TopicAssignment]:
    """The assignments of ``names`` (those still there), each with its watch."""
    wanted = list(names)
    found = await client.get_many([topic_path(t) for t in wanted], watch=watch)
    return {
        t: TopicAssignment.decode(t, read[0])
        for t in wanted
        if (read := found[topic_path(t)]) is not None
    }


async def read_topic_configs(
    client: ZkClient, names: Iterable[str]
) -> dict[str, dict[str, str]]:
    """The config overrides of ``names`` (``/config/topics/<topic>``; none written: {}).
    No watch: Kafka's controller does not watch them either (brokers follow changes
    through ``/config/changes``)."""
    wanted = list(names)
    found = await client.get_many([topic_config_path(t) for t in wanted], watch=False)
    return {
        t: {}
        if (read := found[topic_config_path(t)]) is None
        else decode_topic_config(t, read[0])
        for t in wanted
    }


async def read_broker_configs(client: ZkClient) -> dict[str, dict[str, str]]:
    """Every dynamic broker config written (``/config/brokers/*``), by resource name
    (``""`` for ``<default>``). No watch: changes come through ``/config/changes``."""
    await client.ensure_path(BROKER_CONFIGS)
    names = [broker_resource(c) for c in await client.get_children(BROKER_CONFIGS)]
    found = await client.get_many([broker_config_path(n) for n in names], watch=False)
    return {
        n: decode_broker_config(n, read[0])
        for n in names
        if (read := found[broker_config_path(n)]) is not None
    }
