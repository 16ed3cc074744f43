"""CreateTopics and CreatePartitions: placing new partitions and writing them down (seed 001).

Everything seed 001 tells about creating a topic in ZooKeeper mode happens here in one
step: choose the replicas (placement, Kafka's ``ReplicaPlacer``), choose each partition's
leader and ISR, and write it all down, as a TopicRecord, one ConfigRecord per config and
one PartitionRecord per partition instead of znodes under ``/brokers/topics``. Brokers
then act on the records they replay; nobody sends them LeaderAndIsr. CreatePartitions
is the same second half for a topic that exists: place the new partitions (continuing
AdminUtils's walk where partition 0 started it) and write one PartitionRecord for each.

Both take two passes, so that a request's size is judged before any of it is placed:
the first checks each topic and counts the records it would write (cheap: no
placement), the second places the topics only if the whole request is within
``MAX_RECORDS_PER_USER_OP`` (Kafka's QuorumController limit). Validate-only requests take
the same two passes and write nothing.

Kafka's ReplicationControlManager.createTopics and createPartitions; ``TopicCreation``
only decides: it reads ``ReplicationState`` and returns records, which the
QuorumController replays before it appends them to the metadata log.
"""

from __future__ import annotations

import collections
import random
import re
import uuid
from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult

from ._config import validate_topic_config
from ._placement import (
    Assignment,
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
    check_placement_request,
    validate_manual_assignment,
)
from ._records import (
    METADATA_TOPIC,
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    TopicRecord,
)
from ._replication_state import (
    DUPLICATE,
    Refused,
    ReplicationState,
    TopicInfo,
    too_large,
)
from ._requests import (
    MAX_RECORDS_PER_USER_OP,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)

