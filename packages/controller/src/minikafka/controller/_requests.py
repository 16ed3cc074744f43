"""The requests a QuorumController answers, and its answers.

They mirror the Kafka APIs that reach the controller (CreateTopics, DeleteTopics,
CreatePartitions, BrokerRegistration, BrokerHeartbeat, AlterPartition,
AlterPartitionReassignments, ListPartitionReassignments, IncrementalAlterConfigs,
DescribeConfigs, AllocateProducerIds), trimmed to what the controller decides. The broker
translates between these and the wire (kio's generated messages), so the controller core
never sees bytes.
Errors are Kafka's codes (``ErrorCode``), per topic or per partition as Kafka answers them.
"""

from __future__ import annotations

import enum
import uuid
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from ._acl_control import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from ._records import BrokerEndpoint
from ._scram_control import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)

MAX_RECORDS_PER_USER_OP = 10_000
"""The most records one client request may make the controller write (Kafka's
QuorumController.MAX_RECORDS_PER_USER_OP, equal to its largest metadata batch).

A CreateTopics costs one TopicRecord, one ConfigRecord per config and one
PartitionRecord per partition; a CreatePartitions one PartitionRecord per new partition;
a DeleteTopics one RemoveTopicRecord per topic. A request over the limit is refused as a
whole with POLICY_VIOLATION, validate-only or not: without it one request for 10^7
partitions would hold the controller's single event queue for seconds and build
gigabytes of assignment before anyone said no."""

# --- topics ----------------------------------------------------------------------------


@attrs.frozen
class CreatableTopic:
    name: str
    num_partitions: int = -1  # -1: the controller's num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    # Manual: each partition's replicas, for partitions 0, 1, ... unless partition_ids says
    # which partition each one is (as CreateTopics does, partition_index by partition_index).
    assignments: tuple[tuple[int, ...], ...] = ()
    # A None value is refused (INVALID_CONFIG), as Kafka refuses a null config value.
    configs: tuple[tuple[str, str | None], ...] = ()
    partition_ids: tuple[int, ...] | None = None


@attrs.frozen
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...]
    validate_only: bool = False


@attrs.frozen
class CreatableTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@attrs.frozen
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]


@attrs.frozen
class DeleteTopicsRequest:
    names: tuple[str, ...] = ()
    topic_ids: tuple[uuid.UUID, ...] = ()


@attrs.frozen
class DeletableTopicResult:
    name: str | None
    topic_id: uuid.UUID | None
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class DeleteTopicsResponse:
    topics: tuple[DeletableTopicResult, ...]


@attrs.frozen
class CreatePartitionsTopic:
    name: str
    count: int  # the new total
    assignments: tuple[tuple[int, ...], ...] = ()  # replicas of each new partition


@attrs.frozen
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...]
    validate_only: bool = False


@attrs.frozen
class CreatePartitionsTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class CreatePartitionsResponse:
    topics: tuple[CreatePartitionsTopicResult, ...]


# --- brokers ---------------------------------------------------------------------------


@attrs.frozen
class BrokerRegistrationRequest:
    broker_id: int
    incarnation_id: uuid.UUID
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None


@attrs.frozen
class BrokerRegistrationResponse:
    error_code: ErrorCode
    broker_epoch: int = -1


@attrs.frozen
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shutdown: bool = False


@attrs.frozen
class BrokerHeartbeatResponse:
    error_code: ErrorCode
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False


@attrs.frozen
class AllocateProducerIdsRequest:
    """A broker needs producer ids for InitProducerId and asks for a block (KIP-730)."""

    broker_id: int
    broker_epoch: int


@attrs.frozen
class AllocateProducerIdsResponse:
    """The block ``[producer_id_start, producer_id_start + producer_id_len)``, now the
    asking broker's alone."""

    error_code: ErrorCode
    producer_id_start: int = -1
    producer_id_len: int = 0


@attrs.frozen
class UnregisterBrokerRequest:
    """Remove a broker's registration for good (KIP-631's UnregisterBroker: what
    ``kafka-cluster.sh unregister`` sends): an operator's word that it will not come
    back under this registration."""

    broker_id: int


@attrs.frozen
class UnregisterBrokerResponse:
    error_code: ErrorCode


# --- partitions ------------------------------------------------------------------------


@attrs.frozen
class AlterPartitionItem:
    """One leader's proposal: "the ISR of this partition should now be ``new_isr``"."""

    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int


