"""Admin requests in ZooKeeper mode: what a client's CreateTopics, CreatePartitions and
DeleteTopics, and a broker's AllocateProducerIds, *write* (seed 001 section 3; Kafka 2.8's
``AdminZkClient`` and ``ZkProducerIdManager``).

In ZooKeeper mode creating a topic is two separate acts, and seed 001 tells them apart:
the admin side writes the topic's assignment to ``/brokers/topics/<topic>`` and is done;
the controller's watch on ``/brokers/topics`` fires and *then* the partitions are brought
to life (:meth:`ZkController.on_topic_change`). Deleting a topic likewise only lists it
under ``/admin/delete_topics``; the controller's deletion manager does the rest.

What to write is decided exactly as the KRaft controller decides it: the checks (names,
counts, replication factors, manual assignments, configs) and the replica placement
are :class:`~._topic_creation.TopicCreation`'s, run over a scratch copy of the cluster
made from the controller's context (:func:`scratch_cluster`). Its records are turned into
the znodes ZooKeeper mode keeps instead: a TopicRecord and its PartitionRecords become one
assignment znode, its ConfigRecords ``/config/topics/<topic>``; a ProducerIdsRecord becomes
``/latest_producer_id_block``.

The controller runs these for the requests it is sent. A broker that is not the
controller writes an internal topic's znodes itself when its group coordinator needs
``__consumer_offsets`` (:func:`admin_create_topics`, over what it just read from
ZooKeeper): Kafka 2.8's brokers create it the same way, through ``AdminZkClient``, and
the controller learns of it from its watch, as of any topic an admin tool wrote.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common.timeline import SnapshotRegistry
from minikafka.zk import (
    Create,
    Op,
    SetData,
    TopicAssignment,
    ZkCluster,
    delete_topic_path,
    encode_topic_config,
    topic_config_path,
    topic_path,
)

from .._cluster_control import ClusterControlManager
from .._config import ControllerConfig
from .._config_control import ConfigurationControlManager
from .._producer_id_control import ProducerIdControlManager
from .._records import (
    ConfigRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from .._replication_control import ReplicationControlManager
from .._requests import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from ._context import ControllerContext

LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"


@attrs.frozen
class ScratchCluster:
    replication: ReplicationControlManager
    producer_ids: ProducerIdControlManager


def scratch_cluster(
    context: ControllerContext, config: ControllerConfig, rng: random.Random
) -> ScratchCluster:
    """The KRaft controller's managers, loaded with what ``context`` knows (live brokers
    unfenced, every topic and partition, the next producer id), so that their checks and
    their placement decide for ZooKeeper mode too."""
    registry = SnapshotRegistry()
    cluster = ClusterControlManager(registry, 1.0)
    replication = ReplicationControlManager(
        registry, config, cluster, ConfigurationControlManager(registry), rng
    )
    producer_ids = ProducerIdControlManager(registry, cluster)
    for broker_id in context.live_or_shutting_down():
        live = context.brokers[broker_id]
        cluster.replay(
            RegisterBrokerRecord(
                broker_id,
                uuid.UUID(int=0),
                live.epoch,
                (),
                live.registration.rack,
                fenced=broker_id in context.shutting_down,
            )
        )
    for name, assignment in {**context.topics, **context.pending}.items():
        topic_id = assignment.topic_id or uuid.UUID(int=0)
        replication.replay(TopicRecord(name, topic_id))
        for index, replicas in sorted(assignment.partitions.items()):
            current = context.leadership.get((name, index))
            isr = current.state.isr if current is not None else replicas
            leader = current.state.leader if current is not None else -1
            replication.replay(
                PartitionRecord(index, topic_id, replicas, isr, leader=leader)
            )
    if context.next_producer_id > 0:
        producer_ids.replay(ProducerIdsRecord(-1, -1, context.next_producer_id))
    return ScratchCluster(replication, producer_ids)


def _assignments(
    records: tuple[object, ...], known: Mapping[str, TopicAssignment]
) -> dict[str, TopicAssignment]:
    """The assignment znode of each topic the records create or grow."""
    names = {r.topic_id: r.name for r in records if isinstance(r, TopicRecord)}
    names.update({a.topic_id: n for n, a in known.items() if a.topic_id is not None})
    found: dict[str, dict[int, tuple[int, ...]]] = {}
    for record in records:
        if isinstance(record, PartitionRecord):
            found.setdefault(names[record.topic_id], {})[record.partition_id] = (
                record.replicas
            )
    ids = {name: topic_id for topic_id, name in names.items()}
    result = {}
    for name, partitions in found.items():
        before = known.get(name)
        merged = {**(before.partitions if before is not None else {}), **partitions}
        result[name] = TopicAssignment(merged, ids[name])
    return result


def create_topics(
    context: ControllerContext,
    config: ControllerConfig,
    rng: random.Random,
    request: CreateTopicsRequest,
) -> tuple[list[Op], CreateTopicsResponse]:
    scratch = scratch_cluster(context, config, rng)
    decided = scratch.replication.creation.create_topics(request)
    created = _assignments(decided.records, {})
    configs: dict[str, dict[str, str]] = {name: {} for name in created}
    for record in decided.records:
        if isinstance(record, ConfigRecord) and record.value is not None:
            configs[record.resource_name][record.name] = record.value
    writes: list[Op] = []
    for name, assignment in created.items():
        context.pending[name] = assignment
        # As Kafka's AdminZkClient: the config first, so that no broker ever sees the
        # topic without its settings (brokers read it when told to host a partition).
        writes.append(
            Create(
                topic_config_path(name),
                encode_topic_config(configs[name]),
                parents=True,
            )
        )
        writes.append(Create(topic_path(name), assignment.encode()))
    (response,) = decided.replies
    return writes, response


def admin_create_topics(
    cluster: ZkCluster,
    config: ControllerConfig,
    rng: random.Random,
    request: CreateTopicsRequest,
) -> tuple[list[Op], CreateTopicsResponse]:
    """What an admin client (Kafka's ``AdminZkClient``) writes to create the topics of
    ``request`` in the cluster as ZooKeeper has it now, decided as the controller would
    decide it: a broker's own way to create an internal topic in ZooKeeper mode."""
    return create_topics(ControllerContext.load(-1, cluster), config, rng, request)


def create_partitions(
    context: ControllerContext,
    config: ControllerConfig,
    rng: random.Random,
    request: CreatePartitionsRequest,
) -> tuple[list[Op], CreatePartitionsResponse]:
    scratch = scratch_cluster(context, config, rng)
    decided = scratch.replication.creation.create_partitions(request)
    known = {**context.topics, **context.pending}
    grown = _assignments(decided.records, known)
    for name, assignment in grown.items():
        context.pending[name] = assignment
    writes: list[Op] = [SetData(topic_path(n), a.encode()) for n, a in grown.items()]
    (response,) = decided.replies
    return writes, response


def delete_topics(
    context: ControllerContext, request: DeleteTopicsRequest
) -> tuple[list[Op], DeleteTopicsResponse]:
    """List each existing topic under ``/admin/delete_topics`` (once)."""
    writes: list[Op] = []
    results = []
    for name in dict.fromkeys(request.names):
        if name not in context.topics:
            results.append(
                DeletableTopicResult(name, None, ErrorCode.unknown_topic_or_partition)
            )
            continue
        if name not in context.deleting and name not in context.pending_deletion:
            context.pending_deletion.add(name)
            writes.append(Create(delete_topic_path(name)))
        results.append(
            DeletableTopicResult(name, context.topic_id(name), ErrorCode.none)
        )
    for topic_id in request.topic_ids:
        results.append(
            DeletableTopicResult(None, topic_id, ErrorCode.unsupported_version)
        )
    return writes, DeleteTopicsResponse(tuple(results))


def allocate_producer_ids(
    context: ControllerContext,
    config: ControllerConfig,
    request: AllocateProducerIdsRequest,
) -> tuple[list[Op], AllocateProducerIdsResponse]:
    """The next block of producer ids, taken by writing ``/latest_producer_id_block``
    over the version this controller read (a conditional write: two controllers can
    never hand out the same block)."""
    scratch = scratch_cluster(context, config, random.Random(0))
    decided = scratch.producer_ids.allocate(request)
    (response,) = decided.replies
    if response.error_code is not ErrorCode.none:
        return [], response
    end = response.producer_id_start + response.producer_id_len
    block = {
        "version": 1,
        "broker": request.broker_id,
        "block_start": str(response.producer_id_start),
        "block_end": str(end - 1),
    }
    data = json.dumps(block, separators=(",", ":")).encode()
    version = context.producer_id_block_version
    write: Op = (
        Create(LATEST_PRODUCER_ID_BLOCK, data)
        if version < 0
        else SetData(LATEST_PRODUCER_ID_BLOCK, data, version)
    )
    context.next_producer_id = end
    context.producer_id_block_version = version + 1
    return [write], response


def decode_producer_id_block(data: bytes) -> int:
    """The next producer id after the block ``/latest_producer_id_block`` records."""
    try:
        block = json.loads(data)
        return int(block["block_end"]) + 1
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{LATEST_PRODUCER_ID_BLOCK}: not a producer id block: {data[:60]!r}"
        ) from exc
