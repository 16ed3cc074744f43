"""minikafka.replication: partitions, the ReplicaManager and the purgatory (seed 000).

The leader side of Kafka's replication: a Partition keeps the ISR and moves the high
watermark to the smallest log end offset among the in-sync replicas; the ReplicaManager
appends producers' batches to leader partitions and reads fetches as file slices; the
purgatory parks ``acks=all`` produces (DelayedProduce) and long-polling fetches
(DelayedFetch) until the condition they wait for holds or their deadline passes.

Every module but ``_shell`` is a core (no trio, no clock: ``now`` is an argument, answers
and the messages for other nodes are returned as values, in a ``CoreResult``);
:class:`ReplicaManagerShell` is the trio shell that owns the clock, the timers and the
sending of answers and AlterPartition proposals.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._callbacks import DeleteRecordsCallback as DeleteRecordsCallback
from ._callbacks import FetchCallback as FetchCallback
from ._callbacks import ProduceCallback as ProduceCallback
from ._callbacks import ResponseCallbacks as ResponseCallbacks
from ._delayed import DelayedDeleteRecords as DelayedDeleteRecords
from ._delayed import DelayedFetch as DelayedFetch
from ._delayed import DelayedOperations as DelayedOperations
from ._delayed import DelayedProduce as DelayedProduce
from ._events import BecameFollower as BecameFollower
from ._events import BecameLeader as BecameLeader
from ._events import DelayedOperationCompleted as DelayedOperationCompleted
from ._events import FollowerAppended as FollowerAppended
from ._events import FollowerFetched as FollowerFetched
from ._events import FollowerTruncated as FollowerTruncated
from ._events import HighWatermarkAdvanced as HighWatermarkAdvanced
from ._events import IsrChanged as IsrChanged
from ._events import IsrChangeProposed as IsrChangeProposed
from ._fetcher import EpochAnswer as EpochAnswer
from ._fetcher import EpochRequest as EpochRequest
from ._fetcher import FetchedPartition as FetchedPartition
from ._fetcher import FetchFailure as FetchFailure
from ._fetcher import FetchRound as FetchRound
from ._fetcher import PartitionFetchState as PartitionFetchState
from ._fetcher import ReplicaFetcher as ReplicaFetcher
from ._isr import IsrChangeAnswer as IsrChangeAnswer
from ._isr import IsrChangeProposal as IsrChangeProposal
from ._isr import ReplicaState as ReplicaState
from ._manager_base import ReplicaManagerResult as ReplicaManagerResult
from ._manager_base import TopicSettings as TopicSettings
from ._partition import Partition as Partition
from ._partition_base import PartitionState as PartitionState
from ._partition_base import ReplicationError as ReplicationError
from ._partition_reads import LogReadResult as LogReadResult
from ._produce_path import TxnMarkerEntry as TxnMarkerEntry
from ._purgatory import DelayedOperation as DelayedOperation
from ._purgatory import DelayedOperationPurgatory as DelayedOperationPurgatory
from ._replica_manager import HIGH_WATERMARK_CHECKPOINT as HIGH_WATERMARK_CHECKPOINT
from ._replica_manager import ReplicaManager as ReplicaManager
from ._results import DeleteRecordsPartitionResult as DeleteRecordsPartitionResult
from ._results import DeleteRecordsResponse as DeleteRecordsResponse
from ._results import FetchParams as FetchParams
from ._results import FetchPartition as FetchPartition
from ._results import FetchPartitionResult as FetchPartitionResult
from ._results import FetchResponse as FetchResponse
from ._results import ProducePartitionResult as ProducePartitionResult
from ._results import ProduceResponse as ProduceResponse
from ._results import Response as Response
from ._shell import ReplicaManagerShell as ReplicaManagerShell
from ._txn_verification import TransactionalProducer as TransactionalProducer
from ._txn_verification import TwoProducersError as TwoProducersError
from ._txn_verification import TxnVerifier as TxnVerifier
from ._txn_verification import produce_refusal as produce_refusal
from ._txn_verification import transactional_producer as transactional_producer
from ._txn_verification import verification_error as verification_error

__all__ = [
    "HIGH_WATERMARK_CHECKPOINT",
    "BecameFollower",
    "BecameLeader",
    "DelayedDeleteRecords",
    "DelayedFetch",
    "DelayedOperation",
    "DelayedOperationCompleted",
    "DelayedOperationPurgatory",
    "DelayedOperations",
    "DelayedProduce",
    "DeleteRecordsCallback",
    "DeleteRecordsPartitionResult",
    "DeleteRecordsResponse",
    "EpochAnswer",
    "EpochRequest",
    "FetchCallback",
    "FetchFailure",
    "FetchParams",
    "FetchPartition",
    "FetchPartitionResult",
    "FetchResponse",
    "FetchRound",
    "FetchedPartition",
    "FollowerAppended",
    "FollowerFetched",
    "FollowerTruncated",
    "HighWatermarkAdvanced",
    "IsrChangeAnswer",
    "IsrChangeProposal",
    "IsrChangeProposed",
    "IsrChanged",
    "LogReadResult",
    "Partition",
    "PartitionFetchState",
    "PartitionState",
    "ProduceCallback",
    "ProducePartitionResult",
    "ProduceResponse",
    "ReplicaFetcher",
    "ReplicaManager",
    "ReplicaManagerResult",
    "ReplicaManagerShell",
    "ReplicaState",
    "ReplicationError",
    "Response",
    "ResponseCallbacks",
    "TopicSettings",
    "TransactionalProducer",
    "TwoProducersError",
    "TxnMarkerEntry",
    "TxnVerifier",
    "produce_refusal",
    "transactional_producer",
    "verification_error",
]
