"""What the group coordinator's handlers return, and the writes waiting to be committed.

Kafka's newer coordinator answers every request with a ``CoordinatorResult(records,
response)``: the records to append to ``__consumer_offsets``, and the response to send once
they are committed. One call here may answer several requests (the JoinGroup that ends a
join phase answers every parked JoinGroup; a LeaveGroup answers the departing members'
parked requests too) and may ask for several writes, so a handler returns a list of
actions, in the order they happened:

- a :class:`GroupReply`: answer a request now;
- an :data:`Append`, a ``minikafka.common.CoreResult`` whose ``records`` go to the log and
  whose one reply is a :data:`WriteOutcome`, a value saying what to do once the append
  is committed or has failed (answer an OffsetCommit or a DeleteGroups, hand the
  leader's assignment out, undo a static member's new id). It is a value, not a
  callback: the coordinator keeps it with the write's id in :class:`PendingWrites` and,
  when the shell reports the write, gives it to the manager that knows what it means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Never, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition

from ._consumer_heartbeat import ConsumerGroupHeartbeatResponse
from ._group import GroupMetadata, MemberMetadata
from ._group_metadata_manager import StoredRecord
from ._group_requests import (
    DeletableGroupResult,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    Protocols,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ._offsets_records import OffsetValue

__all__ = [
    "Append",
    "AssignmentStored",
    "ConsumerGroupStored",
    "CoordinatorWrite",
    "GroupAction",
    "GroupDeleted",
    "GroupReply",
    "GroupResponse",
    "GroupResult",
    "OffsetsCommitted",
    "OffsetsDeleted",
    "PendingWrites",
    "StaticMemberStored",
    "TxnOffsetsCommitted",
    "Unanswered",
    "WriteOutcome",
    "commit_error",
    "store_group_error",
]

GroupResponse: TypeAlias = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | DeletableGroupResult
    | OffsetDeleteResponse
    | TxnOffsetCommitResponse
    | ConsumerGroupHeartbeatResponse
)


@attrs.frozen
class GroupReply:
    """Answer request ``request_id`` with ``response``."""

    request_id: int
    response: GroupResponse


@attrs.frozen
class CoordinatorWrite:
    """Append ``records`` to ``__consumer_offsets`` partition ``partition`` (acks=all),
    then report with ``complete_write(write_id, ...)``. ``producer`` (producer id,
    producer epoch) is set for a TxnOffsetCommit's write only: its records go in a
    transactional batch of that producer, so that the transaction's marker, written to
    this partition too, commits or aborts them (KIP-98)."""

    write_id: int
    partition: int
    records: tuple[StoredRecord, ...]
    producer: tuple[int, int] | None = None


# --- what a committed (or failed) write means ------------------------------------------


@attrs.frozen
class Unanswered:
    """Nobody waits for this write (an emptied group, tombstones, expired offsets): if it
    fails, its partition's offsets are reverted to before it, and a group its offsets
    still name is served again (``GroupMetadataManager.failed``); an emptied group's
    record is written again at its next generation."""

    group_id: str


@attrs.frozen(eq=False)
class AssignmentStored:
    """The group of generation ``generation`` with the leader's plan: once committed, the
    plan is handed out and the group is Stable."""

    group: GroupMetadata
    generation: int
    assignments: Mapping[str, bytes]

    @property
    def group_id(self) -> str:
        return self.group.group_id


@attrs.frozen(eq=False)
class StaticMemberStored:
    """A static member's new member id (KIP-345): answer its JoinGroup once committed,
    give the instance its old id back if the write failed."""

    group: GroupMetadata
    member: MemberMetadata
    instance_id: str
    old_member_id: str
    new_member_id: str
    generation: int
    old_settings: tuple[Protocols, int, int]
    request_id: int
    response: JoinGroupResponse

    @property
    def group_id(self) -> str:
        return self.group.group_id


@attrs.frozen(eq=False)
class OffsetsCommitted:
    """An OffsetCommit's accepted offsets, replayed when written: answered once
    committed; ``errors`` holds the partitions refused before the write (metadata too
    large)."""

    group_id: str
    request_id: int
    request: OffsetCommitRequest
    accepted: Mapping[TopicPartition, OffsetValue]
    errors: Mapping[TopicPartition, ErrorCode]


@attrs.frozen(eq=False)
class TxnOffsetsCommitted:
    """A TxnOffsetCommit's accepted offsets, pending for the producer from the moment
    they are written: answered once committed; a failed write's partition is reverted,
    which drops them (Kafka's ``failPendingTxnOffsetCommit``)."""

    group_id: str
    request_id: int
    request: TxnOffsetCommitRequest
    accepted: Mapping[TopicPartition, OffsetValue]
    errors: Mapping[TopicPartition, ErrorCode]


@attrs.frozen
class GroupDeleted:
    """A DeleteGroups' tombstones for ``group_id``: answered once committed, as Kafka's
    deleteGroups is a write operation, so that a client told "deleted" cannot still
    fetch the offsets; a failed write's partition is reverted and the group served
    again (``GroupMetadataManager.failed``)."""

    group_id: str
    request_id: int


@attrs.frozen
class OffsetsDeleted:
    """An OffsetDelete's tombstones for some of ``group_id``'s offsets: answered with
    ``partitions`` once committed, as a DeleteGroups is."""

    group_id: str
    request_id: int
    partitions: tuple[tuple[TopicPartition, ErrorCode], ...]


@attrs.frozen
class ConsumerGroupStored:
    """A consumer group's records (KIP-848), written for a ConsumerGroupHeartbeat or a
    classic member's JoinGroup or LeaveGroup: answered with ``response`` once committed,
    with the write's error (``store_group_error``) if it failed. ``replaced`` is the
    classic group the write upgraded, put back if it fails."""

    group_id: str
    request_id: int
    response: ConsumerGroupHeartbeatResponse | JoinGroupResponse | LeaveGroupResponse
    replaced: GroupMetadata | None = None


WriteOutcome: TypeAlias = (
    Unanswered
    | ConsumerGroupStored
    | AssignmentStored
    | StaticMemberStored
    | OffsetsCommitted
    | TxnOffsetsCommitted
    | GroupDeleted
    | OffsetsDeleted
)

Append: TypeAlias = CoreResult[StoredRecord, WriteOutcome, Never]
"""Records for the group's ``__consumer_offsets`` partition, then what to do when the
append is reported (the one reply of the ``CoreResult``)."""

GroupAction: TypeAlias = GroupReply | Append

GroupResult: TypeAlias = CoreResult[CoordinatorWrite, GroupReply, Never]
"""What a call into the :class:`GroupCoordinator` returns: the writes to append (each
reported back with ``complete_write``) and the replies it makes now."""


def append(records: list[StoredRecord], outcome: WriteOutcome) -> Append:
    return CoreResult(tuple(records), (outcome,))


# --- the bookkeeping of writes in flight ------------------------------------------------


@attrs.define(eq=False)
class PendingWrites:
    """The writes the shell has not reported yet, by id: the one place that knows which
    write is which."""

    _in_flight: dict[int, WriteOutcome] = attrs.field(init=False, factory=dict)
    _next_id: int = attrs.field(init=False, default=0)

    def add(self, partition: int, write: Append) -> CoordinatorWrite:
        """Number the write, keep its outcome, and return what the shell is to append."""
        (outcome,) = write.replies
        write_id = self.next_id()
        self._in_flight[write_id] = outcome
        producer = None
        if isinstance(outcome, TxnOffsetsCommitted):
            producer = (outcome.request.producer_id, outcome.request.producer_epoch)
        return CoordinatorWrite(write_id, partition, write.records, producer)

    def next_id(self) -> int:
        """A new id on the writes' order: a write's, or a transaction marker's, which
        takes its place on the timeline without being written by this coordinator."""
        self._next_id += 1
        return self._next_id

    def complete(self, write_id: int) -> WriteOutcome:
        """The outcome the write ``write_id`` was queued with; it is no longer in flight."""
        return self._in_flight.pop(write_id)


# --- how a failed write is reported to clients -------------------------------------------


def store_group_error(error: ErrorCode) -> ErrorCode:
    """What a member is told when its group could not be stored (Kafka's storeGroup),
    and a DeleteGroups whose tombstones could not be (Kafka's exception normalisation
    for a failed write operation)."""
    if error in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
        ErrorCode.request_timed_out,
    ):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.unknown_server_error
    return error


def commit_error(error: ErrorCode) -> ErrorCode:
    """The same mapping for an OffsetCommit, whose too-large case has its own code."""
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.invalid_commit_offset_size
    return store_group_error(error)
