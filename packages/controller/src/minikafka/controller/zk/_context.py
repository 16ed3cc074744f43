"""What a ZooKeeper-mode controller knows about the cluster (Kafka 2.8's ``ControllerContext``).

A newly elected controller reads the znodes once (:func:`minikafka.zk.read_cluster`) and
from then on keeps this copy, changed by the events it processes and by the writes it
makes itself. It is the only writer of every partition's state znode, so it can predict
each znode's version after its own write (a created znode is version 0; each write adds
one): the version it knows is the one its next conditional write names, and the one it
tells brokers as the partition epoch (``zk_version``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping

import attrs

from minikafka.zk import (
    LeaderIsrAndControllerEpoch,
    LiveBroker,
    TopicAssignment,
    ZkCluster,
)

from .._config import UNCLEAN_LEADER_ELECTION_ENABLE
from .._states import TopicPartition


@attrs.frozen
class Leadership:
    """A partition's state znode as the controller last wrote or read it."""

    state: LeaderIsrAndControllerEpoch
    version: int


@attrs.define(eq=False)
class ControllerContext:
    epoch: int
    brokers: dict[int, LiveBroker] = attrs.field(factory=dict)
    """Live brokers (registered in ``/brokers/ids``) with their broker epochs."""
    shutting_down: set[int] = attrs.field(factory=set)
    """Brokers in a controlled shutdown: alive, but no longer eligible to lead."""
    topics: dict[str, TopicAssignment] = attrs.field(factory=dict)
    leadership: dict[TopicPartition, Leadership] = attrs.field(factory=dict)
    deleting: set[str] = attrs.field(factory=set)
    """Topics queued for deletion (``/admin/delete_topics``) and not yet gone."""
    pending: dict[str, TopicAssignment] = attrs.field(factory=dict)
    """Assignments this controller wrote for CreateTopics or CreatePartitions whose watch
    has not fired yet: taken into account by the next request, created on TopicChange."""
    configs: dict[str, Mapping[str, str]] = attrs.field(factory=dict)
    """Each topic's config overrides (``/config/topics/<topic>``), read with its
    assignment and again at each of its change notifications
    (:meth:`~._controller.ZkController.on_topic_config_change`): where
    ``unclean.leader.election.enable`` may be set per topic."""
    broker_configs: dict[str, Mapping[str, str]] = attrs.field(factory=dict)
    """The dynamic broker configs (KIP-226) by resource name, ``""`` the cluster-wide
    default and an id that broker's own: read at the election and again at each of
    their notifications (:meth:`~._controller.ZkController.on_broker_config_change`)."""
    pending_deletion: set[str] = attrs.field(factory=set)
    """Topics this controller listed under ``/admin/delete_topics``, watch not fired yet."""
    next_producer_id: int = 0
    """The first id of the next producer id block (``/latest_producer_id_block``)."""
    producer_id_block_version: int = -1
    """That znode's version (-1: it does not exist yet)."""

    @classmethod
    def load(
        cls,
        epoch: int,
        cluster: ZkCluster,
        producer_id_block: tuple[int, int] | None = None,
    ) -> ControllerContext:
        """``producer_id_block``: the next producer id and the znode's version, if any."""
        leadership = {
            tp: Leadership(*found)
            for tp, found in cluster.partitions.items()
            if found is not None
        }
        next_id, version = (
            producer_id_block if producer_id_block is not None else (0, -1)
        )
        return cls(
            epoch,
            dict(cluster.brokers),
            set(),
            dict(cluster.topics),
            leadership,
            set(cluster.deleting) & set(cluster.topics),
            next_producer_id=next_id,
            producer_id_block_version=version,
            configs=dict(cluster.configs),
            broker_configs=dict(cluster.broker_configs),
        )

    def unclean_leader_election_enabled(
        self, topic: str, default: bool, broker_id: int
    ) -> bool:
        """The topic's ``unclean.leader.election.enable``, else the broker default
        (:meth:`unclean_leader_election_default`). Kafka 2.8's controller reads the
        topic's LogConfig before an election with no live in-sync replica, built over
        its broker's current config, in which both dynamic layers are."""
        value = self.configs.get(topic, {}).get(UNCLEAN_LEADER_ELECTION_ENABLE)
        if value is not None:
            return _true(value)
        return self.unclean_leader_election_default(default, broker_id)

    def unclean_leader_election_default(self, default: bool, broker_id: int) -> bool:
        """What a topic that does not set it gets: the controller's broker's
        (``broker_id``) dynamic config, else the cluster-wide dynamic default, else the
        static one (``default``)."""
        for name in (str(broker_id), ""):
            value = self.broker_configs.get(name, {}).get(
                UNCLEAN_LEADER_ELECTION_ENABLE
            )
            if value is not None:
                return _true(value)
        return default

    # --- brokers --------------------------------------------------------------------------

    def is_live(self, broker_id: int) -> bool:
        """Alive and not shutting down: may lead and be in an ISR (``liveBrokerIds``)."""
        return broker_id in self.brokers and broker_id not in self.shutting_down

    def live_or_shutting_down(self) -> list[int]:
        """Every registered broker: whom the controller sends metadata."""
        return sorted(self.brokers)

    # --- topics and partitions ------------------------------------------------------------

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        assignment = self.topics.get(tp[0])
        if assignment is None:
            return ()
        return assignment.partitions.get(tp[1], ())

    def topic_id(self, topic: str) -> uuid.UUID | None:
        assignment = self.topics.get(topic)
        return None if assignment is None else assignment.topic_id

    def topic_of_id(self, topic_id: uuid.UUID) -> str | None:
        for name, assignment in self.topics.items():
            if assignment.topic_id == topic_id:
                return name
        return None

    def partitions(self, topic: str | None = None) -> Iterator[TopicPartition]:
        """Every partition (of ``topic``), in topic and partition order."""
        names = sorted(self.topics) if topic is None else [topic]
        for name in names:
            for index in sorted(self.topics[name].partitions):
                yield (name, index)

    def partitions_on(self, brokers: set[int]) -> list[TopicPartition]:
        return [tp for tp in self.partitions() if brokers & set(self.replicas(tp))]

    def replicas_on(self, brokers: set[int]) -> list[tuple[str, int, int]]:
        return [
            (tp[0], tp[1], b)
            for tp in self.partitions()
            for b in self.replicas(tp)
            if b in brokers
        ]


def _true(value: str) -> bool:
    """A boolean config's value as Kafka parses it (case aside, only "true" is)."""
    return value.strip().lower() == "true"
