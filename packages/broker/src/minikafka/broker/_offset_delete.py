"""OffsetDelete (KIP-496): an admin removes some of a group's committed offsets.

``kafka-consumer-groups --delete-offsets`` and ``Admin.deleteConsumerGroupOffsets``
send it to the group's coordinator. The broker answers UNKNOWN_TOPIC_OR_PARTITION for a
partition that does not exist and hands the rest to the group coordinator, which writes
tombstones for the offsets that may go and answers once they are committed: a group
with members keeps the offsets of the topics its consumers subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC). A group-level error (an unknown group, one with members of
another protocol, a coordinator elsewhere) is answered alone, with no topics, as Kafka
does.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta

from minikafka.common import TopicPartition
from minikafka.coordination import GroupCoordinatorShell
from minikafka.net import Request
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._group_offsets import partition_exists
from ._metadata_cache import MetadataCache

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


async def handle_offset_delete(
    request: Request,
    service: GroupCoordinatorShell,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """OffsetDelete v0; with an authorizer a topic the principal may not READ is
    TOPIC_AUTHORIZATION_FAILED and keeps its offsets (the group's DELETE is asked
    before)."""
    body = request.body_as((OffsetDeleteRequest,))
    asked = list(
        dict.fromkeys(
            TopicPartition(str(t.name), int(p.partition_index))
            for t in body.topics
            for p in t.partitions
        )
    )
    denied = (
        frozenset()
        if authorizer is None
        else authorizer.denied_topics(
            request, AclOperation.READ, (tp.topic for tp in asked)
        )
    )
    errors = {
        tp: ErrorCode.topic_authorization_failed
        if tp.topic in denied
        else ErrorCode.unknown_topic_or_partition
        for tp in asked
        if tp.topic in denied or not partition_exists(cache, tp)
    }
    known = [tp for tp in asked if tp not in errors]
    answer = await service.delete_offsets(str(body.group_id), known)
    if answer.error_code is not ErrorCode.none:
        request.respond(_response(answer.error_code, {}))
        return
    errors.update(answer.partitions)
    request.respond(_response(ErrorCode.none, {tp: errors[tp] for tp in asked}))


def _response(
    error: ErrorCode, partitions: dict[TopicPartition, ErrorCode]
) -> OffsetDeleteResponse:
    topics: dict[str, list[OffsetDeleteResponsePartition]] = {}
    for tp, code in partitions.items():
        topics.setdefault(tp.topic, []).append(
            OffsetDeleteResponsePartition(
                partition_index=i32(tp.partition), error_code=code
            )
        )
    return OffsetDeleteResponse(
        error_code=error,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            OffsetDeleteResponseTopic(name=TopicName(name), partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )
