"""ReplicationControlManager: topics, partitions, leaders and ISRs (seeds 001, 004, 000).

Everything seed 001 tells about creating a topic in ZooKeeper mode happens here in one
step: choose the replicas (placement), choose each partition's leader and ISR, and write
it all down, as a TopicRecord and one PartitionRecord per partition instead of znodes
under ``/brokers/topics``. Brokers then act on the records they replay; nobody sends
them LeaderAndIsr.

The other decisions about partitions also live here: the leader elections that follow a
fenced or unfenced broker, AlterPartition from leaders (the ISR changes of KIP-497, fenced
by the leader epoch and the partition epoch), adding partitions, deleting topics, and the
interruptible reassignment of KIP-236.

Methods that decide never change state; they return records, which the QuorumController
replays (``replay``) before it appends them to the metadata log.
"""

from __future__ import annotations

import collections
import random
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer

from ._cluster_control import ClusterControlManager
from ._config import UNCLEAN_LEADER_ELECTION_ENABLE, ControllerConfig, validate_topic_config
from ._config_control import ConfigurationControlManager
from ._events import PartitionLeaderElected
from ._partition import PartitionChangeBuilder, PartitionRegistration
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
    NO_LEADER,
    NO_LEADER_CHANGE,
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from ._requests import (
    MAX_RECORDS_PER_USER_OP,
    AlterPartitionItem,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    ControllerResult,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
    ReassignablePartition,
    ReassignmentResult,
)
from ._timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

MAX_TOPIC_NAME_LENGTH = 249  # a partition directory name must fit in 255 bytes
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


@attrs.frozen
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int


_DUPLICATE = "Duplicate topic name."


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


def _too_large(records: int) -> str:
    return (
        f"Unable to perform excessively large batch operation: {records} records, "
        f"more than the {MAX_RECORDS_PER_USER_OP} one request may write."
    )


class _Refused(Exception):
    """A decision that ends in a Kafka error for one topic or partition."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: what may name a directory under every ``log.dirs``."""
    if not name or name in (".", ".."):
        raise _Refused(ErrorCode.invalid_topic_exception, f"{name!r} is not a legal topic name")
    if name == METADATA_TOPIC:
        # Its partition directory is the metadata log's own (Kafka's ControllerApis).
        raise _Refused(
            ErrorCode.invalid_request, f"creation of internal topic {name} is prohibited"
        )
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise _Refused(
            ErrorCode.invalid_topic_exception,
            f"topic name is {len(name)} characters; the limit is {MAX_TOPIC_NAME_LENGTH}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise _Refused(
            ErrorCode.invalid_topic_exception,
            f"topic {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'",
        )


