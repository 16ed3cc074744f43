"""Wrong on purpose: the purgatory's wait for a deletion, each function wrong in one
way (minikafka's ``DelayedDeleteRecords.try_complete`` with one knob of :func:`wait`
turned)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.replication._delayed import DelayedDeleteRecords
from minikafka.replication._results import DeleteRecordsPartitionResult


def wait(
    self: DelayedDeleteRecords,
    *,
    at_once: bool = False,
    leadership: bool = True,
    answer_offset: bool = False,
) -> bool:
    """minikafka's rule, unless a knob says otherwise."""
    for tp, required in list(self.required_offsets.items()):
        partition = self.partitions(tp)
        if partition is None or (
            leadership and (not partition.is_leader or partition.offline_reason)
        ):
            self.results[tp] = DeleteRecordsPartitionResult(
                ErrorCode.not_leader_or_follower
            )
        elif at_once or (low := partition.low_watermark()) >= required:
            reached = partition.log.log_start_offset if at_once else low
            self.results[tp] = DeleteRecordsPartitionResult(
                ErrorCode.none, required if answer_offset else reached
            )
        else:
            continue
        del self.required_offsets[tp]
    return not self.required_offsets and self.force_complete()


def answers_at_once(self: DelayedDeleteRecords) -> bool:
    return wait(self, at_once=True)


def ignores_leadership(self: DelayedDeleteRecords) -> bool:
    return wait(self, leadership=False)


def answers_the_offset(self: DelayedDeleteRecords) -> bool:
    return wait(self, answer_offset=True)
