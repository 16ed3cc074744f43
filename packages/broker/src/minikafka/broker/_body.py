"""The request bodies the broker reads, typed: one Union per API over its served versions.

kio generates one class per API version (``ProduceRequest`` of v3 and of v8 are
different types). For each API KafkaApis serves, this module names the classes of
exactly the versions it advertises, as a Union type (``ProduceRequest``) for the
handler's annotations and as a tuple for the check :meth:`minikafka.net.Request.body_as`
makes (``PRODUCE``). A handler reads the fields every served version has directly; a
field only some versions carry is read after an ``isinstance`` check against those
versions (``METADATA_WITH_TOPIC_IDS``), with Kafka's default otherwise.

The Unions are written as strings over kio's modules, imported for mypy only, and the
tuples come from :func:`minikafka.net.body_classes`, which matches a body by its class's
module and name: a broker imports the class of a version when a request of it arrives,
not every served one at start-up (``_body_classes.py`` in the net package says how). The group
APIs' bodies are ``_group_body.py``'s. ``SERVED_BODIES`` (both modules' APIs) lets a
test check these ranges against KafkaApis's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from kio.schema.alter_configs.v0 import request as alter_configs_v0
    from kio.schema.alter_configs.v1 import request as alter_configs_v1
    from kio.schema.alter_configs.v2 import request as alter_configs_v2
    from kio.schema.alter_partition_reassignments.v0 import (
        request as alter_partition_reassignments_v0,
    )
    from kio.schema.alter_partition_reassignments.v1 import (
        request as alter_partition_reassignments_v1,
    )
    from kio.schema.create_partitions.v0 import request as create_partitions_v0
    from kio.schema.create_partitions.v1 import request as create_partitions_v1
    from kio.schema.create_partitions.v2 import request as create_partitions_v2
    from kio.schema.create_partitions.v3 import request as create_partitions_v3
    from kio.schema.create_topics.v2 import request as create_topics_v2
    from kio.schema.create_topics.v3 import request as create_topics_v3
    from kio.schema.create_topics.v4 import request as create_topics_v4
    from kio.schema.create_topics.v5 import request as create_topics_v5
    from kio.schema.create_topics.v6 import request as create_topics_v6
    from kio.schema.create_topics.v7 import request as create_topics_v7
    from kio.schema.delete_records.v0 import request as delete_records_v0
    from kio.schema.delete_records.v1 import request as delete_records_v1
    from kio.schema.delete_records.v2 import request as delete_records_v2
    from kio.schema.delete_topics.v1 import request as delete_topics_v1
    from kio.schema.delete_topics.v2 import request as delete_topics_v2
    from kio.schema.delete_topics.v3 import request as delete_topics_v3
    from kio.schema.delete_topics.v4 import request as delete_topics_v4
    from kio.schema.delete_topics.v5 import request as delete_topics_v5
    from kio.schema.delete_topics.v6 import request as delete_topics_v6
    from kio.schema.describe_cluster.v0 import request as describe_cluster_v0
    from kio.schema.describe_cluster.v1 import request as describe_cluster_v1
    from kio.schema.describe_cluster.v2 import request as describe_cluster_v2
    from kio.schema.describe_configs.v1 import request as describe_configs_v1
    from kio.schema.describe_configs.v2 import request as describe_configs_v2
    from kio.schema.describe_configs.v3 import request as describe_configs_v3
    from kio.schema.describe_configs.v4 import request as describe_configs_v4
    from kio.schema.describe_log_dirs.v1 import request as describe_log_dirs_v1
    from kio.schema.describe_log_dirs.v2 import request as describe_log_dirs_v2
    from kio.schema.describe_log_dirs.v3 import request as describe_log_dirs_v3
    from kio.schema.describe_log_dirs.v4 import request as describe_log_dirs_v4
    from kio.schema.elect_leaders.v0 import request as elect_leaders_v0
    from kio.schema.elect_leaders.v1 import request as elect_leaders_v1
    from kio.schema.elect_leaders.v2 import request as elect_leaders_v2
    from kio.schema.fetch.v4 import request as fetch_v4
    from kio.schema.fetch.v5 import request as fetch_v5
    from kio.schema.fetch.v6 import request as fetch_v6
    from kio.schema.fetch.v7 import request as fetch_v7
    from kio.schema.fetch.v8 import request as fetch_v8
    from kio.schema.fetch.v9 import request as fetch_v9
    from kio.schema.fetch.v10 import request as fetch_v10
    from kio.schema.fetch.v11 import request as fetch_v11
    from kio.schema.fetch.v12 import request as fetch_v12
    from kio.schema.fetch.v13 import request as fetch_v13
    from kio.schema.fetch.v14 import request as fetch_v14
    from kio.schema.fetch.v15 import request as fetch_v15
    from kio.schema.fetch.v16 import request as fetch_v16
    from kio.schema.fetch.v17 import request as fetch_v17
    from kio.schema.fetch.v18 import request as fetch_v18
    from kio.schema.incremental_alter_configs.v0 import (
        request as incremental_alter_configs_v0,
    )
    from kio.schema.incremental_alter_configs.v1 import (
        request as incremental_alter_configs_v1,
    )
    from kio.schema.init_producer_id.v0 import request as init_producer_id_v0
    from kio.schema.init_producer_id.v1 import request as init_producer_id_v1
    from kio.schema.init_producer_id.v2 import request as init_producer_id_v2
    from kio.schema.init_producer_id.v3 import request as init_producer_id_v3
    from kio.schema.init_producer_id.v4 import request as init_producer_id_v4
    from kio.schema.init_producer_id.v5 import request as init_producer_id_v5
    from kio.schema.list_offsets.v1 import request as list_offsets_v1
    from kio.schema.list_offsets.v2 import request as list_offsets_v2
    from kio.schema.list_offsets.v3 import request as list_offsets_v3
    from kio.schema.list_offsets.v4 import request as list_offsets_v4
    from kio.schema.list_offsets.v5 import request as list_offsets_v5
    from kio.schema.list_offsets.v6 import request as list_offsets_v6
    from kio.schema.list_offsets.v7 import request as list_offsets_v7
    from kio.schema.list_offsets.v8 import request as list_offsets_v8
    from kio.schema.list_offsets.v9 import request as list_offsets_v9
    from kio.schema.list_offsets.v10 import request as list_offsets_v10
    from kio.schema.metadata.v1 import request as metadata_v1
    from kio.schema.metadata.v2 import request as metadata_v2
    from kio.schema.metadata.v3 import request as metadata_v3
    from kio.schema.metadata.v4 import request as metadata_v4
    from kio.schema.metadata.v5 import request as metadata_v5
    from kio.schema.metadata.v6 import request as metadata_v6
    from kio.schema.metadata.v7 import request as metadata_v7
    from kio.schema.metadata.v8 import request as metadata_v8
    from kio.schema.metadata.v9 import request as metadata_v9
    from kio.schema.metadata.v10 import request as metadata_v10
    from kio.schema.metadata.v11 import request as metadata_v11
    from kio.schema.metadata.v12 import request as metadata_v12
    from kio.schema.metadata.v13 import request as metadata_v13
    from kio.schema.offset_for_leader_epoch.v2 import (
        request as offset_for_leader_epoch_v2,
    )
    from kio.schema.offset_for_leader_epoch.v3 import (
        request as offset_for_leader_epoch_v3,
    )
    from kio.schema.offset_for_leader_epoch.v4 import (
        request as offset_for_leader_epoch_v4,
    )
    from kio.schema.produce.v3 import request as produce_v3
    from kio.schema.produce.v4 import request as produce_v4
    from kio.schema.produce.v5 import request as produce_v5
    from kio.schema.produce.v6 import request as produce_v6
    from kio.schema.produce.v7 import request as produce_v7
    from kio.schema.produce.v8 import request as produce_v8
    from kio.schema.produce.v9 import request as produce_v9
    from kio.schema.produce.v10 import request as produce_v10
    from kio.schema.produce.v11 import request as produce_v11
    from kio.schema.produce.v12 import request as produce_v12
    from kio.schema.produce.v13 import request as produce_v13

from minikafka.net import ApiKey, body_classes

from ._group_body import GROUP_BODIES
from ._txn_body import TXN_BODIES

ProduceRequest: TypeAlias = (
    "produce_v3.ProduceRequest"
    " | produce_v4.ProduceRequest"
    " | produce_v5.ProduceRequest"
    " | produce_v6.ProduceRequest"
    " | produce_v7.ProduceRequest"
    " | produce_v8.ProduceRequest"
    " | produce_v9.ProduceRequest"
    " | produce_v10.ProduceRequest"
    " | produce_v11.ProduceRequest"
    " | produce_v12.ProduceRequest"
    " | produce_v13.ProduceRequest"
)
PRODUCE: tuple[type[ProduceRequest], ...] = body_classes(ProduceRequest)

FetchRequest: TypeAlias = (
    "fetch_v4.FetchRequest"
    " | fetch_v5.FetchRequest"
    " | fetch_v6.FetchRequest"
    " | fetch_v7.FetchRequest"
    " | fetch_v8.FetchRequest"
    " | fetch_v9.FetchRequest"
    " | fetch_v10.FetchRequest"
    " | fetch_v11.FetchRequest"
    " | fetch_v12.FetchRequest"
    " | fetch_v13.FetchRequest"
    " | fetch_v14.FetchRequest"
    " | fetch_v15.FetchRequest"
    " | fetch_v16.FetchRequest"
    " | fetch_v17.FetchRequest"
    " | fetch_v18.FetchRequest"
)
FETCH: tuple[type[FetchRequest], ...] = body_classes(FetchRequest)
# Fetch sessions (KIP-227) from v7: a session id and epoch, and the forgotten partitions.
FetchRequestInSession: TypeAlias = (
    "fetch_v7.FetchRequest"
    " | fetch_v8.FetchRequest"
    " | fetch_v9.FetchRequest"
    " | fetch_v10.FetchRequest"
    " | fetch_v11.FetchRequest"
    " | fetch_v12.FetchRequest"
    " | fetch_v13.FetchRequest"
    " | fetch_v14.FetchRequest"
    " | fetch_v15.FetchRequest"
    " | fetch_v16.FetchRequest"
    " | fetch_v17.FetchRequest"
    " | fetch_v18.FetchRequest"
)
FETCH_IN_SESSION: tuple[type[FetchRequestInSession], ...] = body_classes(
    FetchRequestInSession
)
# v15 moves the follower's id into the tagged ReplicaState (KIP-903).
FetchRequestWithReplicaState: TypeAlias = (
    "fetch_v15.FetchRequest"
    " | fetch_v16.FetchRequest"
    " | fetch_v17.FetchRequest"
    " | fetch_v18.FetchRequest"
)
FETCH_WITH_REPLICA_STATE: tuple[type[FetchRequestWithReplicaState], ...] = body_classes(
    FetchRequestWithReplicaState
)
# v13 names topics by id (KIP-516), in the fetched and the forgotten alike.
FetchTopicById: TypeAlias = (
    "fetch_v13.FetchTopic"
    " | fetch_v14.FetchTopic"
    " | fetch_v15.FetchTopic"
    " | fetch_v16.FetchTopic"
    " | fetch_v17.FetchTopic"
    " | fetch_v18.FetchTopic"
)
FETCH_TOPIC_BY_ID: tuple[type[FetchTopicById], ...] = body_classes(FetchTopicById)
ForgottenTopicByName: TypeAlias = (
    "fetch_v7.ForgottenTopic"
    " | fetch_v8.ForgottenTopic"
    " | fetch_v9.ForgottenTopic"
    " | fetch_v10.ForgottenTopic"
    " | fetch_v11.ForgottenTopic"
    " | fetch_v12.ForgottenTopic"
)
FORGOTTEN_TOPIC_BY_NAME: tuple[type[ForgottenTopicByName], ...] = body_classes(
    ForgottenTopicByName
)
ForgottenTopicById: TypeAlias = (
    "fetch_v13.ForgottenTopic"
    " | fetch_v14.ForgottenTopic"
    " | fetch_v15.ForgottenTopic"
    " | fetch_v16.ForgottenTopic"
    " | fetch_v17.ForgottenTopic"
    " | fetch_v18.ForgottenTopic"
)
FORGOTTEN_TOPIC_BY_ID: tuple[type[ForgottenTopicById], ...] = body_classes(
    ForgottenTopicById
)

ElectLeadersRequest: TypeAlias = (
    "elect_leaders_v0.ElectLeadersRequest"
    " | elect_leaders_v1.ElectLeadersRequest"
    " | elect_leaders_v2.ElectLeadersRequest"
)
ELECT_LEADERS: tuple[type[ElectLeadersRequest], ...] = body_classes(ElectLeadersRequest)

# v1 can forbid a move that changes the replication factor (KIP-860).
AlterPartitionReassignmentsRequest: TypeAlias = (
    "alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest"
    " | alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest"
)
ALTER_PARTITION_REASSIGNMENTS: tuple[type[AlterPartitionReassignmentsRequest], ...] = (
    body_classes(AlterPartitionReassignmentsRequest)
)

# v2 names the asker's current leader epoch (KIP-320), v3 the asking replica (a follower).
OffsetForLeaderEpochRequest: TypeAlias = (
    "offset_for_leader_epoch_v2.OffsetForLeaderEpochRequest"
    " | offset_for_leader_epoch_v3.OffsetForLeaderEpochRequest"
    " | offset_for_leader_epoch_v4.OffsetForLeaderEpochRequest"
)
OFFSET_FOR_LEADER_EPOCH: tuple[type[OffsetForLeaderEpochRequest], ...] = body_classes(
    OffsetForLeaderEpochRequest
)

ListOffsetsRequest: TypeAlias = (
    "list_offsets_v1.ListOffsetsRequest"
    " | list_offsets_v2.ListOffsetsRequest"
    " | list_offsets_v3.ListOffsetsRequest"
    " | list_offsets_v4.ListOffsetsRequest"
    " | list_offsets_v5.ListOffsetsRequest"
    " | list_offsets_v6.ListOffsetsRequest"
    " | list_offsets_v7.ListOffsetsRequest"
    " | list_offsets_v8.ListOffsetsRequest"
    " | list_offsets_v9.ListOffsetsRequest"
    " | list_offsets_v10.ListOffsetsRequest"
)
LIST_OFFSETS: tuple[type[ListOffsetsRequest], ...] = body_classes(ListOffsetsRequest)
# The requests that carry the consumer's isolation level (v2+, KIP-98).
ListOffsetsWithIsolation: TypeAlias = (
    "list_offsets_v2.ListOffsetsRequest"
    " | list_offsets_v3.ListOffsetsRequest"
    " | list_offsets_v4.ListOffsetsRequest"
    " | list_offsets_v5.ListOffsetsRequest"
    " | list_offsets_v6.ListOffsetsRequest"
    " | list_offsets_v7.ListOffsetsRequest"
    " | list_offsets_v8.ListOffsetsRequest"
    " | list_offsets_v9.ListOffsetsRequest"
    " | list_offsets_v10.ListOffsetsRequest"
)
LIST_OFFSETS_WITH_ISOLATION: tuple[type[ListOffsetsWithIsolation], ...] = body_classes(
    ListOffsetsWithIsolation
)

MetadataRequest: TypeAlias = (
    "metadata_v1.MetadataRequest"
    " | metadata_v2.MetadataRequest"
    " | metadata_v3.MetadataRequest"
    " | metadata_v4.MetadataRequest"
    " | metadata_v5.MetadataRequest"
    " | metadata_v6.MetadataRequest"
    " | metadata_v7.MetadataRequest"
    " | metadata_v8.MetadataRequest"
    " | metadata_v9.MetadataRequest"
    " | metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
    " | metadata_v13.MetadataRequest"
)
METADATA: tuple[type[MetadataRequest], ...] = body_classes(MetadataRequest)
MetadataWithTopicOperations: TypeAlias = (
    "metadata_v8.MetadataRequest"
    " | metadata_v9.MetadataRequest"
    " | metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
    " | metadata_v13.MetadataRequest"
)
METADATA_WITH_TOPIC_OPERATIONS: tuple[type[MetadataWithTopicOperations], ...] = (
    body_classes(MetadataWithTopicOperations)
)
"""The Metadata requests that may ask for a topic's authorized operations (KIP-430)."""
MetadataWithClusterOperations: TypeAlias = (
    "metadata_v8.MetadataRequest"
    " | metadata_v9.MetadataRequest"
    " | metadata_v10.MetadataRequest"
)
METADATA_WITH_CLUSTER_OPERATIONS: tuple[type[MetadataWithClusterOperations], ...] = (
    body_classes(MetadataWithClusterOperations)
)
"""...and for the cluster's: v8-10 (v11 moved that to DescribeCluster, KIP-700)."""
MetadataWithTopicIds: TypeAlias = (
    "metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
    " | metadata_v13.MetadataRequest"
)
METADATA_WITH_TOPIC_IDS: tuple[type[MetadataWithTopicIds], ...] = body_classes(
    MetadataWithTopicIds
)
"""The Metadata requests whose topics carry a topic id (KIP-516), v10+."""

