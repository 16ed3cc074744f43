"""The group APIs: kio's per-version requests in, the group coordinator's answers out.

Seed 000's consume path and seed 002: a consumer in a group finds its coordinator
(FindCoordinator, in ``_offsets_topic.py``), joins (JoinGroup), learns its partitions
(SyncGroup), keeps its session alive (Heartbeat) and leaves (LeaveGroup); the admin
tools list, describe and delete groups. (Its committed offsets are
``_group_offsets.py``'s.) The decisions are the coordinator's
(``minikafka.coordination``); these handlers only translate between the wire and the
core's values, version by version:

- JoinGroup v0-9: v0 has no rebalance timeout, v2 adds throttle time, v4 makes a new
  member rejoin with the id it is handed (KIP-394), v5 adds static members (KIP-345),
  v7 makes the protocol name nullable, v8 a reason (KIP-800), v9 lets a static leader
  skip the assignment (KIP-814).
- SyncGroup v0-5, Heartbeat v0-4: v1 adds throttle time, v3 the group instance id;
  SyncGroup v5 names the protocol the member expects (KIP-559).
- LeaveGroup v0-5: one member until v3, which leaves members in a batch (KIP-345).
- DescribeGroups v0-6 (v6: an unknown group is not found, KIP-1043), ListGroups v0-5,
  DeleteGroups v0-1.
- From JoinGroup v6, SyncGroup v4, Heartbeat v4, LeaveGroup v4 and DescribeGroups v5
  on, the versions are flexible (KIP-482): the same fields, tagged-field sections added.

JoinGroup and SyncGroup are answered when the rebalance completes, which may take
the rebalance timeout; everything else is answered at once or after one write to
``__consumer_offsets`` (DeleteGroups: one write per group).

Heartbeat is the group API every member sends every ``heartbeat.interval.ms``: its
answer (an error code, and from v1 a zero throttle time) is written with one
``struct`` call rather than built and encoded through kio.
"""

from __future__ import annotations

import datetime
import struct

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.coordination import (
    CONSUMER_GROUP_TYPE,
    CONSUMER_PROTOCOL_TYPE,
    GroupCoordinatorShell,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.net import ApiKey, Request, build, is_body, nested
from minikafka.security import AclOperation, ResourceType

from ._authorization import BrokerAuthorizer
from ._group_body import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    DESCRIBE_GROUPS_WITH_OPERATIONS,
    HEARTBEAT,
    HEARTBEAT_WITH_INSTANCE_ID,
    JOIN_GROUP,
    JOIN_GROUP_WITH_INSTANCE_ID,
    JOIN_GROUP_WITH_REBALANCE_TIMEOUT,
    LEAVE_GROUP,
    LEAVE_GROUP_OF_MEMBERS,
    LIST_GROUPS,
    SYNC_GROUP,
    SYNC_GROUP_WITH_INSTANCE_ID,
    SYNC_GROUP_WITH_PROTOCOL,
)
from ._group_offsets import respond_offset_commit

NO_THROTTLE = datetime.timedelta(0)
_MS = datetime.timedelta(milliseconds=1)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # KIP-430: not asked for
# Without an authorizer Kafka reports every operation a group supports: READ (3),
# DELETE (6) and DESCRIBE (8), as a bit field (AclEntry.supportedOperations).
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)

_HEARTBEAT_V0 = struct.Struct(">h")  # error_code
_HEARTBEAT_V1 = struct.Struct(">ih")  # throttle_time_ms, error_code (v1-v4)
_NO_TAGGED_FIELDS = b"\x00"  # a flexible version's empty tagged-field section


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
            request.response_class(),
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.invalid_group_id,
            **extra,
        )
    )


# --- JoinGroup and SyncGroup --------------------------------------------------------------


async def handle_join_group(request: Request, service: GroupCoordinatorShell) -> None:
    body = request.body_as(JOIN_GROUP)
    version = request.api_version
    rebalance_timeout = (
        body.rebalance_timeout
        if isinstance(body, JOIN_GROUP_WITH_REBALANCE_TIMEOUT)
        else None
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
            if isinstance(body, JOIN_GROUP_WITH_INSTANCE_ID)
            else None,
            client_id=request.header.client_id or "",
            client_host=client_host(request.connection_id),
            version=version,
        )
    )
    _respond_join_group(request, answer)


def _respond_join_group(request: Request, answer: JoinGroupResponse) -> None:
    version = request.api_version
    cls = request.response_class()
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