@attrs.frozen
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    partitions: tuple[AlterPartitionItem, ...]


@attrs.frozen
class AlterPartitionResult:
    topic_id: uuid.UUID
    partition: int
    error_code: ErrorCode
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@attrs.frozen
class AlterPartitionResponse:
    error_code: ErrorCode
    partitions: tuple[AlterPartitionResult, ...] = ()


@attrs.frozen
class ElectLeadersRequest:
    """Elect each partition's preferred leader (the first replica), or every partition's
    when ``partitions`` is None (kafka-leader-election.sh --all-topic-partitions); with
    ``election_type`` UNCLEAN_ELECTION (KIP-460), a leader for each partition that has
    none, from outside the ISR if no in-sync replica is alive."""

    partitions: tuple[tuple[str, int], ...] | None = None
    election_type: int = 0  # PREFERRED_ELECTION


PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1
"""ElectLeaders' ``election_type`` values (Kafka's ``ElectionType``)."""


@attrs.frozen
class ElectionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class ElectLeadersResponse:
    error_code: ErrorCode
    partitions: tuple[ElectionResult, ...] = ()


@attrs.frozen
class ReassignablePartition:
    topic: str
    partition: int
    replicas: tuple[int, ...] | None  # None cancels a reassignment in progress


@attrs.frozen
class AlterPartitionReassignmentsRequest:
    partitions: tuple[ReassignablePartition, ...]
    allow_replication_factor_change: bool = True
    """False (KIP-860, AlterPartitionReassignments v1): a target of another length than
    the replicas the partition is headed for is refused INVALID_REPLICATION_FACTOR."""


@attrs.frozen
class ReassignmentResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class AlterPartitionReassignmentsResponse:
    partitions: tuple[ReassignmentResult, ...]


@attrs.frozen
class ListPartitionReassignmentsRequest:
    pass


@attrs.frozen
class OngoingReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@attrs.frozen
class ListPartitionReassignmentsResponse:
    reassignments: tuple[OngoingReassignment, ...]


# --- configs ---------------------------------------------------------------------------


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs' operations, with Kafka's ids (KIP-339)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@attrs.frozen
class AlterableConfig:
    name: str
    op: AlterConfigOp
    value: str | None = None


@attrs.frozen
class IncrementalAlterConfigsRequest:
    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]
    validate_only: bool = False


@attrs.frozen
class IncrementalAlterConfigsResponse:
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class AlterConfigsRequest:
    """The legacy AlterConfigs (KIP-133): ``configs`` becomes the resource's whole set."""

    resource_type: int
    resource_name: str
    configs: tuple[tuple[str, str | None], ...]
    validate_only: bool = False


@attrs.frozen
class AlterConfigsResponse:
    error_code: ErrorCode
    error_message: str | None = None


@attrs.frozen
class DescribeConfigsRequest:
    resource_type: int
    resource_name: str


@attrs.frozen
class DescribeConfigsResponse:
    error_code: ErrorCode
    configs: tuple[tuple[str, str], ...] = ()


ControllerRequest: TypeAlias = (
    CreateTopicsRequest
    | DeleteTopicsRequest
    | CreatePartitionsRequest
    | BrokerRegistrationRequest
    | BrokerHeartbeatRequest
    | AlterPartitionRequest
    | AlterPartitionReassignmentsRequest
    | ListPartitionReassignmentsRequest
    | IncrementalAlterConfigsRequest
    | AlterConfigsRequest
    | DescribeConfigsRequest
    | AllocateProducerIdsRequest
    | UnregisterBrokerRequest
    | ElectLeadersRequest
    | AlterUserScramCredentialsRequest
    | CreateAclsRequest
    | DeleteAclsRequest
)

ControllerResponse: TypeAlias = (
    CreateTopicsResponse
    | DeleteTopicsResponse
    | CreatePartitionsResponse
    | BrokerRegistrationResponse
    | BrokerHeartbeatResponse
    | AlterPartitionResponse
    | AlterPartitionReassignmentsResponse
    | ListPartitionReassignmentsResponse
    | IncrementalAlterConfigsResponse
    | AlterConfigsResponse
    | DescribeConfigsResponse
    | AllocateProducerIdsResponse
    | UnregisterBrokerResponse
    | ElectLeadersResponse
    | AlterUserScramCredentialsResponse
    | CreateAclsResponse
    | DeleteAclsResponse
)
