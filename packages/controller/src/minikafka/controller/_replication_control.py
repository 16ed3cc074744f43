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

import random
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import emit, tracing

from ._cluster_control import ClusterControlManager
from ._config import UNCLEAN_LEADER_ELECTION_ENABLE, ControllerConfig, validate_topic_config
from ._config_control import ConfigurationControlManager
from ._events import PartitionLeaderElected
from ._partition import PartitionChangeBuilder, PartitionRegistration
from ._placement import (
    Assignment,
    PlacementError,
    assign_replicas_to_brokers,
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
        if not tracing():
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
                    emit(event)
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
                    emit(event)
                case _:
                    pass

    # --- CreateTopics ----------------------------------------------------------------------

    def create_topics(self, request: CreateTopicsRequest) -> ControllerResult[CreateTopicsResponse]:
        records: list[MetadataRecord] = []
        results: list[CreatableTopicResult] = []
        seen: set[str] = set()
        for topic in request.topics:
            try:
                folded = topic.name.replace(".", "_")
                if folded in seen:
                    raise _Refused(
                        ErrorCode.invalid_request,
                        f"topic {topic.name!r} is listed twice (or with '.' for '_')",
                    )
                seen.add(folded)
                topic_records, result = self._create_topic(topic)
            except _Refused as refused:
                results.append(
                    CreatableTopicResult(topic.name, refused.error_code, refused.message)
                )
                continue
            results.append(result)
            records += topic_records
        if request.validate_only:
            records = []
        self._trace_elections(records, "new_partition")
        return ControllerResult(tuple(records), CreateTopicsResponse(tuple(results)))

    def _create_topic(
        self, topic: CreatableTopic
    ) -> tuple[list[MetadataRecord], CreatableTopicResult]:
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
        for key, value in topic.configs:
            self._check_config(key, value)
        assignment = self._assignment_for(topic)
        topic_id = self._new_topic_id()
        records: list[MetadataRecord] = [TopicRecord(topic.name, topic_id)]
        records += self._partition_records(topic_id, assignment)
        records += [
            ConfigRecord(ConfigResourceType.TOPIC, topic.name, key, value)
            for key, value in topic.configs
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

    def _check_config(self, key: str, value: str) -> None:
        try:
            validate_topic_config(key, value)
        except ValueError as exc:
            raise _Refused(ErrorCode.invalid_config, str(exc)) from None

    def _assignment_for(self, topic: CreatableTopic) -> Assignment:
        try:
            if topic.assignments:
                if topic.num_partitions != -1 or topic.replication_factor != -1:
                    raise _Refused(
                        ErrorCode.invalid_request,
                        "give either an assignment or partitions and replication factor, not both",
                    )
                assignment = dict(enumerate(topic.assignments))
                validate_manual_assignment(assignment, list(self.cluster.brokers))
                return assignment
            partitions = (
                self.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
            )
            factor = (
                self.config.default_replication_factor
                if topic.replication_factor == -1
                else topic.replication_factor
            )
            brokers = sorted(self.cluster.usable_brokers(), key=lambda b: b.id)
            return assign_replicas_to_brokers(partitions, factor, brokers, rng=self.rng)
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

    # --- DeleteTopics and CreatePartitions -------------------------------------------------

    def delete_topics(self, request: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
        records: list[MetadataRecord] = []
        results: list[DeletableTopicResult] = []
        removed: set[uuid.UUID] = set()
        targets: list[tuple[str | None, uuid.UUID | None]]
        targets = [(name, self.topics_by_name.get(name)) for name in request.names]
        targets += [(None, topic_id) for topic_id in request.topic_ids]
        for name, topic_id in targets:
            topic = None if topic_id is None else self.topics.get(topic_id)
            if topic is None or topic.topic_id in removed:
                error = ErrorCode.unknown_topic_or_partition if name else ErrorCode.unknown_topic_id
                results.append(DeletableTopicResult(name, topic_id, error, "no such topic"))
                continue
            removed.add(topic.topic_id)
            records.append(RemoveTopicRecord(topic.topic_id))
            results.append(DeletableTopicResult(topic.name, topic.topic_id, ErrorCode.none))
        return ControllerResult(tuple(records), DeleteTopicsResponse(tuple(results)))

    def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> ControllerResult[CreatePartitionsResponse]:
        records: list[MetadataRecord] = []
        results: list[CreatePartitionsTopicResult] = []
        for item in request.topics:
            try:
                records += self._create_partitions(item)
            except _Refused as refused:
                results.append(
                    CreatePartitionsTopicResult(item.name, refused.error_code, refused.message)
                )
                continue
            results.append(CreatePartitionsTopicResult(item.name, ErrorCode.none))
        if request.validate_only:
            records = []
        self._trace_elections(records, "new_partition")
        return ControllerResult(tuple(records), CreatePartitionsResponse(tuple(results)))

    def _create_partitions(self, item: CreatePartitionsTopic) -> list[PartitionRecord]:
        topic = self.topic_named(item.name)
        if topic is None:
            raise _Refused(ErrorCode.unknown_topic_or_partition, f"no topic {item.name!r}")
        current = topic.num_partitions
        if item.count <= current:
            raise _Refused(
                ErrorCode.invalid_partitions,
                f"topic {item.name!r} has {current} partitions; {item.count} would not add any",
            )
        first = self.partitions[(topic.topic_id, 0)]
        factor = len(first.replicas)
        try:
            if item.assignments:
                if len(item.assignments) != item.count - current:
                    raise _Refused(
                        ErrorCode.invalid_replica_assignment,
                        f"{len(item.assignments)} assignments for "
                        f"{item.count - current} new partitions",
                    )
                manual = {current + i: r for i, r in enumerate(item.assignments)}
                validate_manual_assignment(
                    {0: first.replicas, **{i - current + 1: r for i, r in manual.items()}},
                    list(self.cluster.brokers),
                )
                assignment: Assignment = manual
            else:
                # As AdminUtils does for new partitions: continue the walk where partition 0's
                # leader started it, numbering from the current count.
                brokers = sorted(self.cluster.usable_brokers(), key=lambda b: b.id)
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