CreateTopicsRequest: TypeAlias = (
    "create_topics_v2.CreateTopicsRequest"
    " | create_topics_v3.CreateTopicsRequest"
    " | create_topics_v4.CreateTopicsRequest"
    " | create_topics_v5.CreateTopicsRequest"
    " | create_topics_v6.CreateTopicsRequest"
    " | create_topics_v7.CreateTopicsRequest"
)
CREATE_TOPICS: tuple[type[CreateTopicsRequest], ...] = body_classes(CreateTopicsRequest)

DeleteTopicsRequest: TypeAlias = (
    "delete_topics_v1.DeleteTopicsRequest"
    " | delete_topics_v2.DeleteTopicsRequest"
    " | delete_topics_v3.DeleteTopicsRequest"
    " | delete_topics_v4.DeleteTopicsRequest"
    " | delete_topics_v5.DeleteTopicsRequest"
    " | delete_topics_v6.DeleteTopicsRequest"
)
DELETE_TOPICS: tuple[type[DeleteTopicsRequest], ...] = body_classes(DeleteTopicsRequest)

DeleteRecordsRequest: TypeAlias = (
    "delete_records_v0.DeleteRecordsRequest"
    " | delete_records_v1.DeleteRecordsRequest"
    " | delete_records_v2.DeleteRecordsRequest"
)
DELETE_RECORDS: tuple[type[DeleteRecordsRequest], ...] = body_classes(
    DeleteRecordsRequest
)

