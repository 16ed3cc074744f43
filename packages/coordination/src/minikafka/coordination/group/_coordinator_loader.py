"""Becoming a partition's coordinator: replaying ``__consumer_offsets`` from its start
(seed 000, "__consumer_offsets"; KIP-98's markers; KIP-848's coordinator runtime).

When this broker becomes the leader of a partition of ``__consumer_offsets``, it knows
nothing yet about the groups hashed there: it reads the partition from its start and
replays every record, as Kafka's ``CoordinatorLoaderImpl`` does, handing each record to
the shard (``GroupCoordinatorShard.replay``: an offset to ``OffsetMetadataManager``, a
group's metadata to ``GroupMetadataManager``) and each transaction marker to
``replayEndTransactionMarker``. The last record per key wins, as after compaction, and a
tombstone removes its key. The offsets are replayed into a fresh
:class:`SnapshottableCoordinator` whose state is then the committed one; each classic
group's last record is kept for ``GroupMetadataManager.load`` to restore the group from
(``_record_helpers.restore_group``). A core: the shell reads the log, this only replays
what it read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

import attrs

from ._offsets_records import (
    GroupMetadataValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    decode_record,
)
from ._record_helpers import StoredRecord
from ._snapshottable_coordinator import SnapshottableCoordinator
from ._txn_offsets import TxnMarkerRecord, TxnStoredRecord

__all__ = ["LoadedPartition", "LoadedRecord", "replay_partition"]

LoadedRecord: TypeAlias = StoredRecord | TxnStoredRecord | TxnMarkerRecord
"""What a load replays: a plain record, a record of a transactional batch, or a
transaction's marker (KIP-98; ``_txn_offsets.py``)."""


@attrs.frozen
class LoadedPartition:
    """What a partition's replay left: its offsets on their timeline, committed, and the
    last group record of each classic group still in it."""

    shard: SnapshottableCoordinator
    stored: dict[str, GroupMetadataValue]

    def group_ids(self) -> set[str]:
        """Every group the partition holds: by a group record, committed offsets or
        offsets still pending for a transaction."""
        return (
            self.stored.keys()
            | set(self.shard.offsets.group_ids())
            | set(self.shard.pending.group_ids())
        )


def replay_partition(
    records: Iterable[LoadedRecord], owns: Callable[[str], bool]
) -> LoadedPartition:
    """Replay a partition's records from its start, then commit what was replayed;
    ``owns`` says whether a group hashes onto this partition (a record of another
    group is skipped). Record types this coordinator does not know (KIP-848's consumer
    and share groups) are skipped, as Kafka does. A malformed record is skipped too,
    where Kafka fails the whole load and leaves the partition's groups without a
    coordinator: the log has checked every batch's CRC, so such a record was written
    wrong, and the groups around it are still good.

    Transactional records (KIP-98) are pending for their producer until its marker:
    a COMMIT makes them committed where they are newer than the committed offset,
    an ABORT drops them (Kafka's loader); those whose marker has not come yet stay
    pending, for ``GroupMetadataManager.complete_transaction``."""
    shard = SnapshottableCoordinator()
    stored: dict[str, GroupMetadataValue] = {}
    here: dict[str, bool] = {}  # group id -> hashed onto this partition
    for n, record in enumerate(records):
        if isinstance(record, TxnMarkerRecord):
            shard.replay_marker(record.producer_id, record.commit)
            continue
        if isinstance(record, TxnStoredRecord):
            producer_id: int | None = record.producer_id
            key_bytes, value_bytes = record.key, record.value
        else:
            producer_id = None
            key_bytes, value_bytes = record
        try:
            key, value = decode_record(key_bytes, value_bytes)
        except OffsetsRecordError:
            continue
        if key.group not in here:
            here[key.group] = owns(key.group)
        if not here[key.group]:
            continue
        if isinstance(key, OffsetKey):
            assert value is None or isinstance(value, OffsetValue)
            shard.replay_offset(key, value, (0, n), producer_id)
        elif value is None:
            stored.pop(key.group, None)
        else:
            assert isinstance(value, GroupMetadataValue)
            stored[key.group] = value
    shard.loaded()
    return LoadedPartition(shard, stored)
