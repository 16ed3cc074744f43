"""The offsets manager: commit, fetch, expiry and deletion (seed 000, KIP-211).

Kafka's ``OffsetMetadataManager`` (the offsets half of its newer coordinator) as a core. A
committed offset is a record of the group's ``__consumer_offsets`` partition before it is
an answer, and the offsets follow the log's consistency model (``CoordinatorRuntime``'s):
``commit_offsets`` checks the commit against the state as written so far and returns its
records with an :class:`OffsetsCommitted` value; the coordinator replays the records into
the partition's timeline at once (``GroupMetadataManager.written``), so the next commit,
expiry or deletion sees them; the client is answered once the shell reports the write
committed, and OffsetFetch reads the offsets as of the last committed write. A failed
write is not compensated: its partition's timeline is reverted to before it.

Offsets of a group nobody uses expire after ``offsets.retention.minutes`` and an emptied,
offset-less group is deleted with them, as is a group DeleteGroups names; both leave
tombstones, replayed like any record, so that compaction removes them from the log too.
DeleteGroups is answered as an OffsetCommit is, once its tombstones are committed
(:class:`GroupDeleted`): until then OffsetFetch still shows the offsets. OffsetDelete
(KIP-496) removes some of a group's offsets the same way (:class:`OffsetsDeleted`),
sparing the topics a live consumer group still reads.

Transactional offsets (KIP-98's TxnOffsetCommit, with KIP-447's member checks) are
written like any commit but stay pending for their producer until the transaction's
marker (``GroupCoordinator.complete_transaction``); OffsetFetch with require_stable
answers UNSTABLE_OFFSET_COMMIT for a partition one is pending on. A pending offset keeps
its partition's committed offset from expiring and its group from being deleted by
expiry; DeleteGroups and OffsetDelete take it with the committed one (Kafka's
``OffsetMetadataManager``: a tombstone removes the pending offsets of its partition).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.trace import NullTracer, Tracer

from ..assignors._consumer_protocol import CONSUMER_PROTOCOL_TYPE
from ._config import GroupConfig
from ._consumer_heartbeat import (
    consumer_offset_commit_error,
    consumer_offset_fetch_error,
)
from ._events import TxnOffsetCommitWritten
from ._group import GroupMetadata, offset_commit_error
from ._group_metadata_manager import GroupMetadataManager
from ._group_requests import (
    CommittedOffset,
    DeletableGroupResult,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ._group_state import GroupState
from ._offsets_records import OffsetValue
from ._rebalance import schedule_heartbeat
from ._results import (
    GroupAction,
    GroupDeleted,
    GroupReply,
    OffsetsCommitted,
    OffsetsDeleted,
    TxnOffsetsCommitted,
    Unanswered,
    append,
    commit_error,
    store_group_error,
)

__all__ = ["OffsetsManager"]

_S = GroupState


@attrs.define(eq=False)
class OffsetsManager:
    config: GroupConfig
    metadata: GroupMetadataManager
    tracer: Tracer = attrs.field(factory=NullTracer)

    @property
    def _groups(self) -> dict[str, GroupMetadata]:
        return self.metadata.groups

    # --- OffsetCommit and OffsetFetch ----------------------------------------------------

    def commit_offsets(
        self, request_id: int, request: OffsetCommitRequest, now: float
    ) -> list[GroupAction]:
        """OffsetCommit: checked against the group's state (``offset_commit_error``),
        written to ``__consumer_offsets``, and answered (and cached) once committed."""
        r = request

        def answer(errors: dict[TopicPartition, ErrorCode]) -> list[GroupAction]:
            response = OffsetCommitResponse(
                tuple((tp, errors[tp]) for tp, _ in r.offsets)
            )
            return [GroupReply(request_id, response)]

        error = self.metadata.group_status(r.group_id)
        if error is ErrorCode.none:
            error = self.validate_offset_commit(
                r.group_id,
                r.member_id,
                r.generation_id,
                now,
                r.group_instance_id,
                r.api_version,
            )
        if error is not ErrorCode.none:
            return answer({tp: error for tp, _ in r.offsets})
        errors: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        stamp = int(now * 1000)
        expire = stamp + r.retention_time_ms if r.retention_time_ms >= 0 else None
        for tp, committed in r.offsets:
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = ErrorCode.offset_metadata_too_large
                continue
            accepted[tp] = OffsetValue(
                committed.offset,
                committed.metadata,
                stamp,
                committed.leader_epoch,
                expire,
            )
        if not accepted:
            return answer(errors)
        records = self.metadata.offset_records(r.group_id, accepted.items())
        return [
            append(
                records, OffsetsCommitted(r.group_id, request_id, r, accepted, errors)
            )
        ]

    def offsets_committed(
        self, committed: OffsetsCommitted, error: ErrorCode
    ) -> list[GroupAction]:
        """The commit's records are committed, or will not be: answer it. There is
        nothing to cache, and nothing to undo: the records were replayed when the write
        was made, and a failed write's partition has been reverted."""
        code = commit_error(error)
        errors = {**committed.errors, **dict.fromkeys(committed.accepted, code)}
        offsets = committed.request.offsets
        response = OffsetCommitResponse(tuple((tp, errors[tp]) for tp, _ in offsets))
        return [GroupReply(committed.request_id, response)]

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse:
        """OffsetFetch: the committed offset of each partition (None where there is none),
        or of every partition the group committed when ``partitions`` is None. It reads
        as of the last committed write (Kafka's non-stable OffsetFetch), so a client is
        never shown an offset the log could still lose.

        With ``require_stable`` (KIP-447, OffsetFetch v7+), a partition with a
        transactional offset still pending is answered UNSTABLE_OFFSET_COMMIT and no
        offset, as Kafka's ``getOffsets`` does: the consumer retries rather than start
        from an offset the open transaction is about to move.

        A consumer-protocol group checks v9's ``member_id`` and ``member_epoch``
        (``consumer_offset_fetch_error``, KIP-848); a classic group does not."""
        status = self.metadata.group_status(group_id)
        if status is not ErrorCode.none:
            return OffsetFetchResponse(status)
        consumer = self.metadata.consumer_groups.get(group_id)
        if consumer is not None:
            error = consumer_offset_fetch_error(consumer, member_id, member_epoch)
            if error is not ErrorCode.none:
                return OffsetFetchResponse(error)
        committed = self.metadata.committed_offsets(group_id)
        wanted = sorted(committed) if partitions is None else list(partitions)
        unstable = (
            self.metadata.unstable_partitions(group_id) if require_stable else set()
        )
        return OffsetFetchResponse(
            ErrorCode.none,
            tuple(
                (
                    tp,
                    None
                    if v is None or tp in unstable
                    else CommittedOffset(v.offset, v.leader_epoch, v.metadata),
                )
                for tp in wanted
                for v in [committed.get(tp)]
            ),
            tuple(
                (tp, ErrorCode.unstable_offset_commit)
                for tp in wanted
                if tp in unstable
            ),
        )

    # --- TxnOffsetCommit (KIP-98, KIP-447) ------------------------------------------------

    def txn_commit_offsets(
        self, request_id: int, request: TxnOffsetCommitRequest, now: float
    ) -> list[GroupAction]:
        """TxnOffsetCommit (Kafka's ``handleTxnCommitOffsets``): an unknown group is
        created Empty; the member checks are the transactional ones (``txn_commit_error``);
        the accepted offsets are written in the producer's transactional batch, pending
        until its marker, and the request is answered once the write is committed."""
        r = request

        def answer(errors: dict[TopicPartition, ErrorCode]) -> list[GroupAction]:
            response = TxnOffsetCommitResponse(
                tuple((tp, errors[tp]) for tp, _ in r.offsets)
            )
            return [GroupReply(request_id, response)]

        error = self.metadata.group_status(r.group_id)
        if error is ErrorCode.none:
            group = self._groups.get(r.group_id)
            if group is None:
                group = self._groups[r.group_id] = GroupMetadata(r.group_id)
                group.state_timestamp = now
            error = txn_commit_error(group, r)
        if error is not ErrorCode.none:
            return answer({tp: error for tp, _ in r.offsets})
        errors: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        stamp = int(now * 1000)
        for tp, committed in r.offsets:
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = ErrorCode.offset_metadata_too_large
                continue
            accepted[tp] = OffsetValue(
                committed.offset, committed.metadata, stamp, committed.leader_epoch
            )
        if not accepted:
            return answer(errors)
        if self.tracer.enabled:
            event = TxnOffsetCommitWritten(
                r.group_id,
                r.transactional_id,
                r.producer_id,
                r.producer_epoch,
                len(accepted),
            )
            self.tracer.emit(event, now)
        records = self.metadata.offset_records(r.group_id, accepted.items())
        outcome = TxnOffsetsCommitted(r.group_id, request_id, r, accepted, errors)
        return [append(records, outcome)]

    def txn_offsets_committed(
        self, committed: TxnOffsetsCommitted, error: ErrorCode
    ) -> list[GroupAction]:
        """The TxnOffsetCommit's records are committed (its offsets still pending for
        the producer), or will not be: the revert of the failed write has dropped its
        pending offsets; answer with the write's error as an OffsetCommit's."""
        code = commit_error(error)
        errors = {**committed.errors, **dict.fromkeys(committed.accepted, code)}
        offsets = committed.request.offsets
        response = TxnOffsetCommitResponse(tuple((tp, errors[tp]) for tp, _ in offsets))
        return [GroupReply(committed.request_id, response)]

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        now: float,
        group_instance_id: str | None = None,
        api_version: int = 8,
    ) -> ErrorCode:
        """Whether an OffsetCommit may be written (``offset_commit_error``). A simple
        consumer's commit to an unknown group creates it, Empty; a member's accepted
        commit counts as a heartbeat. A consumer-protocol group's commit carries the
        member epoch as its generation (KIP-848)."""
        consumer = self.metadata.consumer_groups.get(group_id)
        if consumer is not None:
            return consumer_offset_commit_error(
                consumer, member_id, generation_id, api_version
            )
        group = self._groups.get(group_id)
        error = offset_commit_error(
            group, member_id, generation_id, group_instance_id, api_version
        )
        if error is not ErrorCode.none:
            return error
        if group is None:
            self._groups[group_id] = GroupMetadata(group_id)
        elif group.has(member_id):
            schedule_heartbeat(group.members[member_id], now)
        return ErrorCode.none

    # --- deletion and retention -----------------------------------------------------------

    def delete_group(
        self, request_id: int, group_id: str, now: float
    ) -> list[GroupAction]:
        """DeleteGroups: only a group without members may go (Empty -> Dead); tombstones
        for its offsets (as written so far) and for the group let compaction remove it
        from the log too. A refusal is answered now; a deletion once its tombstones are
        committed (:meth:`group_deleted`)."""

        def refuse(error: ErrorCode) -> list[GroupAction]:
            return [GroupReply(request_id, DeletableGroupResult(group_id, error))]

        status = self.metadata.group_status(group_id)
        if status is not ErrorCode.none:
            return refuse(status)
        group = self._groups.get(group_id)
        if group is None:
            return refuse(ErrorCode.group_id_not_found)
        if group.state is not _S.EMPTY:
            return refuse(ErrorCode.non_empty_group)
        group.transition_to(_S.DEAD, now, self.tracer)
        del self._groups[group_id]
        # a pending transactional offset goes with the group (Kafka's deleteAllOffsets)
        offsets = set(self.metadata.current_offsets(group_id))
        offsets |= self.metadata.pending_partitions(group_id)
        tombstones = self.metadata.tombstones(group_id, sorted(offsets))
        return [append(tombstones, GroupDeleted(group_id, request_id))]

    def group_deleted(
        self, deleted: GroupDeleted, error: ErrorCode
    ) -> list[GroupAction]:
        """The deletion's tombstones are committed, or will not be: answer it, with a
        failed write's error as the client should see it (``store_group_error``). The
        revert of a failed write has brought the group and its offsets back."""
        result = DeletableGroupResult(deleted.group_id, store_group_error(error))
        return [GroupReply(deleted.request_id, result)]

    def delete_offsets(
        self,
        request_id: int,
        group_id: str,
        partitions: Iterable[TopicPartition],
        now: float,
    ) -> list[GroupAction]:
        """OffsetDelete (KIP-496): tombstones for the named partitions' committed
        offsets. An Empty group loses any of them; a consumer group with members keeps
        those of the topics its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC) and
        loses the rest; any other group with members is NON_EMPTY_GROUP. Answered once
        the tombstones are committed (:meth:`offsets_deleted`); at once when there is
        nothing to write."""
        wanted = list(dict.fromkeys(partitions))

        def answer(
            error: ErrorCode, errors: tuple[tuple[TopicPartition, ErrorCode], ...] = ()
        ) -> list[GroupAction]:
            return [GroupReply(request_id, OffsetDeleteResponse(error, errors))]

        status = self.metadata.group_status(group_id)
        if status is not ErrorCode.none:
            return answer(status)
        group = self._groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            return answer(ErrorCode.group_id_not_found)
        if group.state is _S.EMPTY:
            subscribed: frozenset[str] = frozenset()
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            topics = group.subscribed_topics()
            subscribed = (
                frozenset(tp.topic for tp in wanted) if topics is None else topics
            )
        else:
            return answer(ErrorCode.non_empty_group)
        errors = tuple(
            (
                tp,
                ErrorCode.group_subscribed_to_topic
                if tp.topic in subscribed
                else ErrorCode.none,
            )
            for tp in wanted
        )
        offsets = set(self.metadata.current_offsets(group_id))
        offsets |= self.metadata.pending_partitions(group_id)
        doomed = [
            tp for tp, error in errors if error is ErrorCode.none and tp in offsets
        ]
        if not doomed:
            return answer(ErrorCode.none, errors)
        records = self.metadata.offset_records(group_id, [(tp, None) for tp in doomed])
        return [append(records, OffsetsDeleted(group_id, request_id, errors))]

    def offsets_deleted(
        self, deleted: OffsetsDeleted, error: ErrorCode
    ) -> list[GroupAction]:
        """The OffsetDelete's tombstones are committed, or will not be (the whole
        request then fails with the write's error, as the client should see it)."""
        code = store_group_error(error)
        response = (
            OffsetDeleteResponse(ErrorCode.none, deleted.partitions)
            if code is ErrorCode.none
            else OffsetDeleteResponse(code)
        )
        return [GroupReply(deleted.request_id, response)]

    def expire_offsets(self, now: float) -> list[GroupAction]:
        """``offsets.retention.minutes``: write tombstones for expired offsets; an Empty
        group left with no offsets is deleted too, with its own tombstone (Kafka's
        cleanupGroupMetadata), so groups nobody uses do not pile up."""
        out: list[GroupAction] = []
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            offsets = self.metadata.current_offsets(group.group_id)
            expired = self.metadata.expired_offsets(group, offsets, now, retention_ms)
            # An offset an open transaction will replace does not expire, and a group
            # waiting on a transaction stays (Kafka's cleanupExpiredOffsets).
            pending = self.metadata.pending_partitions(group.group_id)
            expired = [tp for tp in expired if tp not in pending]
            records = self.metadata.offset_records(
                group.group_id, [(tp, None) for tp in expired]
            )
            if (
                group.state is _S.EMPTY
                and len(expired) == len(offsets)
                and not pending
                and not group.pending_members
                and not group.assignment_write_pending
            ):
                group.transition_to(_S.DEAD, now, self.tracer)
                del self._groups[group.group_id]
                records = self.metadata.tombstones(group.group_id, expired)
            if records:
                out.append(append(records, Unanswered(group.group_id)))
        return out


def txn_commit_error(
    group: GroupMetadata, request: TxnOffsetCommitRequest
) -> ErrorCode:
    """May this TxnOffsetCommit be written? (Kafka's ``validateOffsetCommit`` with
    ``isTransactional``.) Looser than OffsetCommit's: a request that names no member and
    no generation (v0-2, or a producer that does not send its consumer's metadata) is
    accepted whatever the group's state, and a member's is checked only for what it
    names: its instance id not taken over (FENCED_INSTANCE_ID), its member id known
    (UNKNOWN_MEMBER_ID), its generation current (ILLEGAL_GENERATION). A rebalance in
    progress does not refuse it: the transaction, not the group, decides."""
    r = request
    if group.state is _S.DEAD:
        return ErrorCode.coordinator_not_available
    if r.group_instance_id is not None:
        current = group.static_member_id(r.group_instance_id)
        if current is not None and current != r.member_id:
            return ErrorCode.fenced_instance_id
    if r.member_id and not group.has(r.member_id):
        return ErrorCode.unknown_member_id
    if r.generation_id >= 0 and r.generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    return ErrorCode.none
