"""Lab 16, exercise ``low_watermark``: the purgatory's wait for a deletion (what the
low watermark is, in partition.py's docstring).

``DelayedDeleteRecords.try_complete``: each partition of ``self.required_offsets``
(partition -> the offset its replicas must reach) is done when the partition
(``self.partitions(tp)``) is still led here and online (``partition.is_leader``, no
``partition.offline_reason``) and its ``low_watermark()`` has reached the offset: its
result (``self.results[tp]``) is ``DeleteRecordsPartitionResult(ErrorCode.none,
low_watermark)``. A partition gone, led elsewhere or offline is done too, with
NOT_LEADER_OR_FOLLOWER (the client asks the new leader). Remove each partition done
from ``self.required_offsets``; when none is left, ``self.force_complete()`` answers
(it returns True the first time only).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.labs import ExerciseNotDone
from minikafka.replication._delayed import DelayedDeleteRecords
from minikafka.replication._results import DeleteRecordsPartitionResult

FILE = "labs/16-delete-records/delayed.py"

__all__ = [
    "DeleteRecordsPartitionResult",
    "ErrorCode",
    "delayed_delete_records_try_complete",
]


def delayed_delete_records_try_complete(self: DelayedDeleteRecords) -> bool:
    """Complete the deletion once every partition's low watermark reached its offset."""
    raise ExerciseNotDone(
        "delayed_delete_records_try_complete", "low_watermark() >= required", FILE
    )
