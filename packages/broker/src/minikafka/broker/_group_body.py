"""The group APIs' request bodies, typed: one Union per API over its served versions.

As ``_body.py`` does for the rest (see there): the classes of exactly the versions the
broker advertises for FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups and DeleteGroups, as a Union type
(a string, for mypy) for a handler's annotations and as a tuple for
``Request.body_as``; and those of the versions that carry a field only some have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from kio.schema.consumer_group_describe.v0 import (
        request as consumer_group_describe_v0,
    )
    from kio.schema.consumer_group_describe.v1 import (
        request as consumer_group_describe_v1,
    )
    from kio.schema.consumer_group_heartbeat.v0 import (
        request as consumer_group_heartbeat_v0,
    )
    from kio.schema.consumer_group_heartbeat.v1 import (
        request as consumer_group_heartbeat_v1,
    )
    from kio.schema.delete_groups.v0 import request as delete_groups_v0
    from kio.schema.delete_groups.v1 import request as delete_groups_v1
    from kio.schema.describe_groups.v0 import request as describe_groups_v0
    from kio.schema.describe_groups.v1 import request as describe_groups_v1
    from kio.schema.describe_groups.v2 import request as describe_groups_v2
    from kio.schema.describe_groups.v3 import request as describe_groups_v3
    from kio.schema.describe_groups.v4 import request as describe_groups_v4
    from kio.schema.describe_groups.v5 import request as describe_groups_v5
    from kio.schema.describe_groups.v6 import request as describe_groups_v6
    from kio.schema.find_coordinator.v0 import request as find_coordinator_v0
    from kio.schema.find_coordinator.v1 import request as find_coordinator_v1
    from kio.schema.find_coordinator.v2 import request as find_coordinator_v2
    from kio.schema.find_coordinator.v3 import request as find_coordinator_v3
    from kio.schema.find_coordinator.v4 import request as find_coordinator_v4
    from kio.schema.find_coordinator.v5 import request as find_coordinator_v5
    from kio.schema.find_coordinator.v6 import request as find_coordinator_v6
    from kio.schema.heartbeat.v0 import request as heartbeat_v0
    from kio.schema.heartbeat.v1 import request as heartbeat_v1
    from kio.schema.heartbeat.v2 import request as heartbeat_v2
    from kio.schema.heartbeat.v3 import request as heartbeat_v3
    from kio.schema.heartbeat.v4 import request as heartbeat_v4
    from kio.schema.join_group.v0 import request as join_group_v0
    from kio.schema.join_group.v1 import request as join_group_v1
    from kio.schema.join_group.v2 import request as join_group_v2
    from kio.schema.join_group.v3 import request as join_group_v3
    from kio.schema.join_group.v4 import request as join_group_v4
    from kio.schema.join_group.v5 import request as join_group_v5
    from kio.schema.join_group.v6 import request as join_group_v6
    from kio.schema.join_group.v7 import request as join_group_v7
    from kio.schema.join_group.v8 import request as join_group_v8
    from kio.schema.join_group.v9 import request as join_group_v9
    from kio.schema.leave_group.v0 import request as leave_group_v0
    from kio.schema.leave_group.v1 import request as leave_group_v1
    from kio.schema.leave_group.v2 import request as leave_group_v2
    from kio.schema.leave_group.v3 import request as leave_group_v3
    from kio.schema.leave_group.v4 import request as leave_group_v4
    from kio.schema.leave_group.v5 import request as leave_group_v5
    from kio.schema.list_groups.v0 import request as list_groups_v0
    from kio.schema.list_groups.v1 import request as list_groups_v1
    from kio.schema.list_groups.v2 import request as list_groups_v2
    from kio.schema.list_groups.v3 import request as list_groups_v3
    from kio.schema.list_groups.v4 import request as list_groups_v4
    from kio.schema.list_groups.v5 import request as list_groups_v5
    from kio.schema.offset_commit.v2 import request as offset_commit_v2
    from kio.schema.offset_commit.v3 import request as offset_commit_v3
    from kio.schema.offset_commit.v4 import request as offset_commit_v4
    from kio.schema.offset_commit.v5 import request as offset_commit_v5
    from kio.schema.offset_commit.v6 import request as offset_commit_v6
    from kio.schema.offset_commit.v7 import request as offset_commit_v7
    from kio.schema.offset_commit.v8 import request as offset_commit_v8
    from kio.schema.offset_commit.v9 import request as offset_commit_v9
    from kio.schema.offset_fetch.v1 import request as offset_fetch_v1
    from kio.schema.offset_fetch.v2 import request as offset_fetch_v2
    from kio.schema.offset_fetch.v3 import request as offset_fetch_v3
    from kio.schema.offset_fetch.v4 import request as offset_fetch_v4
    from kio.schema.offset_fetch.v5 import request as offset_fetch_v5
    from kio.schema.offset_fetch.v6 import request as offset_fetch_v6
    from kio.schema.offset_fetch.v7 import request as offset_fetch_v7
    from kio.schema.offset_fetch.v8 import request as offset_fetch_v8
    from kio.schema.offset_fetch.v9 import request as offset_fetch_v9
    from kio.schema.sync_group.v0 import request as sync_group_v0
    from kio.schema.sync_group.v1 import request as sync_group_v1
    from kio.schema.sync_group.v2 import request as sync_group_v2
    from kio.schema.sync_group.v3 import request as sync_group_v3
    from kio.schema.sync_group.v4 import request as sync_group_v4
    from kio.schema.sync_group.v5 import request as sync_group_v5

from minikafka.net import ApiKey, body_classes

OffsetCommitRequest: TypeAlias = (
    "offset_commit_v2.OffsetCommitRequest"
    " | offset_commit_v3.OffsetCommitRequest"
    " | offset_commit_v4.OffsetCommitRequest"
    " | offset_commit_v5.OffsetCommitRequest"
    " | offset_commit_v6.OffsetCommitRequest"
    " | offset_commit_v7.OffsetCommitRequest"
    " | offset_commit_v8.OffsetCommitRequest"
    " | offset_commit_v9.OffsetCommitRequest"
)
OffsetCommitWithInstanceId: TypeAlias = (
    "offset_commit_v7.OffsetCommitRequest"
    " | offset_commit_v8.OffsetCommitRequest"
    " | offset_commit_v9.OffsetCommitRequest"
)
OFFSET_COMMIT_WITH_INSTANCE_ID: tuple[type[OffsetCommitWithInstanceId], ...] = (
    body_classes(OffsetCommitWithInstanceId)
)
"""The OffsetCommits that carry ``group_instance_id`` (KIP-345, v7+)."""
OffsetCommitWithRetention: TypeAlias = (
    "offset_commit_v2.OffsetCommitRequest"
    " | offset_commit_v3.OffsetCommitRequest"
    " | offset_commit_v4.OffsetCommitRequest"
)
OFFSET_COMMIT_WITH_RETENTION: tuple[type[OffsetCommitWithRetention], ...] = (
    body_classes(OffsetCommitWithRetention)
)
"""The OffsetCommits that carry ``retention_time`` (v2-4; v5 dropped it)."""
OFFSET_COMMIT: tuple[type[OffsetCommitRequest], ...] = body_classes(OffsetCommitRequest)

OffsetFetchRequest: TypeAlias = (
    "offset_fetch_v1.OffsetFetchRequest"
    " | offset_fetch_v2.OffsetFetchRequest"
    " | offset_fetch_v3.OffsetFetchRequest"
    " | offset_fetch_v4.OffsetFetchRequest"
    " | offset_fetch_v5.OffsetFetchRequest"
    " | offset_fetch_v6.OffsetFetchRequest"
    " | offset_fetch_v7.OffsetFetchRequest"
    " | offset_fetch_v8.OffsetFetchRequest"
    " | offset_fetch_v9.OffsetFetchRequest"
)
OFFSET_FETCH: tuple[type[OffsetFetchRequest], ...] = body_classes(OffsetFetchRequest)
# Several groups in one request, each answered on its own, from v8 (KIP-709).
OffsetFetchBatched: TypeAlias = (
    "offset_fetch_v8.OffsetFetchRequest | offset_fetch_v9.OffsetFetchRequest"
)
OFFSET_FETCH_BATCHED: tuple[type[OffsetFetchBatched], ...] = body_classes(
    OffsetFetchBatched
)

FindCoordinatorRequest: TypeAlias = (
    "find_coordinator_v0.FindCoordinatorRequest"
    " | find_coordinator_v1.FindCoordinatorRequest"
    " | find_coordinator_v2.FindCoordinatorRequest"
    " | find_coordinator_v3.FindCoordinatorRequest"
    " | find_coordinator_v4.FindCoordinatorRequest"
    " | find_coordinator_v5.FindCoordinatorRequest"
    " | find_coordinator_v6.FindCoordinatorRequest"
)
FIND_COORDINATOR: tuple[type[FindCoordinatorRequest], ...] = body_classes(
    FindCoordinatorRequest
)
# Several keys in one request, each answered on its own, from v4 (KIP-699).
FindCoordinatorBatched: TypeAlias = (
    "find_coordinator_v4.FindCoordinatorRequest"
    " | find_coordinator_v5.FindCoordinatorRequest"
    " | find_coordinator_v6.FindCoordinatorRequest"
)
FIND_COORDINATOR_BATCHED: tuple[type[FindCoordinatorBatched], ...] = body_classes(
    FindCoordinatorBatched
)

JoinGroupRequest: TypeAlias = (
    "join_group_v0.JoinGroupRequest"
    " | join_group_v1.JoinGroupRequest"
    " | join_group_v2.JoinGroupRequest"
    " | join_group_v3.JoinGroupRequest"
    " | join_group_v4.JoinGroupRequest"
    " | join_group_v5.JoinGroupRequest"
    " | join_group_v6.JoinGroupRequest"
    " | join_group_v7.JoinGroupRequest"
    " | join_group_v8.JoinGroupRequest"
    " | join_group_v9.JoinGroupRequest"
)
JOIN_GROUP: tuple[type[JoinGroupRequest], ...] = body_classes(JoinGroupRequest)
JoinGroupWithRebalanceTimeout: TypeAlias = (
    "join_group_v1.JoinGroupRequest"
    " | join_group_v2.JoinGroupRequest"
    " | join_group_v3.JoinGroupRequest"
    " | join_group_v4.JoinGroupRequest"
    " | join_group_v5.JoinGroupRequest"
    " | join_group_v6.JoinGroupRequest"
    " | join_group_v7.JoinGroupRequest"
    " | join_group_v8.JoinGroupRequest"
    " | join_group_v9.JoinGroupRequest"
)
JOIN_GROUP_WITH_REBALANCE_TIMEOUT: tuple[type[JoinGroupWithRebalanceTimeout], ...] = (
    body_classes(JoinGroupWithRebalanceTimeout)
)
"""The JoinGroups that carry ``rebalance_timeout`` (v1+)."""
JoinGroupWithInstanceId: TypeAlias = (
    "join_group_v5.JoinGroupRequest"
    " | join_group_v6.JoinGroupRequest"
    " | join_group_v7.JoinGroupRequest"
    " | join_group_v8.JoinGroupRequest"
    " | join_group_v9.JoinGroupRequest"
)
JOIN_GROUP_WITH_INSTANCE_ID: tuple[type[JoinGroupWithInstanceId], ...] = body_classes(
    JoinGroupWithInstanceId
)
"""The JoinGroups that carry ``group_instance_id`` (KIP-345, v5+)."""

HeartbeatRequest: TypeAlias = (
    "heartbeat_v0.HeartbeatRequest"
    " | heartbeat_v1.HeartbeatRequest"
    " | heartbeat_v2.HeartbeatRequest"
    " | heartbeat_v3.HeartbeatRequest"
    " | heartbeat_v4.HeartbeatRequest"
)
HEARTBEAT: tuple[type[HeartbeatRequest], ...] = body_classes(HeartbeatRequest)
HeartbeatWithInstanceId: TypeAlias = (
    "heartbeat_v3.HeartbeatRequest | heartbeat_v4.HeartbeatRequest"
)
HEARTBEAT_WITH_INSTANCE_ID: tuple[type[HeartbeatWithInstanceId], ...] = body_classes(
    HeartbeatWithInstanceId
)
"""The Heartbeats that carry ``group_instance_id`` (KIP-345, v3+)."""

LeaveGroupRequest: TypeAlias = (
    "leave_group_v0.LeaveGroupRequest"
    " | leave_group_v1.LeaveGroupRequest"
    " | leave_group_v2.LeaveGroupRequest"
    " | leave_group_v3.LeaveGroupRequest"
    " | leave_group_v4.LeaveGroupRequest"
    " | leave_group_v5.LeaveGroupRequest"
)
LEAVE_GROUP: tuple[type[LeaveGroupRequest], ...] = body_classes(LeaveGroupRequest)
LeaveGroupOfMembers: TypeAlias = (
    "leave_group_v3.LeaveGroupRequest"
    " | leave_group_v4.LeaveGroupRequest"
    " | leave_group_v5.LeaveGroupRequest"
)
LEAVE_GROUP_OF_MEMBERS: tuple[type[LeaveGroupOfMembers], ...] = body_classes(
    LeaveGroupOfMembers
)
"""The LeaveGroups that name a batch of members (KIP-345, v3+)."""

SyncGroupRequest: TypeAlias = (
    "sync_group_v0.SyncGroupRequest"
    " | sync_group_v1.SyncGroupRequest"
    " | sync_group_v2.SyncGroupRequest"
    " | sync_group_v3.SyncGroupRequest"
    " | sync_group_v4.SyncGroupRequest"
    " | sync_group_v5.SyncGroupRequest"
)
SYNC_GROUP: tuple[type[SyncGroupRequest], ...] = body_classes(SyncGroupRequest)
SyncGroupWithInstanceId: TypeAlias = (
    "sync_group_v3.SyncGroupRequest"
    " | sync_group_v4.SyncGroupRequest"
    " | sync_group_v5.SyncGroupRequest"
)
SYNC_GROUP_WITH_INSTANCE_ID: tuple[type[SyncGroupWithInstanceId], ...] = body_classes(
    SyncGroupWithInstanceId
)
"""The SyncGroups that carry ``group_instance_id`` (KIP-345, v3+)."""
SyncGroupWithProtocol: TypeAlias = "sync_group_v5.SyncGroupRequest"
SYNC_GROUP_WITH_PROTOCOL: tuple[type[SyncGroupWithProtocol], ...] = body_classes(
    SyncGroupWithProtocol
)
"""The SyncGroups that name the protocol type and name they expect (KIP-559, v5+)."""

DescribeGroupsRequest: TypeAlias = (
    "describe_groups_v0.DescribeGroupsRequest"
    " | describe_groups_v1.DescribeGroupsRequest"
    " | describe_groups_v2.DescribeGroupsRequest"
    " | describe_groups_v3.DescribeGroupsRequest"
    " | describe_groups_v4.DescribeGroupsRequest"
    " | describe_groups_v5.DescribeGroupsRequest"
    " | describe_groups_v6.DescribeGroupsRequest"
)
DESCRIBE_GROUPS: tuple[type[DescribeGroupsRequest], ...] = body_classes(
    DescribeGroupsRequest
)
DescribeGroupsWithOperations: TypeAlias = (
    "describe_groups_v3.DescribeGroupsRequest"
    " | describe_groups_v4.DescribeGroupsRequest"
    " | describe_groups_v5.DescribeGroupsRequest"
    " | describe_groups_v6.DescribeGroupsRequest"
)
DESCRIBE_GROUPS_WITH_OPERATIONS: tuple[type[DescribeGroupsWithOperations], ...] = (
    body_classes(DescribeGroupsWithOperations)
)
"""The DescribeGroups that may ask for authorized operations (KIP-430, v3+)."""

ListGroupsRequest: TypeAlias = (
    "list_groups_v0.ListGroupsRequest"
    " | list_groups_v1.ListGroupsRequest"
    " | list_groups_v2.ListGroupsRequest"
    " | list_groups_v3.ListGroupsRequest"
    " | list_groups_v4.ListGroupsRequest"
    " | list_groups_v5.ListGroupsRequest"
)
LIST_GROUPS: tuple[type[ListGroupsRequest], ...] = body_classes(ListGroupsRequest)

DeleteGroupsRequest: TypeAlias = (
    "delete_groups_v0.DeleteGroupsRequest | delete_groups_v1.DeleteGroupsRequest"
)
DELETE_GROUPS: tuple[type[DeleteGroupsRequest], ...] = body_classes(DeleteGroupsRequest)

# A committing client names the leader epoch of the offset it commits from OffsetCommit
# v6 (KIP-320).
OffsetCommitPartitionWithEpoch: TypeAlias = (
    "offset_commit_v6.OffsetCommitRequestPartition"
    " | offset_commit_v7.OffsetCommitRequestPartition"
    " | offset_commit_v8.OffsetCommitRequestPartition"
    " | offset_commit_v9.OffsetCommitRequestPartition"
)
OFFSET_COMMIT_PARTITION_WITH_EPOCH: tuple[type[OffsetCommitPartitionWithEpoch], ...] = (
    body_classes(OffsetCommitPartitionWithEpoch)
)

# The requests that may ask for stable offsets only (v7+, KIP-447).
OffsetFetchRequireStable: TypeAlias = (
    "offset_fetch_v7.OffsetFetchRequest"
    " | offset_fetch_v8.OffsetFetchRequest"
    " | offset_fetch_v9.OffsetFetchRequest"
)
OFFSET_FETCH_REQUIRE_STABLE: tuple[type[OffsetFetchRequireStable], ...] = body_classes(
    OffsetFetchRequireStable
)

# KIP-848's consumer group protocol.
ConsumerGroupHeartbeatRequest: TypeAlias = (
    "consumer_group_heartbeat_v0.ConsumerGroupHeartbeatRequest"
    " | consumer_group_heartbeat_v1.ConsumerGroupHeartbeatRequest"
)
CONSUMER_GROUP_HEARTBEAT: tuple[type[ConsumerGroupHeartbeatRequest], ...] = (
    body_classes(ConsumerGroupHeartbeatRequest)
)
ConsumerGroupDescribeRequest: TypeAlias = (
    "consumer_group_describe_v0.ConsumerGroupDescribeRequest"
    " | consumer_group_describe_v1.ConsumerGroupDescribeRequest"
)
CONSUMER_GROUP_DESCRIBE: tuple[type[ConsumerGroupDescribeRequest], ...] = body_classes(
    ConsumerGroupDescribeRequest
)

GROUP_BODIES: Mapping[ApiKey, tuple[type, ...]] = {
    ApiKey.OFFSET_COMMIT: OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH: OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR: FIND_COORDINATOR,
    ApiKey.JOIN_GROUP: JOIN_GROUP,
    ApiKey.HEARTBEAT: HEARTBEAT,
    ApiKey.LEAVE_GROUP: LEAVE_GROUP,
    ApiKey.SYNC_GROUP: SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS: DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS: LIST_GROUPS,
    ApiKey.DELETE_GROUPS: DELETE_GROUPS,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE: CONSUMER_GROUP_DESCRIBE,
}
