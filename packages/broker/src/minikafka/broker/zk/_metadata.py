"""What a ZooKeeper-mode broker does with its controller's requests (seed 001; Kafka 2.8's
``KafkaApis.handleLeaderAndIsrRequest``, ``handleUpdateMetadataRequest``,
``handleStopReplicaRequest`` and ``ReplicaManager.becomeLeaderOrFollower``).

A KRaft broker learns everything from the metadata log it replays. A ZooKeeper-mode
broker is *told*, by whichever broker is the controller:

- **UpdateMetadata** is what the broker answers clients with: the live brokers and each
  partition's leader and ISR. It is kept here as the same :class:`MetadataImage` a KRaft
  broker builds, so Metadata, Produce and Fetch are answered by the same code in both
  modes. Partition states are merged into the image (the controller sends only what
  changed); a partition shown with leader -2 belongs to a topic being deleted and leaves.
- **LeaderAndIsr** says which of its replicas this broker leads and which it follows, and
  where the leaders are: the same become-leader/become-follower path as KRaft's.
- **StopReplica** stops replicas (a controlled shutdown's followers, a reassignment's
  removed replicas) and, with ``delete``, deletes their logs (a deleted topic).

Every request names the controller's epoch. A request from an older epoch comes from a
controller that lost its role without knowing it yet (a "zombie": paused past its
ZooKeeper session, say) and is refused whole with STALE_CONTROLLER_EPOCH; a request meant
for an earlier incarnation of this broker (an older broker epoch) with STALE_BROKER_EPOCH.
Within a LeaderAndIsr, a partition whose leader epoch is not newer than the one this
broker has is refused with STALE_CONTROLLER_EPOCH, as Kafka 2.8 does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.controller import (
    BrokerEndpoint,
    BrokerRegistration,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minikafka.controller.zk import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
)
from minikafka.net import Node
from minikafka.replication import PartitionState

NO_EPOCH = -1
"""A partition's leader epoch in StopReplica when the controller does not know it."""


@attrs.frozen
class LeaderAndIsrOutcome:
    """What a LeaderAndIsr request decided: the answer per partition, and for the
    partitions accepted, whether this broker leads or follows them (with their topic id
    and state, as the ReplicaManager takes them) and where each followed leader is."""

    errors: Mapping[TopicPartition, ErrorCode]
    leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]]
    followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]]
    leader_nodes: Mapping[TopicPartition, Node]


@attrs.frozen
class StopReplicaOutcome:
    errors: Mapping[TopicPartition, ErrorCode]
    stopped: frozenset[TopicPartition]
    deleted: frozenset[TopicPartition]
    """Stopped and their logs to be deleted."""


