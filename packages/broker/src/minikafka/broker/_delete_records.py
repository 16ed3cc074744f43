"""DeleteRecords (KIP-107): a client moves partitions' log start offsets forward.

``kafka-delete-records.sh`` and every admin client's ``deleteRecords`` send it to each
partition's leader: the records below the given offset (-1: the high watermark) are no
longer served, and their segments go as soon as the log start passes them. The
ReplicaManager moves the leader's log start at once and answers once every in-sync
follower has moved its own (the low watermark), so a new leader cannot serve a deleted
record again.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.net import Request, build, nested, response_schema
from minikafka.replication import DeleteRecordsPartitionResult, ReplicaManagerShell
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._body import DELETE_RECORDS
from ._metadata_cache import INTERNAL_TOPICS

NO_THROTTLE = datetime.timedelta(0)


def handle_delete_records(
    request: Request,
    replica_manager: ReplicaManagerShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DeleteRecords v0-2; with an authorizer a topic the principal may not DELETE is
    TOPIC_AUTHORIZATION_FAILED and keeps its records."""
    body = request.body_as(DELETE_RECORDS)
    offsets: dict[TopicPartition, int] = {}
    refused: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
    denied = (
        frozenset()
        if authorizer is None
        else authorizer.denied_topics(
            request, AclOperation.DELETE, (str(t.name) for t in body.topics)
        )
    )
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(str(topic.name), int(p.partition_index))
            if tp.topic in denied:
                refused[tp] = DeleteRecordsPartitionResult(
                    ErrorCode.topic_authorization_failed
                )
            elif tp.topic in INTERNAL_TOPICS:
                # The offsets topic's records are the groups' state, not a client's.
                refused[tp] = DeleteRecordsPartitionResult(
                    ErrorCode.invalid_topic_exception,
                    error_message=f"cannot delete records of internal topic {tp.topic}",
                )
            else:
                offsets[tp] = int(p.offset)
    timeout_ms = int(body.timeout.total_seconds() * 1000)

    def respond(results: dict[TopicPartition, DeleteRecordsPartitionResult]) -> None:
        encode(request, {**results, **refused})

    replica_manager.delete_records(timeout_ms, offsets, respond)


def encode(
    request: Request, results: dict[TopicPartition, DeleteRecordsPartitionResult]
) -> None:
    """Answer ``request`` with each partition's result, grouped by topic."""
    cls = response_schema(request.api_key, request.api_version)
    assert cls is not None
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    by_topic: dict[str, list[Entity]] = {}
    for tp, result in results.items():
        by_topic.setdefault(tp.topic, []).append(
            build(
                partition_cls,
                partition_index=tp.partition,
                low_watermark=result.low_watermark,
                error_code=result.error_code,
            )
        )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            topics=tuple(
                build(topic_cls, name=name, partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )
    )
