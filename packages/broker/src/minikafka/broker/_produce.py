"""Produce: seed 000's produce path from the request to the log and back.

The handler does no per-record work: each partition's ``records`` is handed to the
ReplicaManager as the bytes the producer sent (one copy, into a bytearray, so the log
can write offsets into the batch headers in place). ``acks=0`` gets no response at all,
as the protocol says; ``acks=1`` is answered once the leader has appended; ``acks=all``
when the high watermark passes the batches (a DelayedProduce).
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from minikafka.common import Acks, TopicPartition
from minikafka.log import RECORD_BATCH_OVERHEAD, RecordBatchHeader
from minikafka.net import ApiKey, Request, build, nested, response_schema
from minikafka.replication import ProducePartitionResult, ReplicaManagerService

from ._body import PRODUCE
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID
NO_THROTTLE = datetime.timedelta(0)


def handle_produce(
    request: Request, replica_manager: ReplicaManagerService, cache: MetadataCache
) -> None:
    body = request.body_as(PRODUCE)
    acks = Acks.parse(int(body.acks))  # None: INVALID_REQUIRED_ACKS for every partition
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    order: list[TopicPartition] = []
    entries: dict[TopicPartition, bytearray] = {}
    refused: dict[TopicPartition, ProducePartitionResult] = {}
    # Kafka lets its own admin tools' client id write internal topics, and no one else.
    internal_allowed = request.header.client_id == ADMIN_CLIENT_ID
    for topic in body.topic_data:
        for data in topic.partition_data:
            tp = TopicPartition(topic.name, int(data.index))
            order.append(tp)
            if acks is None:
                refused[tp] = ProducePartitionResult(ErrorCode.invalid_required_acks)
            elif topic.name in INTERNAL_TOPICS and not internal_allowed:
                # Only their coordinators write internal topics (ReplicaManager's
                # internalTopicsAllowed): a client's records in __consumer_offsets would
                # be replayed as group metadata and offsets.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_topic_exception,
                    error_message=f"Cannot append to internal topic {topic.name}",
                )
            elif cache.topic(topic.name) is None:
                refused[tp] = ProducePartitionResult(ErrorCode.unknown_topic_or_partition)
            elif (header := _one_batch(data.records)) is None:
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_record,
                    error_message="a partition's records must be exactly one record batch",
                )
            elif header.is_transactional or header.is_control:
                # Without transaction markers a read_committed consumer would see these
                # batches as committed: refuse them rather than store a lie.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_record,
                    error_message="transactional batches are not supported by this broker",
                )
            else:
                entries[tp] = bytearray(data.records or b"")
    if body.transactional_id is not None:  # v3+
        # Transactions are not implemented: refuse rather than write what no one commits.
        refused = dict.fromkeys(
            order, ProducePartitionResult(ErrorCode.transactional_id_authorization_failed)
        )
        entries = {}

    def respond(results: dict[TopicPartition, ProducePartitionResult]) -> None:
        if acks is Acks.NONE:
            # No response on the wire. Kafka closes the connection on an error instead,
            # so the producer notices something went wrong at its next send.
            if any(r.error_code is not ErrorCode.none for r in results.values()):
                request.close_connection()
            else:
                request.respond_nothing()
            return
        request.respond(_response(request.api_version, order, results))

    if not entries or acks is None:
        respond(refused)
        return
    replica_manager.append_records(
        timeout_ms,
        acks,
        entries,
        lambda results: respond({**refused, **results}),
    )


def _response(
    version: int,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
) -> ResponsePayload:
    cls = response_schema(ApiKey.PRODUCE, version)
    assert cls is not None
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partition_responses")
    by_topic: dict[str, list[object]] = {}
    for tp in order:
        result = results[tp]
        append_time = (
            datetime.datetime.fromtimestamp(result.log_append_time / 1000, datetime.UTC)
            if result.log_append_time >= 0
            else None
        )
        by_topic.setdefault(tp.topic, []).append(
            build(
                partition_cls,
                index=tp.partition,
                error_code=result.error_code,
                base_offset=result.base_offset,
                log_append_time=append_time,
                log_start_offset=result.log_start_offset,
                record_errors=(),
                error_message=result.error_message,
            )
        )
    return build(
        cls,
        responses=tuple(
            build(topic_cls, name=name, partition_responses=tuple(parts))
            for name, parts in by_topic.items()
        ),
        throttle_time=NO_THROTTLE,
    )


def _one_batch(records: bytes | None) -> RecordBatchHeader | None:
    """The header of the one batch Produce v3+ carries per partition (Kafka's
    validateRecords); None if ``records`` is not exactly one batch.

    Checked from the first batch's header alone: the log validates the rest.
    """
    if not records or len(records) < RECORD_BATCH_OVERHEAD:
        return None
    header = RecordBatchHeader.read(records)
    return header if header.size == len(records) else None
