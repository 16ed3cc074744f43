"""The group APIs: kio's per-version requests in, the group coordinator's answers out.

Seed 000's consume path and seed 002: a consumer in a group finds its coordinator
(FindCoordinator, in ``_offsets_topic.py``), joins (JoinGroup), learns its partitions
(SyncGroup), keeps its session alive (Heartbeat), commits and reads its positions
(OffsetCommit, OffsetFetch) and leaves (LeaveGroup); the admin tools list, describe and
delete groups. The decisions are the coordinator's (``minikafka.coordination``); these
handlers only translate between the wire and the core's values, version by version:

- JoinGroup v0-5: v0 has no rebalance timeout, v2 adds throttle time, v4 makes a new
  member rejoin with the id it is handed (KIP-394), v5 adds static members (KIP-345).
- SyncGroup v0-3, Heartbeat v0-3: v1 adds throttle time, v3 the group instance id.
- LeaveGroup v0-3: one member until v3, which leaves members in a batch (KIP-345).
- OffsetCommit v2-7: v2-4 carry a retention time, v6 the leader epoch (KIP-320), v7
  the group instance id. OffsetFetch v1-5: v2 asks for all partitions with a null
  topic list and adds the top-level error, v5 returns the leader epoch.
- DescribeGroups v0-4, ListGroups v0-2, DeleteGroups v0-1.

JoinGroup and SyncGroup are answered when the rebalance completes, which may take
the rebalance timeout; everything else is answered at once or after one write to
``__consumer_offsets``.

Heartbeat is the group API every member sends every ``heartbeat.interval.ms``: its
answer (an error code, and from v1 a zero throttle time) is written with one
``struct`` call rather than built and encoded through kio.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable

from kio.schema.describe_groups.v3.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV3,
)
from kio.schema.describe_groups.v4.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV4,
)
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v3.request import HeartbeatRequest as HeartbeatRequestV3
from kio.schema.join_group.v0.request import JoinGroupRequest as JoinGroupRequestV0
from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupRequestV5
from kio.schema.leave_group.v3.request import LeaveGroupRequest as LeaveGroupRequestV3
from kio.schema.offset_commit.v2.request import (
    OffsetCommitRequest as OffsetCommitRequestV2,
)
from kio.schema.offset_commit.v3.request import (
    OffsetCommitRequest as OffsetCommitRequestV3,
)
from kio.schema.offset_commit.v4.request import (
    OffsetCommitRequest as OffsetCommitRequestV4,
)
from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequest as OffsetCommitRequestV7,
)
from kio.schema.sync_group.v3.request import SyncGroupRequest as SyncGroupRequestV3
from kio.static.protocol import Entity, ResponsePayload

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupCoordinatorService,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.net import ApiKey, Request, build, nested, response_schema

from ._body import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_COMMIT_PARTITION_WITH_EPOCH,
    OFFSET_FETCH,
    SYNC_GROUP,
)
from ._metadata_cache import MetadataCache

NO_THROTTLE = datetime.timedelta(0)
_MS = datetime.timedelta(milliseconds=1)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # KIP-430: not asked for
# Without an authorizer Kafka reports every operation a group supports: READ (3),
# DELETE (6) and DESCRIBE (8), as a bit field (AclEntry.supportedOperations).
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)

_HEARTBEAT_V0 = struct.Struct(">h")  # error_code
_HEARTBEAT_V1 = struct.Struct(">ih")  # throttle_time_ms, error_code (v1-v3)


def _response_class(request: Request) -> type[ResponsePayload]:
    cls = response_schema(request.api_key, request.api_version)
    assert cls is not None
    return cls


def _ms(value: datetime.timedelta) -> int:
    return value // _MS


def client_host(connection_id: str) -> str:
    """The peer's address as Kafka's ``clientAddress.toString`` spells it: ``/1.2.3.4``.

    The net layer names a socket connection ``local-remote-processor-index`` with each
    address as ``host:port`` (IPv6 hosts have colons, never dashes); "" otherwise.
    """
    parts = connection_id.split("-")
    if len(parts) < 2 or ":" not in parts[1]:
        return ""
    return "/" + parts[1].rpartition(":")[0]


def _refuse_empty_group_id(request: Request) -> None:
    """INVALID_GROUP_ID for SyncGroup, Heartbeat and LeaveGroup (the core checks JoinGroup).

    Kafka's isValidGroupId: "The remaining APIs are groups using Kafka for group
    coordination and must have a non-empty groupId"; OffsetCommit, OffsetFetch,
    DescribeGroups and DeleteGroups accept "" for old consumers' sake.
    """
    # The fields these answers have beyond an error: SyncGroup's (empty) assignment and
    # LeaveGroup v3's per-member results.
    extra: dict[str, object] = {}
    if request.api_key == ApiKey.SYNC_GROUP:
        extra["assignment"] = b""
    elif request.api_key == ApiKey.LEAVE_GROUP:
        extra["members"] = ()
    request.respond(
        build(
            _response_class(request),
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.invalid_group_id,
            **extra,
        )
    )


# --- JoinGroup and SyncGroup --------------------------------------------------------------


async def handle_join_group(request: Request, service: GroupCoordinatorService) -> None:
    body = request.body_as(JOIN_GROUP)
    version = request.api_version
    rebalance_timeout = (
        None if isinstance(body, JoinGroupRequestV0) else body.rebalance_timeout
    )
    answer = await service.join_group(
        JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            protocol_type=body.protocol_type,
            protocols=tuple((p.name, p.metadata) for p in body.protocols),
            session_timeout_ms=_ms(body.session_timeout),
            rebalance_timeout_ms=-1
            if rebalance_timeout is None
            else _ms(rebalance_timeout),
            group_instance_id=body.group_instance_id  # KIP-345, v5+
            if isinstance(body, JoinGroupRequestV5)
            else None,
            client_id=request.header.client_id or "",
            client_host=client_host(request.connection_id),
            version=version,
        )
    )
    _respond_join_group(request, answer)


def _respond_join_group(request: Request, answer: JoinGroupResponse) -> None:
    version = request.api_version
    cls = _response_class(request)
    member_cls = nested(cls, "members")
    # Before v7 the protocol name is not nullable: "" for none (Kafka's NoProtocol).
    protocol_name = answer.protocol_name if version >= 7 else answer.protocol_name or ""
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=answer.error_code,
            generation_id=answer.generation_id,
            protocol_type=answer.protocol_type,
            protocol_name=protocol_name,
            leader=answer.leader,
            skip_assignment=answer.skip_assignment,
            member_id=answer.member_id,
            members=tuple(
                build(
                    member_cls,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata,
                )
                for m in answer.members
            ),
        )
    )


async def handle_sync_group(request: Request, service: GroupCoordinatorService) -> None:
    body = request.body_as(SYNC_GROUP)
    if not body.group_id:
        _refuse_empty_group_id(request)
        return
    answer = await service.sync_group(
        SyncGroupRequest(
            group_id=body.group_id,
            generation_id=int(body.generation_id),
            member_id=body.member_id,
            group_instance_id=body.group_instance_id  # KIP-345, v3+
            if isinstance(body, SyncGroupRequestV3)
            else None,
            # SyncGroup v5 adds protocol_type and protocol_name (KIP-559); v0-3 are served.
            protocol_type=None,
            protocol_name=None,
            # Only the leader sends assignments; a member listed twice gets the last.
            assignments=tuple((a.member_id, a.assignment) for a in body.assignments),
        )
    )
    _respond_sync_group(request, answer)


def _respond_sync_group(request: Request, answer: SyncGroupResponse) -> None:
    request.respond(
        build(
            _response_class(request),
            throttle_time=NO_THROTTLE,
            error_code=answer.error_code,
            protocol_type=answer.protocol_type,
            protocol_name=answer.protocol_name,
            assignment=answer.assignment,
        )
    )


# --- Heartbeat and LeaveGroup -------------------------------------------------------------


async def handle_heartbeat(request: Request, service: GroupCoordinatorService) -> None:
    body = request.body_as(HEARTBEAT)
    if not body.group_id:
        _refuse_empty_group_id(request)
        return
    answer = await service.heartbeat(
        HeartbeatRequest(
            group_id=body.group_id,
            generation_id=int(body.generation_id),
            member_id=body.member_id,
            group_instance_id=body.group_instance_id  # KIP-345, v3+
            if isinstance(body, HeartbeatRequestV3)
            else None,
        )
    )
    request.respond_parts(
        (encode_heartbeat_response(request.api_version, answer.error_code),)
    )


def encode_heartbeat_response(version: int, error_code: ErrorCode) -> bytes:
    """The HeartbeatResponse body of ``version`` (0-3, none flexible), no throttling."""
    if version == 0:
        return _HEARTBEAT_V0.pack(error_code)
    return _HEARTBEAT_V1.pack(0, error_code)


async def handle_leave_group(
    request: Request, service: GroupCoordinatorService
) -> None:
    body = request.body_as(LEAVE_GROUP)
    version = request.api_version
    if not body.group_id:
        _refuse_empty_group_id(request)
        return
    if isinstance(body, LeaveGroupRequestV3):  # KIP-345: a batch of members from v3
        leaving = tuple(
            MemberIdentity(m.member_id, m.group_instance_id) for m in body.members
        )
    else:
        leaving = (MemberIdentity(body.member_id),)
    answer = await service.leave_group(
        LeaveGroupRequest(body.group_id, leaving, version=version)
    )
    cls = _response_class(request)
    members: tuple[Entity, ...] = ()
    if version >= 3:  # before, the core folds the one member's error into the top level
        member_cls = nested(cls, "members")
        members = tuple(
            build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=m.error_code,
            )
            for m in answer.members
        )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=answer.error_code,
            members=members,
        )
    )


# --- OffsetCommit and OffsetFetch ---------------------------------------------------------


async def handle_offset_commit(
    request: Request,
    service: GroupCoordinatorService,
    cache: MetadataCache | None = None,
) -> None:
    """OffsetCommit v2-7. With ``cache``, a partition that does not exist is refused with
    UNKNOWN_TOPIC_OR_PARTITION before the group is asked, as Kafka's KafkaApis does; a
    request with nothing left to commit is answered without the coordinator."""
    body = request.body_as(OFFSET_COMMIT)
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: list[tuple[TopicPartition, CommittedOffset]] = []
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, int(p.partition_index))
            if cache is not None and not _partition_exists(cache, tp):
                errors[tp] = ErrorCode.unknown_topic_or_partition
                continue
            committed = CommittedOffset(
                int(p.committed_offset),
                int(p.committed_leader_epoch)
                if isinstance(p, OFFSET_COMMIT_PARTITION_WITH_EPOCH)
                else -1,
                p.committed_metadata or "",  # nullable: null is "no metadata"
            )
            offsets.append((tp, committed))
    if offsets:
        retention = (
            body.retention_time
            if isinstance(
                body,
                OffsetCommitRequestV2 | OffsetCommitRequestV3 | OffsetCommitRequestV4,
            )
            else None  # v5 dropped it: the broker's offsets.retention.minutes applies
        )
        answer = await service.commit_offsets(
            OffsetCommitRequest(
                group_id=body.group_id,
                generation_id=int(body.generation_id_or_member_epoch),
                member_id=body.member_id,
                offsets=tuple(offsets),
                group_instance_id=body.group_instance_id  # KIP-345, v7+
                if isinstance(body, OffsetCommitRequestV7)
                else None,
                retention_time_ms=-1 if retention is None else _ms(retention),
            )
        )
        errors.update(answer.errors)
    _respond_offset_commit(request, errors.__getitem__)


def _respond_offset_commit(
    request: Request, error_of: Callable[[TopicPartition], ErrorCode]
) -> None:
    body = request.body_as(OFFSET_COMMIT)
    cls = _response_class(request)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    topics = tuple(
        build(
            topic_cls,
            name=topic.name,
            partitions=tuple(
                build(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=error_of(
                        TopicPartition(topic.name, int(p.partition_index))
                    ),
                )
                for p in topic.partitions
            ),
        )
        for topic in body.topics
    )
    request.respond(build(cls, throttle_time=NO_THROTTLE, topics=topics))


def respond_group_error(request: Request, error: ErrorCode) -> None:
    """Answer a request that waits for its group (JoinGroup, SyncGroup, OffsetCommit,
    the ``parks`` rows) with ``error`` alone: Kafka's ``getErrorResponse``, what
    KafkaApis sends when a handler throws (every partition of an OffsetCommit carries
    it). Raises if the request's own body cannot be read back."""
    if request.api_key == ApiKey.JOIN_GROUP:
        _respond_join_group(request, JoinGroupResponse.error(error))
    elif request.api_key == ApiKey.SYNC_GROUP:
        _respond_sync_group(request, SyncGroupResponse(error))
    elif request.api_key == ApiKey.OFFSET_COMMIT:
        _respond_offset_commit(request, lambda _: error)
    else:
        raise ValueError(f"{request.api_name} is not answered by respond_group_error")


