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

From v7 a fetcher may open a fetch session (KIP-227, ``_fetch_sessions.py``): its later
requests name only what changed, and the answers only the partitions with something
new. v12 is the first flexible version (compact lengths, tagged fields), and a fetcher
may name the epoch of its last record: a log that diverged there is answered with
``diverging_epoch``, where to truncate to, and no records (the replication core
decides, ``PartitionReads.diverging_epoch``); v13 names topics by id (KIP-516); v15
moves the follower's id into ``replica_state`` (KIP-903); from v16 a partition refused
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the leader this broker knows of,
and a consumer's response that leader's endpoint (KIP-951).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Mapping, Sequence

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
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer, refused_epochs
from ._body import (
    FETCH,
    FETCH_IN_SESSION,
    FETCH_PARTITION_WITH_EPOCH,
    FETCH_PARTITION_WITH_LAST_FETCHED_EPOCH,
    FETCH_PARTITION_WITH_LOG_START,
    FETCH_TOPIC_BY_ID,
    FETCH_WITH_REPLICA_STATE,
    FORGOTTEN_TOPIC_BY_ID,
    FORGOTTEN_TOPIC_BY_NAME,
    OFFSET_FOR_LEADER_EPOCH,
    FetchRequest,
)
from ._fetch_sessions import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    ContextKind,
    FetchAnswer,
    FetchSessionCache,
    RequestedPartition,
)
from ._metadata_cache import ZERO_UUID, AliveBroker, MetadataCache
from ._wire import (
    EMPTY_COMPACT,
    NO_TAGS,
    NULL_COMPACT,
    UNKNOWN_TOPIC_ID,
    array_length,
    current_leaders,
    node_endpoints,
    string,
    tagged_fields,
    topic_name_by_id,
    uvarint,
)

READ_COMMITTED = 1
NO_THROTTLE = datetime.timedelta(0)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# partition, error, high watermark, last stable
_PARTITION_HEAD = struct.Struct(">ihqq")
_PARTITION_HEAD_V5 = struct.Struct(">ihqqq")  # and log_start_offset, in the same call
_ABORTED = struct.Struct(">qq")  # producer id, first offset
# A flexible partition's tagged fields: 0, the diverging epoch (epoch, end offset), and
# from v16 1, its current leader (id and epoch, KIP-951), each with the struct's own
# empty tagged fields.
_EPOCH_END = struct.Struct(">iqb")
_LEADER = struct.Struct(">iib")
_REFUSED_BEFORE_READ = (
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id,
    ErrorCode.topic_authorization_failed,
)
_LEADER_HINT_ERRORS = (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch)
_UNKNOWN_TOPIC_ID = FetchPartitionResult(ErrorCode.unknown_topic_id)
_NOT_AUTHORIZED = FetchPartitionResult(ErrorCode.topic_authorization_failed)
NO_SESSION = FetchAnswer(ErrorCode.none, INVALID_SESSION_ID, [])
"""A response outside any session: no error, session id 0 (its partitions unused)."""


