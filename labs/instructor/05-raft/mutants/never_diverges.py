"""Wrong on purpose: the leader never finds a fetcher's log diverging from its own (only
a fetch below its log start gets the snapshot)."""

from __future__ import annotations

from minikafka.raft._log import RaftLog, SnapshotId
from minikafka.raft._messages import DivergingEpoch, FetchRequest


def check_fetch_position(
    log: RaftLog, request: FetchRequest
) -> DivergingEpoch | SnapshotId | None:
    snapshot = log.latest_snapshot()
    if request.fetch_offset < log.start_offset and snapshot is not None:
        return snapshot.id
    return None
