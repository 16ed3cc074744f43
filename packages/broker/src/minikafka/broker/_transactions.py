"""The transaction APIs on the broker (KIP-98, KIP-447): Kafka's ``KafkaApis`` handlers
of AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit and WriteTxnMarkers
(InitProducerId with a transactional id is ``_producer_ids.py``'s).

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
from minikafka.coordination import (
    OFFSETS_TOPIC,
    CommittedOffset,
    GroupCoordinatorShell,
    TransactionCoordinatorShell,
    TxnOffsetCommitRequest,
    partition_for,
)
from minikafka.net import ApiKey, Request, build, nested, response_schema
from minikafka.replication import (
    ProducePartitionResult,
    ReplicaManagerShell,
    TxnMarkerEntry,
)
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._group_offsets import partition_exists
from ._metadata_cache import MetadataCache
from ._txn_body import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
    TXN_OFFSET_COMMIT_PARTITION_WITH_EPOCH,
    TXN_OFFSET_COMMIT_WITH_MEMBER,
    WRITE_TXN_MARKERS,
)
from ._txn_verify import AddPartitionsToTxnManager
from ._txn_verify_apis import (
    handle_add_partitions_to_txn_batched,
    verify_txn_offset_commit,
)

NO_THROTTLE = datetime.timedelta(0)
TXN_APPEND_TIMEOUT_MS = 30_000
"""How long the transaction coordinator's acks=all appends may wait for the in-sync
replicas, its ``__transaction_state`` records' and the markers' (Kafka uses
``request.timeout.ms``, 30 s, for both); a marker is sent again after a timeout."""


async def handle_add_partitions_to_txn(
    request: Request, transactions: TransactionCoordinatorShell, cache: MetadataCache
) -> None:
    """AddPartitionsToTxn v0-3: a partition that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED (nothing is
    added); otherwise the coordinator's one answer for all of them. v4-5, the brokers'
    batched form: :func:`~._txn_verify_apis.handle_add_partitions_to_txn_batched`."""
    if request.api_version >= 4:
        await handle_add_partitions_to_txn_batched(request, transactions, cache)
        return
    body = request.body_as(ADD_PARTITIONS_TO_TXN)
    wanted = [
        TopicPartition(t.name, int(p))
        for t in body.v3_and_below_topics
        for p in t.partitions
    ]
    unknown = {tp for tp in wanted if not partition_exists(cache, tp)}
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
        errors = dict.fromkeys(wanted, for_version(error, request.api_version, 2))
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
    error = for_version(error, request.api_version, 2)
    cls = request.response_class()
    request.respond(build(cls, throttle_time=NO_THROTTLE, error_code=error))


async def handle_write_txn_markers(
    request: Request,
    replica_manager: ReplicaManagerShell,
    groups: GroupCoordinatorShell,
) -> None:
    """WriteTxnMarkers v1: append each marker to each of its partitions (led here),
    answered per marker and partition once every append is answered. A marker written
    to a partition of ``__consumer_offsets`` also ends the transaction's pending
    offsets there (TxnOffsetCommit's): committed or dropped, as Kafka's
    ``onTransactionCompleted``."""
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
            TXN_APPEND_TIMEOUT_MS, partitions, functools.partial(collect, index)
        )
    await done.wait()
    for marker, errors in zip(body.markers, results, strict=True):
        offsets_partitions = [
            tp.partition
            for tp, error in errors.items()
            if tp.topic == OFFSETS_TOPIC and error is ErrorCode.none
        ]
        if offsets_partitions:
            groups.complete_transaction(
                int(marker.producer_id),
                offsets_partitions,
                bool(marker.transaction_result),
            )
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


def for_version(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """``error`` as a client of ``version`` knows it: PRODUCER_FENCED (KIP-588) is
    INVALID_PRODUCER_EPOCH before the version that introduced it, as Kafka's
    KafkaApis converts it."""
    if error is ErrorCode.producer_fenced and version < fenced_since:
        return ErrorCode.invalid_producer_epoch
    return error


def _by_topic(
    errors: Iterable[TopicPartition],
) -> dict[str, list[TopicPartition]]:
    grouped: dict[str, list[TopicPartition]] = {}
    for tp in errors:
        grouped.setdefault(tp.topic, []).append(tp)
    return grouped


async def handle_add_offsets_to_txn(
    request: Request,
    transactions: TransactionCoordinatorShell,
    offsets_topic_partitions: int,
) -> None:
    """AddOffsetsToTxn v0-4 (KIP-98): the group's partition of ``__consumer_offsets``
    joins the transaction, so the offsets the producer then commits for the group
    (TxnOffsetCommit) are committed or aborted by the same markers as its records."""
    body = request.body_as(ADD_OFFSETS_TO_TXN)
    partition = TopicPartition(
        OFFSETS_TOPIC, partition_for(body.group_id, offsets_topic_partitions)
    )
    error = await transactions.add_partitions_to_txn(
        body.transactional_id,
        int(body.producer_id),
        int(body.producer_epoch),
        frozenset({partition}),
    )
    error = for_version(error, request.api_version, 2)
    cls = request.response_class()
    request.respond(build(cls, throttle_time=NO_THROTTLE, error_code=error))


async def handle_txn_offset_commit(
    request: Request,
    groups: GroupCoordinatorShell,
    cache: MetadataCache,
    verification: tuple[ReplicaManagerShell, AddPartitionsToTxnManager, int]
    | None = None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """TxnOffsetCommit v0-4: offsets committed inside a transaction, pending in the
    group until the transaction's marker reaches the group's partition; from v3 the
    consumer's generation and member are checked (KIP-447), so a zombie that lost its
    partitions in a rebalance cannot commit for them. A partition that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION, as Kafka's KafkaApis answers before the group is
    asked. ``verification`` (the ReplicaManager, the verifier and the partitions of
    ``__consumer_offsets``): the group's partition must be in the producer's
    transaction (KIP-890), else every partition gets the coordinator's refusal.
    With an authorizer a topic the principal may not READ is TOPIC_AUTHORIZATION_FAILED
    (the transactional id's WRITE and the group's READ are asked before)."""
    body = request.body_as(TXN_OFFSET_COMMIT)
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
            if not partition_exists(cache, tp):
                errors[tp] = ErrorCode.unknown_topic_or_partition
                continue
            offsets.append(
                (
                    tp,
                    CommittedOffset(
                        int(p.committed_offset),
                        int(p.committed_leader_epoch)
                        if isinstance(p, TXN_OFFSET_COMMIT_PARTITION_WITH_EPOCH)
                        else -1,
                        p.committed_metadata or "",
                    ),
                )
            )
    verified = ErrorCode.none
    if offsets and verification is not None:
        replica_manager, verifier, offsets_partitions = verification
        verified = await verify_txn_offset_commit(
            replica_manager,
            verifier,
            api_version=request.api_version,
            transactional_id=body.transactional_id,
            producer_id=int(body.producer_id),
            producer_epoch=int(body.producer_epoch),
            offsets_partition=TopicPartition(
                OFFSETS_TOPIC, partition_for(body.group_id, offsets_partitions)
            ),
        )
    if verified is not ErrorCode.none:
        errors.update((tp, verified) for tp, _ in offsets)
    elif offsets:
        # Before v3 the request names no consumer: nothing to check it against.
        generation, member, instance = (
            (int(body.generation_id), body.member_id, body.group_instance_id)
            if isinstance(body, TXN_OFFSET_COMMIT_WITH_MEMBER)
            else (-1, "", None)
        )
        answer = await groups.txn_commit_offsets(
            TxnOffsetCommitRequest(
                transactional_id=body.transactional_id,
                group_id=body.group_id,
                producer_id=int(body.producer_id),
                producer_epoch=int(body.producer_epoch),
                generation_id=generation,
                member_id=member,
                group_instance_id=instance,
                offsets=tuple(offsets),
            )
        )
        errors.update(answer.errors)
    cls = request.response_class()
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            topics=tuple(
                build(
                    topic_cls,
                    name=topic.name,
                    partitions=tuple(
                        build(
                            partition_cls,
                            partition_index=p.partition_index,
                            error_code=errors[
                                TopicPartition(topic.name, int(p.partition_index))
                            ],
                        )
                        for p in topic.partitions
                    ),
                )
                for topic in body.topics
            ),
        )
    )
