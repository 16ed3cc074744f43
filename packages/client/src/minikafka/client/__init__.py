"""minikafka.client: the client's half of seed 000, the producer and the consumer.

Sans-IO cores (the partitioner, the RecordAccumulator, the Sender, the client's
metadata; the Fetcher, the subscription state and the consumer's side of the group
protocol) driven by trio shells, under a synchronous ``Producer`` and ``Consumer``
shaped like confluent-kafka's. See the package README and the book's chapters "The
producer" and "The consumer".
"""

from __future__ import annotations

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

# A client's bad configuration raises common's ConfigError (the broker's too), here for
# the client's users.
from minikafka.common import ConfigError as ConfigError
from minikafka.coordination.member import ConsumerCoordinator as ConsumerCoordinator
from minikafka.coordination.member import MemberState as MemberState
from minikafka.coordination.member import RebalanceEvent as RebalanceEvent
from minikafka.coordination.member import SubscriptionState as SubscriptionState

from ._accumulator import LEAVE_REASONS as LEAVE_REASONS
from ._accumulator import BufferFull as BufferFull
from ._accumulator import PendingRecord as PendingRecord
from ._accumulator import ProducerBatch as ProducerBatch
from ._accumulator import ReadyCheck as ReadyCheck
from ._accumulator import RecordAccumulator as RecordAccumulator
from ._admin import AdminClient as AdminClient
from ._admin_port import to_controller as to_controller
from ._admin_txns import TransactionDescription as TransactionDescription
from ._admin_txns import TransactionListing as TransactionListing
from ._admin_types import RESOURCE_BROKER as RESOURCE_BROKER
from ._admin_types import RESOURCE_TOPIC as RESOURCE_TOPIC
from ._admin_types import AlterConfigOp as AlterConfigOp
from ._admin_types import AlterConfigOpType as AlterConfigOpType
from ._admin_types import ClusterDescription as ClusterDescription
from ._admin_types import ClusterMetadata as ClusterMetadata
from ._admin_types import ConfigEntry as ConfigEntry
from ._admin_types import ConfigResource as ConfigResource
from ._admin_types import ConfigSource as ConfigSource
from ._admin_types import ConfigSynonym as ConfigSynonym
from ._admin_types import ConsumerGroupDescription as ConsumerGroupDescription
from ._admin_types import ConsumerGroupListing as ConsumerGroupListing
from ._admin_types import DeletedRecords as DeletedRecords
from ._admin_types import ElectionType as ElectionType
from ._admin_types import ListOffsetsResultInfo as ListOffsetsResultInfo
from ._admin_types import LogDirDescription as LogDirDescription
from ._admin_types import MemberDescription as MemberDescription
from ._admin_types import NewPartitions as NewPartitions
from ._admin_types import NewTopic as NewTopic
from ._admin_types import OffsetAndMetadata as OffsetAndMetadata
from ._admin_types import OffsetSpec as OffsetSpec
from ._admin_types import PartitionMetadata as PartitionMetadata
from ._admin_types import PartitionReassignment as PartitionReassignment
from ._admin_types import ReplicaInfo as ReplicaInfo
from ._admin_types import TopicMetadata as TopicMetadata
from ._async import AsyncConsumer as AsyncConsumer
from ._async import AsyncProducer as AsyncProducer
from ._async_admin import AsyncAdminClient as AsyncAdminClient
from ._config import ConsumerConfig as ConsumerConfig
from ._config import ProducerConfig as ProducerConfig
from ._consumer import Consumer as Consumer
from ._events import ProducerBatchCompleted as ProducerBatchCompleted
from ._fetcher import FetchedPartition as FetchedPartition
from ._fetcher import Fetcher as Fetcher
from ._fetcher import FetcherRequest as FetcherRequest
from ._fetcher import FetcherResult as FetcherResult
from ._fetcher import FetchPlan as FetchPlan
from ._fetcher import ListOffsetsPlan as ListOffsetsPlan
from ._fetcher import OffsetsForLeaderEpochPlan as OffsetsForLeaderEpochPlan
from ._fetcher import records_from as records_from
from ._message import OFFSET_BEGINNING as OFFSET_BEGINNING
from ._message import OFFSET_END as OFFSET_END
from ._message import OFFSET_INVALID as OFFSET_INVALID
from ._message import OFFSET_STORED as OFFSET_STORED
from ._message import KafkaError as KafkaError
from ._message import KafkaException as KafkaException
from ._message import Message as Message
from ._message import TopicPartition as TopicPartition
from ._metadata import ClientMetadata as ClientMetadata
from ._metadata import TopicInfo as TopicInfo
from ._partitioner import Partitioner as Partitioner
from ._partitioner import murmur2 as murmur2
from ._partitioner import partition_for_key as partition_for_key
from ._producer import Producer as Producer
from ._sender import Delivery as Delivery
from ._sender import PartitionResponse as PartitionResponse
from ._sender import ProducePlan as ProducePlan
from ._sender import Sender as Sender
from ._sender import SenderResult as SenderResult
from ._shell import ProducerShell as ProducerShell
from ._transactions import TRANSITIONS as TRANSITIONS
from ._transactions import TransactionManager as TransactionManager
from ._transactions import TransactionState as TransactionState
from ._transactions import TxnResult as TxnResult
from ._txn_plans import AddOffsetsToTxnPlan as AddOffsetsToTxnPlan
from ._txn_plans import AddPartitionsToTxnPlan as AddPartitionsToTxnPlan
from ._txn_plans import ConsumerGroupMetadata as ConsumerGroupMetadata
from ._txn_plans import EndTxnPlan as EndTxnPlan
from ._txn_plans import FindCoordinatorPlan as FindCoordinatorPlan
from ._txn_plans import InitProducerIdPlan as InitProducerIdPlan
from ._txn_plans import TxnAnswer as TxnAnswer
from ._txn_plans import TxnCompleted as TxnCompleted
from ._txn_plans import TxnOffsetCommitPlan as TxnOffsetCommitPlan
from ._txn_plans import TxnPlan as TxnPlan