def _partition_exists(cache: MetadataCache, tp: TopicPartition) -> bool:
    topic = cache.topic(tp.topic)
    return topic is not None and tp.partition in topic.partitions


async def handle_offset_fetch(
    request: Request, service: GroupCoordinatorService
) -> None:
    """OffsetFetch v1-5: a null topic list (v2+) asks for every committed partition."""
    body = request.body_as(OFFSET_FETCH)
    version = request.api_version
    wanted: list[tuple[str, list[int]]] | None = None
    if body.topics is not None:
        wanted = [(t.name, [int(i) for i in t.partition_indexes]) for t in body.topics]
    answer = service.fetch_offsets(
        body.group_id,
        None
        if wanted is None
        else [TopicPartition(n, i) for n, ids in wanted for i in ids],
    )
    committed = dict(answer.offsets)
    group_error = answer.error_code
    if wanted is None:
        # Every committed partition, grouped by topic in the core's (sorted) order.
        wanted = []
        for tp, _ in answer.offsets:
            if not wanted or wanted[-1][0] != tp.topic:
                wanted.append((tp.topic, []))
            wanted[-1][1].append(tp.partition)
    if group_error is not ErrorCode.none:
        if version >= 2:
            wanted = []  # the error is the top-level one, and no partitions are listed
        committed = {}
    cls = _response_class(request)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    # v1 has no top-level error: "we put it at the partition level" (OffsetFetchResponse).
    partition_error = group_error if version < 2 else ErrorCode.none
    topics = tuple(
        build(
            topic_cls,
            name=name,
            partitions=tuple(
                _fetched_partition(
                    partition_cls,
                    i,
                    committed.get(TopicPartition(name, i)),
                    partition_error,
                )
                for i in indexes
            ),
        )
        for name, indexes in wanted
    )
    request.respond(
        build(cls, throttle_time=NO_THROTTLE, error_code=group_error, topics=topics)
    )


