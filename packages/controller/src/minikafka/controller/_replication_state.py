"""The topics and partitions the controller knows: ReplicationControlManager's state.

Kafka's ReplicationControlManager keeps ``topics`` (id -> TopicControlInfo, each with its
partitions) and ``topicsByName`` in timeline maps registered with the controller's
SnapshotRegistry, so that a failed or uncommitted operation can be rolled back to the last
committed offset. ``ReplicationState`` is that state and nothing more: the maps, the
``replay`` that is the only thing ever to change them, and the reads every decision needs.

The decisions themselves live by mechanism in their own modules (creating topics and
partitions, deleting topics, leader and ISR changes, reassignment); they read this state
and return records, never changing it. Two things they all share live here too:

- ``builder``: every change to a partition goes through one ``PartitionChangeBuilder``,
  given the partition's ``unclean.leader.election.enable`` (topic config, or the
  controller's default);
- ``trace_elections``: the ``PartitionLeaderElected`` events of the records about to be
  written, judged against the state they will be replayed onto; they wait in
  ``elections`` until the QuorumController, which has the call's ``now``, emits them
  (:meth:`ReplicationState.take_elections`).

``Refused`` is how a decision ends in a Kafka error for one topic or partition: raised
where the check is, caught where the request's per-item results are assembled.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap
from minikafka.trace import NullTracer, Tracer

from ._cluster_control import ClusterControlManager
from ._config import UNCLEAN_LEADER_ELECTION_ENABLE, ControllerConfig
from ._config_control import ConfigurationControlManager
from ._events import PartitionLeaderElected
from ._partition import PartitionChangeBuilder, PartitionRegistration
from ._records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from ._requests import MAX_RECORDS_PER_USER_OP

DUPLICATE = "Duplicate topic name."


def too_large(records: int) -> str:
    """POLICY_VIOLATION's message for a request over MAX_RECORDS_PER_USER_OP records."""
    return (
        f"Unable to perform excessively large batch operation: {records} records, "
        f"more than the {MAX_RECORDS_PER_USER_OP} one request may write."
    )


class Refused(ApiError):
    """A decision that ends in a Kafka error for one topic or partition."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@attrs.frozen
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int


@attrs.define(eq=False)
class ReplicationState:
    registry: SnapshotRegistry
    config: ControllerConfig
    cluster: ClusterControlManager
    configs: ConfigurationControlManager
    tracer: Tracer = attrs.field(factory=NullTracer)  # the QuorumController's
    topics: TimelineHashMap[uuid.UUID, TopicInfo] = attrs.field(init=False)
    topics_by_name: TimelineHashMap[str, uuid.UUID] = attrs.field(init=False)
    # One flat map for every partition of every topic, so that nothing but the managers'
    # own maps is ever registered with the SnapshotRegistry.
    partitions: TimelineHashMap[tuple[uuid.UUID, int], PartitionRegistration] = (
        attrs.field(init=False)
    )
    elections: list[PartitionLeaderElected] = attrs.field(init=False, factory=list)
    """Traced elections of the call under way, not emitted yet (no time here)."""

    def __attrs_post_init__(self) -> None:
        self.topics = TimelineHashMap(self.registry)
        self.topics_by_name = TimelineHashMap(self.registry)
        self.partitions = TimelineHashMap(self.registry)

    # --- replay ------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord():
                self.topics.put(
                    record.topic_id, TopicInfo(record.name, record.topic_id, 0)
                )
                self.topics_by_name.put(record.name, record.topic_id)
            case PartitionRecord():
                key = (record.topic_id, record.partition_id)
                if key not in self.partitions:
                    topic = self.topics[record.topic_id]
                    count = max(topic.num_partitions, record.partition_id + 1)
                    self.topics.put(
                        topic.topic_id, attrs.evolve(topic, num_partitions=count)
                    )
                self.partitions.put(key, PartitionRegistration.from_record(record))
            case PartitionChangeRecord():
                key = (record.topic_id, record.partition_id)
                self.partitions.put(key, self.partitions[key].merge(record))
            case RemoveTopicRecord():
                topic = self.topics[record.topic_id]
                for partition_id in range(topic.num_partitions):
                    self.partitions.remove((topic.topic_id, partition_id))
                self.topics.remove(topic.topic_id)
                self.topics_by_name.remove(topic.name)
                self.configs.remove_topic_configs(topic.name)
            case _:
                pass

    # --- reads ---------------------------------------------------------------------------

    def topic_named(self, name: str, epoch: int = LATEST_EPOCH) -> TopicInfo | None:
        topic_id = self.topics_by_name.get(name, epoch)
        return None if topic_id is None else self.topics.get(topic_id, epoch)

    def partitions_of(
        self, topic: TopicInfo, epoch: int = LATEST_EPOCH
    ) -> Iterator[tuple[int, PartitionRegistration]]:
        for partition_id in range(topic.num_partitions):
            partition = self.partitions.get((topic.topic_id, partition_id), epoch)
            if partition is not None:
                yield partition_id, partition

    def _unclean(self, topic_id: uuid.UUID) -> bool:
        value = self.configs.topic_config_or_broker_default(
            self.topics[topic_id].name,
            UNCLEAN_LEADER_ELECTION_ENABLE,
            self.config.node_id,
        )
        if value is None:
            return self.config.unclean_leader_election_enable
        return value.strip().lower() == "true"

    # --- what every decision shares ---------------------------------------------------------

    def builder(
        self,
        key: tuple[uuid.UUID, int],
        acceptable: Callable[[int], bool] | None = None,
    ) -> PartitionChangeBuilder:
        return PartitionChangeBuilder(
            partition=self.partitions[key],
            topic_id=key[0],
            partition_id=key[1],
            is_acceptable_leader=acceptable or self.cluster.is_unfenced,
            unclean_election=self._unclean(key[0]),
        )

    def take_elections(self) -> list[PartitionLeaderElected]:
        """The elections traced since the last call, to emit at the call's ``now``."""
        taken, self.elections = self.elections, []
        return taken

    def trace_elections(self, records: Sequence[MetadataRecord], reason: str) -> None:
        """Trace the leaders ``records`` (about to be written) elect, judged against the
        state they will be replayed onto; a leader from outside the ISR is unclean. The
        events wait in :attr:`elections` for the call's ``now``."""
        if not self.tracer.enabled:
            return
        names: Mapping[uuid.UUID, str] = {
            r.topic_id: r.name for r in records if isinstance(r, TopicRecord)
        }
        for record in records:
            match record:
                case PartitionRecord():
                    name = (
                        names.get(record.topic_id) or self.topics[record.topic_id].name
                    )
                    event = PartitionLeaderElected(
                        name,
                        record.partition_id,
                        record.leader,
                        NO_LEADER,
                        record.leader_epoch,
                        record.isr,
                        reason,
                    )
                    self.elections.append(event)
                case PartitionChangeRecord() if record.leader != NO_LEADER_CHANGE:
                    before = self.partitions[(record.topic_id, record.partition_id)]
                    after = before.merge(record)
                    unclean = (
                        after.leader != NO_LEADER and after.leader not in before.isr
                    )
                    event = PartitionLeaderElected(
                        self.topics[record.topic_id].name,
                        record.partition_id,
                        after.leader,
                        before.leader,
                        after.leader_epoch,
                        after.isr,
                        "unclean" if unclean else reason,
                    )
                    self.elections.append(event)
                case _:
                    pass