async def handle_sync_group(request: Request, service: GroupCoordinatorShell) -> None:
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
            if isinstance(body, SYNC_GROUP_WITH_INSTANCE_ID)
            else None,
            # KIP-559, v5+: the member says which protocol it expects the group to run.
            protocol_type=body.protocol_type
            if isinstance(body, SYNC_GROUP_WITH_PROTOCOL)
            else None,
            protocol_name=body.protocol_name
            if isinstance(body, SYNC_GROUP_WITH_PROTOCOL)
            else None,
            # Only the leader sends assignments; a member listed twice gets the last.
            assignments=tuple((a.member_id, a.assignment) for a in body.assignments),
        )
    )
    _respond_sync_group(request, answer)


def _respond_sync_group(request: Request, answer: SyncGroupResponse) -> None:
    request.respond(
        build(
            request.response_class(),
            throttle_time=NO_THROTTLE,
            error_code=answer.error_code,
            protocol_type=answer.protocol_type,
            protocol_name=answer.protocol_name,
            assignment=answer.assignment,
        )
    )


# --- Heartbeat and LeaveGroup -------------------------------------------------------------


async def handle_heartbeat(request: Request, service: GroupCoordinatorShell) -> None:
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
            if isinstance(body, HEARTBEAT_WITH_INSTANCE_ID)
            else None,
        )
    )
    request.respond_parts(
        (encode_heartbeat_response(request.api_version, answer.error_code),)
    )


def encode_heartbeat_response(version: int, error_code: ErrorCode) -> bytes:
    """The HeartbeatResponse body of ``version`` (0-4; v4 is flexible: the same fields
    and an empty tagged-field section), no throttling."""
    if version == 0:
        return _HEARTBEAT_V0.pack(error_code)
    if version < 4:
        return _HEARTBEAT_V1.pack(0, error_code)
    return _HEARTBEAT_V1.pack(0, error_code) + _NO_TAGGED_FIELDS


async def handle_leave_group(request: Request, service: GroupCoordinatorShell) -> None:
    body = request.body_as(LEAVE_GROUP)
    version = request.api_version
    if not body.group_id:
        _refuse_empty_group_id(request)
        return
    if is_body(body, LEAVE_GROUP_OF_MEMBERS):  # KIP-345: a batch of members from v3
        leaving = tuple(
            MemberIdentity(m.member_id, m.group_instance_id) for m in body.members
        )
    else:
        leaving = (MemberIdentity(body.member_id),)
    answer = await service.leave_group(
        LeaveGroupRequest(body.group_id, leaving, version=version)
    )
    cls = request.response_class()
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


# --- answers for a request that waits for its group ------------------------------------


def respond_group_error(request: Request, error: ErrorCode) -> None:
    """Answer a request that waits for its group (JoinGroup, SyncGroup, OffsetCommit,
    ConsumerGroupHeartbeat, the ``parks`` rows) with ``error`` alone: Kafka's
    ``getErrorResponse``, what KafkaApis sends when a handler throws (every partition of
    an OffsetCommit carries it). Raises if the request's own body cannot be read back."""
    if request.api_key == ApiKey.JOIN_GROUP:
        _respond_join_group(request, JoinGroupResponse.error(error))
    elif request.api_key == ApiKey.SYNC_GROUP:
        _respond_sync_group(request, SyncGroupResponse(error))
    elif request.api_key == ApiKey.OFFSET_COMMIT:
        respond_offset_commit(request, lambda _: error)
    elif request.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        cls = request.response_class()
        request.respond(
            build(
                cls,
                throttle_time=NO_THROTTLE,
                error_code=error,
                member_epoch=0,
                heartbeat_interval=NO_THROTTLE,
            )
        )
    else:
        raise ValueError(f"{request.api_name} is not answered by respond_group_error")


# --- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------

CLASSIC_GROUP_TYPE = "classic"
"""ListGroups' type of a group of the classic protocol (KIP-848 names the other ``consumer``)."""