InitProducerIdRequest: TypeAlias = (
    "init_producer_id_v0.InitProducerIdRequest"
    " | init_producer_id_v1.InitProducerIdRequest"
    " | init_producer_id_v2.InitProducerIdRequest"
    " | init_producer_id_v3.InitProducerIdRequest"
    " | init_producer_id_v4.InitProducerIdRequest"
    " | init_producer_id_v5.InitProducerIdRequest"
)
INIT_PRODUCER_ID: tuple[type[InitProducerIdRequest], ...] = body_classes(
    InitProducerIdRequest
)
InitProducerIdWithProducer: TypeAlias = (
    "init_producer_id_v3.InitProducerIdRequest"
    " | init_producer_id_v4.InitProducerIdRequest"
    " | init_producer_id_v5.InitProducerIdRequest"
)
INIT_PRODUCER_ID_WITH_PRODUCER: tuple[type[InitProducerIdWithProducer], ...] = (
    body_classes(InitProducerIdWithProducer)
)
"""v3+ (KIP-360): the producer's current id and epoch, which a producer recovering
from an error sends to keep its id (-1, -1: a new producer)."""

DescribeConfigsRequest: TypeAlias = (
    "describe_configs_v1.DescribeConfigsRequest"
    " | describe_configs_v2.DescribeConfigsRequest"
    " | describe_configs_v3.DescribeConfigsRequest"
    " | describe_configs_v4.DescribeConfigsRequest"
)
DESCRIBE_CONFIGS: tuple[type[DescribeConfigsRequest], ...] = body_classes(
    DescribeConfigsRequest
)

