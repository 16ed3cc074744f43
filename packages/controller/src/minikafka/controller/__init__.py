"""minikafka.controller: what a Kafka controller decides, and the metadata log it decides into.

Replica placement (seed 001), the metadata records of KRaft and the image brokers replay
them into, the timeline structures and the pipelined QuorumController (seed 004), producer
id blocks (KIP-730), the partition and replica state machines, and the metadata quorum:
``RaftNodeShell``, the trio shell of a ``minikafka.raft`` node, of one voter or several.
ZooKeeper mode's controller is the ``zk`` subpackage; its names are re-exported here.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._acl_control import AclControlManager as AclControlManager
from ._acl_control import AclResult as AclResult
from ._acl_control import CreateAclsRequest as CreateAclsRequest
from ._acl_control import CreateAclsResponse as CreateAclsResponse
from ._acl_control import DeleteAclsFilterResult as DeleteAclsFilterResult
from ._acl_control import DeleteAclsRequest as DeleteAclsRequest
from ._acl_control import DeleteAclsResponse as DeleteAclsResponse
from ._acl_control import acl_binding as acl_binding
from ._acl_control import acl_record as acl_record
from ._acl_control import describe_acls as describe_acls
from ._assign_cmd import render_assignment_table as render_assignment_table
from ._bootstrap import BOOTSTRAP_FILE as BOOTSTRAP_FILE
from ._bootstrap import BootstrapError as BootstrapError
from ._bootstrap import parse_add_scram as parse_add_scram
from ._bootstrap import read_bootstrap as read_bootstrap
from ._bootstrap import write_bootstrap as write_bootstrap
from ._config import CONTROLLER_CONFIG as CONTROLLER_CONFIG
from ._config import MIN_INSYNC as MIN_INSYNC
from ._config import MIN_INSYNC_REPLICAS as MIN_INSYNC_REPLICAS
from ._config import REPLICATION_TOPIC_CONFIG as REPLICATION_TOPIC_CONFIG
from ._config import TOPIC_CONFIG_KEYS as TOPIC_CONFIG_KEYS
from ._config import UNCLEAN_LEADER_ELECTION_ENABLE as UNCLEAN_LEADER_ELECTION_ENABLE
from ._config import ControllerConfig as ControllerConfig
from ._config_alter import LIST_TOPIC_CONFIGS as LIST_TOPIC_CONFIGS
from ._config_alter import ConfigChangeError as ConfigChangeError
from ._config_alter import changes as config_changes
from ._config_alter import incrementally_altered as incrementally_altered
from ._config_alter import replaced as replaced_configs
from ._controller import SUPPORTED_FEATURES as SUPPORTED_FEATURES
from ._controller import AppendRecords as AppendRecords
from ._controller import QuorumController as QuorumController
from ._controller import QuorumControllerResult as QuorumControllerResult
from ._controller import Reply as Reply
from ._events import BrokerRegistrationChanged as BrokerRegistrationChanged
from ._events import PartitionLeaderElected as PartitionLeaderElected
from ._events import RecordsApplied as RecordsApplied
from ._image import BrokerRegistration as BrokerRegistration
from ._image import LocalPartition as LocalPartition
from ._image import LocalReplicaChanges as LocalReplicaChanges
from ._image import MetadataDelta as MetadataDelta
from ._image import MetadataImage as MetadataImage
from ._image import MetadataReplayError as MetadataReplayError
from ._image import TopicImage as TopicImage
from ._metadata_fetch import DEFAULT_FETCH_MAX_BYTES as DEFAULT_FETCH_MAX_BYTES
from ._metadata_fetch import DivergingEpoch as DivergingEpoch
from ._metadata_fetch import MetadataFetchAnswer as MetadataFetchAnswer
from ._metadata_log import METADATA_LOG_CONFIG as METADATA_LOG_CONFIG
from ._metadata_log import METADATA_PARTITION_DIR as METADATA_PARTITION_DIR
from ._metadata_log import MetadataBatch as MetadataBatch
from ._metadata_log import MetadataQuorum as MetadataQuorum
from ._metadata_log import NotLeaderError as NotLeaderError
from ._metadata_log import SnapshotId as SnapshotId
from ._metadata_log import encode_snapshot as encode_snapshot
from ._observer import CommittedDivergenceError as CommittedDivergenceError
from ._observer import FetchPosition as FetchPosition
from ._observer import MetadataObserver as MetadataObserver
from ._observer import ObserverUpdate as ObserverUpdate
from ._observer import replay_update as replay_update
from ._partition import PartitionChangeBuilder as PartitionChangeBuilder
from ._partition import PartitionRegistration as PartitionRegistration
from ._placement import Assignment as Assignment
from ._placement import BrokerMetadata as BrokerMetadata
from ._placement import PlacementError as PlacementError
from ._placement import assign_replicas_to_brokers as assign_replicas_to_brokers
from ._placement import (
    assign_replicas_to_brokers_rack_aware as assign_replicas_to_brokers_rack_aware,
)
from ._placement import (
    assign_replicas_to_brokers_rack_unaware as assign_replicas_to_brokers_rack_unaware,
)
from ._placement import parse_replica_assignment as parse_replica_assignment
from ._placement import rack_alternated_broker_list as rack_alternated_broker_list
from ._placement import replica_index as replica_index
from ._placement import validate_manual_assignment as validate_manual_assignment
from ._producer_id_control import PRODUCER_ID_BLOCK_SIZE as PRODUCER_ID_BLOCK_SIZE
from ._raft_shell import ListenerEndpoint as ListenerEndpoint
from ._raft_shell import NoOtherVoters as NoOtherVoters
from ._raft_shell import QuorumUnavailableError as QuorumUnavailableError
from ._raft_shell import RaftNodeShell as RaftNodeShell
from ._records import METADATA_TOPIC as METADATA_TOPIC
from ._records import NO_LEADER as NO_LEADER
from ._records import NO_LEADER_CHANGE as NO_LEADER_CHANGE
from ._records import AccessControlEntryRecord as AccessControlEntryRecord
from ._records import BrokerEndpoint as BrokerEndpoint
from ._records import ConfigRecord as ConfigRecord
from ._records import ConfigResourceType as ConfigResourceType
from ._records import FeatureLevelRecord as FeatureLevelRecord
from ._records import FenceBrokerRecord as FenceBrokerRecord
from ._records import MetadataRecord as MetadataRecord
from ._records import MetadataRecordError as MetadataRecordError
from ._records import PartitionChangeRecord as PartitionChangeRecord
from ._records import PartitionRecord as PartitionRecord
from ._records import ProducerIdsRecord as ProducerIdsRecord
from ._records import RegisterBrokerRecord as RegisterBrokerRecord
from ._records import (
    RemoveAccessControlEntryRecord as RemoveAccessControlEntryRecord,
)
from ._records import RemoveTopicRecord as RemoveTopicRecord
from ._records import (
    RemoveUserScramCredentialRecord as RemoveUserScramCredentialRecord,
)
from ._records import TopicRecord as TopicRecord
from ._records import UnfenceBrokerRecord as UnfenceBrokerRecord
from ._records import UnregisterBrokerRecord as UnregisterBrokerRecord
from ._records import UserScramCredentialRecord as UserScramCredentialRecord
from ._records import decode_record as decode_record
from ._records import encode_record as encode_record
from ._replay import load_metadata as load_metadata
from ._requests import MAX_RECORDS_PER_USER_OP as MAX_RECORDS_PER_USER_OP
from ._requests import PREFERRED_ELECTION as PREFERRED_ELECTION
from ._requests import UNCLEAN_ELECTION as UNCLEAN_ELECTION
from ._requests import AllocateProducerIdsRequest as AllocateProducerIdsRequest
from ._requests import AllocateProducerIdsResponse as AllocateProducerIdsResponse
from ._requests import AlterableConfig as AlterableConfig
from ._requests import AlterConfigOp as AlterConfigOp
from ._requests import AlterConfigsRequest as AlterConfigsRequest
from ._requests import AlterConfigsResponse as AlterConfigsResponse
from ._requests import AlterPartitionItem as AlterPartitionItem
from ._requests import (
    AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsRequest,
)
from ._requests import (
    AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsResponse,
)
from ._requests import AlterPartitionRequest as AlterPartitionRequest
from ._requests import AlterPartitionResponse as AlterPartitionResponse
from ._requests import AlterPartitionResult as AlterPartitionResult
from ._requests import BrokerHeartbeatRequest as BrokerHeartbeatRequest
from ._requests import BrokerHeartbeatResponse as BrokerHeartbeatResponse
from ._requests import BrokerRegistrationRequest as BrokerRegistrationRequest
from ._requests import BrokerRegistrationResponse as BrokerRegistrationResponse
from ._requests import ControllerRequest as ControllerRequest
from ._requests import ControllerResponse as ControllerResponse
from ._requests import CreatableTopic as CreatableTopic
from ._requests import CreatableTopicResult as CreatableTopicResult
from ._requests import CreatePartitionsRequest as CreatePartitionsRequest
from ._requests import CreatePartitionsResponse as CreatePartitionsResponse
from ._requests import CreatePartitionsTopic as CreatePartitionsTopic
from ._requests import CreatePartitionsTopicResult as CreatePartitionsTopicResult
from ._requests import CreateTopicsRequest as CreateTopicsRequest
from ._requests import CreateTopicsResponse as CreateTopicsResponse
from ._requests import DeletableTopicResult as DeletableTopicResult
from ._requests import DeleteTopicsRequest as DeleteTopicsRequest
from ._requests import DeleteTopicsResponse as DeleteTopicsResponse
from ._requests import DescribeConfigsRequest as DescribeConfigsRequest
from ._requests import DescribeConfigsResponse as DescribeConfigsResponse
from ._requests import ElectionResult as ElectionResult
from ._requests import ElectLeadersRequest as ElectLeadersRequest
from ._requests import ElectLeadersResponse as ElectLeadersResponse
from ._requests import IncrementalAlterConfigsRequest as IncrementalAlterConfigsRequest
from ._requests import (
    IncrementalAlterConfigsResponse as IncrementalAlterConfigsResponse,
)
from ._requests import (
    ListPartitionReassignmentsRequest as ListPartitionReassignmentsRequest,
)
from ._requests import (
    ListPartitionReassignmentsResponse as ListPartitionReassignmentsResponse,
)
from ._requests import OngoingReassignment as OngoingReassignment
from ._requests import ReassignablePartition as ReassignablePartition
from ._requests import ReassignmentResult as ReassignmentResult
from ._requests import UnregisterBrokerRequest as UnregisterBrokerRequest
from ._requests import UnregisterBrokerResponse as UnregisterBrokerResponse
from ._scram_control import MECHANISMS_BY_TYPE as MECHANISMS_BY_TYPE
from ._scram_control import (
    AlterUserScramCredentialsRequest as AlterUserScramCredentialsRequest,
)
from ._scram_control import (
    AlterUserScramCredentialsResponse as AlterUserScramCredentialsResponse,
)
from ._scram_control import ScramAlterationResult as ScramAlterationResult
from ._scram_control import ScramControlManager as ScramControlManager
from ._scram_control import ScramDeletion as ScramDeletion
from ._scram_control import ScramUpsertion as ScramUpsertion
from ._scram_control import ScramUserDescription as ScramUserDescription
from ._scram_control import (
    describe_user_scram_credentials as describe_user_scram_credentials,
)
from ._shell import ControllerError as ControllerError
from ._shell import Publisher as Publisher
from ._shell import QuorumControllerShell as QuorumControllerShell
from ._states import PARTITION_TRANSITION_REASONS as PARTITION_TRANSITION_REASONS
from ._states import PARTITION_TRANSITIONS as PARTITION_TRANSITIONS
from ._states import REPLICA_TRANSITION_REASONS as REPLICA_TRANSITION_REASONS
from ._states import REPLICA_TRANSITIONS as REPLICA_TRANSITIONS
from ._states import PartitionState as PartitionState
from ._states import PartitionStateMachine as PartitionStateMachine
from ._states import ReplicaState as ReplicaState
from ._states import ReplicaStateMachine as ReplicaStateMachine
from ._states import new_leader_and_isr as new_leader_and_isr
from ._states import on_new_partition_creation as on_new_partition_creation
from ._tool import ReplayResult as ReplayResult
from ._tool import replay_metadata_dir as replay_metadata_dir
from ._topic_creation import validate_topic_name as validate_topic_name
from .zk import EPOCH_DURING_DELETE as EPOCH_DURING_DELETE
from .zk import LEADER_DURING_DELETE as LEADER_DURING_DELETE
from .zk import SECURITY_PROTOCOLS as SECURITY_PROTOCOLS
from .zk import BrokerRequest as BrokerRequest
from .zk import ControlledShutdownResult as ControlledShutdownResult
from .zk import ControllerContext as ControllerContext
from .zk import ControllerRequestSent as ControllerRequestSent
from .zk import ControllerToBroker as ControllerToBroker
from .zk import IllegalStateTransitionError as IllegalStateTransitionError
from .zk import LeaderAndIsr as LeaderAndIsr
from .zk import LeaderAndIsrPartition as LeaderAndIsrPartition
from .zk import Leadership as Leadership
from .zk import LiveLeader as LiveLeader
from .zk import MetadataBroker as MetadataBroker
from .zk import MetadataEndpoint as MetadataEndpoint
from .zk import StateTransition as StateTransition
from .zk import StopReplica as StopReplica
from .zk import StopReplicaPartition as StopReplicaPartition
from .zk import UpdateMetadata as UpdateMetadata
from .zk import UpdateMetadataPartition as UpdateMetadataPartition
from .zk import ZkController as ZkController
from .zk import ZkControllerElected as ZkControllerElected
from .zk import ZkControllerResult as ZkControllerResult
from .zk import ZkResponse as ZkResponse
from .zk import ZkWatchFired as ZkWatchFired
from .zk import admin_create_topics as admin_create_topics

__all__ = [
    "BOOTSTRAP_FILE",
    "CONTROLLER_CONFIG",
    "DEFAULT_FETCH_MAX_BYTES",
    "EPOCH_DURING_DELETE",
    "LEADER_DURING_DELETE",
    "LIST_TOPIC_CONFIGS",
    "MAX_RECORDS_PER_USER_OP",
    "MECHANISMS_BY_TYPE",
    "METADATA_LOG_CONFIG",
    "METADATA_PARTITION_DIR",
    "METADATA_TOPIC",
    "MIN_INSYNC",
    "MIN_INSYNC_REPLICAS",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "PARTITION_TRANSITIONS",
    "PARTITION_TRANSITION_REASONS",
    "PREFERRED_ELECTION",
    "PRODUCER_ID_BLOCK_SIZE",
    "REPLICATION_TOPIC_CONFIG",
    "REPLICA_TRANSITIONS",
    "REPLICA_TRANSITION_REASONS",
    "SECURITY_PROTOCOLS",
    "SUPPORTED_FEATURES",
    "TOPIC_CONFIG_KEYS",
    "UNCLEAN_ELECTION",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "AccessControlEntryRecord",
    "AclControlManager",
    "AclResult",
    "AllocateProducerIdsRequest",
    "AllocateProducerIdsResponse",
    "AlterConfigOp",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionItem",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterPartitionResult",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "AlterableConfig",
    "AppendRecords",
    "Assignment",
    "BootstrapError",
    "BrokerEndpoint",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerMetadata",
    "BrokerRegistration",
    "BrokerRegistrationChanged",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "BrokerRequest",
    "CommittedDivergenceError",
    "ConfigChangeError",
    "ConfigRecord",
    "ConfigResourceType",
    "ControlledShutdownResult",
    "ControllerConfig",
    "ControllerContext",
    "ControllerError",
    "ControllerRequest",
    "ControllerRequestSent",
    "ControllerResponse",
    "ControllerToBroker",
    "CreatableTopic",
    "CreatableTopicResult",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreatePartitionsTopic",
    "CreatePartitionsTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeletableTopicResult",
    "DeleteAclsFilterResult",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DivergingEpoch",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "ElectionResult",
    "FeatureLevelRecord",
    "FenceBrokerRecord",
    "FetchPosition",
    "IllegalStateTransitionError",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "LeaderAndIsr",
    "LeaderAndIsrPartition",
    "Leadership",
    "ListPartitionReassignmentsRequest",
    "ListPartitionReassignmentsResponse",
    "ListenerEndpoint",
    "LiveLeader",
    "LocalPartition",
    "LocalReplicaChanges",
    "MetadataBatch",
    "MetadataBroker",
    "MetadataDelta",
    "MetadataEndpoint",
    "MetadataFetchAnswer",
    "MetadataImage",
    "MetadataObserver",
    "MetadataQuorum",
    "MetadataRecord",
    "MetadataRecordError",
    "MetadataReplayError",
    "NoOtherVoters",
    "NotLeaderError",
    "ObserverUpdate",
    "OngoingReassignment",
    "PartitionChangeBuilder",
    "PartitionChangeRecord",
    "PartitionLeaderElected",
    "PartitionRecord",
    "PartitionRegistration",
    "PartitionState",
    "PartitionStateMachine",
    "PlacementError",
    "ProducerIdsRecord",
    "Publisher",
    "QuorumController",
    "QuorumControllerResult",
    "QuorumControllerShell",
    "QuorumUnavailableError",
    "RaftNodeShell",
    "ReassignablePartition",
    "ReassignmentResult",
    "RecordsApplied",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "ReplayResult",
    "ReplicaState",
    "ReplicaStateMachine",
    "Reply",
    "ScramAlterationResult",
    "ScramControlManager",
    "ScramDeletion",
    "ScramUpsertion",
    "ScramUserDescription",
    "SnapshotId",
    "StateTransition",
    "StopReplica",
    "StopReplicaPartition",
    "TopicImage",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnregisterBrokerRecord",
    "UnregisterBrokerRequest",
    "UnregisterBrokerResponse",
    "UpdateMetadata",
    "UpdateMetadataPartition",
    "UserScramCredentialRecord",
    "ZkController",
    "ZkControllerElected",
    "ZkControllerResult",
    "ZkResponse",
    "ZkWatchFired",
    "acl_binding",
    "acl_record",
    "admin_create_topics",
    "assign_replicas_to_brokers",
    "assign_replicas_to_brokers_rack_aware",
    "assign_replicas_to_brokers_rack_unaware",
    "config_changes",
    "decode_record",
    "describe_acls",
    "describe_user_scram_credentials",
    "encode_record",
    "encode_snapshot",
    "incrementally_altered",
    "load_metadata",
    "new_leader_and_isr",
    "on_new_partition_creation",
    "parse_add_scram",
    "parse_replica_assignment",
    "rack_alternated_broker_list",
    "read_bootstrap",
    "render_assignment_table",
    "replaced_configs",
    "replay_metadata_dir",
    "replay_update",
    "replica_index",
    "validate_manual_assignment",
    "validate_topic_name",
    "write_bootstrap",
]