@attrs.define(eq=False)
class ZkBrokerMetadata:
    broker_id: int
    broker_epoch: int = -1
    """This broker's epoch: the czxid of its registration znode (set once registered)."""
    controller_id: int = -1
    controller_epoch: int = -1
    """The newest controller epoch this broker has obeyed."""
    image: MetadataImage = attrs.field(factory=MetadataImage)
    leader_epochs: dict[TopicPartition, int] = attrs.field(factory=dict)
    """The leader epoch of each replica here, from the LeaderAndIsr that placed it."""

    def check(
        self, controller_id: int, controller_epoch: int, broker_epoch: int
    ) -> ErrorCode:
        """The fence every controller request passes first."""
        if controller_epoch < self.controller_epoch:
            return ErrorCode.stale_controller_epoch
        # -1: a controller that does not know the broker's epoch (Kafka lets it
        # through).
        if broker_epoch != -1 and broker_epoch < self.broker_epoch:
            return ErrorCode.stale_broker_epoch
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        return ErrorCode.none

    # --- UpdateMetadata -------------------------------------------------------------------

    def update_metadata(self, request: UpdateMetadata) -> ErrorCode:
        error = self.check(
            request.controller_id, request.controller_epoch, request.broker_epoch
        )
        if error is not ErrorCode.none:
            return error
        brokers = {
            b.broker_id: BrokerRegistration(
                b.broker_id,
                request.broker_epoch if b.broker_id == self.broker_id else -1,
                uuid.UUID(int=0),
                tuple(
                    BrokerEndpoint(e.listener, e.host, e.port, e.security_protocol)
                    for e in b.endpoints
                ),
                b.rack,
                fenced=False,
            )
            for b in request.live_brokers
        }
        topics = dict(self.image.topics.items())
        for p in request.partitions:
            topic_id = p.topic_id or self.image.topic_ids.get(p.topic)
            if topic_id is None:
                continue  # a topic written without an id: its controller adds one first
            known = topics.get(topic_id)
            partitions = dict(known.partitions) if known is not None else {}
            if p.leader == LEADER_DURING_DELETE:
                partitions.pop(p.partition, None)
            else:
                partitions[p.partition] = PartitionRegistration(
                    replicas=p.replicas,
                    isr=p.isr,
                    leader=p.leader,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.zk_version,
                )
            if partitions:
                topics[topic_id] = TopicImage(
                    p.topic, topic_id, MappingProxyType(partitions)
                )
            else:
                topics.pop(topic_id, None)
        names = {t.name for t in topics.values()}
        # A deleted topic's configs go with it: a topic created again under its name
        # has its own, read when the broker first hosts it.
        configs = {
            key: value
            for key, value in self.image.configs.items()
            if key[0] != ConfigResourceType.TOPIC
            or key[1] in names
            or key[1] not in self.image.topic_ids
        }
        self.image = attrs.evolve(
            self.image,
            offset=self.image.offset + 1,
            brokers=MappingProxyType(brokers),
            topics=MappingProxyType(topics),
            topic_ids=MappingProxyType({t.name: i for i, t in topics.items()}),
            configs=configs,
        )
        return ErrorCode.none

    # --- LeaderAndIsr ---------------------------------------------------------------------

    def leader_and_isr(
        self, request: LeaderAndIsr
    ) -> tuple[ErrorCode, LeaderAndIsrOutcome]:
        error = self.check(
            request.controller_id, request.controller_epoch, request.broker_epoch
        )
        nodes = {
            b.broker_id: Node(b.broker_id, b.host, b.port) for b in request.live_leaders
        }
        errors: dict[TopicPartition, ErrorCode] = {}
        leaders: dict[TopicPartition, tuple[uuid.UUID, PartitionState]] = {}
        followers: dict[TopicPartition, tuple[uuid.UUID, PartitionState]] = {}
        leader_nodes: dict[TopicPartition, Node] = {}
        if error is not ErrorCode.none:
            return error, LeaderAndIsrOutcome({}, {}, {}, {})
        for p in request.partitions:
            tp = TopicPartition(p.topic, p.partition)
            current = self.leader_epochs.get(tp)
            if p.topic_id is None:
                errors[tp] = ErrorCode.unknown_topic_id
            elif self.broker_id not in p.replicas:
                errors[tp] = ErrorCode.unknown_topic_or_partition
            elif current is not None and p.leader_epoch <= current:
                errors[tp] = ErrorCode.stale_controller_epoch
            else:
                errors[tp] = ErrorCode.none
                self.leader_epochs[tp] = p.leader_epoch
                state = PartitionState(
                    p.leader, p.leader_epoch, p.zk_version, p.replicas, p.isr
                )
                if p.leader == self.broker_id:
                    leaders[tp] = (p.topic_id, state)
                else:
                    followers[tp] = (p.topic_id, state)
                    if p.leader in nodes:
                        leader_nodes[tp] = nodes[p.leader]
        return ErrorCode.none, LeaderAndIsrOutcome(
            errors, leaders, followers, leader_nodes
        )

    # --- StopReplica ----------------------------------------------------------------------

    def stop_replica(
        self, request: StopReplica
    ) -> tuple[ErrorCode, StopReplicaOutcome]:
        error = self.check(
            request.controller_id, request.controller_epoch, request.broker_epoch
        )
        if error is not ErrorCode.none:
            return error, StopReplicaOutcome({}, frozenset(), frozenset())
        errors: dict[TopicPartition, ErrorCode] = {}
        stopped: set[TopicPartition] = set()
        deleted: set[TopicPartition] = set()
        for p in request.partitions:
            tp = TopicPartition(p.topic, p.partition)
            current = self.leader_epochs.get(tp)
            stale = (
                p.leader_epoch not in (NO_EPOCH, EPOCH_DURING_DELETE)
                and current is not None
                and p.leader_epoch < current
            )
            if stale:
                errors[tp] = ErrorCode.fenced_leader_epoch
                continue
            errors[tp] = ErrorCode.none
            stopped.add(tp)
            if p.delete:
                deleted.add(tp)
                self.leader_epochs.pop(tp, None)
        return ErrorCode.none, StopReplicaOutcome(
            errors, frozenset(stopped), frozenset(deleted)
        )