@attrs.define(eq=False)
class ReplicationControlManager:
    registry: SnapshotRegistry
    config: ControllerConfig
    cluster: ClusterControlManager
    configs: ConfigurationControlManager
    rng: random.Random
    tracer: Tracer = attrs.field(factory=NullTracer)  # the QuorumController's
    topics: TimelineHashMap[uuid.UUID, TopicInfo] = attrs.field(init=False)
    topics_by_name: TimelineHashMap[str, uuid.UUID] = attrs.field(init=False)
    # One flat map for every partition of every topic, so that nothing but the managers'
    # own maps is ever registered with the SnapshotRegistry.
    partitions: TimelineHashMap[tuple[uuid.UUID, int], PartitionRegistration] = attrs.field(
        init=False
    )

    def __attrs_post_init__(self) -> None:
        self.topics = TimelineHashMap(self.registry)
        self.topics_by_name = TimelineHashMap(self.registry)
        self.partitions = TimelineHashMap(self.registry)

    # --- replay ------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord():
                self.topics.put(record.topic_id, TopicInfo(record.name, record.topic_id, 0))
                self.topics_by_name.put(record.name, record.topic_id)
            case PartitionRecord():
                key = (record.topic_id, record.partition_id)
                if key not in self.partitions:
                    topic = self.topics[record.topic_id]
                    count = max(topic.num_partitions, record.partition_id + 1)
                    self.topics.put(topic.topic_id, attrs.evolve(topic, num_partitions=count))
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
        value = self.configs.topic_config(
            self.topics[topic_id].name, UNCLEAN_LEADER_ELECTION_ENABLE
        )
        if value is None:
            return self.config.unclean_leader_election_enable
        return value.strip().lower() == "true"

    def _builder(
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

    def _trace_elections(self, records: Sequence[MetadataRecord], reason: str) -> None:
        """Trace the leaders ``records`` (about to be written) elect, judged against the
        state they will be replayed onto; a leader from outside the ISR is unclean."""
        if not self.tracer.enabled:
            return
        names: Mapping[uuid.UUID, str] = {
            r.topic_id: r.name for r in records if isinstance(r, TopicRecord)
        }
        for record in records:
            match record:
                case PartitionRecord():
                    name = names.get(record.topic_id) or self.topics[record.topic_id].name
                    event = PartitionLeaderElected(
                        name,
                        record.partition_id,
                        record.leader,
                        NO_LEADER,
                        record.leader_epoch,
                        record.isr,
                        reason,
                    )
                    self.tracer.emit(event)
                case PartitionChangeRecord() if record.leader != NO_LEADER_CHANGE:
                    before = self.partitions[(record.topic_id, record.partition_id)]
                    after = before.merge(record)
                    unclean = after.leader != NO_LEADER and after.leader not in before.isr
                    event = PartitionLeaderElected(
                        self.topics[record.topic_id].name,
                        record.partition_id,
                        after.leader,
                        before.leader,
                        after.leader_epoch,
                        after.isr,
                        "unclean" if unclean else reason,
                    )
                    self.tracer.emit(event)
                case _:
                    pass

    # --- CreateTopics ----------------------------------------------------------------------
    #
    # Two passes, so that a request's size is judged before any of it is placed: the first
    # checks each topic and counts the records it would write (cheap: no placement), the
    # second places the topics only if the whole request is within
    # MAX_RECORDS_PER_USER_OP. Validate-only requests take the same two passes.

    def create_topics(self, request: CreateTopicsRequest) -> ControllerResult[CreateTopicsResponse]:
        listed = collections.Counter(t.name for t in request.topics)
        outcomes: dict[str, _NewTopic | _Refused] = {}
        folded_names: dict[str, str] = {}
        for topic in request.topics:
            if topic.name in outcomes:
                continue  # one answer per name, as Kafka gives
            try:
                if listed[topic.name] > 1:
                    # Which of the entries was meant? Kafka creates none of them.
                    raise _Refused(ErrorCode.invalid_request, "Duplicate topic name.")
                folded = topic.name.replace(".", "_")
                other = folded_names.setdefault(folded, topic.name)
                if other != topic.name:
                    raise _Refused(
                        ErrorCode.invalid_request,
                        f"topic {topic.name!r} collides with topic {other!r} of this request",
                    )
                outcomes[topic.name] = self._check_new_topic(topic)
            except _Refused as refused:
                outcomes[topic.name] = refused
        planned = [o for o in outcomes.values() if isinstance(o, _NewTopic)]
        total = sum(p.record_count for p in planned)
        if total > MAX_RECORDS_PER_USER_OP:
            message = _too_large(total)
            return ControllerResult(
                (),
                CreateTopicsResponse(
                    tuple(
                        CreatableTopicResult(name, ErrorCode.policy_violation, message)
                        for name in outcomes
                    )
                ),
            )
        records: list[MetadataRecord] = []
        results: list[CreatableTopicResult] = []
        for name, outcome in outcomes.items():
            try:
                if isinstance(outcome, _Refused):
                    raise outcome
                topic_records, result = self._create_topic(outcome)
            except _Refused as refused:
                results.append(CreatableTopicResult(name, refused.error_code, refused.message))
                continue
            results.append(result)
            records += topic_records
        if request.validate_only:
            records = []
        self._trace_elections(records, "new_partition")
        return ControllerResult(tuple(records), CreateTopicsResponse(tuple(results)))

    def _check_new_topic(self, topic: CreatableTopic) -> _NewTopic:
        """Everything about a new topic that can be known without placing it."""
        validate_topic_name(topic.name)
        if self.topic_named(topic.name) is not None:
            raise _Refused(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
        # '.' and '_' collide in metric names, so Kafka refuses topics differing only there.
        folded = topic.name.replace(".", "_")
        for other in self.topics_by_name:
            if other.replace(".", "_") == folded:
                raise _Refused(
                    ErrorCode.invalid_topic_exception,
                    f"topic {topic.name!r} collides with existing topic {other!r}",
                )
        configs = self._checked_configs(topic)
        if topic.assignments:
            if topic.replication_factor != -1 or topic.num_partitions != -1:
                raise _Refused(
                    ErrorCode.invalid_request,
                    "A manual partition assignment was given, so the number of partitions "
                    "and the replication factor must both be -1.",
                )
            return _NewTopic(topic, configs, len(topic.assignments), -1)
        # Kafka's ranges: a positive count, or -1 for the controller's default.
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise _Refused(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise _Refused(
                ErrorCode.invalid_partitions,
                "Number of partitions must be larger than 0, or -1 to use the default value.",
            )
        partitions = (
            self.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        )
        factor = (
            self.config.default_replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )
        try:
            check_placement_request(partitions, factor, self._placement_brokers())
        except PlacementError as exc:
            raise _Refused(exc.error_code, exc.message) from None
        return _NewTopic(topic, configs, partitions, factor)

    def _checked_configs(self, topic: CreatableTopic) -> tuple[tuple[str, str], ...]:
        nulls = [key for key, value in topic.configs if value is None]
        if nulls:
            # A null would mean "delete" in IncrementalAlterConfigs; at creation there is
            # nothing to delete, and Kafka refuses it rather than guess.
            raise _Refused(
                ErrorCode.invalid_config,
                f"Null value not supported for topic configs: {','.join(nulls)}",
            )
        configs = tuple((key, value) for key, value in topic.configs if value is not None)
        for key, value in configs:
            try:
                validate_topic_config(key, value)
            except ValueError as exc:
                raise _Refused(ErrorCode.invalid_config, str(exc)) from None
        return configs

    def _create_topic(self, new: _NewTopic) -> tuple[list[MetadataRecord], CreatableTopicResult]:
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
            topic.name, ErrorCode.none, None, topic_id, len(assignment), replication_factor
        )
        return records, result

    def _new_topic_id(self) -> uuid.UUID:
        """A random topic id no topic has (a collision would merge two topics' records)."""
        while True:
            topic_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            if topic_id not in self.topics:
                return topic_id

    def _placement_brokers(self) -> list[BrokerMetadata]:
        return sorted(self.cluster.usable_brokers(), key=lambda b: b.id)

    def _assignment_for(self, new: _NewTopic) -> Assignment:
        topic = new.topic
        try:
            if not topic.assignments:
                return assign_replicas_to_brokers(
                    new.partitions, new.replication_factor, self._placement_brokers(), rng=self.rng
                )
            ids = topic.partition_ids
            if ids is None:
                ids = tuple(range(len(topic.assignments)))
            assignment: Assignment = {}
            for partition_id, replicas in zip(ids, topic.assignments, strict=True):
                if partition_id in assignment:
                    raise _Refused(
                        ErrorCode.invalid_replica_assignment,
                        f"Found multiple manual partition assignments for partition "
                        f"{partition_id}.",
                    )
                assignment[partition_id] = replicas
            # Partition ids must run 0..n-1: "only partition 5" is refused, not renumbered.
            validate_manual_assignment(assignment, list(self.cluster.brokers))
            return assignment
        except PlacementError as exc:
            raise _Refused(exc.error_code, exc.message) from None

    def _partition_records(
        self, topic_id: uuid.UUID, assignment: Assignment
    ) -> list[PartitionRecord]:
        """Leader and ISR of each new partition: the ISR is every unfenced replica and the
        leader the first of them (the NewPartition -> OnlinePartition step of seed 001)."""
        records = []
        for partition_id, replicas in sorted(assignment.items()):
            isr = tuple(r for r in replicas if self.cluster.is_unfenced(r))
            if not isr:  # only a manual assignment can name fenced brokers alone (Kafka's code)
                raise _Refused(
                    ErrorCode.invalid_replica_assignment,
                    f"partition {partition_id} has no unfenced replica among {list(replicas)}",
                )
            records.append(
                PartitionRecord(partition_id, topic_id, tuple(replicas), isr, leader=isr[0])
            )
        return records

    # --- DeleteTopics -------------------------------------------------------------------------

    def delete_topics(self, request: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
        # (name, id, error or None when the topic is to be deleted), one per name or id.
        entries: list[tuple[str | None, uuid.UUID | None, _Refused | None]] = []
        listed_names = collections.Counter(request.names)
        for name in dict.fromkeys(request.names):
            topic_id = self.topics_by_name.get(name)
            if listed_names[name] > 1:
                entries.append((name, None, _Refused(ErrorCode.invalid_request, _DUPLICATE)))
            elif topic_id is None:
                # "" too: a name no topic has (Kafka's findTopicIds), not a missing id.
                unknown = _Refused(ErrorCode.unknown_topic_or_partition, "no such topic")
                entries.append((name, None, unknown))
            else:
                entries.append((name, topic_id, None))
        listed_ids = collections.Counter(request.topic_ids)
        for topic_id in dict.fromkeys(request.topic_ids):
            if listed_ids[topic_id] > 1:
                refused = _Refused(ErrorCode.invalid_request, "Duplicate topic id.")
                entries.append((None, topic_id, refused))
            elif topic_id.int == 0:
                refused = _Refused(ErrorCode.invalid_request, "The zero topic id names no topic.")
                entries.append((None, topic_id, refused))
            elif topic_id not in self.topics:
                unknown = _Refused(ErrorCode.unknown_topic_id, "no such topic")
                entries.append((None, topic_id, unknown))
            else:
                entries.append((self.topics[topic_id].name, topic_id, None))
        # A topic named once by name and once by id: as for any duplicate, delete neither.
        chosen = collections.Counter(i for _, i, error in entries if error is None)
        both = _Refused(
            ErrorCode.invalid_request, "The topic name maps to a topic id also in the request."
        )
        entries = [
            (n, i, both if error is None and chosen[i] > 1 else error) for n, i, error in entries
        ]
        doomed = [i for _, i, error in entries if error is None and i is not None]
        if len(doomed) > MAX_RECORDS_PER_USER_OP:
            too_large = _Refused(ErrorCode.policy_violation, _too_large(len(doomed)))
            entries = [(n, i, too_large) for n, i, _ in entries]
            doomed = []
        results = tuple(
            DeletableTopicResult(n, i, ErrorCode.none)
            if error is None
            else DeletableTopicResult(n, i, error.error_code, error.message)
            for n, i, error in entries
        )
        records = tuple(RemoveTopicRecord(topic_id) for topic_id in doomed)
        return ControllerResult(records, DeleteTopicsResponse(results))

    # --- CreatePartitions ---------------------------------------------------------------------

    def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> ControllerResult[CreatePartitionsResponse]:
        listed = collections.Counter(item.name for item in request.topics)
        outcomes: dict[str, tuple[CreatePartitionsTopic, TopicInfo] | _Refused] = {}
        for item in request.topics:
            if item.name in outcomes:
                continue
            try:
                if listed[item.name] > 1:
                    raise _Refused(ErrorCode.invalid_request, _DUPLICATE)
                outcomes[item.name] = (item, self._check_new_partitions(item))
            except _Refused as refused:
                outcomes[item.name] = refused
        total = sum(
            o[0].count - o[1].num_partitions for o in outcomes.values() if isinstance(o, tuple)
        )
        if total > MAX_RECORDS_PER_USER_OP:
            message = _too_large(total)
            too_large = tuple(
                CreatePartitionsTopicResult(name, ErrorCode.policy_violation, message)
                for name in outcomes
            )
            return ControllerResult((), CreatePartitionsResponse(too_large))
        records: list[MetadataRecord] = []
        results: list[CreatePartitionsTopicResult] = []
        for name, outcome in outcomes.items():
            try:
                if isinstance(outcome, _Refused):
                    raise outcome
                records += self._create_partitions(*outcome)
            except _Refused as refused:
                results.append(
                    CreatePartitionsTopicResult(name, refused.error_code, refused.message)
                )
                continue
            results.append(CreatePartitionsTopicResult(name, ErrorCode.none))
        if request.validate_only:
            records = []
        self._trace_elections(records, "new_partition")
        return ControllerResult(tuple(records), CreatePartitionsResponse(tuple(results)))

    def _check_new_partitions(self, item: CreatePartitionsTopic) -> TopicInfo:
        topic = self.topic_named(item.name)
        if topic is None:
            raise _Refused(ErrorCode.unknown_topic_or_partition, f"no topic {item.name!r}")
        current = topic.num_partitions
        if item.count <= current:
            raise _Refused(
                ErrorCode.invalid_partitions,
                f"topic {item.name!r} has {current} partitions; {item.count} would not add any",
            )
        if item.assignments and len(item.assignments) != item.count - current:
            raise _Refused(
                ErrorCode.invalid_replica_assignment,
                f"{len(item.assignments)} assignments for {item.count - current} new partitions",
            )
        return topic

    def _create_partitions(
        self, item: CreatePartitionsTopic, topic: TopicInfo
    ) -> list[PartitionRecord]:
        current = topic.num_partitions
        first = self.partitions[(topic.topic_id, 0)]
        factor = len(first.replicas)
        try:
            if item.assignments:
                manual = {current + i: r for i, r in enumerate(item.assignments)}
                validate_manual_assignment(
                    {0: first.replicas, **{i - current + 1: r for i, r in manual.items()}},
                    list(self.cluster.brokers),
                )
                assignment: Assignment = manual
            else:
                # As AdminUtils does for new partitions: continue the walk where partition 0's
                # leader started it, numbering from the current count.
                brokers = self._placement_brokers()
                ids = [b.id for b in brokers]
                start = next((i for i, b in enumerate(ids) if b >= first.replicas[0]), 0)
                assignment = assign_replicas_to_brokers(
                    item.count - current,
                    factor,
                    brokers,
                    start_index=start,
                    replica_shift=start,
                    start_partition_id=current,
                )
        except PlacementError as exc:
            raise _Refused(exc.error_code, exc.message) from None
        return self._partition_records(topic.topic_id, assignment)

    # --- brokers coming and going ------------------------------------------------------------

    def handle_broker_fenced(self, broker_id: int) -> list[PartitionChangeRecord]:
        """Take ``broker_id`` out of every ISR and elect new leaders where it led.

        The ISR never becomes empty: if the broker was its last member it stays, so that
        when it comes back it can lead again without losing anything (leader -1 meanwhile).
        """

        def acceptable(b: int) -> bool:
            return b != broker_id and self.cluster.is_unfenced(b)

        records = []
        for key, partition in self.partitions.items():
            if broker_id not in partition.isr:
                continue
            builder = self._builder(key, acceptable)
            builder.target_isr = tuple(r for r in partition.isr if r != broker_id) or partition.isr
            change = builder.build()
            if change is not None:
                records.append(change)
        self._trace_elections(records, "broker_fenced")
        return records

    def handle_broker_unfenced(self, broker_id: int) -> list[PartitionChangeRecord]:
        """Elect leaders for leaderless partitions this broker can now lead."""

        def acceptable(b: int) -> bool:
            return b == broker_id or self.cluster.is_unfenced(b)

        records = []
        for key, partition in self.partitions.items():
            if partition.leader == NO_LEADER and broker_id in partition.replicas:
                change = self._builder(key, acceptable).build()
                if change is not None:
                    records.append(change)
        self._trace_elections(records, "broker_unfenced")
        return records

    # --- AlterPartition (KIP-497) ----------------------------------------------------------

    def alter_partition(
        self, request: AlterPartitionRequest
    ) -> ControllerResult[AlterPartitionResponse]:
        error = self.cluster.check_epoch(request.broker_id, request.broker_epoch)
        if error != ErrorCode.none:
            return ControllerResult((), AlterPartitionResponse(error))
        records: list[MetadataRecord] = []
        results = []
        for item in request.partitions:
            try:
                change = self._alter_partition(request.broker_id, item)
            except _Refused as refused:
                results.append(
                    AlterPartitionResult(item.topic_id, item.partition, refused.error_code)
                )
                continue
            key = (item.topic_id, item.partition)
            after = self.partitions[key] if change is None else self.partitions[key].merge(change)
            # A completed reassignment may move leadership in the same change.
            code = (
                ErrorCode.new_leader_elected
                if after.leader != request.broker_id
                else ErrorCode.none
            )
            if change is not None:
                records.append(change)
            results.append(
                AlterPartitionResult(
                    item.topic_id,
                    item.partition,
                    code,
                    after.leader,
                    after.leader_epoch,
                    after.isr,
                    after.partition_epoch,
                )
            )
        # Only a completed reassignment moves the leader here (phase B).
        self._trace_elections(records, "reassignment")
        return ControllerResult(
            tuple(records), AlterPartitionResponse(ErrorCode.none, tuple(results))
        )

    def _alter_partition(
        self, broker_id: int, item: AlterPartitionItem
    ) -> PartitionChangeRecord | None:
        key = (item.topic_id, item.partition)
        if item.topic_id not in self.topics:
            raise _Refused(ErrorCode.unknown_topic_id, "unknown topic id")
        partition = self.partitions.get(key)
        if partition is None:
            raise _Refused(ErrorCode.unknown_topic_or_partition, "unknown partition")
        if partition.leader != broker_id:
            raise _Refused(ErrorCode.not_leader_or_follower, "only the leader may alter the ISR")
        # The epochs are the fence: a request built on an older view of the partition
        # (another leader was elected, or the controller changed the ISR since) must lose.
        if item.leader_epoch < partition.leader_epoch:
            raise _Refused(ErrorCode.fenced_leader_epoch, "stale leader epoch")
        if item.leader_epoch > partition.leader_epoch:
            raise _Refused(ErrorCode.unknown_leader_epoch, "leader epoch from the future")
        if item.partition_epoch != partition.partition_epoch:
            raise _Refused(ErrorCode.invalid_update_version, "stale partition epoch")
        if broker_id not in item.new_isr or len(set(item.new_isr)) != len(item.new_isr):
            raise _Refused(ErrorCode.invalid_request, "the ISR must hold the leader, once each")
        for replica in item.new_isr:
            if replica not in partition.replicas or not self.cluster.is_unfenced(replica):
                raise _Refused(ErrorCode.ineligible_replica, f"broker {replica} may not be in sync")
        builder = self._builder(key)
        builder.target_isr = item.new_isr
        return builder.build()

    # --- reassignment (KIP-236) -------------------------------------------------------------

    def alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest
    ) -> ControllerResult[AlterPartitionReassignmentsResponse]:
        records: list[MetadataRecord] = []
        results = []
        for item in request.partitions:
            try:
                change = self._reassign(item)
            except _Refused as refused:
                results.append(
                    ReassignmentResult(
                        item.topic, item.partition, refused.error_code, refused.message
                    )
                )
                continue
            if change is not None:
                records.append(change)
            results.append(ReassignmentResult(item.topic, item.partition, ErrorCode.none))
        self._trace_elections(records, "reassignment")
        return ControllerResult(tuple(records), AlterPartitionReassignmentsResponse(tuple(results)))

    def _reassign(self, item: ReassignablePartition) -> PartitionChangeRecord | None:
        topic = self.topic_named(item.topic)
        partition = None if topic is None else self.partitions.get((topic.topic_id, item.partition))
        if topic is None or partition is None:
            raise _Refused(ErrorCode.unknown_topic_or_partition, "no such partition")
        builder = self._builder((topic.topic_id, item.partition))
        ors = partition.original_replicas
        if item.replicas is None:
            # Cancelling: whatever phase A reached, go back to ORS, which was in sync.
            if not partition.is_reassigning:
                raise _Refused(ErrorCode.no_reassignment_in_progress, "nothing to cancel")
            trs: Sequence[int] = ors
        else:
            trs = item.replicas
            try:
                validate_manual_assignment({0: trs}, list(self.cluster.brokers))
            except PlacementError as exc:
                raise _Refused(exc.error_code, exc.message) from None
        # Phase U: record RS = TRS + (ORS - TRS), AR = TRS - ORS, RR = ORS - TRS.
        replicas = tuple(trs) + tuple(r for r in ors if r not in trs)
        builder.target_replicas = replicas
        builder.target_adding = tuple(r for r in trs if r not in ors)
        builder.target_removing = tuple(r for r in ors if r not in trs)
        builder.target_isr = tuple(r for r in partition.isr if r in replicas)
        if not builder.target_isr:
            # Only replicas being dropped are in sync: going on would need an unclean
            # election (Kafka: PartitionReassignmentRevert.unclean), and an ISR outside RS.
            raise _Refused(ErrorCode.invalid_replica_assignment, "no in-sync replica would remain")
        # The builder ends phase A at once when TRS is already in sync (phase B follows in
        # the same record); otherwise AlterPartition from the leader ends it later.
        return builder.build()

    def list_partition_reassignments(self, epoch: int) -> ListPartitionReassignmentsResponse:
        ongoing = []
        for (topic_id, partition_id), p in sorted(
            self.partitions.items(epoch), key=lambda kv: (str(kv[0][0]), kv[0][1])
        ):
            if p.is_reassigning:
                topic = self.topics.get(topic_id, epoch)
                assert topic is not None
                ongoing.append(
                    OngoingReassignment(
                        topic.name, partition_id, p.replicas, p.adding_replicas, p.removing_replicas
                    )
                )
        return ListPartitionReassignmentsResponse(
            tuple(sorted(ongoing, key=lambda o: (o.topic, o.partition)))
        )
