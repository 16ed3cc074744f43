"""DescribeCluster and DescribeLogDirs: the cluster, and this broker's disks, described.

DescribeCluster (KIP-700) is the admin client's question "who is in the cluster": the
cluster id, a controller id, and the nodes with their address on the listener the
request came in on (as Metadata gives them) and their rack. KIP-919 (v1) lets the same
request be asked of the controllers' listener, naming which kind of endpoint it wants:
brokers (1) describe the live brokers, controllers (2) the quorum's voters, and an
endpoint asked for the other kind answers MISMATCHED_ENDPOINT_TYPE. That is how
``kafka-metadata-quorum --bootstrap-controller`` and an Admin client built with
``bootstrap.controllers`` find the controllers: the controller id they are given is the
quorum's leader, to which they then send DescribeQuorum. KIP-1073 (v2) lets the client
ask for the fenced brokers too, each marked.

The controller id a broker gives differs by mode, as in Kafka: in ZooKeeper mode it is
the controller broker; in KRaft mode the controllers are not brokers a client could
reach on this listener, so a broker names a random live broker, to which the client's
admin requests go and are forwarded (KIP-590). Either way an id that is not among the
nodes listed is answered as -1 (no controller), so a client never looks up a node it
was not given.

DescribeLogDirs (KIP-113) lists each of this broker's log directories with the replicas
in it: each partition's size on disk, how far its log end lags (for the current log,
the high watermark's distance past the log end offset, which is 0 except on a follower
behind the leader's high watermark; for a future log, created when a replica moves
between directories, its distance behind the current log: none here, since replicas
never move between directories), an error per directory (KAFKA_STORAGE_ERROR once it is
offline), from v3 an error for the whole request, and from v4 the volume's total and
usable bytes (KIP-827). A partition asked for that this broker does not hold is simply
absent, as in Kafka.
"""

from __future__ import annotations

import datetime
import enum
import random
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
from kio.schema.describe_cluster.v1.request import (
    DescribeClusterRequest as DescribeClusterRequestV1,
)
from kio.schema.describe_cluster.v2.request import (
    DescribeClusterRequest as DescribeClusterRequestV2,
)
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from minikafka.common import TopicPartition
from minikafka.log import Log
from minikafka.net import ApiKey, Request, build, nested, response_schema
from minikafka.replication import ReplicaManager, ReplicaManagerShell

from ._authorization import (
    CLUSTER_OPERATIONS,
    BrokerAuthorizer,
    cluster_operations,
)
from ._body import DESCRIBE_CLUSTER, DESCRIBE_LOG_DIRS
from ._metadata import AUTHORIZED_OPERATIONS_OMITTED
from ._metadata_cache import MetadataCache
from ._roles import QuorumVoter

DESCRIBE_CLUSTER_VERSIONS = (0, 2)
"""v1 endpoint_type (KIP-919), v2 include_fenced_brokers and is_fenced (KIP-1073)."""
CONTROLLER_DESCRIBE_CLUSTER_VERSIONS = DESCRIBE_CLUSTER_VERSIONS
"""On the controllers' listener too, as Kafka's: v0, which cannot ask for controllers,
gets INVALID_REQUEST there."""
DESCRIBE_LOG_DIRS_VERSIONS = (1, 4)
"""v1-v2 sizes and lags, v3 a request-wide error, v4 the volume's bytes (KIP-827)."""

NO_CONTROLLER = -1
INVALID_OFFSET_LAG = -1
"""Kafka's ``DescribeLogDirsResponse.INVALID_OFFSET_LAG``: the replica is not online."""
_NO_THROTTLE = datetime.timedelta(0)


class EndpointType(enum.IntEnum):
    """KIP-919's endpoint types: whom a DescribeCluster describes."""

    BROKER = 1
    CONTROLLER = 2


