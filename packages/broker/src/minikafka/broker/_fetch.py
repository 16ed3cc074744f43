"""Fetch: seed 000's fetch path from the request to ``sendfile``.

The handler turns the request into :class:`FetchPartition` reads for the
ReplicaManager, which answers now or from a DelayedFetch. The answer is written by
hand here rather than through kio, because the records must not pass through Python:
every field before and after a partition's records is encoded into bytes, and the
records themselves go into the response as a file region of the segment, which the
Processor sends with ``os.sendfile`` (the zero-copy step of the seed).

A follower fetches the same way, with its broker id as ``replica_id``: the
ReplicaManager then also records how far that follower has read, which moves the high
watermark and the ISR (seed 000). Before its first fetch in a new leader epoch a follower
asks OffsetForLeaderEpoch where its latest epoch ends here (KIP-101), answered by
:func:`handle_offset_for_leader_epoch`.

Fetch sessions (KIP-227) are declined: every response has session id 0 and is a full
response, which the protocol allows and every client handles.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Sequence

import attrs
from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.common import FileRegion, TopicPartition
from minikafka.net import Request, build, nested
from minikafka.replication import (
    EpochRequest,
    FetchParams,
    FetchPartition,
    FetchPartitionResult,
    ReplicaManagerShell,
)

from ._body import FETCH, FETCH_PARTITION_WITH_EPOCH, OFFSET_FOR_LEADER_EPOCH

READ_COMMITTED = 1
NO_THROTTLE = datetime.timedelta(0)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# partition, error, high watermark, last stable
_PARTITION_HEAD = struct.Struct(">ihqq")
_I64 = struct.Struct(">q")


def handle_fetch(request: Request, replica_manager: ReplicaManagerShell) -> None:
    body = request.body_as(FETCH)
    version = request.api_version
    fetches = [
        FetchPartition(
            TopicPartition(topic.topic, int(p.partition)),
            int(p.fetch_offset),
            int(p.partition_max_bytes),
            int(p.current_leader_epoch)
            if isinstance(p, FETCH_PARTITION_WITH_EPOCH)
            else -1,
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    params = FetchParams(
        replica_id=int(body.replica_id),
        max_wait_ms=int(body.max_wait.total_seconds() * 1000),
        min_bytes=int(body.min_bytes),
        max_bytes=int(body.max_bytes),  # v3+
    )
    read_committed = int(body.isolation_level) == READ_COMMITTED  # v4+

    consumer = params.replica_id < 0

    def respond(results: list[tuple[FetchPartition, FetchPartitionResult]]) -> None:
        if consumer:
            results = [(f, for_consumer(r)) for f, r in results]
        request.respond_parts(encode_fetch_response(version, results, read_committed))

    replica_manager.fetch_messages(params, fetches, respond)


def for_consumer(result: FetchPartitionResult) -> FetchPartitionResult:
    """A consumer's failed partition carries no offsets (-1), as Kafka's answer does.

    A follower's keeps the leader's: minikafka's follower reads the log start offset of
    an OFFSET_OUT_OF_RANGE answer to start over there, where Kafka's asks the leader
    with ListOffsets first.
    """
    if result.error_code is ErrorCode.none:
        return result
    return attrs.evolve(
        result, high_watermark=-1, last_stable_offset=-1, log_start_offset=-1
    )


def handle_offset_for_leader_epoch(
    request: Request, replica_manager: ReplicaManagerShell
) -> None:
    """OffsetForLeaderEpoch v2-v4: where each asked epoch ends in this leader's log (the
    follower's truncation point, KIP-101/279), fenced by the asker's current epoch
    (KIP-320)."""
    body = request.body_as(OFFSET_FOR_LEADER_EPOCH)
    asked = [
        EpochRequest(
            TopicPartition(topic.topic, int(p.partition)),
            int(p.current_leader_epoch),
            int(p.leader_epoch),
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    answers = replica_manager.last_offsets_for_leader_epochs(asked)
    cls = request.response_class()
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    by_topic: dict[str, list[Entity]] = {}
    for answer in answers:
        by_topic.setdefault(answer.topic_partition.topic, []).append(
            build(
                partition_cls,
                error_code=answer.error_code,
                partition=answer.topic_partition.partition,
                leader_epoch=answer.leader_epoch,
                end_offset=answer.end_offset,
            )
        )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            topics=tuple(
                build(topic_cls, topic=name, partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )
    )


def encode_fetch_response(
    version: int,
    results: Sequence[tuple[FetchPartition, FetchPartitionResult]],
    read_committed: bool,
) -> list[bytes | FileRegion]:
    """A Fetch response body (v4-v11, the non-flexible versions) as bytes and file
    regions.

    Partitions of one topic are grouped in the order the request named them, as Kafka's
    response keeps the request's order.
    """
    parts: list[bytes | FileRegion] = []
    head = bytearray(_I32.pack(0))  # throttle_time_ms
    if version >= 7:
        # error_code, session_id 0
        head += _I16.pack(ErrorCode.none.value) + _I32.pack(0)
    topics: list[tuple[str, list[tuple[FetchPartition, FetchPartitionResult]]]] = []
    for fetch, result in results:
        topic = fetch.topic_partition.topic
        if not topics or topics[-1][0] != topic:
            topics.append((topic, []))
        topics[-1][1].append((fetch, result))
    head += _I32.pack(len(topics))
    for topic, partitions in topics:
        name = topic.encode()
        head += _I16.pack(len(name)) + name + _I32.pack(len(partitions))
        for fetch, result in partitions:
            head += _PARTITION_HEAD.pack(
                fetch.topic_partition.partition,
                result.error_code.value,
                result.high_watermark,
                result.last_stable_offset,
            )
            if version >= 5:
                head += _I64.pack(result.log_start_offset)
            # No transactions: read_committed consumers get an empty aborted list, and
            # so does a partition refused before any read (Kafka's answer to an
            # unknown topic or partition has the schema's empty list, not null).
            unknown = result.error_code is ErrorCode.unknown_topic_or_partition
            head += _I32.pack(0 if read_committed or unknown else -1)
            if version >= 11:
                head += _I32.pack(-1)  # preferred_read_replica: none (KIP-392)
            records = result.records
            if records is None or records.length == 0:
                head += _I32.pack(0)
                continue
            head += _I32.pack(records.length)
            parts.append(bytes(head))
            parts.append(records.file_region())
            head = bytearray()
    if head:
        parts.append(bytes(head))
    return parts
