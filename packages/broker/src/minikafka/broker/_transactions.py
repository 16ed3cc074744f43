"""The transaction APIs on the broker (KIP-98): Kafka's ``KafkaApis`` handlers of
InitProducerId with a transactional id, AddPartitionsToTxn, EndTxn and WriteTxnMarkers.

The first three go to this broker's transaction coordinator
(:class:`~minikafka.coordination.TransactionCoordinatorShell`), which answers
NOT_COORDINATOR unless this broker leads the transactional id's partition of
``__transaction_state``: the producer found its coordinator with FindCoordinator (key
type 1) first. WriteTxnMarkers comes from a coordinator (this broker's or another's) to
the leader of a partition a transaction wrote to: each marker is appended like an
acks=all batch and answered once the in-sync replicas have it.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable

import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import TransactionCoordinatorShell
from minikafka.net import ApiKey, Request, build, nested, response_schema
from minikafka.replication import (
    ProducePartitionResult,
    ReplicaManagerShell,
    TxnMarkerEntry,
)

from ._metadata_cache import MetadataCache
from ._txn_body import ADD_PARTITIONS_TO_TXN, END_TXN, WRITE_TXN_MARKERS

NO_THROTTLE = datetime.timedelta(0)
MARKER_APPEND_TIMEOUT_MS = 30_000
"""How long a marker's acks=all append may wait for the in-sync replicas (Kafka uses
``request.timeout.ms``, 30 s); the coordinator sends it again after a timeout."""


async def handle_add_partitions_to_txn(
    request: Request, transactions: TransactionCoordinatorShell, cache: MetadataCache
) -> None:
    """AddPartitionsToTxn v0-3: a partition that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED (nothing is
    added); otherwise the coordinator's one answer for all of them."""
    body = request.body_as(ADD_PARTITIONS_TO_TXN)
    wanted = [
        TopicPartition(t.name, int(p))
        for t in body.v3_and_below_topics
        for p in t.partitions
    ]
    unknown = {tp for tp in wanted if not _exists(cache, tp)}
    if unknown:
        errors = {
            tp: ErrorCode.unknown_topic_or_partition
            if tp in unknown
            else ErrorCode.operation_not_attempted
            for tp in wanted
        }
    else:
        error = await transactions.add_partitions_to_txn(
            body.v3_and_below_transactional_id,
            int(body.v3_and_below_producer_id),
            int(body.v3_and_below_producer_epoch),
            frozenset(wanted),
        )
        errors = dict.fromkeys(wanted, error)
    cls = request.response_class()
    topic_cls = nested(cls, "results_by_topic_v3_and_below")
    partition_cls = nested(topic_cls, "results_by_partition")
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            results_by_topic_v3_and_below=tuple(
                build(
                    topic_cls,
                    name=topic,
                    results_by_partition=tuple(
                        build(
                            partition_cls,
                            partition_index=tp.partition,
                            partition_error_code=errors[tp],
                        )
                        for tp in tps
                    ),
                )
                for topic, tps in _by_topic(errors).items()
            ),
        )
    )


async def handle_end_txn(
    request: Request, transactions: TransactionCoordinatorShell
) -> None:
    """EndTxn v0-4: commit or abort; answered once PrepareCommit or PrepareAbort is
    written (the markers follow)."""
    body = request.body_as(END_TXN)
    error = await transactions.end_txn(
        body.transactional_id,
        int(body.producer_id),
        int(body.producer_epoch),
        bool(body.committed),
    )
    cls = request.response_class()
    request.respond(build(cls, throttle_time=NO_THROTTLE, error_code=error))


async def handle_write_txn_markers(
    request: Request, replica_manager: ReplicaManagerShell
) -> None:
    """WriteTxnMarkers v1: append each marker to each of its partitions (led here),
    answered per marker and partition once every append is answered."""
    body = request.body_as(WRITE_TXN_MARKERS)
    results: list[dict[TopicPartition, ErrorCode]] = [{} for _ in body.markers]
    outstanding = 0
    done = trio.Event()

    def collect(
        index: int, answers: dict[TopicPartition, ProducePartitionResult]
    ) -> None:
        nonlocal outstanding
        for tp, result in answers.items():
            results[index][tp] = result.error_code
        outstanding -= 1
        if outstanding == 0:
            done.set()

    appends = []
    for index, marker in enumerate(body.markers):
        entry = TxnMarkerEntry(
            int(marker.producer_id),
            int(marker.producer_epoch),
            bool(marker.transaction_result),
            int(marker.coordinator_epoch),
        )
        partitions = {
            TopicPartition(t.name, int(p)): entry
            for t in marker.topics
            for p in t.partition_indexes
        }
        if partitions:
            appends.append((index, partitions))
    outstanding = len(appends)
    if not appends:
        done.set()
    for index, partitions in appends:
        replica_manager.append_txn_markers(
            MARKER_APPEND_TIMEOUT_MS, partitions, functools.partial(collect, index)
        )
    await done.wait()
    cls = response_schema(ApiKey.WRITE_TXN_MARKERS, request.api_version)
    assert cls is not None
    marker_cls = nested(cls, "markers")
    topic_cls = nested(marker_cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    request.respond(
        build(
            cls,
            markers=tuple(
                build(
                    marker_cls,
                    producer_id=marker.producer_id,
                    topics=tuple(
                        build(
                            topic_cls,
                            name=topic,
                            partitions=tuple(
                                build(
                                    partition_cls,
                                    partition_index=tp.partition,
                                    error_code=errors[tp],
                                )
                                for tp in tps
                            ),
                        )
                        for topic, tps in _by_topic(errors).items()
                    ),
                )
                for marker, errors in zip(body.markers, results, strict=True)
            ),
        )
    )


def _exists(cache: MetadataCache, tp: TopicPartition) -> bool:
    topic = cache.topic(tp.topic)
    return topic is not None and tp.partition in topic.partitions


def _by_topic(
    errors: Iterable[TopicPartition],
) -> dict[str, list[TopicPartition]]:
    grouped: dict[str, list[TopicPartition]] = {}
    for tp in errors:
        grouped.setdefault(tp.topic, []).append(tp)
    return grouped