async def handle_describe_groups(
    request: Request,
    service: GroupCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DescribeGroups v0-6; with an authorizer each group needs DESCRIBE
    (GROUP_AUTHORIZATION_FAILED) and its authorized operations are the principal's."""
    body = request.body_as(DESCRIBE_GROUPS)
    cls = request.response_class()
    group_cls = nested(cls, "groups")
    member_cls = nested(group_cls, "members")
    with_operations = (  # KIP-430, v3+
        isinstance(body, DESCRIBE_GROUPS_WITH_OPERATIONS)
        and body.include_authorized_operations
    )
    groups = []
    for group_id in body.groups:
        if authorizer is not None and not authorizer.group_allowed(
            request, AclOperation.DESCRIBE, group_id
        ):
            denied = ErrorCode.group_authorization_failed
            groups.append(
                build(
                    group_cls,
                    error_code=denied,
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=(),
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
            continue
        error, summary = service.describe_group(group_id)
        ok = error is ErrorCode.none
        message = None
        if ok and summary.state is GroupState.DEAD and request.api_version >= 6:
            # KIP-1043: v6 says a group it does not know is not found; older versions
            # still describe it as a Dead group with no error.
            error, message = (
                ErrorCode.group_id_not_found,
                f"Group {group_id} is not a classic group."
                if service.consumer_group(group_id)[1] is not None
                else f"Group {group_id} not found.",
            )
        groups.append(
            build(
                group_cls,
                error_code=error,
                error_message=message,
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
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED
                if not (with_operations and ok)
                else GROUP_OPERATIONS
                if authorizer is None
                else authorizer.operations(
                    request, ResourceType.GROUP, group_id, GROUP_OPERATIONS
                ),
            )
        )
    request.respond(build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups)))


async def handle_list_groups(
    request: Request,
    service: GroupCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """ListGroups v0-v5: every group this broker coordinates; v4 filters them by state
    (KIP-518) and v5 by type (KIP-848), each case-insensitive and empty meaning all, as
    Kafka's coordinator does. A group is ``classic`` or ``consumer`` (KIP-848's protocol).
    With an authorizer, DESCRIBE on the cluster lists every group, and otherwise only
    the groups the principal may DESCRIBE are listed (Kafka's ``handleListGroupsRequest``)."""
    body = request.body_as(LIST_GROUPS)
    states = {s.lower() for s in getattr(body, "states_filter", ())}
    types = {t.lower() for t in getattr(body, "types_filter", ())}
    # While a partition of __consumer_offsets is loading the list is incomplete, and
    # says so with COORDINATOR_LOAD_IN_PROGRESS (the groups known so far still come).
    error, listed = service.list_groups()
    rows = [
        (g.group_id, g.protocol_type, g.state.value, CLASSIC_GROUP_TYPE) for g in listed
    ]
    # KIP-848's groups: protocol type "consumer", their own states
    rows += [
        (g.group_id, CONSUMER_PROTOCOL_TYPE, g.state.value, CONSUMER_GROUP_TYPE)
        for g in service.list_consumer_groups()
    ]
    if authorizer is not None and not authorizer.cluster_allowed(
        request, AclOperation.DESCRIBE
    ):
        rows = [
            r
            for r in rows
            if authorizer.group_allowed(request, AclOperation.DESCRIBE, r[0])
        ]
    cls = request.response_class()
    group_cls = nested(cls, "groups")
    groups = tuple(
        build(
            group_cls,
            group_id=group_id,
            protocol_type=protocol_type,
            group_state=state,
            group_type=group_type,
        )
        for group_id, protocol_type, state, group_type in rows
        if (not states or state.lower() in states)
        and (not types or group_type in types)
    )
    request.respond(
        build(cls, throttle_time=NO_THROTTLE, error_code=error, groups=groups)
    )


async def handle_delete_groups(
    request: Request,
    service: GroupCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DeleteGroups v0-1; with an authorizer each group needs DELETE
    (GROUP_AUTHORIZATION_FAILED, and the group is left as it is)."""
    body = request.body_as(DELETE_GROUPS)
    cls = request.response_class()
    result_cls = nested(cls, "results")
    # A group named twice is deleted once and answered once, as Kafka does. Each group
    # is answered once its tombstones are committed; the groups go in turn (Kafka
    # writes one partition's groups in one write), so the log is in the request's order.
    results = []
    for name in dict.fromkeys(body.groups_names):
        if authorizer is not None and not authorizer.group_allowed(
            request, AclOperation.DELETE, name
        ):
            error = ErrorCode.group_authorization_failed
        else:
            error = await service.delete_group(name)
        results.append(build(result_cls, group_id=name, error_code=error))
    request.respond(build(cls, throttle_time=NO_THROTTLE, results=tuple(results)))
