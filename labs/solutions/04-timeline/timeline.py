"""Lab 4's reference: minikafka's own timeline structures (packages/controller/src/
minikafka/controller/_timeline.py, in the KRaft controller chapter)."""

from minikafka.controller._timeline import (
    Snapshot,
    SnapshotRegistry,
    _SnapshottableTable,
)

record = _SnapshottableTable._record
lookup = _SnapshottableTable._lookup
merge_from = Snapshot._merge_from
revert_to_snapshot = SnapshotRegistry.revert_to_snapshot