__all__ = [
    "LEAVE_REASONS",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "TRANSITIONS",
    "AddOffsetsToTxnPlan",
    "AddPartitionsToTxnPlan",
    "AdminClient",
    "AlterConfigOp",
    "AlterConfigOpType",
    "AsyncConsumer",
    "AsyncProducer",
    "BufferFull",
    "ClientMetadata",
    "ClusterDescription",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigError",
    "ConfigResource",
    "ConfigSource",
    "ConfigSynonym",
    "Consumer",
    "ConsumerConfig",
    "ConsumerCoordinator",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupMetadata",
    "DeletedRecords",
    "Delivery",
    "ElectionType",
    "EndTxnPlan",
    "FetchPlan",
    "FetchedPartition",
    "Fetcher",
    "FetcherRequest",
    "FetcherResult",
    "FindCoordinatorPlan",
    "InitProducerIdPlan",
    "KafkaError",
    "KafkaException",
    "ListOffsetsPlan",
    "ListOffsetsResultInfo",
    "LogDirDescription",
    "MemberState",
    "Message",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "OffsetsForLeaderEpochPlan",
    "PartitionReassignment",
    "PartitionResponse",
    "Partitioner",
    "PendingRecord",
    "ProducePlan",
    "Producer",
    "ProducerBatch",
    "ProducerBatchCompleted",
    "ProducerConfig",
    "ProducerShell",
    "ReadyCheck",
    "RebalanceEvent",
    "RecordAccumulator",
    "ReplicaInfo",
    "Sender",
    "SenderResult",
    "SubscriptionState",
    "TopicPartition",
    "TransactionDescription",
    "TransactionListing",
    "TransactionManager",
    "TransactionState",
    "TxnAnswer",
    "TxnCompleted",
    "TxnOffsetCommitPlan",
    "TxnPlan",
    "TxnResult",
    "murmur2",
    "partition_for_key",
    "records_from",
    "to_controller",
]
