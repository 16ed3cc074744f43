"""Metadata and ListOffsets: what clients ask before they produce or fetch.

Metadata answers from the MetadataCache: the live brokers (with their address on the
listener the client came in through), this broker as the controller (combined mode),
and for each topic its partitions' leader, leader epoch, replicas and ISR. A topic that
does not exist is created on the spot when the client allows it and
``auto.create.topics.enable`` is on, through the controller like any other creation.

The answer is a function of the image and of the request's version, listener, topics
and flags: :func:`metadata_body` keeps it encoded in the MetadataCache until the image
changes.

ListOffsets turns "earliest", "latest" and a timestamp into an offset; "latest" is the
high watermark, since a consumer may not read past it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.request import MetadataRequest as MetadataRequestV8
from kio.static.protocol import Entity, ResponsePayload

from minikafka.common import TopicPartition
from minikafka.controller import NO_LEADER, TopicImage
from minikafka.net import ApiKey, Request, build, encode_entity, nested, response_schema
from minikafka.replication import ReplicaManagerService, ReplicationError

from ._body import LIST_OFFSETS, LIST_OFFSETS_PARTITION_WITH_EPOCH, METADATA
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache

NO_THROTTLE = datetime.timedelta(0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # KIP-430: not asked for
# KIP-430: asked for, a bit field of AclOperation codes. Without an authorizer Kafka
# lists every operation the resource type supports (AclEntry.supportedOperations):
# a topic READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11; the cluster CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def metadata_body(
    request: Request,
    cache: MetadataCache,
    cluster_id: str,
    names: list[str] | None,
    errors: Mapping[str, ErrorCode] | None = None,
) -> bytes:
    """:func:`metadata_response` encoded, computed once per image and request shape."""
    topic_operations, cluster_operations = _operations(request)
    key = (
        cache.controller_id,
        request.api_version,
        request.listener,
        cluster_id,
        None if names is None else tuple(names),
        topic_operations,
        cluster_operations,
        tuple(errors.items()) if errors else (),
    )
    return cache.response_body(
        key,
        lambda: encode_entity(
            metadata_response(request, cache, cluster_id, names, errors)
        ),
    )


def _operations(request: Request) -> tuple[int, int]:
    """KIP-430, v8+: the client may ask for the operations it is allowed (every one,
    here); ``(topic, cluster)`` bit fields, or the "not asked" marker."""
    body = request.body_as(METADATA)
    if not isinstance(body, MetadataRequestV8):
        return AUTHORIZED_OPERATIONS_OMITTED, AUTHORIZED_OPERATIONS_OMITTED
    return (
        TOPIC_OPERATIONS
        if body.include_topic_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
        CLUSTER_OPERATIONS
        if body.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


def metadata_response(
    request: Request,
    cache: MetadataCache,
    cluster_id: str,
    names: list[str] | None,
    errors: Mapping[str, ErrorCode] | None = None,
) -> ResponsePayload:
    """The Metadata response for ``names`` (None: every topic).

    ``errors`` gives the error for a topic that is not in the cache (an auto-creation
    that failed or is still under way); otherwise it is UNKNOWN_TOPIC_OR_PARTITION.
    """
    cls = response_schema(ApiKey.METADATA, request.api_version)
    assert cls is not None
    broker_cls = nested(cls, "brokers")
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    topic_operations, cluster_operations = _operations(request)
    brokers = tuple(
        build(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in cache.alive_brokers(request.listener)
    )
    topics = []
    for name in cache.topic_names() if names is None else names:
        topic = cache.topic(name)
        if topic is None:
            error = (errors or {}).get(name, ErrorCode.unknown_topic_or_partition)
            topics.append(
                build(
                    topic_cls,
                    error_code=error,
                    name=name,
                    is_internal=False,
                    partitions=(),
                    topic_authorized_operations=topic_operations,
                )
            )
            continue
        topics.append(
            build(
                topic_cls,
                error_code=ErrorCode.none,
                name=name,
                is_internal=name in INTERNAL_TOPICS,
                partitions=tuple(_partitions(partition_cls, topic, cache)),
                topic_authorized_operations=topic_operations,
            )
        )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=cluster_id,
        # Combined mode: the controller is this process. (KRaft brokers answer with a
        # random live broker, since clients send admin requests there to be forwarded.)
        controller_id=cache.broker_id
        if cache.controller_id is None
        else cache.controller_id,
        topics=tuple(topics),
        cluster_authorized_operations=cluster_operations,
    )


def _partitions(
    partition_cls: type[Entity], topic: TopicImage, cache: MetadataCache
) -> list[Entity]:
    alive = {b.broker_id for b in cache.image.brokers.values() if not b.fenced}
    result: list[Entity] = []
    for index in sorted(topic.partitions):
        p = topic.partitions[index]
        error = (
            ErrorCode.none if p.leader != NO_LEADER else ErrorCode.leader_not_available
        )
        result.append(
            build(
                partition_cls,
                error_code=error,
                partition_index=index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=tuple(p.replicas),
                isr_nodes=tuple(p.isr),
                offline_replicas=tuple(r for r in p.replicas if r not in alive),
            )
        )
    return result


def requested_topics(request: Request) -> list[str] | None:
    """The names a Metadata request asks for, each once (Kafka answers a name listed
    twice once); None for "all topics" (a null list)."""
    topics = request.body_as(METADATA).topics  # v1+: null asks for all
    if topics is None:
        return None
    return list(dict.fromkeys(t.name for t in topics))


def handle_list_offsets(
    request: Request, replica_manager: ReplicaManagerService
) -> None:
    body = request.body_as(LIST_OFFSETS)
    cls = response_schema(ApiKey.LIST_OFFSETS, request.api_version)
    assert cls is not None
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, int(p.partition_index))
            partitions.append(
                build(
                    partition_cls,
                    partition_index=p.partition_index,
                    **_list_offset(
                        replica_manager,
                        tp,
                        int(p.timestamp),
                        int(p.current_leader_epoch)
                        if isinstance(p, LIST_OFFSETS_PARTITION_WITH_EPOCH)
                        else -1,
                    ),
                )
            )
        topics.append(build(topic_cls, name=topic.name, partitions=tuple(partitions)))
    request.respond(build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics)))


def _list_offset(
    replica_manager: ReplicaManagerService,
    tp: TopicPartition,
    timestamp: int,
    leader_epoch: int,
) -> dict[str, object]:
    partition = replica_manager.get_partition(tp)
    if partition is None:
        return {"error_code": ErrorCode.unknown_topic_or_partition}
    try:
        found = partition.fetch_offset_for_timestamp(timestamp, leader_epoch)
    except ReplicationError as exc:
        return {"error_code": exc.error_code}
    if found is None:
        # No record at or after the timestamp: offset -1, as Kafka answers.
        return {"error_code": ErrorCode.none, "timestamp": -1, "offset": -1}
    return {
        "error_code": ErrorCode.none,
        "timestamp": found.timestamp,
        "offset": found.offset,
        "leader_epoch": -1 if found.leader_epoch is None else found.leader_epoch,
    }