AlterConfigsRequest: TypeAlias = (
    "alter_configs_v0.AlterConfigsRequest"
    " | alter_configs_v1.AlterConfigsRequest"
    " | alter_configs_v2.AlterConfigsRequest"
)
ALTER_CONFIGS: tuple[type[AlterConfigsRequest], ...] = body_classes(AlterConfigsRequest)

IncrementalAlterConfigsRequest: TypeAlias = (
    "incremental_alter_configs_v0.IncrementalAlterConfigsRequest"
    " | incremental_alter_configs_v1.IncrementalAlterConfigsRequest"
)
INCREMENTAL_ALTER_CONFIGS: tuple[type[IncrementalAlterConfigsRequest], ...] = (
    body_classes(IncrementalAlterConfigsRequest)
)

CreatePartitionsRequest: TypeAlias = (
    "create_partitions_v0.CreatePartitionsRequest"
    " | create_partitions_v1.CreatePartitionsRequest"
    " | create_partitions_v2.CreatePartitionsRequest"
    " | create_partitions_v3.CreatePartitionsRequest"
)
CREATE_PARTITIONS: tuple[type[CreatePartitionsRequest], ...] = body_classes(
    CreatePartitionsRequest
)

DescribeClusterRequest: TypeAlias = (
    "describe_cluster_v0.DescribeClusterRequest"
    " | describe_cluster_v1.DescribeClusterRequest"
    " | describe_cluster_v2.DescribeClusterRequest"
)
DESCRIBE_CLUSTER: tuple[type[DescribeClusterRequest], ...] = body_classes(
    DescribeClusterRequest
)

