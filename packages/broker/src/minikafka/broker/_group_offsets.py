"""The group's committed offsets on the wire: OffsetCommit and OffsetFetch.

Seed 000's consume path: a consumer in a group commits its position (OffsetCommit) to
the group's coordinator, which writes it to the group's ``__consumer_offsets``
partition and answers once the record is committed; a consumer that starts, or takes a
partition over, reads the committed position back (OffsetFetch). The decisions are the
coordinator's (``minikafka.coordination``); these handlers translate between the wire and
its values, version by version:

- OffsetCommit v2-9: v2-4 carry a retention time, v6 the leader epoch (KIP-320), v7 the
  group instance id, v8 is flexible (KIP-482), v9 answers a commit with a generation to a
  group that does not exist with GROUP_ID_NOT_FOUND (KIP-848).
- OffsetFetch v1-9: v2 asks for all partitions with a null topic list and adds the
  top-level error, v5 returns the leader epoch, v6 is flexible, v7 may ask for stable
  offsets only (KIP-447), v8 asks for several groups (KIP-709), v9 carries the KIP-848
  member id and epoch.

OffsetDelete is ``_offset_delete.py``'s.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupCoordinatorShell,
    OffsetCommitRequest,
)
from minikafka.net import Request, build, is_body, nested
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._group_body import (
    OFFSET_COMMIT,
    OFFSET_COMMIT_PARTITION_WITH_EPOCH,
    OFFSET_COMMIT_WITH_INSTANCE_ID,
    OFFSET_COMMIT_WITH_RETENTION,
    OFFSET_FETCH,
    OFFSET_FETCH_BATCHED,
    OFFSET_FETCH_REQUIRE_STABLE,
)
from ._metadata_cache import MetadataCache

NO_THROTTLE = datetime.timedelta(0)
_MS = datetime.timedelta(milliseconds=1)


async def handle_offset_commit(
    request: Request,
    service: GroupCoordinatorShell,
    cache: MetadataCache | None = None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """OffsetCommit v2-9 (v9 is v8 with one answer changed: a commit with a generation
    to a group that does not exist is GROUP_ID_NOT_FOUND, KIP-848). With ``cache``, a
    partition that does not exist is refused with UNKNOWN_TOPIC_OR_PARTITION before the
    group is asked, as Kafka's KafkaApis does; a request with nothing left to commit is
    answered without the coordinator. With an authorizer, a topic the principal may
    not READ is TOPIC_AUTHORIZATION_FAILED (the group's READ is asked before)."""
    body = request.body_as(OFFSET_COMMIT)
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: list[tuple[TopicPartition, CommittedOffset]] = []
    denied = (
        frozenset()
        if authorizer is None
        else authorizer.denied_topics(
            request, AclOperation.READ, (t.name for t in body.topics)
        )
    )
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, int(p.partition_index))
            if topic.name in denied:
                errors[tp] = ErrorCode.topic_authorization_failed
                continue
            if cache is not None and not partition_exists(cache, tp):
                errors[tp] = ErrorCode.unknown_topic_or_partition
                continue
            committed = CommittedOffset(
                int(p.committed_offset),
                int(p.committed_leader_epoch)
                if isinstance(p, OFFSET_COMMIT_PARTITION_WITH_EPOCH)
                else -1,
                p.committed_metadata or "",  # nullable: null is "no metadata"
            )
            offsets.append((tp, committed))
    if offsets:
        retention = (
            body.retention_time
            if isinstance(body, OFFSET_COMMIT_WITH_RETENTION)
            else None  # v5 dropped it: the broker's offsets.retention.minutes applies
        )
        answer = await service.commit_offsets(
            OffsetCommitRequest(
                group_id=body.group_id,
                generation_id=int(body.generation_id_or_member_epoch),
                member_id=body.member_id,
                offsets=tuple(offsets),
                group_instance_id=body.group_instance_id  # KIP-345, v7+
                if isinstance(body, OFFSET_COMMIT_WITH_INSTANCE_ID)
                else None,
                retention_time_ms=-1 if retention is None else retention // _MS,
                api_version=request.api_version,
            )
        )
        errors.update(answer.errors)
    respond_offset_commit(request, errors.__getitem__)


def respond_offset_commit(
    request: Request, error_of: Callable[[TopicPartition], ErrorCode]
) -> None:
    """Answer an OffsetCommit with each of its partitions' error, ``error_of(tp)``."""
    body = request.body_as(OFFSET_COMMIT)
    cls = request.response_class()
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    topics = tuple(
        build(
            topic_cls,
            name=topic.name,
            partitions=tuple(
                build(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=error_of(
                        TopicPartition(topic.name, int(p.partition_index))
                    ),
                )
                for p in topic.partitions
            ),
        )
        for topic in body.topics
    )
    request.respond(build(cls, throttle_time=NO_THROTTLE, topics=topics))


def partition_exists(cache: MetadataCache, tp: TopicPartition) -> bool:
    topic = cache.topic(tp.topic)
    return topic is not None and tp.partition in topic.partitions


