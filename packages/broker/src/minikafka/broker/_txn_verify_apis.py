"""Transaction verification in the broker's request handlers (KIP-890 part 1).

- **AddPartitionsToTxn v4-5**, the brokers' form: several transactions in one request,
  each either added (as v0-3 do) or, with ``verify_only``, only checked; the
  transaction coordinator answers a check from its metadata at once
  (``TransactionCoordinator.verify_partitions_in_txn``).
- **Produce**: before a leader appends a transactional producer's first batch to a
  partition where its transaction is not open, the coordinator is asked
  (:class:`~._txn_verify.AddPartitionsToTxnManager`); the partitions it does not
  confirm are refused (INVALID_TXN_STATE, or NOT_ENOUGH_REPLICAS for what the producer
  should retry) and nothing of theirs is written; the others are appended with their
  guards (Kafka's ``ReplicaManager.handleProduceAppend``).
- **TxnOffsetCommit**: the group coordinator does the same for the group's partition
  of ``__consumer_offsets``, which AddOffsetsToTxn must have added (Kafka's
  ``CoordinatorRuntime.scheduleTransactionalWriteOperation``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

import trio
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.coordination import TransactionCoordinatorShell
from minikafka.net import Request, build, nested
from minikafka.replication import (
    ProducePartitionResult,
    ReplicaManagerShell,
    TransactionalProducer,
    TwoProducersError,
    TxnVerifier,
    produce_refusal,
    transactional_producer,
)

from ._group_offsets import partition_exists
from ._metadata_cache import MetadataCache
from ._txn_body import ADD_PARTITIONS_TO_TXN_BATCHED
from ._txn_verify import AddPartitionsToTxnManager

__all__ = [
    "append_produce",
    "handle_add_partitions_to_txn_batched",
    "verify_txn_offset_commit",
]

_NO_THROTTLE = datetime.timedelta(0)
ProduceResults = Callable[[dict[TopicPartition, ProducePartitionResult]], None]


async def handle_add_partitions_to_txn_batched(
    request: Request, transactions: TransactionCoordinatorShell, cache: MetadataCache
) -> None:
    """AddPartitionsToTxn v4-5 (from another broker, or this one): each transaction
    answered on its own, as v0-3 answer theirs: partitions that do not exist are
    UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED; otherwise the
    coordinator's answer, per partition for ``verify_only`` (TRANSACTION_ABORTABLE for
    a partition not in the transaction), one for all for an add."""
    body = request.body_as(ADD_PARTITIONS_TO_TXN_BATCHED)
    ids = [txn.transactional_id for txn in body.transactions]
    answers: list[dict[TopicPartition, ErrorCode]] = [{} for _ in ids]

    async def answer(index: int) -> None:
        txn = body.transactions[index]
        wanted = [
            TopicPartition(t.name, int(p)) for t in txn.topics for p in t.partitions
        ]
        unknown = {tp for tp in wanted if not partition_exists(cache, tp)}
        if unknown:
            answers[index] = {
                tp: ErrorCode.unknown_topic_or_partition
                if tp in unknown
                else ErrorCode.operation_not_attempted
                for tp in wanted
            }
        elif txn.verify_only:
            answers[index] = transactions.verify_partitions_in_txn(
                txn.transactional_id,
                int(txn.producer_id),
                int(txn.producer_epoch),
                frozenset(wanted),
            )
        else:
            error = await transactions.add_partitions_to_txn(
                txn.transactional_id,
                int(txn.producer_id),
                int(txn.producer_epoch),
                frozenset(wanted),
            )
            answers[index] = dict.fromkeys(wanted, error)

    async with trio.open_nursery() as nursery:
        for index in range(len(body.transactions)):
            nursery.start_soon(answer, index)
    cls = request.response_class()
    result_cls = nested(cls, "results_by_transaction")
    topic_cls = nested(result_cls, "topic_results")
    partition_cls = nested(topic_cls, "results_by_partition")
    request.respond(
        build(
            cls,
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.none,
            results_by_transaction=tuple(
                build(
                    result_cls,
                    transactional_id=transactional_id,
                    topic_results=tuple(
                        build(
                            topic_cls,
                            name=topic,
                            results_by_partition=tuple(
                                build(
                                    partition_cls,
                                    partition_index=partition,
                                    partition_error_code=error,
                                )
                                for partition, error in partitions
                            ),
                        )
                        for topic, partitions in _by_topic(errors).items()
                    ),
                )
                for transactional_id, errors in zip(ids, answers, strict=True)
            ),
        )
    )


def append_produce(
    replica_manager: ReplicaManagerShell,
    verifier: TxnVerifier | None,
    *,
    api_version: int,
    transactional_id: str | None,
    timeout_ms: int,
    acks: Acks,
    entries: Mapping[TopicPartition, bytearray],
    on_results: ProduceResults,
) -> None:
    """Append a producer's partitions, verifying a transactional producer's first
    writes with its coordinator first when ``transaction.partition.verification.enable``
    is on (``verifier`` None or disabled: appended at once, unchecked)."""
    if verifier is None or not verifier.enabled or not transactional_id:
        replica_manager.append_records(timeout_ms, acks, entries, on_results)
        return
    try:
        producer = transactional_producer(entries)
    except TwoProducersError as exc:
        on_results(
            {
                tp: ProducePartitionResult(
                    ErrorCode.invalid_producer_id_mapping, error_message=str(exc)
                )
                for tp in entries
            }
        )
        return
    if producer is None:  # no transactional batch: nothing to ask
        replica_manager.append_records(
            timeout_ms, acks, entries, on_results, verification_guards={}
        )
        return
    errors, guards = replica_manager.start_transaction_verification(producer)

    def proceed(unverified: dict[TopicPartition, ErrorCode]) -> None:
        refused = {}
        for tp, error in {**errors, **unverified}.items():
            code, message = produce_refusal(error)
            refused[tp] = ProducePartitionResult(code, error_message=message)
        remaining = {tp: r for tp, r in entries.items() if tp not in refused}
        if not remaining:
            on_results(refused)
            return
        replica_manager.append_records(
            timeout_ms,
            acks,
            remaining,
            lambda results: on_results({**refused, **results}),
            verification_guards=guards,
        )

    if not guards:
        proceed({})
        return
    verifier.verify(
        transactional_id,
        producer.producer_id,
        producer.producer_epoch,
        guards,
        api_version > 10,  # Produce v11+ knows TRANSACTION_ABORTABLE
        proceed,
    )


async def verify_txn_offset_commit(
    replica_manager: ReplicaManagerShell,
    verifier: AddPartitionsToTxnManager | None,
    *,
    api_version: int,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    offsets_partition: TopicPartition,
) -> ErrorCode:
    """NONE if the producer's offsets may go to ``offsets_partition``: its transaction
    is open there, or the coordinator confirms the partition was added (AddOffsetsToTxn);
    the guard is kept for the write. Otherwise the error every partition of the
    TxnOffsetCommit is answered with."""
    if verifier is None or not verifier.enabled:
        return ErrorCode.none
    producer = TransactionalProducer(
        producer_id, producer_epoch, {offsets_partition: -1}
    )
    errors, guards = replica_manager.start_transaction_verification(producer)
    if errors:
        return _operation_error(errors[offsets_partition])
    if not guards:
        return ErrorCode.none  # its transaction is open there
    done = trio.Event()
    answer: dict[TopicPartition, ErrorCode] = {}

    def answered(unverified: dict[TopicPartition, ErrorCode]) -> None:
        answer.update(unverified)
        done.set()

    verifier.verify(
        transactional_id,
        producer_id,
        producer_epoch,
        [offsets_partition],
        api_version >= 4,  # TxnOffsetCommit v4+ knows TRANSACTION_ABORTABLE
        answered,
    )
    await done.wait()
    error = answer.get(offsets_partition, ErrorCode.none)
    if error is ErrorCode.none:
        verifier.keep_guard(offsets_partition, producer_id, guards[offsets_partition])
    return _operation_error(error)


def _operation_error(error: ErrorCode) -> ErrorCode:
    """A group coordinator operation's failure as its client is told (Kafka's
    ``CoordinatorOperationExceptionHelper``): a verification that could not reach the
    transaction coordinator is COORDINATOR_LOAD_IN_PROGRESS (retried without looking
    the coordinator up again), a partition not here NOT_COORDINATOR."""
    if error is ErrorCode.network_exception:
        return ErrorCode.coordinator_load_in_progress
    if error in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.request_timed_out,
    ):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    return error


def _by_topic(
    errors: Mapping[TopicPartition, ErrorCode],
) -> dict[str, list[tuple[int, ErrorCode]]]:
    grouped: dict[str, list[tuple[int, ErrorCode]]] = {}
    for tp, error in errors.items():
        grouped.setdefault(tp.topic, []).append((tp.partition, error))
    return grouped