MAX_TOPIC_NAME_LENGTH = 249  # a partition directory name must fit in 255 bytes
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: what may name a directory under every ``log.dirs``."""
    if not name or name in (".", ".."):
        raise Refused(
            ErrorCode.invalid_topic_exception, f"{name!r} is not a legal topic name"
        )
    if name == METADATA_TOPIC:
        # Its partition directory is the metadata log's own (Kafka's ControllerApis).
        raise Refused(
            ErrorCode.invalid_request,
            f"creation of internal topic {name} is prohibited",
        )
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise Refused(
            ErrorCode.invalid_topic_exception,
            f"topic name is {len(name)} characters; the limit is {MAX_TOPIC_NAME_LENGTH}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise Refused(
            ErrorCode.invalid_topic_exception,
            f"topic {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'",
        )


@attrs.frozen
class _NewTopic:
    """A topic of a CreateTopics request that passed every check but placement."""

    topic: CreatableTopic
    configs: tuple[tuple[str, str], ...]
    partitions: int
    replication_factor: int  # -1 for a manual assignment (its lists say)

    @property
    def record_count(self) -> int:
        """TopicRecord, one ConfigRecord per config, one PartitionRecord per partition."""
        return 1 + len(self.configs) + self.partitions


@attrs.define(eq=False)
class TopicCreation:
    state: ReplicationState
    rng: random.Random  # the QuorumController's: placement and topic ids

    # --- CreateTopics ----------------------------------------------------------------------

    def create_topics(
        self, request: CreateTopicsRequest
    ) -> CoreResult[MetadataRecord, CreateTopicsResponse, Never]:
        listed = collections.Counter(t.name for t in request.topics)
        outcomes: dict[str, _NewTopic | Refused] = {}
        folded_names: dict[str, str] = {}
        for topic in request.topics:
            if topic.name in outcomes:
                continue  # one answer per name, as Kafka gives
            try:
                if listed[topic.name] > 1:
                    # Which of the entries was meant? Kafka creates none of them.
                    raise Refused(ErrorCode.invalid_request, "Duplicate topic name.")
                folded = topic.name.replace(".", "_")
                other = folded_names.setdefault(folded, topic.name)
                if other != topic.name:
                    raise Refused(
                        ErrorCode.invalid_request,
                        f"topic {topic.name!r} collides with topic {other!r} of this "
                        "request",
                    )
                outcomes[topic.name] = self._check_new_topic(topic)
            except Refused as refused:
                outcomes[topic.name] = refused
        planned = [o for o in outcomes.values() if isinstance(o, _NewTopic)]
        total = sum(p.record_count for p in planned)
        if total > MAX_RECORDS_PER_USER_OP:
            message = too_large(total)
            refused_all = tuple(
                CreatableTopicResult(name, ErrorCode.policy_violation, message)
                for name in outcomes
            )
            return CoreResult(replies=(CreateTopicsResponse(refused_all),))
        records: list[MetadataRecord] = []
        results: list[CreatableTopicResult] = []
        for name, outcome in outcomes.items():
            try:
                if isinstance(outcome, Refused):
                    raise outcome
                topic_records, result = self._create_topic(outcome)
            except Refused as refused:
                results.append(
                    CreatableTopicResult(name, refused.error_code, refused.message)
                )
                continue
            results.append(result)
            records += topic_records
        if request.validate_only:
            records = []
        self.state.trace_elections(records, "new_partition")
        return CoreResult(tuple(records), (CreateTopicsResponse(tuple(results)),))

    def _check_new_topic(self, topic: CreatableTopic) -> _NewTopic:
        """Everything about a new topic that can be known without placing it."""
        validate_topic_name(topic.name)
        if self.state.topic_named(topic.name) is not None:
            raise Refused(
                ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists."
            )
        # '.' and '_' collide in metric names, so Kafka refuses topics differing only there.
        folded = topic.name.replace(".", "_")
        for other in self.state.topics_by_name:
            if other.replace(".", "_") == folded:
                raise Refused(
                    ErrorCode.invalid_topic_exception,
                    f"topic {topic.name!r} collides with existing topic {other!r}",
                )
        configs = self._checked_configs(topic)
        if topic.assignments:
            if topic.replication_factor != -1 or topic.num_partitions != -1:
                raise Refused(
                    ErrorCode.invalid_request,
                    "A manual partition assignment was given, so the number of partitions "
                    "and the replication factor must both be -1.",
                )
            return _NewTopic(topic, configs, len(topic.assignments), -1)
        # Kafka's ranges: a positive count, or -1 for the controller's default.
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise Refused(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise Refused(
                ErrorCode.invalid_partitions,
                "Number of partitions must be larger than 0, or -1 to use the default value.",
            )
        config = self.state.config
        partitions = (
            config.num_partitions
            if topic.num_partitions == -1
            else topic.num_partitions
        )
        factor = (
            config.default_replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )
        try:
            check_placement_request(partitions, factor, self._placement_brokers())
        except PlacementError as exc:
            raise Refused(exc.error_code, exc.message) from None
        return _NewTopic(topic, configs, partitions, factor)

    def _checked_configs(self, topic: CreatableTopic) -> tuple[tuple[str, str], ...]:
        nulls = [key for key, value in topic.configs if value is None]
        if nulls:
            # A null would mean "delete" in IncrementalAlterConfigs; at creation there is
            # nothing to delete, and Kafka refuses it rather than guess.
            raise Refused(
                ErrorCode.invalid_config,
                f"Null value not supported for topic configs: {','.join(nulls)}",
            )
        configs = tuple(
            (key, value) for key, value in topic.configs if value is not None
        )
        for key, value in configs:
            try:
                validate_topic_config(key, value)
            except ValueError as exc:
                raise Refused(ErrorCode.invalid_config, str(exc)) from None
        return configs

    def _create_topic(
        self, new: _NewTopic
    ) -> tuple[list[MetadataRecord], CreatableTopicResult]:
        topic = new.topic
        assignment = self._assignment_for(new)
        topic_id = self._new_topic_id()
        records: list[MetadataRecord] = [TopicRecord(topic.name, topic_id)]
        records += self._partition_records(topic_id, assignment)
        records += [
            ConfigRecord(ConfigResourceType.TOPIC, topic.name, key, value)
            for key, value in new.configs
        ]
        replication_factor = len(assignment[0])
        result = CreatableTopicResult(
            topic.name,
            ErrorCode.none,
            None,
            topic_id,
            len(assignment),
            replication_factor,
        )
        return records, result

    def _new_topic_id(self) -> uuid.UUID:
        """A random topic id no topic has (a collision would merge two topics' records)."""
        while True:
            topic_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            if topic_id not in self.state.topics:
                return topic_id

    def _placement_brokers(self) -> list[BrokerMetadata]:
        return sorted(self.state.cluster.usable_brokers(), key=lambda b: b.id)

    def _assignment_for(self, new: _NewTopic) -> Assignment:
        topic = new.topic
        try:
            if not topic.assignments:
                return assign_replicas_to_brokers(
                    new.partitions,
                    new.replication_factor,
                    self._placement_brokers(),
                    rng=self.rng,
                )
            ids = topic.partition_ids
            if ids is None:
                ids = tuple(range(len(topic.assignments)))
            assignment: Assignment = {}
            for partition_id, replicas in zip(ids, topic.assignments, strict=True):
                if partition_id in assignment:
                    raise Refused(
                        ErrorCode.invalid_replica_assignment,
                        f"Found multiple manual partition assignments for partition "
                        f"{partition_id}.",
                    )
                assignment[partition_id] = replicas
            # Partition ids must run 0..n-1: "only partition 5" is refused, not renumbered.
            validate_manual_assignment(assignment, list(self.state.cluster.brokers))
            return assignment
        except PlacementError as exc:
            raise Refused(exc.error_code, exc.message) from None

    def _partition_records(
        self, topic_id: uuid.UUID, assignment: Assignment
    ) -> list[PartitionRecord]:
        """Leader and ISR of each new partition: the ISR is every unfenced replica and the
        leader the first of them (the NewPartition -> OnlinePartition step of seed 001)."""
        records = []
        for partition_id, replicas in sorted(assignment.items()):
            isr = tuple(r for r in replicas if self.state.cluster.is_unfenced(r))
            # only a manual assignment can name fenced brokers alone (Kafka's code)
            if not isr:
                raise Refused(
                    ErrorCode.invalid_replica_assignment,
                    f"partition {partition_id} has no unfenced replica among {list(replicas)}",
                )
            records.append(
                PartitionRecord(
                    partition_id, topic_id, tuple(replicas), isr, leader=isr[0]
                )
            )
        return records

    # --- CreatePartitions ---------------------------------------------------------------------

    def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> CoreResult[MetadataRecord, CreatePartitionsResponse, Never]:
        listed = collections.Counter(item.name for item in request.topics)
        outcomes: dict[str, tuple[CreatePartitionsTopic, TopicInfo] | Refused] = {}
        for item in request.topics:
            if item.name in outcomes:
                continue
            try:
                if listed[item.name] > 1:
                    raise Refused(ErrorCode.invalid_request, DUPLICATE)
                outcomes[item.name] = (item, self._check_new_partitions(item))
            except Refused as refused:
                outcomes[item.name] = refused
        total = sum(
            o[0].count - o[1].num_partitions
            for o in outcomes.values()
            if isinstance(o, tuple)
        )
        if total > MAX_RECORDS_PER_USER_OP:
            message = too_large(total)
            refused_all = tuple(
                CreatePartitionsTopicResult(name, ErrorCode.policy_violation, message)
                for name in outcomes
            )
            return CoreResult(replies=(CreatePartitionsResponse(refused_all),))
        records: list[MetadataRecord] = []
        results: list[CreatePartitionsTopicResult] = []
        for name, outcome in outcomes.items():
            try:
                if isinstance(outcome, Refused):
                    raise outcome
                records += self._create_partitions(*outcome)
            except Refused as refused:
                results.append(
                    CreatePartitionsTopicResult(
                        name, refused.error_code, refused.message
                    )
                )
                continue
            results.append(CreatePartitionsTopicResult(name, ErrorCode.none))
        if request.validate_only:
            records = []
        self.state.trace_elections(records, "new_partition")
        return CoreResult(tuple(records), (CreatePartitionsResponse(tuple(results)),))

    def _check_new_partitions(self, item: CreatePartitionsTopic) -> TopicInfo:
        topic = self.state.topic_named(item.name)
        if topic is None:
            raise Refused(
                ErrorCode.unknown_topic_or_partition, f"no topic {item.name!r}"
            )
        current = topic.num_partitions
        # Kafka's words, which kafka-topics --alter prints.
        if item.count < current:
            raise Refused(
                ErrorCode.invalid_partitions,
                f"The topic {item.name} currently has {current} partition(s); "
                f"{item.count} would not be an increase.",
            )
        if item.count == current:
            raise Refused(
                ErrorCode.invalid_partitions,
                f"Topic already has {current} partition(s).",
            )
        if item.assignments and len(item.assignments) != item.count - current:
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                f"{len(item.assignments)} assignments for {item.count - current} new partitions",
            )
        return topic

    def _create_partitions(
        self, item: CreatePartitionsTopic, topic: TopicInfo
    ) -> list[PartitionRecord]:
        current = topic.num_partitions
        first = self.state.partitions[(topic.topic_id, 0)]
        factor = len(first.replicas)
        try:
            if item.assignments:
                manual = {current + i: r for i, r in enumerate(item.assignments)}
                validate_manual_assignment(
                    {
                        0: first.replicas,
                        **{i - current + 1: r for i, r in manual.items()},
                    },
                    list(self.state.cluster.brokers),
                )
                assignment: Assignment = manual
            else:
                # As AdminUtils does for new partitions: continue the walk where partition 0's
                # leader started it, numbering from the current count.
                brokers = self._placement_brokers()
                ids = [b.id for b in brokers]
                start = next(
                    (i for i, b in enumerate(ids) if b >= first.replicas[0]), 0
                )
                assignment = assign_replicas_to_brokers(
                    item.count - current,
                    factor,
                    brokers,
                    start_index=start,
                    replica_shift=start,
                    start_partition_id=current,
                )
        except PlacementError as exc:
            raise Refused(exc.error_code, exc.message) from None
        return self._partition_records(topic.topic_id, assignment)
