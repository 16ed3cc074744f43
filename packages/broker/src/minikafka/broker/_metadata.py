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

import dataclasses
import datetime
import typing
import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from minikafka.common import TopicPartition
from minikafka.controller import NO_LEADER, TopicImage
from minikafka.net import ApiKey, Request, build, encode_entity, nested, response_schema
from minikafka.replication import ReplicaManagerShell, ReplicationError
from minikafka.security import AclOperation

from ._authorization import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    BrokerAuthorizer,
    cluster_operations,
    topic_operations,
)
from ._body import (
    LIST_OFFSETS,
    LIST_OFFSETS_PARTITION_WITH_EPOCH,
    LIST_OFFSETS_WITH_ISOLATION,
    METADATA,
    METADATA_WITH_CLUSTER_OPERATIONS,
    METADATA_WITH_TOPIC_IDS,
    METADATA_WITH_TOPIC_OPERATIONS,
)
from ._metadata_cache import INTERNAL_TOPICS, ZERO_UUID, MetadataCache

NO_THROTTLE = datetime.timedelta(0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # KIP-430: not asked for


def metadata_body(
    request: Request,
    cache: MetadataCache,
    cluster_id: str,
    names: list[str] | None,
    errors: Mapping[str, ErrorCode] | None = None,
    authorizer: BrokerAuthorizer | None = None,
) -> bytes:
    """:func:`metadata_response` encoded, computed once per image and request shape.
    With an authorizer, authorized operations asked for are the principal's (KIP-430),
    and such an answer is computed for its request alone."""
    topic_operations, cluster_operations = _operations(request)
    if authorizer is not None and topic_operations | cluster_operations != OMITTED:
        answer = metadata_response(request, cache, cluster_id, names, errors)
        return encode_entity(_authorized(request, authorizer, answer))
    ids = requested_topic_ids(request)
    key = (
        tuple(ids),
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


OMITTED = AUTHORIZED_OPERATIONS_OMITTED


def _authorized(
    request: Request, authorizer: BrokerAuthorizer, answer: Any
) -> ResponsePayload:
    """``answer`` with the principal's operations (Kafka's ``handleTopicMetadataRequest``):
    each topic it may describe gets its own, one it may not none (the field's
    default); the cluster's are none without DESCRIBE on it."""
    topics = tuple(
        t
        if t.topic_authorized_operations == OMITTED
        else dataclasses.replace(
            t,
            topic_authorized_operations=OMITTED
            if t.error_code is ErrorCode.topic_authorization_failed
            else topic_operations(request, authorizer, t.name),
        )
        for t in answer.topics
    )
    if getattr(answer, "cluster_authorized_operations", OMITTED) != OMITTED:
        operations = cluster_operations(request, authorizer)
        answer = dataclasses.replace(answer, cluster_authorized_operations=operations)
    return dataclasses.replace(answer, topics=topics)  # type: ignore[no-any-return]


def _operations(request: Request) -> tuple[int, int]:
    """KIP-430, v8+: the client may ask for the operations it is allowed (every one,
    here); ``(topic, cluster)`` bit fields, or the "not asked" marker. The cluster's
    are asked for only up to v10 (v11 leaves them to DescribeCluster, KIP-700)."""
    body = request.body_as(METADATA)
    topic = cluster = AUTHORIZED_OPERATIONS_OMITTED
    wants_topic = isinstance(body, METADATA_WITH_TOPIC_OPERATIONS) and bool(
        body.include_topic_authorized_operations
    )
    if wants_topic:
        topic = TOPIC_OPERATIONS
    if isinstance(body, METADATA_WITH_CLUSTER_OPERATIONS) and bool(
        body.include_cluster_authorized_operations
    ):
        cluster = CLUSTER_OPERATIONS
    return topic, cluster


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
    From v12 a client may name topics by id instead (KIP-516): a request that does
    is answered by id alone, UNKNOWN_TOPIC_ID for an id no topic has; v10 and v11
    carry the field but may not use it, and are refused with INVALID_REQUEST.
    """
    ids = requested_topic_ids(request)
    if ids and request.api_version < 12:
        return _refused(request, ErrorCode.invalid_request)
    if ids:
        return _by_ids(request, cache, cluster_id, ids)
    return _by_names(request, cache, cluster_id, names, errors)


def _by_names(
    request: Request,
    cache: MetadataCache,
    cluster_id: str,
    names: list[str] | None,
    errors: Mapping[str, ErrorCode] | None = None,
) -> ResponsePayload:
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
        if topic is None or (
            errors and errors.get(name) is ErrorCode.topic_authorization_failed
        ):
            error = (errors or {}).get(name, ErrorCode.unknown_topic_or_partition)
            topics.append(
                build(
                    topic_cls,
                    error_code=error,
                    name=name,
                    topic_id=ZERO_UUID,
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
                topic_id=topic.topic_id,  # v10+ (KIP-516)
                is_internal=name in INTERNAL_TOPICS,
                partitions=tuple(_partitions(partition_cls, topic, cache)),
                topic_authorized_operations=topic_operations,
            )
        )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,  # v13+: for a client that must bootstrap again
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
    twice once); None for "all topics" (a null list). A request by topic ids
    (:func:`requested_topic_ids`) asks for no names."""
    topics = request.body_as(METADATA).topics  # v1+: null asks for all
    if topics is None:
        return None
    if requested_topic_ids(request):
        return []
    return list(dict.fromkeys(t.name for t in topics if t.name is not None))


def requested_topic_ids(request: Request) -> list[uuid.UUID]:
    """The topic ids a Metadata request names, each once (v10+; empty when it asks by
    name, as a request with only Kafka's zero id does)."""
    body = request.body_as(METADATA)
    if not isinstance(body, METADATA_WITH_TOPIC_IDS) or body.topics is None:
        return []
    return list(
        dict.fromkeys(
            t.topic_id
            for t in body.topics
            if t.topic_id is not None and t.topic_id != ZERO_UUID
        )
    )


def _by_ids(
    request: Request, cache: MetadataCache, cluster_id: str, ids: list[uuid.UUID]
) -> ResponsePayload:
    """A v12+ request by topic ids: each id's topic under its name, or UNKNOWN_TOPIC_ID
    with no name for an id no topic has."""
    found = {i: t.name for i in ids if (t := cache.topic_by_id(i)) is not None}
    answer = _by_names(request, cache, cluster_id, list(found.values()))
    topic_cls = nested(type(answer), "topics")
    topics: list[Entity] = [*typing.cast(Any, answer).topics]
    topics += [
        build(
            topic_cls,
            error_code=ErrorCode.unknown_topic_id,
            name=None,
            topic_id=i,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_operations(request)[0],
        )
        for i in ids
        if i not in found
    ]
    return dataclasses.replace(answer, topics=tuple(topics))


def _refused(request: Request, error: ErrorCode) -> ResponsePayload:
    """Kafka's error response to a Metadata request it refuses whole: each topic asked
    about with the error, no brokers, no cluster."""
    cls = response_schema(ApiKey.METADATA, request.api_version)
    assert cls is not None
    topic_cls = nested(cls, "topics")
    topics = request.body_as(METADATA).topics or ()
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        brokers=(),
        cluster_id=None,
        controller_id=-1,
        topics=tuple(
            build(
                topic_cls,
                error_code=error,
                name=t.name or "",
                topic_id=getattr(t, "topic_id", ZERO_UUID),
                is_internal=False,
                partitions=(),
                topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            )
            for t in topics
        ),
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def handle_list_offsets(
    request: Request,
    replica_manager: ReplicaManagerShell,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """ListOffsets v1-10; with an authorizer a topic the principal may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED (offset and timestamp -1), as Kafka answers it."""
    body = request.body_as(LIST_OFFSETS)
    denied = (
        frozenset()
        if authorizer is None
        else authorizer.denied_topics(
            request, AclOperation.DESCRIBE, (t.name for t in body.topics)
        )
    )
    cls = response_schema(ApiKey.LIST_OFFSETS, request.api_version)
    assert cls is not None
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    read_committed = (
        isinstance(body, LIST_OFFSETS_WITH_ISOLATION) and int(body.isolation_level) == 1
    )
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, int(p.partition_index))
            partitions.append(
                build(
                    partition_cls,
                    partition_index=p.partition_index,
                    **_TOPIC_DENIED
                    if topic.name in denied
                    else _list_offset(
                        replica_manager,
                        cache,
                        tp,
                        int(p.timestamp),
                        int(p.current_leader_epoch)
                        if isinstance(p, LIST_OFFSETS_PARTITION_WITH_EPOCH)
                        else -1,
                        read_committed,
                    ),
                )
            )
        topics.append(build(topic_cls, name=topic.name, partitions=tuple(partitions)))
    request.respond(build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics)))


_TOPIC_DENIED: Mapping[str, object] = {
    "error_code": ErrorCode.topic_authorization_failed,
    "timestamp": -1,
    "offset": -1,
}


def _list_offset(
    replica_manager: ReplicaManagerShell,
    cache: MetadataCache,
    tp: TopicPartition,
    timestamp: int,
    leader_epoch: int,
    read_committed: bool,
) -> dict[str, object]:
    partition = replica_manager.get_partition(tp)
    if partition is None:
        # Kafka's ReplicaManager.getPartitionOrError: a partition the metadata has but
        # this broker does not host (not yet, or no longer) sends the client to refresh
        # its metadata and ask the leader; only one the metadata lacks is unknown.
        topic = cache.topic(tp.topic)
        if topic is not None and tp.partition in topic.partitions:
            return {"error_code": ErrorCode.not_leader_or_follower}
        return {"error_code": ErrorCode.unknown_topic_or_partition}
    try:
        found = partition.fetch_offset_for_timestamp(
            timestamp, leader_epoch, read_committed
        )
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
