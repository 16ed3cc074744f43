"""The request bodies the broker reads, typed: one Union per API over its served versions.

kio generates one class per API version (``ProduceRequest`` of v3 and of v8 are
different types). For each API KafkaApis serves, this module names the classes of
exactly the versions it advertises, as a Union type (``ProduceRequest``) for the
handler's annotations and as a tuple of classes (``PRODUCE``) for the check
:meth:`minikafka.net.Request.body_as` makes. A handler reads the fields every served
version has directly; a field only some versions carry is read after an
``isinstance`` check against those versions' classes, with Kafka's default otherwise.
``SERVED_BODIES`` lets a test check these ranges against KafkaApis's table.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping

from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.create_partitions.v0.request import (
    CreatePartitionsRequest as CreatePartitionsRequestV0,
)
from kio.schema.create_partitions.v1.request import (
    CreatePartitionsRequest as CreatePartitionsRequestV1,
)
from kio.schema.create_topics.v2.request import (
    CreateTopicsRequest as CreateTopicsRequestV2,
)
from kio.schema.create_topics.v3.request import (
    CreateTopicsRequest as CreateTopicsRequestV3,
)
from kio.schema.create_topics.v4.request import (
    CreateTopicsRequest as CreateTopicsRequestV4,
)
from kio.schema.delete_groups.v0.request import (
    DeleteGroupsRequest as DeleteGroupsRequestV0,
)
from kio.schema.delete_groups.v1.request import (
    DeleteGroupsRequest as DeleteGroupsRequestV1,
)
from kio.schema.delete_topics.v1.request import (
    DeleteTopicsRequest as DeleteTopicsRequestV1,
)
from kio.schema.delete_topics.v2.request import (
    DeleteTopicsRequest as DeleteTopicsRequestV2,
)
from kio.schema.delete_topics.v3.request import (
    DeleteTopicsRequest as DeleteTopicsRequestV3,
)
from kio.schema.describe_configs.v1.request import (
    DescribeConfigsRequest as DescribeConfigsRequestV1,
)
from kio.schema.describe_configs.v2.request import (
    DescribeConfigsRequest as DescribeConfigsRequestV2,
)
from kio.schema.describe_configs.v3.request import (
    DescribeConfigsRequest as DescribeConfigsRequestV3,
)
from kio.schema.describe_groups.v0.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV0,
)
from kio.schema.describe_groups.v1.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV1,
)
from kio.schema.describe_groups.v2.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV2,
)
from kio.schema.describe_groups.v3.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV3,
)
from kio.schema.describe_groups.v4.request import (
    DescribeGroupsRequest as DescribeGroupsRequestV4,
)
from kio.schema.describe_quorum.v1 import request as describe_quorum_v1
from kio.schema.elect_leaders.v0.request import (
    ElectLeadersRequest as ElectLeadersRequestV0,
)
from kio.schema.elect_leaders.v1.request import (
    ElectLeadersRequest as ElectLeadersRequestV1,
)
from kio.schema.elect_leaders.v2.request import (
    ElectLeadersRequest as ElectLeadersRequestV2,
)
from kio.schema.fetch.v4.request import FetchRequest as FetchRequestV4
from kio.schema.fetch.v5.request import FetchRequest as FetchRequestV5
from kio.schema.fetch.v6.request import FetchRequest as FetchRequestV6
from kio.schema.fetch.v7.request import FetchRequest as FetchRequestV7
from kio.schema.fetch.v8.request import FetchRequest as FetchRequestV8
from kio.schema.fetch.v9.request import FetchPartition as FetchPartitionV9
from kio.schema.fetch.v9.request import FetchRequest as FetchRequestV9
from kio.schema.fetch.v10.request import FetchPartition as FetchPartitionV10
from kio.schema.fetch.v10.request import FetchRequest as FetchRequestV10
from kio.schema.fetch.v11.request import FetchPartition as FetchPartitionV11
from kio.schema.fetch.v11.request import FetchRequest as FetchRequestV11
from kio.schema.find_coordinator.v0.request import (
    FindCoordinatorRequest as FindCoordinatorRequestV0,
)
from kio.schema.find_coordinator.v1.request import (
    FindCoordinatorRequest as FindCoordinatorRequestV1,
)
from kio.schema.find_coordinator.v2.request import (
    FindCoordinatorRequest as FindCoordinatorRequestV2,
)
from kio.schema.heartbeat.v0.request import HeartbeatRequest as HeartbeatRequestV0
from kio.schema.heartbeat.v1.request import HeartbeatRequest as HeartbeatRequestV1
from kio.schema.heartbeat.v2.request import HeartbeatRequest as HeartbeatRequestV2
from kio.schema.heartbeat.v3.request import HeartbeatRequest as HeartbeatRequestV3
from kio.schema.init_producer_id.v0.request import (
    InitProducerIdRequest as InitProducerIdRequestV0,
)
from kio.schema.init_producer_id.v1.request import (
    InitProducerIdRequest as InitProducerIdRequestV1,
)
from kio.schema.join_group.v0.request import JoinGroupRequest as JoinGroupRequestV0
from kio.schema.join_group.v1.request import JoinGroupRequest as JoinGroupRequestV1
from kio.schema.join_group.v2.request import JoinGroupRequest as JoinGroupRequestV2
from kio.schema.join_group.v3.request import JoinGroupRequest as JoinGroupRequestV3
from kio.schema.join_group.v4.request import JoinGroupRequest as JoinGroupRequestV4
from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupRequestV5
from kio.schema.leave_group.v0.request import LeaveGroupRequest as LeaveGroupRequestV0
from kio.schema.leave_group.v1.request import LeaveGroupRequest as LeaveGroupRequestV1
from kio.schema.leave_group.v2.request import LeaveGroupRequest as LeaveGroupRequestV2
from kio.schema.leave_group.v3.request import LeaveGroupRequest as LeaveGroupRequestV3
from kio.schema.list_groups.v0.request import ListGroupsRequest as ListGroupsRequestV0
from kio.schema.list_groups.v1.request import ListGroupsRequest as ListGroupsRequestV1
from kio.schema.list_groups.v2.request import ListGroupsRequest as ListGroupsRequestV2
from kio.schema.list_offsets.v1.request import (
    ListOffsetsRequest as ListOffsetsRequestV1,
)
from kio.schema.list_offsets.v2.request import (
    ListOffsetsRequest as ListOffsetsRequestV2,
)
from kio.schema.list_offsets.v3.request import (
    ListOffsetsRequest as ListOffsetsRequestV3,
)
from kio.schema.list_offsets.v4.request import (
    ListOffsetsPartition as ListOffsetsPartitionV4,
)
from kio.schema.list_offsets.v4.request import (
    ListOffsetsRequest as ListOffsetsRequestV4,
)
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition as ListOffsetsPartitionV5,
)
from kio.schema.list_offsets.v5.request import (
    ListOffsetsRequest as ListOffsetsRequestV5,
)
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v2.request import MetadataRequest as MetadataRequestV2
from kio.schema.metadata.v3.request import MetadataRequest as MetadataRequestV3
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v5.request import MetadataRequest as MetadataRequestV5
from kio.schema.metadata.v6.request import MetadataRequest as MetadataRequestV6
from kio.schema.metadata.v7.request import MetadataRequest as MetadataRequestV7
from kio.schema.metadata.v8.request import MetadataRequest as MetadataRequestV8
from kio.schema.offset_commit.v2.request import (
    OffsetCommitRequest as OffsetCommitRequestV2,
)
from kio.schema.offset_commit.v3.request import (
    OffsetCommitRequest as OffsetCommitRequestV3,
)
from kio.schema.offset_commit.v4.request import (
    OffsetCommitRequest as OffsetCommitRequestV4,
)
from kio.schema.offset_commit.v5.request import (
    OffsetCommitRequest as OffsetCommitRequestV5,
)
from kio.schema.offset_commit.v6.request import (
    OffsetCommitRequest as OffsetCommitRequestV6,
)
from kio.schema.offset_commit.v6.request import (
    OffsetCommitRequestPartition as OffsetCommitRequestPartitionV6,
)
from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequest as OffsetCommitRequestV7,
)
from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequestPartition as OffsetCommitRequestPartitionV7,
)
from kio.schema.offset_fetch.v1.request import (
    OffsetFetchRequest as OffsetFetchRequestV1,
)
from kio.schema.offset_fetch.v2.request import (
    OffsetFetchRequest as OffsetFetchRequestV2,
)
from kio.schema.offset_fetch.v3.request import (
    OffsetFetchRequest as OffsetFetchRequestV3,
)
from kio.schema.offset_fetch.v4.request import (
    OffsetFetchRequest as OffsetFetchRequestV4,
)
from kio.schema.offset_fetch.v5.request import (
    OffsetFetchRequest as OffsetFetchRequestV5,
)
from kio.schema.offset_for_leader_epoch.v2.request import (
    OffsetForLeaderEpochRequest as OffsetForLeaderEpochRequestV2,
)
from kio.schema.offset_for_leader_epoch.v3.request import (
    OffsetForLeaderEpochRequest as OffsetForLeaderEpochRequestV3,
)
from kio.schema.produce.v3.request import ProduceRequest as ProduceRequestV3
from kio.schema.produce.v4.request import ProduceRequest as ProduceRequestV4
from kio.schema.produce.v5.request import ProduceRequest as ProduceRequestV5
from kio.schema.produce.v6.request import ProduceRequest as ProduceRequestV6
from kio.schema.produce.v7.request import ProduceRequest as ProduceRequestV7
from kio.schema.produce.v8.request import ProduceRequest as ProduceRequestV8
from kio.schema.sync_group.v0.request import SyncGroupRequest as SyncGroupRequestV0
from kio.schema.sync_group.v1.request import SyncGroupRequest as SyncGroupRequestV1
from kio.schema.sync_group.v2.request import SyncGroupRequest as SyncGroupRequestV2
from kio.schema.sync_group.v3.request import SyncGroupRequest as SyncGroupRequestV3

from minikafka.net import ApiKey

ProduceRequest = (
    ProduceRequestV3
    | ProduceRequestV4
    | ProduceRequestV5
    | ProduceRequestV6
    | ProduceRequestV7
    | ProduceRequestV8
)
PRODUCE: tuple[type[ProduceRequest], ...] = typing.get_args(ProduceRequest)

FetchRequest = (
    FetchRequestV4
    | FetchRequestV5
    | FetchRequestV6
    | FetchRequestV7
    | FetchRequestV8
    | FetchRequestV9
    | FetchRequestV10
    | FetchRequestV11
)
FETCH: tuple[type[FetchRequest], ...] = typing.get_args(FetchRequest)

ElectLeadersRequest = (
    ElectLeadersRequestV0 | ElectLeadersRequestV1 | ElectLeadersRequestV2
)
ELECT_LEADERS: tuple[type[ElectLeadersRequest], ...] = typing.get_args(
    ElectLeadersRequest
)

# v2 names the asker's current leader epoch (KIP-320), v3 the asking replica (a follower).
OffsetForLeaderEpochRequest = (
    OffsetForLeaderEpochRequestV2 | OffsetForLeaderEpochRequestV3
)
OFFSET_FOR_LEADER_EPOCH: tuple[type[OffsetForLeaderEpochRequest], ...] = (
    typing.get_args(OffsetForLeaderEpochRequest)
)

ListOffsetsRequest = (
    ListOffsetsRequestV1
    | ListOffsetsRequestV2
    | ListOffsetsRequestV3
    | ListOffsetsRequestV4
    | ListOffsetsRequestV5
)
LIST_OFFSETS: tuple[type[ListOffsetsRequest], ...] = typing.get_args(ListOffsetsRequest)

MetadataRequest = (
    MetadataRequestV1
    | MetadataRequestV2
    | MetadataRequestV3
    | MetadataRequestV4
    | MetadataRequestV5
    | MetadataRequestV6
    | MetadataRequestV7
    | MetadataRequestV8
)
METADATA: tuple[type[MetadataRequest], ...] = typing.get_args(MetadataRequest)

OffsetCommitRequest = (
    OffsetCommitRequestV2
    | OffsetCommitRequestV3
    | OffsetCommitRequestV4
    | OffsetCommitRequestV5
    | OffsetCommitRequestV6
    | OffsetCommitRequestV7
)
OFFSET_COMMIT: tuple[type[OffsetCommitRequest], ...] = typing.get_args(
    OffsetCommitRequest
)

OffsetFetchRequest = (
    OffsetFetchRequestV1
    | OffsetFetchRequestV2
    | OffsetFetchRequestV3
    | OffsetFetchRequestV4
    | OffsetFetchRequestV5
)
OFFSET_FETCH: tuple[type[OffsetFetchRequest], ...] = typing.get_args(OffsetFetchRequest)

FindCoordinatorRequest = (
    FindCoordinatorRequestV0 | FindCoordinatorRequestV1 | FindCoordinatorRequestV2
)
FIND_COORDINATOR: tuple[type[FindCoordinatorRequest], ...] = typing.get_args(
    FindCoordinatorRequest
)

JoinGroupRequest = (
    JoinGroupRequestV0
    | JoinGroupRequestV1
    | JoinGroupRequestV2
    | JoinGroupRequestV3
    | JoinGroupRequestV4
    | JoinGroupRequestV5
)
JOIN_GROUP: tuple[type[JoinGroupRequest], ...] = typing.get_args(JoinGroupRequest)

HeartbeatRequest = (
    HeartbeatRequestV0 | HeartbeatRequestV1 | HeartbeatRequestV2 | HeartbeatRequestV3
)
HEARTBEAT: tuple[type[HeartbeatRequest], ...] = typing.get_args(HeartbeatRequest)

LeaveGroupRequest = (
    LeaveGroupRequestV0
    | LeaveGroupRequestV1
    | LeaveGroupRequestV2
    | LeaveGroupRequestV3
)
LEAVE_GROUP: tuple[type[LeaveGroupRequest], ...] = typing.get_args(LeaveGroupRequest)

SyncGroupRequest = (
    SyncGroupRequestV0 | SyncGroupRequestV1 | SyncGroupRequestV2 | SyncGroupRequestV3
)
SYNC_GROUP: tuple[type[SyncGroupRequest], ...] = typing.get_args(SyncGroupRequest)

DescribeGroupsRequest = (
    DescribeGroupsRequestV0
    | DescribeGroupsRequestV1
    | DescribeGroupsRequestV2
    | DescribeGroupsRequestV3
    | DescribeGroupsRequestV4
)
DESCRIBE_GROUPS: tuple[type[DescribeGroupsRequest], ...] = typing.get_args(
    DescribeGroupsRequest
)

ListGroupsRequest = ListGroupsRequestV0 | ListGroupsRequestV1 | ListGroupsRequestV2
LIST_GROUPS: tuple[type[ListGroupsRequest], ...] = typing.get_args(ListGroupsRequest)

CreateTopicsRequest = (
    CreateTopicsRequestV2 | CreateTopicsRequestV3 | CreateTopicsRequestV4
)
CREATE_TOPICS: tuple[type[CreateTopicsRequest], ...] = typing.get_args(
    CreateTopicsRequest
)

DeleteTopicsRequest = (
    DeleteTopicsRequestV1 | DeleteTopicsRequestV2 | DeleteTopicsRequestV3
)
DELETE_TOPICS: tuple[type[DeleteTopicsRequest], ...] = typing.get_args(
    DeleteTopicsRequest
)

InitProducerIdRequest = InitProducerIdRequestV0 | InitProducerIdRequestV1
INIT_PRODUCER_ID: tuple[type[InitProducerIdRequest], ...] = typing.get_args(
    InitProducerIdRequest
)

DescribeConfigsRequest = (
    DescribeConfigsRequestV1 | DescribeConfigsRequestV2 | DescribeConfigsRequestV3
)
DESCRIBE_CONFIGS: tuple[type[DescribeConfigsRequest], ...] = typing.get_args(
    DescribeConfigsRequest
)

CreatePartitionsRequest = CreatePartitionsRequestV0 | CreatePartitionsRequestV1
CREATE_PARTITIONS: tuple[type[CreatePartitionsRequest], ...] = typing.get_args(
    CreatePartitionsRequest
)

DeleteGroupsRequest = DeleteGroupsRequestV0 | DeleteGroupsRequestV1
DELETE_GROUPS: tuple[type[DeleteGroupsRequest], ...] = typing.get_args(
    DeleteGroupsRequest
)

# Nested entities with a field from some version on. KIP-320: a fetching or listing
# client names the leader epoch it knows from Fetch v9 and ListOffsets v4.
FETCH_PARTITION_WITH_EPOCH = (FetchPartitionV9, FetchPartitionV10, FetchPartitionV11)
LIST_OFFSETS_PARTITION_WITH_EPOCH = (ListOffsetsPartitionV4, ListOffsetsPartitionV5)
# ...and a committing one the epoch of the offset it commits, from OffsetCommit v6.
OFFSET_COMMIT_PARTITION_WITH_EPOCH = (
    OffsetCommitRequestPartitionV6,
    OffsetCommitRequestPartitionV7,
)
METADATA_V4_PLUS = (
    MetadataRequestV4,
    MetadataRequestV5,
    MetadataRequestV6,
    MetadataRequestV7,
    MetadataRequestV8,
)  # allow_auto_topic_creation (KIP-361)

SERVED_BODIES: Mapping[ApiKey, tuple[type, ...]] = {
    ApiKey.PRODUCE: PRODUCE,
    ApiKey.FETCH: FETCH,
    ApiKey.LIST_OFFSETS: LIST_OFFSETS,
    ApiKey.METADATA: METADATA,
    ApiKey.OFFSET_COMMIT: OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH: OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR: FIND_COORDINATOR,
    ApiKey.JOIN_GROUP: JOIN_GROUP,
    ApiKey.HEARTBEAT: HEARTBEAT,
    ApiKey.LEAVE_GROUP: LEAVE_GROUP,
    ApiKey.SYNC_GROUP: SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS: DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS: LIST_GROUPS,
    ApiKey.CREATE_TOPICS: CREATE_TOPICS,
    ApiKey.DELETE_TOPICS: DELETE_TOPICS,
    ApiKey.INIT_PRODUCER_ID: INIT_PRODUCER_ID,
    ApiKey.DESCRIBE_CONFIGS: DESCRIBE_CONFIGS,
    ApiKey.CREATE_PARTITIONS: CREATE_PARTITIONS,
    ApiKey.DELETE_GROUPS: DELETE_GROUPS,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: OFFSET_FOR_LEADER_EPOCH,
    # Their handlers (_reassignments) name their own versions: one each, ElectLeaders v0-v2.
    ApiKey.ELECT_LEADERS: ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
        alter_v0.AlterPartitionReassignmentsRequest,
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (list_v0.ListPartitionReassignmentsRequest,),
    # Forwarded to the active controller as it came (KIP-595): v1 only.
    ApiKey.DESCRIBE_QUORUM: (describe_quorum_v1.DescribeQuorumRequest,),
}
