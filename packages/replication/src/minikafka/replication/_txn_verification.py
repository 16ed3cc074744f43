"""Transaction verification on the produce path (KIP-890 part 1): the part of Kafka's
``ReplicaManager.handleProduceAppend`` and ``AddPartitionsToTxnManager`` that decides,
without any I/O, what to ask the transaction coordinator and what its answer means for
the producer.

1. :func:`transactional_producer` finds the request's transactional producer (a
   produce request carries at most one: two are INVALID_PRODUCER_ID_MAPPING, Kafka's
   ``InvalidPidMappingException``).
2. :meth:`~._produce_path.ProducePath.start_transaction_verification` asks each leader
   partition's log for a guard (:mod:`minikafka.log._verification`); the partitions
   whose producer already has a transaction open there need no question.
3. The shell sends one AddPartitionsToTxn (v4+, ``verify_only``) per coordinator broker
   and maps the coordinator's answer with :func:`verification_error` (as Kafka's
   ``AddPartitionsToTxnManager``), then :func:`produce_refusal` turns each error into
   what the producer is told (as ``handleProduceAppend``), and the append proceeds
   with the guards for the partitions verified.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.log import RecordBatchHeader, iter_batches

__all__ = [
    "TransactionalProducer",
    "TwoProducersError",
    "TxnVerifier",
    "produce_refusal",
    "transactional_producer",
    "verification_error",
]


@attrs.frozen
class TransactionalProducer:
    producer_id: int
    producer_epoch: int
    base_sequences: Mapping[TopicPartition, int]
    """Each partition's first transactional batch's sequence (the lowest to wait for)."""


class TxnVerifier(Protocol):
    """Who asks the transaction coordinators (the broker's
    ``AddPartitionsToTxnManager``): the port the ReplicaManager's shell holds, as
    Kafka's ReplicaManager holds its manager."""

    @property
    def enabled(self) -> bool:
        """``transaction.partition.verification.enable``."""

    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        abortable_understood: bool,
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """Ask; ``callback`` with the partitions not verified and why."""


class TwoProducersError(Exception):
    """Transactional records of more than one producer id in one request."""


def transactional_producer(
    entries: Mapping[TopicPartition, bytes | bytearray | memoryview],
) -> TransactionalProducer | None:
    """The request's transactional producer and where it writes (None: no
    transactional batch). Raises :class:`TwoProducersError`; a partition whose bytes
    are not whole batches is left to the log to refuse."""
    producers: set[tuple[int, int]] = set()
    sequences: dict[TopicPartition, int] = {}
    for tp, records in entries.items():
        try:
            headers = [h for _, h in iter_batches(records, verify_crc=False)]
        except Exception:
            continue
        transactional = [h for h in headers if _is_transactional_data(h)]
        for header in transactional:
            producers.add((header.producer_id, header.producer_epoch))
        if transactional:
            sequences[tp] = headers[0].base_sequence
    if len(producers) > 1:
        raise TwoProducersError(
            "Transactional records contained more than one producer ID"
        )
    if not producers:
        return None
    ((producer_id, epoch),) = producers
    return TransactionalProducer(producer_id, epoch, sequences)


def _is_transactional_data(header: RecordBatchHeader) -> bool:
    return header.producer_id >= 0 and header.is_transactional


# The coordinator's answers a producer retries its batch after: Kafka translates them to
# NOT_ENOUGH_REPLICAS, which older producers retry without refreshing their metadata.
_RETRIED_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.concurrent_transactions,
        ErrorCode.network_exception,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    }
)


def verification_error(error: ErrorCode, abortable_understood: bool) -> ErrorCode:
    """A partition's error in the coordinator's verify-only answer, as the leader
    reports it (Kafka's ``AddPartitionsToTxnHandler``): PRODUCER_FENCED is
    INVALID_PRODUCER_EPOCH, which producers expect here; TRANSACTION_ABORTABLE (the
    partition is not in the transaction) is INVALID_TXN_STATE for a request too old to
    know it (Produce before v11, TxnOffsetCommit before v4)."""
    if error is ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if error is ErrorCode.transaction_abortable and not abortable_understood:
        return ErrorCode.invalid_txn_state
    return error


def produce_refusal(error: ErrorCode) -> tuple[ErrorCode, str | None]:
    """What a producer is told for a partition that could not be verified (Kafka's
    ``handleProduceAppend``): the error and its message (None: the error's default)."""
    if error is ErrorCode.invalid_txn_state:
        return error, "Partition was not added to the transaction"
    if error in _RETRIED_AS_NOT_ENOUGH_REPLICAS:
        return (
            ErrorCode.not_enough_replicas,
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {error.name.upper()}",
        )
    return error, None