@attrs.frozen
class ClusterNode:
    """One node as DescribeCluster lists it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False


# --- DescribeCluster --------------------------------------------------------------------


def describe_cluster_response(
    request: Request,
    served: EndpointType,
    cluster_id: str,
    nodes: Sequence[ClusterNode],
    controller_id: int,
    operations: int = CLUSTER_OPERATIONS,
) -> ResponsePayload:
    """The answer of an endpoint of kind ``served``: ``nodes`` and ``controller_id``,
    or the error for a request that asks for another kind (Kafka's
    ``AuthHelper.computeDescribeClusterResponse``). ``operations``: the cluster's
    authorized operations when asked (every one without an authorizer)."""
    body = request.body_as(DESCRIBE_CLUSTER)
    cls = response_schema(ApiKey.DESCRIBE_CLUSTER, request.api_version)
    assert cls is not None
    asked = (
        int(body.endpoint_type)
        if isinstance(body, DescribeClusterRequestV1 | DescribeClusterRequestV2)
        else EndpointType.BROKER
    )
    # v0 has no endpoint type to name, so its clients get the generic error.
    legacy = request.api_version == 0
    if asked not in {e.value for e in EndpointType}:
        return build(
            cls,
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.invalid_request
            if legacy
            else ErrorCode.unsupported_endpoint_type,
            error_message=f"Unsupported endpoint type {asked}",
            cluster_id="",
            brokers=(),
        )
    if asked != served:
        return build(
            cls,
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.invalid_request
            if legacy
            else ErrorCode.mismatched_endpoint_type,
            error_message=f"The request was sent to an endpoint of type {served.name}, "
            f"but we wanted an endpoint of type {EndpointType(asked).name}",
            cluster_id="",
            brokers=(),
        )
    broker_cls = nested(cls, "brokers")
    listed = {n.node_id for n in nodes}
    return build(
        cls,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode.none,
        endpoint_type=int(served),
        cluster_id=cluster_id,
        controller_id=controller_id if controller_id in listed else NO_CONTROLLER,
        brokers=tuple(
            build(
                broker_cls,
                broker_id=n.node_id,
                host=n.host,
                port=n.port,
                rack=n.rack,
                is_fenced=n.fenced,
            )
            for n in nodes
        ),
        cluster_authorized_operations=operations
        if body.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


def _include_fenced(body: object) -> bool:
    return isinstance(body, DescribeClusterRequestV2) and body.include_fenced_brokers


def broker_nodes(
    cache: MetadataCache, listener: str, *, include_fenced: bool
) -> list[ClusterNode]:
    """The brokers with an endpoint on ``listener``, by id: the live ones, and the
    fenced ones too when asked (KIP-1073)."""
    nodes = []
    for broker in sorted(cache.image.brokers.values(), key=lambda b: b.broker_id):
        if broker.fenced and not include_fenced:
            continue
        for endpoint in broker.endpoints:
            if endpoint.name == listener:
                nodes.append(
                    ClusterNode(
                        broker.broker_id,
                        endpoint.host,
                        endpoint.port,
                        broker.rack,
                        broker.fenced,
                    )
                )
    return nodes


def handle_describe_cluster(
    request: Request,
    cache: MetadataCache,
    cluster_id: str,
    rng: random.Random | None = None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """A broker's DescribeCluster: the brokers on the request's listener. It needs no
    ACL (as in Kafka); with an authorizer the cluster's authorized operations are the
    principal's, and none at all without DESCRIBE on the cluster."""
    body = request.body_as(DESCRIBE_CLUSTER)
    nodes = broker_nodes(cache, request.listener, include_fenced=_include_fenced(body))
    if cache.controller_id is not None:
        controller_id = cache.controller_id  # ZooKeeper mode: the controller broker
    else:
        # KRaft: any live broker, which forwards what only the controller can do.
        alive = sorted(
            b.broker_id for b in cache.image.brokers.values() if not b.fenced
        )
        choose = random.choice if rng is None else rng.choice
        controller_id = choose(alive) if alive else NO_CONTROLLER
    operations = CLUSTER_OPERATIONS
    if authorizer is not None:
        operations = cluster_operations(request, authorizer)
    request.respond(
        describe_cluster_response(
            request, EndpointType.BROKER, cluster_id, nodes, controller_id, operations
        )
    )