def handle_fetch(
    request: Request,
    replica_manager: ReplicaManagerShell,
    sessions: FetchSessionCache,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    body = request.body_as(FETCH)
    version = request.api_version
    ids: dict[str, uuid.UUID] = {}  # v13+: each topic's id, for the answer
    requested = [
        RequestedPartition(
            FetchPartition(
                TopicPartition(name, int(p.partition)),
                int(p.fetch_offset),
                int(p.partition_max_bytes),
                int(p.current_leader_epoch)
                if isinstance(p, FETCH_PARTITION_WITH_EPOCH)
                else -1,
                # v5+: a follower's own log start, for the leader's low watermark
                int(p.log_start_offset)
                if isinstance(p, FETCH_PARTITION_WITH_LOG_START)
                else -1,
                last_fetched_epoch=int(p.last_fetched_epoch)
                if isinstance(p, FETCH_PARTITION_WITH_LAST_FETCHED_EPOCH)
                else -1,
            ),
            ids.get(name, ZERO_UUID),
        )
        for topic in body.topics
        for name in (_topic_name(topic, cache, ids),)
        for p in topic.partitions
    ]
    params = FetchParams(
        replica_id=_replica_id(body),
        max_wait_ms=int(body.max_wait.total_seconds() * 1000),
        min_bytes=int(body.min_bytes),
        max_bytes=int(body.max_bytes),  # v3+
        # v4+; a follower reads to the log end whatever it says
        read_committed=_replica_id(body) < 0
        and int(body.isolation_level) == READ_COMMITTED,
    )
    read_committed = params.read_committed

    consumer = params.replica_id < 0
    session_id, epoch, forgotten = _session(body, cache)
    context = sessions.new_context(
        replica_manager.now(),
        session_id=session_id,
        epoch=epoch,
        uses_topic_ids=version >= 13,
        privileged=not consumer,
        requested=requested,
        forgotten=forgotten,
    )
    # A topic id no topic has is answered UNKNOWN_TOPIC_ID, without a read.
    fetches = [r.fetch for r in context.partitions if not _unknown_topic(r)]
    denied = (
        frozenset()
        if authorizer is None
        else _denied(request, authorizer, consumer, context.partitions)
    )
    if denied:  # answered TOPIC_AUTHORIZATION_FAILED without a read
        fetches = [f for f in fetches if f.topic_partition.topic not in denied]

    def respond(results: list[tuple[FetchPartition, FetchPartitionResult]]) -> None:
        if consumer and any(r.error_code is not ErrorCode.none for _, r in results):
            results = [(f, for_consumer(r)) for f, r in results]
        # The reads come back in the order they were asked, the unknown ones left out.
        read = iter(results)
        answer = sessions.answer(
            context,
            replica_manager.now(),
            [
                (
                    r,
                    _UNKNOWN_TOPIC_ID
                    if _unknown_topic(r)
                    else _NOT_AUTHORIZED
                    if denied and r.fetch.topic_partition.topic in denied
                    else next(read)[1],
                )
                for r in context.partitions
            ],
        )
        leaders, endpoints = _leader_hints(request, cache, answer, consumer)
        request.respond_parts(
            encode_fetch_response(
                version,
                [(r.fetch, result) for r, result in answer.partitions],
                read_committed,
                session=answer,
                topic_ids={
                    r.topic_partition.topic: r.topic_id for r, _ in answer.partitions
                }
                if version >= 13
                else None,
                current_leaders=leaders,
                endpoints=endpoints,
            )
        )

    if context.kind is ContextKind.SESSION_ERROR or not fetches:
        respond([])
        return
    replica_manager.fetch_messages(params, fetches, respond)


def _denied(
    request: Request,
    authorizer: BrokerAuthorizer,
    consumer: bool,
    partitions: Sequence[RequestedPartition],
) -> frozenset[str]:
    """The topics this fetch may not read (Kafka's ``handleFetchRequest``): a consumer
    needs READ on each topic; a follower CLUSTER_ACTION on the cluster, or it reads
    nothing."""
    names = (r.fetch.topic_partition.topic for r in partitions)
    if consumer:
        return authorizer.denied_topics(request, AclOperation.READ, names)
    if authorizer.cluster_allowed(request, AclOperation.CLUSTER_ACTION):
        return frozenset()
    return frozenset(names)


def _aborted_transactions(
    result: FetchPartitionResult, read_committed: bool, flexible: bool
) -> bytes:
    """A partition's ``aborted_transactions``: for a read_committed consumer the
    aborted transactions its records overlap (producer id, first offset), which it
    skips (KIP-98); null for any other reader. A partition refused before any read has
    the schema's empty list, as Kafka answers an unknown topic or partition."""
    aborted = result.aborted_transactions
    if not aborted:
        if read_committed or result.error_code in _REFUSED_BEFORE_READ:
            return EMPTY_COMPACT if flexible else _I32.pack(0)
        return NULL_COMPACT if flexible else _I32.pack(-1)
    out = bytearray(array_length(len(aborted), flexible))
    for entry in aborted:
        out += _ABORTED.pack(entry.producer_id, entry.first_offset)
        if flexible:
            out += NO_TAGS
    return bytes(out)


def _unknown_topic(requested: RequestedPartition) -> bool:
    return requested.topic_partition.topic.startswith(UNKNOWN_TOPIC_ID)


def _topic_name(topic: object, cache: MetadataCache, ids: dict[str, uuid.UUID]) -> str:
    """A fetched topic's name: v13+ names it by id (kept in ``ids`` for the answer)."""
    if isinstance(topic, FETCH_TOPIC_BY_ID):
        name = topic_name_by_id(cache, topic.topic_id)
        ids[name] = topic.topic_id or ZERO_UUID
        return name
    assert hasattr(topic, "topic")
    return str(topic.topic)


def _replica_id(body: FetchRequest) -> int:
    """The fetching follower's id, -1 for a consumer: from v15 in ``replica_state``."""
    if isinstance(body, FETCH_WITH_REPLICA_STATE):
        return int(body.replica_state.replica_id)
    assert hasattr(body, "replica_id")
    return int(body.replica_id)


def _session(
    body: FetchRequest, cache: MetadataCache
) -> tuple[int, int, list[TopicPartition]]:
    """The request's session id and epoch, and the partitions it drops from its session
    (v7+); before v7, a fetch outside any session."""
    if not isinstance(body, FETCH_IN_SESSION):
        return INVALID_SESSION_ID, FINAL_EPOCH, []
    forgotten = []
    for topic in body.forgotten_topics_data:
        if isinstance(topic, FORGOTTEN_TOPIC_BY_ID):
            name = topic_name_by_id(cache, topic.topic_id)
        else:
            assert isinstance(topic, FORGOTTEN_TOPIC_BY_NAME)
            name = topic.topic
        forgotten += [TopicPartition(name, int(p)) for p in topic.partitions]
    return int(body.session_id), int(body.session_epoch), forgotten


def _leader_hints(
    request: Request, cache: MetadataCache, answer: FetchAnswer, consumer: bool
) -> tuple[dict[TopicPartition, tuple[int, int]], list[AliveBroker]]:
    """KIP-951 (v16+): the leaders of the partitions this broker does not lead, and to
    a consumer their endpoints (a follower is told the leader, not where: Kafka's
    answer)."""
    if request.api_version < 16:
        return {}, []
    refused = [
        r.topic_partition
        for r, result in answer.partitions
        if result.error_code in _LEADER_HINT_ERRORS
    ]
    leaders, endpoints = current_leaders(request.listener, cache, refused)
    return leaders, endpoints if consumer else []


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
    """OffsetForLeaderEpoch v2-v4 on a broker without an authorizer: every topic is
    asked of the log."""
    answer_offsets_for_leader_epoch(request, replica_manager, {})


def answer_offsets_for_leader_epoch(
    request: Request,
    replica_manager: ReplicaManagerShell,
    refused: Mapping[str, ErrorCode],
) -> None:
    """OffsetForLeaderEpoch v2-v4: where each asked epoch ends in this leader's log (the
    follower's truncation point, KIP-101/279), fenced by the asker's current epoch
    (KIP-320). ``refused``: the topics the authorizer refused (``epoch_refusals``),
    answered their error without the log being asked."""
    body = request.body_as(OFFSET_FOR_LEADER_EPOCH)
    asked = [
        EpochRequest(
            TopicPartition(topic.topic, int(p.partition)),
            int(p.current_leader_epoch),
            int(p.leader_epoch),
        )
        for topic in body.topics
        if topic.topic not in refused
        for p in topic.partitions
    ]
    answers = replica_manager.last_offsets_for_leader_epochs(asked)
    answers += refused_epochs(body, refused)
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
    *,
    session: FetchAnswer = NO_SESSION,
    topic_ids: Mapping[str, uuid.UUID] | None = None,
    current_leaders: Mapping[TopicPartition, tuple[int, int]] | None = None,
    endpoints: list[AliveBroker] | None = None,
) -> list[bytes | FileRegion]:
    """A Fetch response body (v4-v18) as bytes and file regions.

    Partitions of one topic are grouped in the order the request named them, as Kafka's
    response keeps the request's order. ``session``: the response's error and session
    id (v7+); ``topic_ids``: each topic's id, for v13+; ``current_leaders`` and
    ``endpoints``: KIP-951's hints (v16+).
    """
    flexible = version >= 12
    leaders = current_leaders or {}
    parts: list[bytes | FileRegion] = []
    head = bytearray(_I32.pack(0))  # throttle_time_ms
    if version >= 7:
        head += _I16.pack(session.error_code.value) + _I32.pack(session.session_id)
    topics: list[tuple[str, list[tuple[FetchPartition, FetchPartitionResult]]]] = []
    for fetch, result in results:
        topic = fetch.topic_partition.topic
        if not topics or topics[-1][0] != topic:
            topics.append((topic, []))
        topics[-1][1].append((fetch, result))
    head += array_length(len(topics), flexible)
    for topic, partitions in topics:
        if version >= 13:
            head += (topic_ids or {}).get(topic, ZERO_UUID).bytes
        else:
            head += string(topic, flexible)
        head += array_length(len(partitions), flexible)
        for fetch, result in partitions:
            if version >= 5:
                head += _PARTITION_HEAD_V5.pack(
                    fetch.topic_partition.partition,
                    result.error_code.value,
                    result.high_watermark,
                    result.last_stable_offset,
                    result.log_start_offset,
                )
            else:
                head += _PARTITION_HEAD.pack(
                    fetch.topic_partition.partition,
                    result.error_code.value,
                    result.high_watermark,
                    result.last_stable_offset,
                )
            head += _aborted_transactions(result, read_committed, flexible)
            if version >= 11:
                head += _I32.pack(-1)  # preferred_read_replica: none (KIP-392)
            tags = (
                _partition_tags(result, leaders.get(fetch.topic_partition))
                if flexible
                else b""
            )
            records = result.records
            if records is None or records.length == 0:
                head += (EMPTY_COMPACT if flexible else _I32.pack(0)) + tags
                continue
            if flexible:
                head += uvarint(records.length + 1)
            else:
                head += _I32.pack(records.length)
            parts.append(bytes(head))
            parts.append(records.file_region())
            head = bytearray(tags)
        if flexible:
            head += NO_TAGS
    if flexible:
        head += node_endpoints(endpoints) if version >= 16 else NO_TAGS
    if head:
        parts.append(bytes(head))
    return parts


def _partition_tags(
    result: FetchPartitionResult, leader: tuple[int, int] | None
) -> bytes:
    """A flexible partition's tagged fields: 0, the epoch where the fetcher's log
    diverged and its end here; 1 (v16+), its current leader, when this broker names one
    (KIP-951); each only when set."""
    tags = []
    if result.diverging_epoch is not None:
        tags.append((0, _EPOCH_END.pack(*result.diverging_epoch, 0)))
    if leader is not None and leader != (-1, -1):
        tags.append((1, _LEADER.pack(*leader, 0)))
    return tagged_fields(tags) if tags else NO_TAGS
