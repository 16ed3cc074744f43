"""The quorum's Fetch and FetchSnapshot in Kafka's wire schemas (KIP-595, KIP-630).

A voter fetches the metadata log from its leader with the same Fetch a broker (an
observer) sends, v13: the one partition ``__cluster_metadata-0`` named by its topic id
(Kafka's ``Uuid.METADATA_TOPIC_ID``), the fetcher's log end as ``fetch_offset`` and the
epoch of the entry before it as ``last_fetched_epoch``. The answer carries entries as
record batches (:mod:`._batches`), and either a ``diverging_epoch`` or a ``snapshot_id``
when the fetcher must truncate or load a snapshot first. FetchSnapshot v0 copies a
snapshot in chunks. A message about any other partition is refused with ``ValueError``.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13 import request as fetch_req
from kio.schema.fetch.v13 import response as fetch_res
from kio.schema.fetch_snapshot.v0 import request as snap_req
from kio.schema.fetch_snapshot.v0 import response as snap_res
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i8, i32, i32Timedelta, i64

from minikafka.log import InvalidRecordError, whole_batches

from ._batches import decode_entries, encode_entries
from ._log import SnapshotId
from ._messages import (
    DivergingEpoch,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from ._wire import METADATA_TOPIC, _id, _optional

METADATA_TOPIC_ID = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID``: the topic id of ``__cluster_metadata``."""
MAX_FETCH_BYTES = 8 * 1024 * 1024  # what KafkaRaftClient asks for
_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def _only(items: Sequence[object], what: str) -> object:
    if len(items) != 1:
        raise ValueError(f"{what}: {len(items)} entries, not just {METADATA_TOPIC}-0")
    return items[0]


# -- Fetch ------------------------------------------------------------------------------


def encode_fetch_request(
    message: FetchRequest, *, cluster_id: str, max_wait: float
) -> fetch_req.FetchRequest:
    partition = fetch_req.FetchPartition(
        partition=i32(0),
        current_leader_epoch=i32(message.current_leader_epoch),
        fetch_offset=i64(message.fetch_offset),
        last_fetched_epoch=i32(message.last_fetched_epoch),
        partition_max_bytes=i32(MAX_FETCH_BYTES),
    )
    return fetch_req.FetchRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(message.replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(seconds=max_wait)),
        min_bytes=i32(1),
        max_bytes=i32(MAX_FETCH_BYTES),
        isolation_level=i8(0),
        topics=(
            fetch_req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def decode_fetch_request(request: fetch_req.FetchRequest) -> FetchRequest:
    topic = _only(request.topics, "Fetch")
    assert isinstance(topic, fetch_req.FetchTopic)
    partition = _only(topic.partitions, "Fetch")
    assert isinstance(partition, fetch_req.FetchPartition)
    if topic.topic_id != METADATA_TOPIC_ID or partition.partition != 0:
        raise ValueError(f"Fetch is not about {METADATA_TOPIC}-0")
    return FetchRequest(
        int(request.replica_id),
        int(partition.current_leader_epoch),
        int(partition.fetch_offset),
        # A fetcher with nothing yet may say -1 (the schema's "unknown"); the core, like
        # Kafka's log, calls the epoch before the first entry 0 (real epochs start at 1).
        max(0, int(partition.last_fetched_epoch)),
    )


def encode_fetch_response(
    message: FetchResponse, log_start_offset: int
) -> fetch_res.FetchResponse:
    diverging = message.diverging_epoch
    snapshot = message.snapshot_id
    partition = fetch_res.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode(int(message.error)),
        high_watermark=i64(message.high_watermark),
        last_stable_offset=i64(message.high_watermark),
        log_start_offset=i64(log_start_offset),
        diverging_epoch=fetch_res.EpochEndOffset(
            epoch=i32(diverging.epoch if diverging else -1),
            end_offset=i64(diverging.end_offset if diverging else -1),
        ),
        current_leader=fetch_res.LeaderIdAndEpoch(
            leader_id=_id(message.leader_id), leader_epoch=i32(message.leader_epoch)
        ),
        snapshot_id=fetch_res.SnapshotId(
            end_offset=i64(snapshot.end_offset if snapshot else -1),
            epoch=i32(snapshot.epoch if snapshot else -1),
        ),
        aborted_transactions=(),
        preferred_read_replica=BrokerId(-1),
        records=Records(encode_entries(message.records)) if message.records else None,
    )
    topic = fetch_res.FetchableTopicResponse(
        topic_id=METADATA_TOPIC_ID, partitions=(partition,)
    )
    return fetch_res.FetchResponse(
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(topic,),
    )


