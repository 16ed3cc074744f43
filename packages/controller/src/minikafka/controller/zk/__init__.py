"""minikafka.controller.zk: the controller of ZooKeeper mode, as cores (seed 001).

In ZooKeeper mode (Kafka before KRaft, before KIP-500 replaced it) there is no
controller process: one broker wins the ephemeral ``/controller`` znode and is the
controller, the cluster's metadata lives in ZooKeeper's znodes, and the controller
tells the brokers with LeaderAndIsr, UpdateMetadata and StopReplica requests. This
subpackage is that controller as Kafka 2.8 has it, without trio or a clock; the trio
shell that runs it is ``minikafka.broker.zk``.

- ``_controller.py``: :class:`ZkController` (``KafkaController``), one event at a time;
- ``_context.py``: :class:`ControllerContext`, the cluster as the controller reads it;
- ``_machines.py``: the partition and replica state machines' side effects and the
  elections (``ZkPartitionStateMachine``, ``ZkReplicaStateMachine``);
- ``_deletion.py``: topic deletion (``TopicDeletionManager``); ``_reassignment.py``:
  partition reassignment;
- ``_requests.py``: the request batch to the brokers (``ControllerBrokerRequestBatch``);
- ``_admin.py``: what an admin writes into ZooKeeper (``AdminZkClient``): topics,
  partitions, deletions, producer id blocks;
- ``_events.py``: the trace events.

The names other packages use are here; ``minikafka.controller`` re-exports them.
"""

from ._admin import LATEST_PRODUCER_ID_BLOCK as LATEST_PRODUCER_ID_BLOCK
from ._admin import admin_create_topics as admin_create_topics
from ._admin import decode_producer_id_block as decode_producer_id_block
from ._context import ControllerContext as ControllerContext
from ._context import Leadership as Leadership
from ._controller import ZkController as ZkController
from ._events import ControllerRequestSent as ControllerRequestSent
from ._events import StateTransition as StateTransition
from ._events import ZkControllerElected as ZkControllerElected
from ._events import ZkWatchFired as ZkWatchFired
from ._machines import ControlledShutdownResult as ControlledShutdownResult
from ._machines import IllegalStateTransitionError as IllegalStateTransitionError
from ._machines import ZkControllerResult as ZkControllerResult
from ._machines import ZkResponse as ZkResponse
from ._requests import EPOCH_DURING_DELETE as EPOCH_DURING_DELETE
from ._requests import LEADER_DURING_DELETE as LEADER_DURING_DELETE
from ._requests import SECURITY_PROTOCOLS as SECURITY_PROTOCOLS
from ._requests import BrokerRequest as BrokerRequest
from ._requests import ControllerToBroker as ControllerToBroker
from ._requests import LeaderAndIsr as LeaderAndIsr
from ._requests import LeaderAndIsrPartition as LeaderAndIsrPartition
from ._requests import LiveLeader as LiveLeader
from ._requests import MetadataBroker as MetadataBroker
from ._requests import MetadataEndpoint as MetadataEndpoint
from ._requests import StopReplica as StopReplica
from ._requests import StopReplicaPartition as StopReplicaPartition
from ._requests import UpdateMetadata as UpdateMetadata
from ._requests import UpdateMetadataPartition as UpdateMetadataPartition

__all__ = [
    "EPOCH_DURING_DELETE",
    "LATEST_PRODUCER_ID_BLOCK",
    "LEADER_DURING_DELETE",
    "SECURITY_PROTOCOLS",
    "BrokerRequest",
    "ControlledShutdownResult",
    "ControllerContext",
    "ControllerRequestSent",
    "ControllerToBroker",
    "IllegalStateTransitionError",
    "LeaderAndIsr",
    "LeaderAndIsrPartition",
    "Leadership",
    "LiveLeader",
    "MetadataBroker",
    "MetadataEndpoint",
    "StateTransition",
    "StopReplica",
    "StopReplicaPartition",
    "UpdateMetadata",
    "UpdateMetadataPartition",
    "ZkController",
    "ZkControllerElected",
    "ZkControllerResult",
    "ZkResponse",
    "ZkWatchFired",
    "admin_create_topics",
    "decode_producer_id_block",
]