DescribeLogDirsRequest: TypeAlias = (
    "describe_log_dirs_v1.DescribeLogDirsRequest"
    " | describe_log_dirs_v2.DescribeLogDirsRequest"
    " | describe_log_dirs_v3.DescribeLogDirsRequest"
    " | describe_log_dirs_v4.DescribeLogDirsRequest"
)
DESCRIBE_LOG_DIRS: tuple[type[DescribeLogDirsRequest], ...] = body_classes(
    DescribeLogDirsRequest
)

# Fetch v5+: a follower says its own log start offset (KIP-107's low watermark).
FetchPartitionWithLogStart: TypeAlias = (
    "fetch_v5.FetchPartition"
    " | fetch_v6.FetchPartition"
    " | fetch_v7.FetchPartition"
    " | fetch_v8.FetchPartition"
    " | fetch_v9.FetchPartition"
    " | fetch_v10.FetchPartition"
    " | fetch_v11.FetchPartition"
    " | fetch_v12.FetchPartition"
    " | fetch_v13.FetchPartition"
    " | fetch_v14.FetchPartition"
    " | fetch_v15.FetchPartition"
    " | fetch_v16.FetchPartition"
    " | fetch_v17.FetchPartition"
    " | fetch_v18.FetchPartition"
)
FETCH_PARTITION_WITH_LOG_START: tuple[type[FetchPartitionWithLogStart], ...] = (
    body_classes(FetchPartitionWithLogStart)
)