async def handle_offset_fetch(
    request: Request,
    service: GroupCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """OffsetFetch v1-9: a null topic list (v2+) asks for every committed partition.
    v7's ``require_stable`` (KIP-447) asks to wait out offsets a transaction has yet to
    commit: such a partition is answered UNSTABLE_OFFSET_COMMIT, and the consumer asks
    again.
    From v8 (KIP-709) a request asks for several groups, each answered on its own, as
    an admin client listing many groups' offsets does; v9's member id and epoch are the
    KIP-848 protocol's: a consumer group checks them, a classic group does not (as in
    Kafka). With an authorizer (Kafka's ``handleOffsetFetchRequest``) each group needs
    DESCRIBE (a single group's is asked before, in ``._request_authz``), and each topic:
    one asked by name is answered TOPIC_AUTHORIZATION_FAILED, and of every committed
    partition only those of describable topics are listed."""
    body = request.body_as(OFFSET_FETCH)
    cls = request.response_class()
    may_describe = None if authorizer is None else authorizer.topic_check(request)

    if is_body(body, OFFSET_FETCH_BATCHED):
        group_cls = nested(cls, "groups")
        topic_cls = nested(group_cls, "topics")
        groups = []
        for group in body.groups:
            if authorizer is not None and not authorizer.group_allowed(
                request, AclOperation.DESCRIBE, group.group_id
            ):
                denied_group = ErrorCode.group_authorization_failed
                groups.append(
                    build(
                        group_cls,
                        group_id=group.group_id,
                        error_code=denied_group,
                        topics=(),
                    )
                )
                continue
            asked = None
            if group.topics is not None:
                asked = [(t.name, _ints(t.partition_indexes)) for t in group.topics]
            error, topics = _offsets_of(
                service,
                group.group_id,
                asked,
                request.api_version,
                topic_cls,
                bool(body.require_stable),
                may_describe,
                getattr(group, "member_id", None),
                int(getattr(group, "member_epoch", -1)),
            )
            groups.append(
                build(
                    group_cls, group_id=group.group_id, error_code=error, topics=topics
                )
            )
        request.respond(build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups)))
        return
    asked = None
    if body.topics is not None:
        asked = [(t.name, _ints(t.partition_indexes)) for t in body.topics]
    error, topics = _offsets_of(
        service,
        body.group_id,
        asked,
        request.api_version,
        nested(cls, "topics"),
        isinstance(body, OFFSET_FETCH_REQUIRE_STABLE) and bool(body.require_stable),
        may_describe,
    )
    request.respond(
        build(cls, throttle_time=NO_THROTTLE, error_code=error, topics=topics)
    )


def _offsets_of(
    service: GroupCoordinatorShell,
    group_id: str,
    asked: Sequence[tuple[str, list[int]]] | None,
    version: int,
    topic_cls: type[Entity],
    require_stable: bool,
    may_describe: Callable[[str], bool] | None = None,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[ErrorCode, tuple[Entity, ...]]:
    """One group's answer: its error, and its committed offsets by topic (``asked``:
    the partitions asked for by topic, None for every committed one). With
    ``require_stable`` a partition whose offset a transaction has yet to commit is
    UNSTABLE_OFFSET_COMMIT, which the consumer retries (KIP-447). ``may_describe``:
    whether a topic is the principal's to see (None: every one is)."""
    wanted = None if asked is None else list(asked)
    refused = frozenset(
        name
        for name, _ in wanted or ()
        if may_describe is not None and not may_describe(name)
    )
    answer = service.fetch_offsets(
        group_id,
        None
        if wanted is None
        else [
            TopicPartition(n, i) for n, ids in wanted for i in ids if n not in refused
        ],
        require_stable,
        member_id,
        member_epoch,
    )
    committed = dict(answer.offsets)
    group_error = answer.error_code
    if wanted is None:
        # Every committed partition, grouped by topic in the core's (sorted) order.
        wanted = []
        for tp, _ in answer.offsets:
            if may_describe is not None and not may_describe(tp.topic):
                continue  # another principal's topic: not listed
            if not wanted or wanted[-1][0] != tp.topic:
                wanted.append((tp.topic, []))
            wanted[-1][1].append(tp.partition)
    if group_error is not ErrorCode.none:
        if version >= 2:
            wanted = []  # the error is the group's, and no partitions are listed
        committed = {}
    partition_cls = nested(topic_cls, "partitions")
    # v1 has no top-level error: "we put it at the partition level" (OffsetFetchResponse).
    partition_error = group_error if version < 2 else ErrorCode.none
    topics = tuple(
        build(
            topic_cls,
            name=name,
            partitions=tuple(
                _fetched_partition(
                    partition_cls,
                    i,
                    committed.get(TopicPartition(name, i)),
                    partition_error
                    if partition_error is not ErrorCode.none
                    else ErrorCode.topic_authorization_failed
                    if name in refused
                    else answer.partition_error(TopicPartition(name, i)),
                )
                for i in indexes
            ),
        )
        for name, indexes in wanted
    )
    return group_error, topics


def _ints(values: Sequence[int]) -> list[int]:
    return [int(v) for v in values]


def _fetched_partition(
    partition_cls: type[Entity],
    index: int,
    offset: CommittedOffset | None,
    error: ErrorCode,
) -> Entity:
    # No committed offset: offset -1 and metadata "" (Kafka's UNKNOWN_PARTITION), no error.
    return build(
        partition_cls,
        partition_index=index,
        committed_offset=-1 if offset is None else offset.offset,
        committed_leader_epoch=-1 if offset is None else offset.leader_epoch,
        metadata="" if offset is None else offset.metadata,
        error_code=error,
    )
