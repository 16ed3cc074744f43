"""What a broker hears back when it fetches ``__cluster_metadata`` (KIP-595's Fetch).

In KRaft the metadata log reaches every broker the way a partition reaches its followers:
the broker (an *observer*: it replicates but never votes) fetches from the quorum's leader
at its own log end, saying which epoch its last record was in. The leader's Raft node
decides the answer (``minikafka.raft``'s ``LeaderReplication``, after Kafka's
``KafkaMetadataLog.validateOffsetAndEpoch``), one of three things:

- **records** from the fetch offset, up to the leader's log end, with the leader's high
  watermark: what is below it is committed, and only that may be replayed;
- **a diverging epoch** ``(epoch, end offset)`` when the fetcher's last epoch does not end
  where the fetcher thinks it does on the leader: its tail was written by a leader whose
  records were never committed, and it must truncate before fetching again (the Raft
  counterpart of KIP-101/KIP-279's truncation by leader epoch, without a separate
  OffsetsForLeaderEpoch round trip);
- **a snapshot id** when the fetch offset lies before the leader's log start (a snapshot
  replaced that part of the log, KIP-630): the fetcher loads the snapshot with
  FetchSnapshot and fetches from its end.

:class:`MetadataFetchAnswer` is that answer as the observer's core reads it, decoded
from the partition of Kafka's FetchResponse that carried it.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13.response import PartitionData

# Raft's own: where the fetcher's last epoch really ends on the leader.
from minikafka.raft import DivergingEpoch as DivergingEpoch

from ._metadata_log import SnapshotId

DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024
"""Kafka's Raft client asks for up to 8 MiB per fetch (``KafkaRaftClient``'s fetch size)."""


@attrs.frozen
class MetadataFetchAnswer:
    """The leader's answer to one observer's Fetch of ``__cluster_metadata-0``."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    records: bytes = b""
    diverging_epoch: DivergingEpoch | None = None
    snapshot_id: SnapshotId | None = None
    error: ErrorCode = ErrorCode.none

    @classmethod
    def decode(cls, data: PartitionData) -> MetadataFetchAnswer:
        """The answer in ``__cluster_metadata-0``'s partition of a FetchResponse (v13)."""
        diverging, snapshot = data.diverging_epoch, data.snapshot_id
        return cls(
            leader_id=int(data.current_leader.leader_id),
            leader_epoch=int(data.current_leader.leader_epoch),
            high_watermark=int(data.high_watermark),
            log_start_offset=int(data.log_start_offset),
            records=bytes(data.records or b""),
            # The fields' defaults, (-1, -1), say there is none.
            diverging_epoch=DivergingEpoch(
                int(diverging.epoch), int(diverging.end_offset)
            )
            if diverging.end_offset >= 0
            else None,
            snapshot_id=SnapshotId(int(snapshot.end_offset), int(snapshot.epoch))
            if snapshot.end_offset >= 0
            else None,
            error=data.error_code,
        )