# Nested entities with a field from some version on. KIP-320: a fetching or listing
# client names the leader epoch it knows from Fetch v9 and ListOffsets v4.
FetchPartitionWithEpoch: TypeAlias = (
    "fetch_v9.FetchPartition"
    " | fetch_v10.FetchPartition"
    " | fetch_v11.FetchPartition"
    " | fetch_v12.FetchPartition"
    " | fetch_v13.FetchPartition"
    " | fetch_v14.FetchPartition"
    " | fetch_v15.FetchPartition"
    " | fetch_v16.FetchPartition"
    " | fetch_v17.FetchPartition"
    " | fetch_v18.FetchPartition"
)
FETCH_PARTITION_WITH_EPOCH: tuple[type[FetchPartitionWithEpoch], ...] = body_classes(
    FetchPartitionWithEpoch
)
# v12: the epoch of the last record the fetcher holds, for the leader to check.
FetchPartitionWithLastFetchedEpoch: TypeAlias = (
    "fetch_v12.FetchPartition"
    " | fetch_v13.FetchPartition"
    " | fetch_v14.FetchPartition"
    " | fetch_v15.FetchPartition"
    " | fetch_v16.FetchPartition"
    " | fetch_v17.FetchPartition"
    " | fetch_v18.FetchPartition"
)
FETCH_PARTITION_WITH_LAST_FETCHED_EPOCH: tuple[
    type[FetchPartitionWithLastFetchedEpoch], ...
] = body_classes(FetchPartitionWithLastFetchedEpoch)
ListOffsetsPartitionWithEpoch: TypeAlias = (
    "list_offsets_v4.ListOffsetsPartition"
    " | list_offsets_v5.ListOffsetsPartition"
    " | list_offsets_v6.ListOffsetsPartition"
    " | list_offsets_v7.ListOffsetsPartition"
    " | list_offsets_v8.ListOffsetsPartition"
    " | list_offsets_v9.ListOffsetsPartition"
    " | list_offsets_v10.ListOffsetsPartition"
)
LIST_OFFSETS_PARTITION_WITH_EPOCH: tuple[type[ListOffsetsPartitionWithEpoch], ...] = (
    body_classes(ListOffsetsPartitionWithEpoch)
)
# A deleted topic named by name or by id, not by name alone, from DeleteTopics v6
# (KIP-516).
DeleteTopicsByNameOrId: TypeAlias = "delete_topics_v6.DeleteTopicsRequest"
DELETE_TOPICS_BY_NAME_OR_ID: tuple[type[DeleteTopicsByNameOrId], ...] = body_classes(
    DeleteTopicsByNameOrId
)
# A produced topic named by its id, not its name, from Produce v13 (KIP-516).
ProduceTopicById: TypeAlias = "produce_v13.TopicProduceData"
PRODUCE_TOPIC_BY_ID: tuple[type[ProduceTopicById], ...] = body_classes(ProduceTopicById)
# The Metadata requests that carry allow_auto_topic_creation, from v4 (KIP-361).
MetadataV4Plus: TypeAlias = (
    "metadata_v4.MetadataRequest"
    " | metadata_v5.MetadataRequest"
    " | metadata_v6.MetadataRequest"
    " | metadata_v7.MetadataRequest"
    " | metadata_v8.MetadataRequest"
    " | metadata_v9.MetadataRequest"
    " | metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
    " | metadata_v13.MetadataRequest"
)
METADATA_V4_PLUS: tuple[type[MetadataV4Plus], ...] = body_classes(MetadataV4Plus)

