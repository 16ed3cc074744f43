"""The transaction manager's requests in Kafka's schemas, and their answers read back.

The versions are the newest a client sends to Kafka 4.1 for transactions of version 1
(KIP-98, KIP-447), where the producer adds each partition with AddPartitionsToTxn:
FindCoordinator v6 (a batch of keys, KIP-699; here one), InitProducerId v5,
AddPartitionsToTxn v3 (v4 and later are the brokers' own, KIP-890), AddOffsetsToTxn v4,
TxnOffsetCommit v4 and EndTxn v4. The next versions of the last two (and Produce v12)
are transactions of version 2 (KIP-890 part 2: partitions added by the broker itself,
a new epoch every transaction), which this producer does not speak.
"""

from __future__ import annotations

import datetime

from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest
from kio.schema.add_offsets_to_txn.v4.response import AddOffsetsToTxnResponse
from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kio.schema.add_partitions_to_txn.v3.response import AddPartitionsToTxnResponse
from kio.schema.end_txn.v4.request import EndTxnRequest
from kio.schema.end_txn.v4.response import EndTxnResponse
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v6.response import FindCoordinatorResponse
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse
from kio.schema.txn_offset_commit.v4.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.schema.txn_offset_commit.v4.response import TxnOffsetCommitResponse
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from minikafka.common import TopicPartition

from ._message import BAD_MSG
from ._txn_plans import (
    AddOffsetsToTxnPlan,
    AddPartitionsToTxnPlan,
    FindCoordinatorPlan,
    InitProducerIdPlan,
    TxnAnswer,
    TxnOffsetCommitPlan,
    TxnPlan,
)

TxnRequestBody = (
    FindCoordinatorRequest
    | InitProducerIdRequest
    | AddPartitionsToTxnRequest
    | AddOffsetsToTxnRequest
    | TxnOffsetCommitRequest
    | EndTxnRequest
)


def _by_topic(partitions: tuple[TopicPartition, ...]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


def txn_request_body(plan: TxnPlan) -> TxnRequestBody:
    """The request ``plan`` stands for."""
    if isinstance(plan, FindCoordinatorPlan):
        return FindCoordinatorRequest(
            key_type=i8(plan.key_type), coordinator_keys=(plan.key,)
        )
    if isinstance(plan, InitProducerIdPlan):
        return InitProducerIdRequest(
            transactional_id=TransactionalId(plan.transactional_id),
            transaction_timeout=i32Timedelta.parse(
                datetime.timedelta(milliseconds=plan.transaction_timeout_ms)
            ),
            producer_id=ProducerId(plan.producer_id),
            producer_epoch=i16(plan.producer_epoch),
        )
    if isinstance(plan, AddPartitionsToTxnPlan):
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(plan.transactional_id),
            v3_and_below_producer_id=ProducerId(plan.producer_id),
            v3_and_below_producer_epoch=i16(plan.producer_epoch),
            v3_and_below_topics=tuple(
                AddPartitionsToTxnTopic(
                    name=TopicName(topic), partitions=tuple(i32(p) for p in parts)
                )
                for topic, parts in _by_topic(plan.partitions).items()
            ),
        )
    if isinstance(plan, AddOffsetsToTxnPlan):
        return AddOffsetsToTxnRequest(
            transactional_id=TransactionalId(plan.transactional_id),
            producer_id=ProducerId(plan.producer_id),
            producer_epoch=i16(plan.producer_epoch),
            group_id=GroupId(plan.group_id),
        )
    if isinstance(plan, TxnOffsetCommitPlan):
        offsets = dict(plan.offsets)
        return TxnOffsetCommitRequest(
            transactional_id=TransactionalId(plan.transactional_id),
            group_id=GroupId(plan.group.group_id),
            producer_id=ProducerId(plan.producer_id),
            producer_epoch=i16(plan.producer_epoch),
            generation_id=i32(plan.group.generation_id),
            member_id=plan.group.member_id,
            group_instance_id=plan.group.group_instance_id,
            topics=tuple(
                TxnOffsetCommitRequestTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        TxnOffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(offsets[TopicPartition(topic, p)]),
                            committed_leader_epoch=i32(-1),
                            committed_metadata="",
                        )
                        for p in parts
                    ),
                )
                for topic, parts in _by_topic(tuple(offsets)).items()
            ),
        )
    return EndTxnRequest(
        transactional_id=TransactionalId(plan.transactional_id),
        producer_id=ProducerId(plan.producer_id),
        producer_epoch=i16(plan.producer_epoch),
        committed=plan.committed,
    )


def _first_error(codes: list[ErrorCode]) -> int:
    """One error for a response with one per partition: the first that is not NONE,
    one that says what went wrong before OPERATION_NOT_ATTEMPTED (the partitions the
    coordinator did not try because another failed)."""
    failed = [c for c in codes if c != ErrorCode.none]
    real = [c for c in failed if c != ErrorCode.operation_not_attempted]
    return int((real or failed or [ErrorCode.none])[0])


def txn_answer(response: object) -> TxnAnswer:
    """A transactional response as the core reads it."""
    if isinstance(response, FindCoordinatorResponse):
        if len(response.coordinators) != 1:
            return TxnAnswer(BAD_MSG, message="FindCoordinator: not one coordinator")
        c = response.coordinators[0]
        return TxnAnswer(int(c.error_code), int(c.node_id), message=c.error_message)
    if isinstance(response, InitProducerIdResponse):
        return TxnAnswer(
            int(response.error_code),
            producer_id=int(response.producer_id),
            producer_epoch=int(response.producer_epoch),
        )
    if isinstance(response, AddPartitionsToTxnResponse):
        return TxnAnswer(
            _first_error(
                [
                    p.partition_error_code
                    for t in response.results_by_topic_v3_and_below
                    for p in t.results_by_partition
                ]
            )
        )
    if isinstance(response, AddOffsetsToTxnResponse | EndTxnResponse):
        return TxnAnswer(int(response.error_code))
    if isinstance(response, TxnOffsetCommitResponse):
        return TxnAnswer(
            _first_error([p.error_code for t in response.topics for p in t.partitions])
        )
    return TxnAnswer(BAD_MSG, message=f"unexpected {type(response).__name__}")
