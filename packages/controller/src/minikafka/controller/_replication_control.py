"""ReplicationControlManager: topics, partitions, leaders and ISRs (seeds 001, 004, 000).

Kafka's KRaft controller gives one manager every decision about topics and partitions:
creating topics (placement, then each partition's leader and ISR, written down as a
TopicRecord and PartitionRecords instead of znodes under ``/brokers/topics``), adding
partitions, deleting topics, the leader elections that follow a fenced or unfenced
broker, AlterPartition from leaders (the ISR changes of KIP-497, fenced by the leader
epoch and the partition epoch), and the interruptible reassignment of KIP-236. Brokers
act on the records they replay; nobody sends them LeaderAndIsr.

Kafka writes all of that as one class. Here ``ReplicationControlManager`` is what the
QuorumController sees (the same methods), and it composes one part per mechanism, so that
each can be read on its own:

- ``_replication_state``: the topics and partitions (timeline maps), ``replay``, and the
  ``PartitionChangeBuilder`` every change goes through;
- ``_topic_creation``: CreateTopics and CreatePartitions (seed 001);
- ``_topic_deletion``: DeleteTopics;
- ``_leader_and_isr``: fenced and unfenced brokers, AlterPartition (KIP-497);
- ``_reassignment``: AlterPartitionReassignments and ListPartitionReassignments (KIP-236).

Methods that decide never change state; they return records, which the QuorumController
replays (``replay``) before it appends them to the metadata log.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Never

import attrs

from minikafka.common import CoreResult
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap
from minikafka.trace import NullTracer, Tracer

from ._cluster_control import ClusterControlManager
from ._config import ControllerConfig
from ._config_control import ConfigurationControlManager
from ._leader_and_isr import LeaderAndIsrControl
from ._partition import PartitionRegistration
from ._reassignment import Reassignment
from ._records import MetadataRecord, PartitionChangeRecord
from ._replication_state import ReplicationState, TopicInfo
from ._requests import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)
from ._topic_creation import TopicCreation
from ._topic_deletion import delete_topics


@attrs.define(eq=False)
class ReplicationControlManager:
    registry: SnapshotRegistry
    config: ControllerConfig
    cluster: ClusterControlManager
    configs: ConfigurationControlManager
    rng: random.Random
    tracer: Tracer = attrs.field(factory=NullTracer)  # the QuorumController's
    state: ReplicationState = attrs.field(init=False)
    creation: TopicCreation = attrs.field(init=False)
    leader_and_isr: LeaderAndIsrControl = attrs.field(init=False)
    reassignment: Reassignment = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.state = ReplicationState(
            self.registry, self.config, self.cluster, self.configs, self.tracer
        )
        self.creation = TopicCreation(self.state, self.rng)
        self.leader_and_isr = LeaderAndIsrControl(self.state)
        self.reassignment = Reassignment(self.state)

    # --- the state, and its replay -----------------------------------------------------------

    @property
    def topics(self) -> TimelineHashMap[uuid.UUID, TopicInfo]:
        return self.state.topics

    @property
    def topics_by_name(self) -> TimelineHashMap[str, uuid.UUID]:
        return self.state.topics_by_name

    @property
    def partitions(
        self,
    ) -> TimelineHashMap[tuple[uuid.UUID, int], PartitionRegistration]:
        return self.state.partitions

    def replay(self, record: MetadataRecord) -> None:
        self.state.replay(record)

    def topic_named(self, name: str, epoch: int = LATEST_EPOCH) -> TopicInfo | None:
        return self.state.topic_named(name, epoch)

    def partitions_of(
        self, topic: TopicInfo, epoch: int = LATEST_EPOCH
    ) -> Iterator[tuple[int, PartitionRegistration]]:
        return self.state.partitions_of(topic, epoch)

    # --- the decisions, one part per mechanism -------------------------------------------------

    def create_topics(
        self, request: CreateTopicsRequest
    ) -> CoreResult[MetadataRecord, CreateTopicsResponse, Never]:
        return self.creation.create_topics(request)

    def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> CoreResult[MetadataRecord, CreatePartitionsResponse, Never]:
        return self.creation.create_partitions(request)

    def delete_topics(
        self, request: DeleteTopicsRequest
    ) -> CoreResult[MetadataRecord, DeleteTopicsResponse, Never]:
        return delete_topics(self.state, request)

    def handle_broker_fenced(
        self, broker_id: int, reason: str = "broker_fenced"
    ) -> list[PartitionChangeRecord]:
        return self.leader_and_isr.handle_broker_fenced(broker_id, reason)

    def handle_broker_unfenced(self, broker_id: int) -> list[PartitionChangeRecord]:
        return self.leader_and_isr.handle_broker_unfenced(broker_id)

    def alter_partition(
        self, request: AlterPartitionRequest
    ) -> CoreResult[MetadataRecord, AlterPartitionResponse, Never]:
        return self.leader_and_isr.alter_partition(request)

    def rebalance_leaders(self, percentage: int) -> list[PartitionChangeRecord]:
        return self.leader_and_isr.rebalance_leaders(percentage)

    def elect_leaders(
        self, request: ElectLeadersRequest
    ) -> CoreResult[MetadataRecord, ElectLeadersResponse, Never]:
        return self.leader_and_isr.elect_leaders(request)

    def alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest
    ) -> CoreResult[MetadataRecord, AlterPartitionReassignmentsResponse, Never]:
        return self.reassignment.alter_partition_reassignments(request)

    def list_partition_reassignments(
        self, epoch: int
    ) -> ListPartitionReassignmentsResponse:
        return self.reassignment.list_partition_reassignments(epoch)