SERVED_BODIES: Mapping[ApiKey, tuple[type, ...]] = {
    **GROUP_BODIES,
    **TXN_BODIES,
    ApiKey.PRODUCE: PRODUCE,
    ApiKey.FETCH: FETCH,
    ApiKey.LIST_OFFSETS: LIST_OFFSETS,
    ApiKey.METADATA: METADATA,
    ApiKey.OFFSET_DELETE: body_classes("offset_delete_v0.OffsetDeleteRequest"),
    ApiKey.DESCRIBE_PRODUCERS: body_classes(
        "describe_producers_v0.DescribeProducersRequest"
    ),
    ApiKey.CREATE_TOPICS: CREATE_TOPICS,
    ApiKey.DELETE_TOPICS: DELETE_TOPICS,
    ApiKey.DELETE_RECORDS: DELETE_RECORDS,
    ApiKey.INIT_PRODUCER_ID: INIT_PRODUCER_ID,
    ApiKey.DESCRIBE_CONFIGS: DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS: ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: INCREMENTAL_ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS: CREATE_PARTITIONS,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: OFFSET_FOR_LEADER_EPOCH,
    # Their handlers (_reassignments) name their own versions.
    ApiKey.ELECT_LEADERS: ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: body_classes(
        "list_partition_reassignments_v0.ListPartitionReassignmentsRequest"
    ),
    # Forwarded to the active controller as it came (KIP-595): v1 only.
    ApiKey.DESCRIBE_QUORUM: body_classes(
        "describe_quorum_v1.DescribeQuorumRequest | describe_quorum_v2.DescribeQuorumRequest"
    ),
    ApiKey.DESCRIBE_CLUSTER: DESCRIBE_CLUSTER,
    ApiKey.UNREGISTER_BROKER: body_classes(
        "unregister_broker_v0.UnregisterBrokerRequest"
    ),
    ApiKey.DESCRIBE_LOG_DIRS: DESCRIBE_LOG_DIRS,
    # Answered by a SASL listener's connection (minikafka.net); the handler sees them
    # only outside an exchange, and answers without reading the body.
    ApiKey.SASL_HANDSHAKE: body_classes(
        "sasl_handshake_v0.SaslHandshakeRequest | sasl_handshake_v1.SaslHandshakeRequest"
    ),
    ApiKey.SASL_AUTHENTICATE: body_classes(
        "sasl_authenticate_v0.SaslAuthenticateRequest"
        " | sasl_authenticate_v1.SaslAuthenticateRequest"
        " | sasl_authenticate_v2.SaslAuthenticateRequest"
    ),
    # KIP-554's admin APIs (``_scram_apis``), one version each.
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: body_classes(
        "describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest"
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: body_classes(
        "alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest"
    ),
    # KIP-801's ACL APIs (``_acl_apis``), v1-v3.
    ApiKey.DESCRIBE_ACLS: body_classes(
        "describe_acls_v1.DescribeAclsRequest"
        " | describe_acls_v2.DescribeAclsRequest"
        " | describe_acls_v3.DescribeAclsRequest"
    ),
    ApiKey.CREATE_ACLS: body_classes(
        "create_acls_v1.CreateAclsRequest"
        " | create_acls_v2.CreateAclsRequest"
        " | create_acls_v3.CreateAclsRequest"
    ),
    ApiKey.DELETE_ACLS: body_classes(
        "delete_acls_v1.DeleteAclsRequest"
        " | delete_acls_v2.DeleteAclsRequest"
        " | delete_acls_v3.DeleteAclsRequest"
    ),
}
