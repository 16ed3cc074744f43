"""The leader's half of KIP-595's Fetch for ``__cluster_metadata``: what it answers.

In KRaft the metadata log reaches every broker the way a partition reaches its followers:
the broker (an *observer*: it replicates but never votes) fetches from the quorum's leader
at its own log end, saying which epoch its last record was in. The leader answers with
one of three things (Kafka's ``KafkaMetadataLog.validateOffsetAndEpoch``):

- **records** from the fetch offset, up to the leader's log end, with the leader's high
  watermark: what is below it is committed, and only that may be replayed;
- **a diverging epoch** ``(epoch, end offset)`` when the fetcher's last epoch does not end
  where the fetcher thinks it does on the leader: its tail was written by a leader whose
  records were never committed, and it must truncate before fetching again (the Raft
  counterpart of KIP-101/KIP-279's truncation by leader epoch, without a separate
  OffsetsForLeaderEpoch round trip);
- **a snapshot id** when the fetch offset lies before the leader's log start (a snapshot
  replaced that part of the log, KIP-630): the fetcher loads the snapshot with
  FetchSnapshot (:func:`read_snapshot`) and fetches from its end.

Pure functions of the quorum's state: no clock, no I/O but reading the log.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import UNDEFINED_EPOCH

from ._quorum import SingleVoterQuorum, SnapshotId, latest_snapshot_id

DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024
"""Kafka's Raft client asks for up to 8 MiB per fetch (``KafkaRaftClient``'s fetch size)."""


@attrs.frozen
class DivergingEpoch:
    """Where the fetcher's last epoch really ends on the leader."""

    epoch: int
    end_offset: int


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


def answer_fetch(
    quorum: SingleVoterQuorum,
    fetch_offset: int,
    last_fetched_epoch: int,
    max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
) -> MetadataFetchAnswer:
    """What the leader of ``quorum`` answers a fetch at ``fetch_offset`` whose previous
    record was written in ``last_fetched_epoch`` (-1: the fetcher has no records)."""
    log = quorum.log
    answer = MetadataFetchAnswer(
        quorum.node_id, quorum.epoch, quorum.high_watermark, log.log_start_offset
    )
    if fetch_offset < 0:
        return attrs.evolve(answer, error=ErrorCode.invalid_request)
    if fetch_offset < log.log_start_offset:
        # The records were replaced by a snapshot: the fetcher must load it first.
        return attrs.evolve(answer, snapshot_id=latest_snapshot_id(quorum.dir))
    diverging = _diverging(quorum, fetch_offset, last_fetched_epoch)
    if diverging is not None:
        return attrs.evolve(answer, diverging_epoch=diverging)
    fetched = log.read(fetch_offset, max_bytes)
    records = fetched.records.read_bytes() if fetched.records is not None else b""
    return attrs.evolve(answer, records=records)


def _diverging(
    quorum: SingleVoterQuorum, fetch_offset: int, last_fetched_epoch: int
) -> DivergingEpoch | None:
    log = quorum.log
    if fetch_offset == log.log_start_offset:
        # Nothing before the offset to disagree about: the log start is committed (it is
        # 0, or a snapshot's end), and committed records never diverge.
        return None
    if last_fetched_epoch == UNDEFINED_EPOCH:
        # Records with no epoch past the log start: whatever they are, not ours.
        return DivergingEpoch(UNDEFINED_EPOCH, log.log_start_offset)
    epoch, end = log.leader_epoch_cache.end_offset_for(
        last_fetched_epoch, log.log_end_offset
    )
    if epoch != last_fetched_epoch or end < fetch_offset:
        return DivergingEpoch(epoch, max(end, log.log_start_offset))
    return None


def read_snapshot(
    quorum: SingleVoterQuorum, snapshot_id: SnapshotId, position: int, max_bytes: int
) -> tuple[bytes, int] | None:
    """FetchSnapshot (KIP-630): ``max_bytes`` of the snapshot from ``position``, and its
    whole size; None if ``snapshot_id`` is not the leader's latest (SNAPSHOT_NOT_FOUND)."""
    if latest_snapshot_id(quorum.dir) != snapshot_id or position < 0:
        return None
    path = quorum.dir / snapshot_id.file_name
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(position)
        return f.read(max_bytes), size
