"""GroupCoordinator: consumer groups as a core (seed 002 §§1-3, seed 000).

Kafka's newer group coordinator is a shard (``GroupCoordinatorShard``) composing a
membership manager (``GroupMetadataManager``: join, sync, heartbeat, leave, static
members, timeouts) and an offsets manager (``OffsetMetadataManager``: commit, fetch,
expiry, deletion), each handler returning the records to write and the response to send
once they are. This is that shape: :class:`GroupCoordinator` routes each call to
``_membership.py`` or ``_offsets.py``, keeps the writes in flight (``_results.py``) and the
timers (``_timers.py``), and hands the shell replies and writes.

It is sans-IO: requests come in with an id and the time, and the answers go out as
``GroupReply`` values, possibly later and possibly for other requests (the JoinGroup
that completes a rebalance answers every parked JoinGroup). Timers are deadlines the
shell reads from ``next_deadline()`` and fires with ``on_timer(now)``. Every request
gets exactly one reply. Time is in seconds, timeouts in milliseconds as Kafka names them.
Trace events go to the ``tracer`` it is built with.

What must survive the coordinator is written to its ``__consumer_offsets`` partition
before anyone is told (seed 000): the group on every new generation (the leader's
SyncGroup is answered, and the group becomes Stable, only once the assignment is
stored), every committed offset, and a deleted group's tombstones (DeleteGroups is
answered once they are committed). The core does not write itself: each call returns a
``GroupResult`` (``minikafka.common.CoreResult``) whose records are ``CoordinatorWrite``
values for the shell to append and whose replies are the answers it makes now; the
shell reports each write's outcome with ``complete_write(write_id, error, now)``, whose
result answers the requests that waited for it. Groups are served only from partitions this broker
leads and has replayed (``begin_loading``, ``load_partition``, ``unload_partition``).

The offsets are kept as Kafka's ``CoordinatorRuntime`` keeps a shard's state: a write's
records are replayed into its partition's timeline as the write is made (``_carry_out``),
``complete_write`` commits the partition up to it or, if it failed, reverts the
partition to before it, and OffsetFetch reads as of the last committed write.

Transactional offset commits (KIP-98, KIP-447): ``txn_commit_offsets`` writes the offsets
in the producer's transactional batch (``CoordinatorWrite.producer``), pending for it;
``complete_transaction`` is told when the transaction's marker is in the group's
partitions, and commits or drops them (Kafka's ``handleTxnCompletion``).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Iterator

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.trace import NullTracer, Tracer

from ._config import GroupConfig
from ._consumer_group import ConsumerGroup
from ._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupManager,
    member_deadline,
)
from ._consumer_records import (
    ConsumerGroupLoader,
    changed_records,
    group_records,
    is_consumer_record,
)
from ._consumer_retention import expire_consumer_offsets
from ._events import TxnOffsetsCompleted
from ._group import GroupMetadata, GroupSummary, ListedGroup
from ._group_metadata_manager import GroupMetadataManager, LoadedRecord, PartitionStatus
from ._group_requests import (
    DeletableGroupResult,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from ._group_state import GroupState
from ._membership import MembershipManager
from ._mixed_groups import MixedGroups, failed_response
from ._offsets import OffsetsManager
from ._offsets_records import (
    OffsetsRecordError,
)
from ._rebalance import Rebalancer
from ._results import (
    AssignmentStored,
    ConsumerGroupStored,
    CoordinatorWrite,
    GroupAction,
    GroupDeleted,
    GroupReply,
    GroupResult,
    OffsetsCommitted,
    OffsetsDeleted,
    PendingWrites,
    StaticMemberStored,
    TxnOffsetsCommitted,
    Unanswered,
    WriteOutcome,
    append,
)
from ._timers import GroupTimers, MemberDeadlines

__all__ = ["GroupCoordinator"]


def _share_config(
    coordinator: GroupCoordinator, _: attrs.Attribute[GroupConfig], config: GroupConfig
) -> GroupConfig:
    """A new config (tests lower a timeout mid-scenario) reaches the managers too."""
    if hasattr(coordinator, "offsets"):
        coordinator.membership.rebalancer.config = config
        coordinator.offsets.config = config
        coordinator.consumer.config = config
        coordinator.mixed.config = config
    return config


@attrs.define(eq=False)
class GroupCoordinator:
    config: GroupConfig = attrs.field(factory=GroupConfig, on_setattr=_share_config)
    rng: random.Random = attrs.field(factory=random.Random)
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True)
    manager: GroupMetadataManager = attrs.field(init=False)
    membership: MembershipManager = attrs.field(init=False)
    offsets: OffsetsManager = attrs.field(init=False)
    consumer: ConsumerGroupManager = attrs.field(init=False)
    mixed: MixedGroups = attrs.field(init=False)
    _writes: PendingWrites = attrs.field(init=False, factory=PendingWrites)
    _timers: GroupTimers = attrs.field(init=False, factory=GroupTimers)
    _members: MemberDeadlines = attrs.field(init=False, factory=MemberDeadlines)

    def __attrs_post_init__(self) -> None:
        self.manager = GroupMetadataManager(self.config.offsets_topic_num_partitions)
        rebalancer = Rebalancer(self.config, self.manager, self.tracer)
        self.membership = MembershipManager(rebalancer, self.rng)
        self.offsets = OffsetsManager(self.config, self.manager, self.tracer)
        self.consumer = ConsumerGroupManager(
            self.config,
            self.manager.consumer_groups,
            self.manager.groups,
            tracer=self.tracer,
        )
        self.mixed = MixedGroups(self.config, self.manager, self.consumer, rebalancer)

    @property
    def _groups(self) -> dict[str, GroupMetadata]:
        return self.manager.groups

    # --- reading -----------------------------------------------------------------------

    def group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def group_status(self, group_id: str) -> ErrorCode:
        """NONE when this coordinator serves ``group_id`` now; else NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS, the answer every group request gets."""
        return self.manager.group_status(group_id)

    @property
    def loading(self) -> bool:
        """A partition is being replayed (ListGroups answers LOAD_IN_PROGRESS)."""
        return PartitionStatus.LOADING in self.manager.partitions.values()

    def describe_group(self, group_id: str) -> GroupSummary:
        """DescribeGroups: an unknown group is reported Dead with no members."""
        group = self._groups.get(group_id)
        if group is None:
            return GroupSummary(GroupState.DEAD, "", "", ())
        return group.summary()

    def list_groups(
        self, states: Collection[GroupState] | None = None
    ) -> list[ListedGroup]:
        """ListGroups, optionally only groups in ``states`` (v4's states filter)."""
        return [
            g.overview()
            for g in self._groups.values()
            if states is None or g.state in states
        ]

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The KIP-848 consumer group ``group_id``, if it is one."""
        return self.manager.consumer_groups.get(group_id)

    def list_consumer_groups(self) -> list[ConsumerGroup]:
        return list(self.manager.consumer_groups.values())

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse:
        """OffsetFetch (``OffsetsManager.fetch_offsets``); ``require_stable`` is KIP-447's,
        the member id and epoch KIP-848's."""
        return self.offsets.fetch_offsets(
            group_id, partitions, require_stable, member_id, member_epoch
        )

    # --- the requests: each returns its writes and the replies it makes now -------------

    def join_group(
        self, request_id: int, request: JoinGroupRequest, now: float
    ) -> GroupResult:
        consumer = self.manager.consumer_groups.get(request.group_id)
        if (
            consumer is not None
            and self.group_status(request.group_id) is ErrorCode.none
        ):
            if consumer.members:
                # a classic member of a live consumer group (the online migration)
                joined = self.mixed.join(request_id, consumer, request, now)
                self._rearm_members(request.group_id)
                return self._carry_out(joined, request.group_id)
            # an empty one becomes a classic group; its offsets stay, its records go
            tombstones = changed_records(self._consumer_records(request.group_id), {})
            del self.manager.consumer_groups[request.group_id]
            self._members.rearm(request.group_id, {})
            gone = self._carry_out([append(tombstones, Unanswered(request.group_id))])
            joined = self.membership.join_group(request_id, request, now)
            return gone + self._carry_out(joined, request.group_id)
        actions = self.membership.join_group(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def sync_group(
        self, request_id: int, request: SyncGroupRequest, now: float
    ) -> GroupResult:
        consumer = self._live_consumer_group(request.group_id)
        if consumer is not None:
            synced = self.mixed.sync(request_id, consumer, request, now)
            self._rearm_members(request.group_id)
            return self._carry_out(synced)
        actions = self.membership.sync_group(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def heartbeat(
        self, request_id: int, request: HeartbeatRequest, now: float
    ) -> GroupResult:
        consumer = self._live_consumer_group(request.group_id)
        if consumer is not None:
            beat = self.mixed.heartbeat(request_id, consumer, request, now)
            self._rearm_members(request.group_id)
            return self._carry_out(beat)
        actions = self.membership.heartbeat(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def leave_group(
        self, request_id: int, request: LeaveGroupRequest, now: float
    ) -> GroupResult:
        consumer = self._live_consumer_group(request.group_id)
        if consumer is not None:
            left = self.mixed.leave(request_id, consumer, request, now)
            self._rearm_members(request.group_id)
            return self._carry_out(left, request.group_id)
        actions = self.membership.leave_group(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def consumer_group_heartbeat(
        self, request_id: int, request: ConsumerGroupHeartbeatRequest, now: float
    ) -> GroupResult:
        """ConsumerGroupHeartbeat (KIP-848, ``_consumer_heartbeat.py``): answered now."""
        group_id = request.group_id
        status = self.manager.group_status(group_id)
        if status is not ErrorCode.none:
            response = ConsumerGroupHeartbeatResponse(status)
            return self._carry_out([GroupReply(request_id, response)])
        actions = self.mixed.consumer_heartbeat(request_id, request, now)
        self._rearm_members(group_id)
        return self._carry_out(actions, group_id)

    def _live_consumer_group(self, group_id: str) -> ConsumerGroup | None:
        if self.group_status(group_id) is not ErrorCode.none:
            return None
        return self.mixed.live_consumer_group(group_id)

    def _consumer_records(self, group_id: str) -> dict[bytes, bytes]:
        group = self.manager.consumer_groups.get(group_id)
        return {} if group is None else group_records(group, group.topic_ids)

    def commit_offsets(
        self, request_id: int, request: OffsetCommitRequest, now: float
    ) -> GroupResult:
        actions = self.offsets.commit_offsets(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def txn_commit_offsets(
        self, request_id: int, now: float, request: TxnOffsetCommitRequest
    ) -> GroupResult:
        """TxnOffsetCommit (``OffsetsManager.txn_commit_offsets``): a write in the
        producer's transactional batch, answered once committed; a refusal at once."""
        actions = self.offsets.txn_commit_offsets(request_id, request, now)
        return self._carry_out(actions, request.group_id)

    def complete_transaction(
        self, producer_id: int, partitions: Iterable[int], commit: bool, now: float
    ) -> GroupResult:
        """The producer's transaction marker (COMMIT if ``commit``, else ABORT) is now
        in these ``__consumer_offsets`` partitions (Kafka's ``handleTxnCompletion``):
        every group of them with offsets pending from this producer has them committed
        (where written after the group's committed offset) or dropped. Nothing is
        written: the marker is the record. Partitions this broker does not serve are
        left alone; a load replays the marker from the log."""
        for partition in dict.fromkeys(partitions):
            if self.manager.partitions.get(partition) is not PartitionStatus.ACTIVE:
                continue
            # the marker takes its place among the writes, so that a revert of a
            # write made before it replays it again (``SnapshottableCoordinator``)
            write_id = self._writes.next_id()
            done = self.manager.complete_transaction(
                partition, write_id, producer_id, commit
            )
            if self.tracer.enabled:
                for group_id, count in sorted(done.items()):
                    event = TxnOffsetsCompleted(group_id, producer_id, commit, count)
                    self.tracer.emit(event, now)
        return CoreResult()

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        now: float,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        """Whether an OffsetCommit may be written (``OffsetsManager.validate_offset_commit``)."""
        error = self.offsets.validate_offset_commit(
            group_id, member_id, generation_id, now, group_instance_id
        )
        self._rearm(group_id)  # an accepted commit is a heartbeat
        return error

    def delete_group(self, request_id: int, group_id: str, now: float) -> GroupResult:
        """DeleteGroups (``OffsetsManager.delete_group``): the group's tombstones, its
        answer once they are committed; a refusal at once. An empty consumer group goes
        with its records' tombstones too; one with members is NON_EMPTY_GROUP."""
        consumer = self.manager.consumer_groups.get(group_id)
        if consumer is not None and self.group_status(group_id) is ErrorCode.none:
            if consumer.members:
                refused = DeletableGroupResult(group_id, ErrorCode.non_empty_group)
                return self._carry_out([GroupReply(request_id, refused)])
            records = changed_records(self._consumer_records(group_id), {})
            del self.manager.consumer_groups[group_id]
            offsets = set(self.manager.current_offsets(group_id))
            offsets |= self.manager.pending_partitions(group_id)
            gone = [(tp, None) for tp in sorted(offsets)]
            records = self.manager.offset_records(group_id, gone) + records
            return self._carry_out(
                [append(records, GroupDeleted(group_id, request_id))]
            )
        actions = self.offsets.delete_group(request_id, group_id, now)
        return self._carry_out(actions, group_id)

    def delete_offsets(
        self,
        request_id: int,
        group_id: str,
        partitions: Iterable[TopicPartition],
        now: float,
    ) -> GroupResult:
        """OffsetDelete (``OffsetsManager.delete_offsets``): tombstones for the
        offsets that may go, answered once committed; a refusal at once."""
        actions = self.offsets.delete_offsets(request_id, group_id, partitions, now)
        return self._carry_out(actions, group_id)

    # --- the log behind the cache --------------------------------------------------------

    def complete_write(
        self, write_id: int, error: ErrorCode, now: float
    ) -> GroupResult:
        """The append ``write_id`` is committed (NONE) or failed with ``error``."""
        outcome = self._writes.complete(write_id)
        partition = self.manager.partition_for(outcome.group_id)
        if error is ErrorCode.none:
            self.manager.committed(partition, write_id)
            self.mixed.timeline.committed(write_id)
        else:
            self.manager.failed(partition, write_id, now)
            self.mixed.revert(write_id, outcome, now)
            self._rearm_members(outcome.group_id)
        return self._carry_out(self._written(outcome, error, now), outcome.group_id)

    def _written(
        self, outcome: WriteOutcome, error: ErrorCode, now: float
    ) -> list[GroupAction]:
        """Hand a reported write to the manager that knows what it meant."""
        if isinstance(outcome, ConsumerGroupStored):
            if error is ErrorCode.none:
                return [GroupReply(outcome.request_id, outcome.response)]
            return [failed_response(outcome, error)]
        if isinstance(outcome, AssignmentStored):
            return self.membership.assignment_stored(outcome, error, now)
        if isinstance(outcome, StaticMemberStored):
            return self.membership.static_member_stored(outcome, error)
        if isinstance(outcome, OffsetsCommitted):
            return self.offsets.offsets_committed(outcome, error)
        if isinstance(outcome, TxnOffsetsCommitted):
            return self.offsets.txn_offsets_committed(outcome, error)
        if isinstance(outcome, GroupDeleted):
            return self.offsets.group_deleted(outcome, error)
        if isinstance(outcome, OffsetsDeleted):
            return self.offsets.offsets_deleted(outcome, error)
        return []  # Unanswered

    def begin_loading(self, partition: int) -> None:
        """This broker became the leader of ``partition``: its groups answer
        COORDINATOR_LOAD_IN_PROGRESS until :meth:`load_partition`."""
        self.manager.begin_loading(partition)

    def load_partition(
        self, partition: int, records: Iterable[LoadedRecord], now: float
    ) -> int:
        """The partition's records from its start: rebuild its groups and offsets
        (transactional ones pending until their producer's marker)."""
        loader = ConsumerGroupLoader()
        loaded = self.manager.load(partition, self._split(records, loader), now)
        session_ms = self.config.group_consumer_session_timeout_ms
        for group in loader.groups(now, session_ms):
            if self.manager.partition_for(group.group_id) != partition:
                continue
            # its offsets made the classic loader restore an Empty classic group
            self.manager.groups.pop(group.group_id, None)
            self.manager.consumer_groups[group.group_id] = group
            self.mixed.timeline.loaded(group)
            self._rearm_members(group.group_id)
            loaded += 1
        for group_id in self._partition_groups(partition):
            # restored members must heartbeat within their session
            self._rearm(group_id)
        if not self._timers.expiry_scheduled:
            self._timers.schedule_expiry(
                now + self.config.offsets_retention_check_interval_ms / 1000
            )
        return loaded

    @staticmethod
    def _split(
        records: Iterable[LoadedRecord], loader: ConsumerGroupLoader
    ) -> Iterator[LoadedRecord]:
        """The classic records, for the manager; the consumer groups' go to ``loader``
        (a malformed one is skipped, as the manager skips a malformed classic one)."""
        for record in records:
            if isinstance(record, tuple) and is_consumer_record(record[0]):
                try:
                    loader.replay(*record)
                except OffsetsRecordError:
                    continue
            else:
                yield record

    def unload_partition(self, partition: int) -> GroupResult:
        """This broker stopped leading ``partition``: its groups go Dead."""
        out: GroupResult = CoreResult()
        self.mixed.timeline.forget(lambda g: self.manager.partition_for(g) == partition)
        for group in self.manager.unload(partition):
            out += self._carry_out(
                self.membership.rebalancer.make_dead(group), group.group_id
            )
        return out

    def unload_group(self, group_id: str) -> GroupResult:
        """This broker is no longer the group's coordinator (its ``__consumer_offsets``
        partition moved): "whatever its state, the group becomes Dead" (seed 002 §1)."""
        group = self._groups.pop(group_id, None)
        if group is None:
            return CoreResult()
        return self._carry_out(self.membership.rebalancer.make_dead(group), group_id)

    def _partition_groups(self, partition: int) -> list[str]:
        return [g for g in self._groups if self.manager.partition_for(g) == partition]

    # --- timers ------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        due = [self._timers.next_deadline(), self._members.next_deadline()]
        return min((d for d in due if d is not None), default=None)

    def _rearm_members(self, group_id: str) -> None:
        group = self.manager.consumer_groups.get(group_id)
        wanted: dict[str, float] = {}
        for member_id in () if group is None else group.members:
            assert group is not None
            if (when := member_deadline(group, member_id)) is not None:
                wanted[member_id] = when
        self._members.rearm(group_id, wanted)

    def on_timer(self, now: float) -> GroupResult:
        """Fire every timer due at ``now``, earliest first."""
        out: GroupResult = CoreResult()
        if self._timers.expiry_due(now):
            retention_ms = self.config.offsets_retention_minutes * 60_000
            expired = self.offsets.expire_offsets(now)
            expired += expire_consumer_offsets(self.manager, now, retention_ms)
            self._timers.schedule_expiry(
                now + self.config.offsets_retention_check_interval_ms / 1000
            )
            out += self._carry_out(expired, *{_group_of(a) for a in expired})
        while (key := self._timers.pop_earliest(now, self._groups)) is not None:
            kind, group_id, member_id = key
            group = self._groups[group_id]
            if kind == "join":
                actions = self.membership.on_join_deadline(group, now)
            elif kind == "sync":
                actions = self.membership.on_sync_deadline(group, now)
            else:
                actions = self.membership.on_member_expired(group, member_id, now)
            out += self._carry_out(actions, group_id)
        for group_id, member_id in self._members.pop_due(now):
            # a consumer-protocol member's session or rebalance timeout (KIP-848)
            downgrade = self.mixed.expiry_downgrade(group_id, member_id, now)
            if downgrade is not None:
                self._rearm_members(group_id)
                out += self._carry_out(downgrade, group_id)
                continue
            before = self._consumer_records(group_id)
            self.consumer.expire(group_id, member_id, now)
            records = changed_records(before, self._consumer_records(group_id))
            self._rearm_members(group_id)
            if records:
                out += self._carry_out([append(records, Unanswered(group_id))])
        return out

    # --- carrying out what the managers decided ----------------------------------------------

    def _carry_out(
        self, actions: Iterable[GroupAction], *group_ids: str
    ) -> GroupResult:
        """Number the writes and replay their records into their partitions' state (Kafka's
        CoordinatorRuntime replays a write before it appends it), re-arm the timers of
        the groups the call touched, and return the writes and the replies; the order of
        the actions is kept within each kind."""
        replies: list[GroupReply] = []
        writes: list[CoordinatorWrite] = []
        for action in actions:
            if isinstance(action, GroupReply):
                replies.append(action)
            else:
                (outcome,) = action.replies
                partition = self.manager.partition_for(outcome.group_id)
                write = self._writes.add(partition, action)
                producer_id = None if write.producer is None else write.producer[0]
                self.manager.written(
                    partition, write.write_id, write.records, producer_id
                )
                self.mixed.timeline.written(write.write_id, write.records)
                writes.append(write)
        for group_id in group_ids:
            self._rearm(group_id)
        return CoreResult(tuple(writes), tuple(replies))

    def _rearm(self, group_id: str) -> None:
        self._timers.rearm(group_id, self._groups.get(group_id))


def _group_of(action: GroupAction) -> str:
    assert not isinstance(action, GroupReply)
    (outcome,) = action.replies
    return outcome.group_id
