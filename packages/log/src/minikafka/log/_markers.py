"""Transaction markers: the control batches that end a transaction in a partition
(KIP-98).

When a transaction commits or aborts, its coordinator has each partition it wrote
append a *marker*: a batch of one control record (attribute bits 4, transactional, and
5, control), under the producer's id and epoch, whose key says COMMIT or ABORT and
whose value names the coordinator's epoch. Consumers never see it as a record; a
read_committed one learns from it that the producer's records before it are decided,
and the log's producer state closes the transaction there.

The control record's key is ``version:int16`` (0) then ``type:int16`` (0 ABORT,
1 COMMIT; Kafka's ``ControlRecordType``); the marker's value is ``version:int16`` (0)
then ``coordinatorEpoch:int32`` (Kafka's ``EndTransactionMarker``).
"""

from __future__ import annotations

import struct

import attrs

from ._records import Record, build_batch

__all__ = [
    "EndTxnMarker",
    "control_record_type",
    "end_txn_marker_batch",
    "read_end_txn_marker",
]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
ABORT, COMMIT = 0, 1
CONTROL_KEY_VERSION = 0
MARKER_VALUE_VERSION = 0


@attrs.frozen
class EndTxnMarker:
    """What a marker's record says: the outcome, and the coordinator epoch that wrote
    it (a marker from an older coordinator epoch is refused)."""

    commit: bool
    coordinator_epoch: int


def end_txn_marker_batch(
    marker: EndTxnMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """The marker as the leader appends it: one control record at ``base_offset``."""
    key = _KEY.pack(CONTROL_KEY_VERSION, COMMIT if marker.commit else ABORT)
    value = _VALUE.pack(MARKER_VALUE_VERSION, marker.coordinator_epoch)
    return build_batch(
        [Record(base_offset, timestamp, key, value)],
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )


def control_record_type(record: Record) -> int | None:
    """The type a control record's key names (``ABORT``, ``COMMIT`` or another kind,
    Kafka's ``ControlRecordType.parse``); None for a key too short to name one."""
    key = record.key or b""
    if len(key) < _KEY.size:
        return None
    _, kind = _KEY.unpack_from(key)
    return int(kind)


def read_end_txn_marker(record: Record) -> EndTxnMarker:
    """A control record read back as a marker; ValueError if it is another kind."""
    key, value = record.key or b"", record.value or b""
    if len(key) != _KEY.size or len(value) < _VALUE.size:
        raise ValueError("not a transaction marker: wrong key or value size")
    version, kind = _KEY.unpack(key)
    if version != CONTROL_KEY_VERSION or kind not in (ABORT, COMMIT):
        raise ValueError(f"not a transaction marker: control type {kind}")
    value_version, coordinator_epoch = _VALUE.unpack_from(value)
    if value_version != MARKER_VALUE_VERSION:
        raise ValueError(f"a transaction marker of version {value_version}")
    return EndTxnMarker(kind == COMMIT, coordinator_epoch)