def _fetched_partition(
    partition_cls: type[Entity],
    index: int,
    offset: CommittedOffset | None,
    error: ErrorCode,
) -> Entity:
    # No committed offset: offset -1 and metadata "" (Kafka's UNKNOWN_PARTITION), no error.
    return build(
        partition_cls,
        partition_index=index,
        committed_offset=-1 if offset is None else offset.offset,
        committed_leader_epoch=-1 if offset is None else offset.leader_epoch,
        metadata="" if offset is None else offset.metadata,
        error_code=error,
    )


# --- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------


async def handle_describe_groups(
    request: Request, service: GroupCoordinatorService
) -> None:
    body = request.body_as(DESCRIBE_GROUPS)
    cls = _response_class(request)
    group_cls = nested(cls, "groups")
    member_cls = nested(group_cls, "members")
    with_operations = (  # KIP-430, v3+
        isinstance(body, DescribeGroupsRequestV3 | DescribeGroupsRequestV4)
        and body.include_authorized_operations
    )
    groups = []
    for group_id in body.groups:
        error, summary = service.describe_group(group_id)
        ok = error is ErrorCode.none
        groups.append(
            build(
                group_cls,
                error_code=error,
                group_id=group_id,
                # A group this broker cannot answer for has no state (Kafka's NoState);
                # one it does not know is Dead.
                group_state=summary.state.value if ok else "",
                protocol_type=summary.protocol_type,
                protocol_data=summary.protocol,
                members=tuple(
                    build(
                        member_cls,
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in summary.members
                ),
                authorized_operations=GROUP_OPERATIONS
                if with_operations and ok
                else AUTHORIZED_OPERATIONS_OMITTED,
            )
        )
    request.respond(build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups)))


async def handle_list_groups(
    request: Request, service: GroupCoordinatorService
) -> None:
    # While a partition of __consumer_offsets is loading the list is incomplete, and
    # says so with COORDINATOR_LOAD_IN_PROGRESS (the groups known so far still come).
    error, listed = service.list_groups()
    cls = _response_class(request)
    group_cls = nested(cls, "groups")
    groups = tuple(
        build(
            group_cls,
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.state.value,
        )
        for g in listed
    )
    request.respond(
        build(cls, throttle_time=NO_THROTTLE, error_code=error, groups=groups)
    )


async def handle_delete_groups(
    request: Request, service: GroupCoordinatorService
) -> None:
    body = request.body_as(DELETE_GROUPS)
    cls = _response_class(request)
    result_cls = nested(cls, "results")
    # A group named twice is deleted once and answered once, as Kafka does.
    names = list(dict.fromkeys(body.groups_names))
    results = tuple(
        build(result_cls, group_id=name, error_code=service.delete_group(name))
        for name in names
    )
    request.respond(build(cls, throttle_time=NO_THROTTLE, results=results))