def handle_controller_describe_cluster(
    request: Request,
    voters: Iterable[QuorumVoter],
    leader_id: int | None,
    cluster_id: str,
) -> None:
    """A controller's DescribeCluster (KIP-919): the quorum's voters, at the addresses
    ``controller.quorum.voters`` gives (those of the controllers' listener, the one
    this request came in on), and the quorum's leader as the controller."""
    nodes = [ClusterNode(v.node_id, v.host, v.port) for v in voters]
    request.respond(
        describe_cluster_response(
            request,
            EndpointType.CONTROLLER,
            cluster_id,
            sorted(nodes, key=lambda n: n.node_id),
            NO_CONTROLLER if leader_id is None else leader_id,
        )
    )


# --- DescribeLogDirs ----------------------------------------------------------------------


@attrs.frozen
class LogDirPartition:
    partition: int
    size: int
    offset_lag: int
    is_future: bool = False


@attrs.frozen
class LogDirDescription:
    """One log dir as DescribeLogDirs gives it (-1 bytes: not known)."""

    path: str
    error_code: ErrorCode
    topics: dict[str, list[LogDirPartition]] = attrs.field(factory=dict)
    total_bytes: int = -1
    usable_bytes: int = -1


def describe_log_dirs(
    replica_manager: ReplicaManager, asked: set[TopicPartition] | None
) -> list[LogDirDescription]:
    """Each configured log dir of this broker with the replicas of ``asked`` (None:
    every replica) it holds (Kafka's ``ReplicaManager.describeLogDirs``)."""
    log_manager = replica_manager.log_manager
    by_dir: dict[Path, list[Log]] = {}
    for tp, log in log_manager.logs.items():
        log_dir = log_manager.log_dir_of(tp)
        if log_dir is not None and (asked is None or tp in asked):
            by_dir.setdefault(log_dir, []).append(log)
    described = []
    for log_dir in log_manager.log_dirs:
        path = str(log_dir.absolute())
        if log_dir in log_manager.offline_dirs:
            described.append(LogDirDescription(path, ErrorCode.kafka_storage_error))
            continue
        try:
            usage = shutil.disk_usage(log_dir)
        except OSError:
            described.append(LogDirDescription(path, ErrorCode.unknown_server_error))
            continue
        topics: dict[str, list[LogDirPartition]] = {}
        for log in sorted(by_dir.get(log_dir, ()), key=lambda g: g.topic_partition):
            tp = log.topic_partition
            topics.setdefault(tp.topic, []).append(
                LogDirPartition(
                    tp.partition, log.size, _offset_lag(replica_manager, log)
                )
            )
        # ``free`` is what an unprivileged writer may still use, Java's usable space.
        described.append(
            LogDirDescription(path, ErrorCode.none, topics, usage.total, usage.free)
        )
    return described


def _offset_lag(replica_manager: ReplicaManager, log: Log) -> int:
    """The current log's lag: how far its end is behind the high watermark (never
    negative); -1 for a log no online replica owns (Kafka's ``getLogEndOffsetLag``)."""
    partition = replica_manager.get_partition(log.topic_partition)
    if partition is None:
        return INVALID_OFFSET_LAG
    return max(log.high_watermark - log.log_end_offset, 0)


def handle_describe_log_dirs(
    request: Request, replica_manager: ReplicaManagerShell
) -> None:
    body = request.body_as(DESCRIBE_LOG_DIRS)
    asked = (
        None
        if body.topics is None
        else {
            TopicPartition(t.topic, int(p)) for t in body.topics for p in t.partitions
        }
    )
    cls = response_schema(ApiKey.DESCRIBE_LOG_DIRS, request.api_version)
    assert cls is not None
    result_cls = nested(cls, "results")
    topic_cls = nested(result_cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    results = tuple(
        build(
            result_cls,
            error_code=d.error_code,
            log_dir=d.path,
            topics=tuple(
                build(
                    topic_cls,
                    name=name,
                    partitions=tuple(
                        build(
                            partition_cls,
                            partition_index=p.partition,
                            partition_size=p.size,
                            offset_lag=p.offset_lag,
                            is_future_key=p.is_future,
                        )
                        for p in partitions
                    ),
                )
                for name, partitions in d.topics.items()
            ),
            total_bytes=d.total_bytes,
            usable_bytes=d.usable_bytes,
        )
        for d in describe_log_dirs(replica_manager.core, asked)
    )
    request.respond(
        build(
            cls, throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, results=results
        )
    )