def decode_fetch_response(
    response: fetch_res.FetchResponse, fetch_offset: int
) -> FetchResponse:
    """The answer to a fetch at ``fetch_offset``; raises ValueError on a top-level error
    (the fetch is then retried, as after a lost connection)."""
    if response.error_code is not ErrorCode.none:
        raise ValueError(f"Fetch failed: {response.error_code.name}")
    topic = _only(response.responses, "FetchResponse")
    assert isinstance(topic, fetch_res.FetchableTopicResponse)
    p = _only(topic.partitions, "FetchResponse")
    assert isinstance(p, fetch_res.PartitionData)
    diverging = (
        DivergingEpoch(int(p.diverging_epoch.epoch), int(p.diverging_epoch.end_offset))
        if p.diverging_epoch.end_offset >= 0  # the field's default (-1, -1): none
        else None
    )
    snapshot = (
        SnapshotId(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch))
        if p.snapshot_id.end_offset >= 0
        else None
    )
    try:
        records = decode_entries(whole_batches(bytes(p.records or b"")), fetch_offset)
    except InvalidRecordError as exc:  # a bad CRC, a batch that does not parse
        raise ValueError(
            f"Fetch answered with records that do not decode: {exc}"
        ) from exc
    return FetchResponse(
        Errors(int(p.error_code)),
        int(p.current_leader.leader_epoch),
        _optional(int(p.current_leader.leader_id)),
        int(p.high_watermark),
        tuple(records),
        diverging,
        snapshot,
    )


# -- FetchSnapshot ----------------------------------------------------------------------


def encode_fetch_snapshot_request(
    message: FetchSnapshotRequest, *, cluster_id: str, max_bytes: int
) -> snap_req.FetchSnapshotRequest:
    partition = snap_req.PartitionSnapshot(
        partition=i32(0),
        current_leader_epoch=i32(message.current_leader_epoch),
        snapshot_id=snap_req.SnapshotId(
            end_offset=i64(message.snapshot_id.end_offset),
            epoch=i32(message.snapshot_id.epoch),
        ),
        position=i64(message.position),
    )
    topic = snap_req.TopicSnapshot(
        name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return snap_req.FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(message.replica_id),
        max_bytes=i32(max_bytes),
        topics=(topic,),
    )


def decode_fetch_snapshot_request(
    request: snap_req.FetchSnapshotRequest,
) -> FetchSnapshotRequest:
    topic = _only(request.topics, "FetchSnapshot")
    assert isinstance(topic, snap_req.TopicSnapshot)
    p = _only(topic.partitions, "FetchSnapshot")
    assert isinstance(p, snap_req.PartitionSnapshot)
    if topic.name != METADATA_TOPIC or p.partition != 0:
        raise ValueError(f"FetchSnapshot is not about {METADATA_TOPIC}-0")
    return FetchSnapshotRequest(
        int(request.replica_id),
        int(p.current_leader_epoch),
        SnapshotId(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
        int(p.position),
    )


def encode_fetch_snapshot_response(
    message: FetchSnapshotResponse, wanted: SnapshotId
) -> snap_res.FetchSnapshotResponse:
    snapshot = message.snapshot_id or wanted
    partition = snap_res.PartitionSnapshot(
        index=i32(0),
        error_code=ErrorCode(int(message.error)),
        snapshot_id=snap_res.SnapshotId(
            end_offset=i64(snapshot.end_offset), epoch=i32(snapshot.epoch)
        ),
        current_leader=snap_res.LeaderIdAndEpoch(
            leader_id=_id(message.leader_id), leader_epoch=i32(message.leader_epoch)
        ),
        size=i64(message.size if message.snapshot_id else -1),
        position=i64(message.position),
        unaligned_records=Records(message.unaligned_records),
    )
    topic = snap_res.TopicSnapshot(
        name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return snap_res.FetchSnapshotResponse(
        throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, topics=(topic,)
    )


def decode_fetch_snapshot_response(
    response: snap_res.FetchSnapshotResponse,
) -> FetchSnapshotResponse:
    if response.error_code is not ErrorCode.none:
        raise ValueError(f"FetchSnapshot failed: {response.error_code.name}")
    topic = _only(response.topics, "FetchSnapshotResponse")
    assert isinstance(topic, snap_res.TopicSnapshot)
    p = _only(topic.partitions, "FetchSnapshotResponse")
    assert isinstance(p, snap_res.PartitionSnapshot)
    error = Errors(int(p.error_code))
    snapshot = SnapshotId(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch))
    return FetchSnapshotResponse(
        error,
        int(p.current_leader.leader_epoch),
        _optional(int(p.current_leader.leader_id)),
        snapshot if error is Errors.NONE else None,
        int(p.size) if error is Errors.NONE else 0,  # an error answer's size is -1
        int(p.position),
        bytes(p.unaligned_records),
    )
