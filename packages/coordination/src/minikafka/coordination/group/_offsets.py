"""The offsets manager: commit, fetch, expiry and deletion (seed 000, KIP-211).

Kafka's ``OffsetMetadataManager`` (the offsets half of its newer coordinator) as a core. A
committed offset is a record of the group's ``__consumer_offsets`` partition before it is
an answer: ``commit_offsets`` returns the records with an :class:`OffsetsCommitted` value,
and only once the shell reports them committed are they cached and the client told.
Offsets of a group nobody uses expire after ``offsets.retention.minutes`` and an emptied,
offset-less group is deleted with them, as is a group DeleteGroups names; both leave
tombstones so that compaction removes them from the log too.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.trace import NullTracer, Tracer

from ._config import GroupConfig
from ._group import GroupMetadata, offset_commit_error
from ._group_metadata_manager import GroupMetadataManager
from ._group_requests import (
    CommittedOffset,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from ._group_state import GroupState
from ._offsets_records import OffsetValue
from ._rebalance import schedule_heartbeat
from ._results import (
    GroupAction,
    GroupReply,
    OffsetsCommitted,
    Unanswered,
    append,
    commit_error,
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
                r.group_id, r.member_id, r.generation_id, now, r.group_instance_id
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
        """The commit's records are in the log (cache them) or are not; answer it."""
        code = commit_error(error)
        group_id = committed.group_id
        if code is ErrorCode.none:
            group = self._groups.get(group_id)
            if group is None and self.metadata.group_status(group_id) is ErrorCode.none:
                # Deleted while the write was in flight: the log has the offsets now.
                group = self._groups[group_id] = GroupMetadata(group_id)
            if group is not None:
                group.offsets.update(committed.accepted)
        errors = {**committed.errors, **dict.fromkeys(committed.accepted, code)}
        offsets = committed.request.offsets
        response = OffsetCommitResponse(tuple((tp, errors[tp]) for tp, _ in offsets))
        return [GroupReply(committed.request_id, response)]

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> OffsetFetchResponse:
        """OffsetFetch: the committed offset of each partition (None where there is none),
        or of every partition the group committed when ``partitions`` is None."""
        status = self.metadata.group_status(group_id)
        if status is not ErrorCode.none:
            return OffsetFetchResponse(status)
        group = self._groups.get(group_id)
        committed = {} if group is None else group.offsets
        wanted = sorted(committed) if partitions is None else list(partitions)
        return OffsetFetchResponse(
            ErrorCode.none,
            tuple(
                (
                    tp,
                    None
                    if v is None
                    else CommittedOffset(v.offset, v.leader_epoch, v.metadata),
                )
                for tp in wanted
                for v in [committed.get(tp)]
            ),
        )

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        now: float,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        """Whether an OffsetCommit may be written (``offset_commit_error``). A simple
        consumer's commit to an unknown group creates it, Empty; a member's accepted
        commit counts as a heartbeat."""
        group = self._groups.get(group_id)
        error = offset_commit_error(group, member_id, generation_id, group_instance_id)
        if error is not ErrorCode.none:
            return error
        if group is None:
            self._groups[group_id] = GroupMetadata(group_id)
        elif group.has(member_id):
            schedule_heartbeat(group.members[member_id], now)
        return ErrorCode.none

    # --- deletion and retention -----------------------------------------------------------

    def delete_group(
        self, group_id: str, now: float
    ) -> tuple[ErrorCode, list[GroupAction]]:
        """DeleteGroups: only a group without members may go (Empty -> Dead); tombstones
        for its offsets and for the group let compaction remove it from the log too."""
        status = self.metadata.group_status(group_id)
        if status is not ErrorCode.none:
            return status, []
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found, []
        if group.state is not _S.EMPTY:
            return ErrorCode.non_empty_group, []
        group.transition_to(_S.DEAD, now, self.tracer)
        del self._groups[group_id]
        return ErrorCode.none, [
            append(self.metadata.tombstones(group), Unanswered(group_id))
        ]

    def expire_offsets(self, now: float) -> list[GroupAction]:
        """``offsets.retention.minutes``: drop expired offsets and write their
        tombstones; an Empty group left with no offsets is deleted too, with its own
        tombstone (Kafka's cleanupGroupMetadata), so groups nobody uses do not pile
        up."""
        out: list[GroupAction] = []
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            expired = self.metadata.expired_offsets(group, now, retention_ms)
            records = self.metadata.offset_records(
                group.group_id, [(tp, None) for tp in expired]
            )
            for tp in expired:
                del group.offsets[tp]
            if (
                group.state is _S.EMPTY
                and not group.offsets
                and not group.pending_members
                and not group.assignment_write_pending
            ):
                group.transition_to(_S.DEAD, now, self.tracer)
                del self._groups[group.group_id]
                records.extend(self.metadata.tombstones(group))
            if records:
                out.append(append(records, Unanswered(group.group_id)))
        return out
