"""The produce path (Kafka's ``ReplicaManager.appendRecords``): a producer's batches go
to each leader Partition, then the log; ``acks=0`` and ``acks=1`` are answered as soon
as the leader has appended, ``acks=all`` parks a DelayedProduce keyed by the partitions
it wrote, answered once the high watermark passes its batches (or its timeout runs out).

Each partition succeeds or fails on its own: no replica here, not the leader, too few
in-sync replicas for ``acks=all``, records the log refuses, a disk that failed. A
refusal carries the partition's log start offset, but for those Kafka answers without
one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import (
    NO_VERIFICATION_NEEDED,
    AppendOrigin,
    InvalidRecordError,
    LogAppendInfo,
    VerificationGuard,
)

from ._delayed import DelayedProduce
from ._manager_base import ReplicaManagerBase, ReplicaManagerResult
from ._partition import Partition
from ._partition_base import ReplicationError
from ._results import ProducePartitionResult, ProduceResponse
from ._txn_verification import TransactionalProducer

# The refusals Kafka's ReplicaManager.appendToLocalLog answers with no log start offset
# (-1); it gives the partition's for every other (invalid records, producer sequence
# and epoch errors, too few in-sync replicas).
_REFUSED_WITHOUT_LOG_START = frozenset(
    {
        ErrorCode.corrupt_message,
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.kafka_storage_error,
    }
)

_Entry = TypeVar("_Entry")
"""What ``_append`` appends per partition: a producer's batches, or a marker."""


@attrs.define(eq=False)
class ProducePath(ReplicaManagerBase):
    """Appends to leader partitions, answered now or when the HW passes."""

    def append_records(
        self,
        timeout_ms: int,
        required_acks: Acks,
        entries: Mapping[TopicPartition, bytearray],
        request_id: int,
        now: float,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verification_guards: Mapping[TopicPartition, VerificationGuard] | None = None,
    ) -> ReplicaManagerResult:
        """Append to each leader partition; answer now or when the HW passes (acks=all).

        The answer to ``request_id`` is among the result's replies unless it waits in
        the produce purgatory; a later call (a follower's fetch, :meth:`on_timer`)
        returns it then. ``origin`` COORDINATOR: a coordinator's records (Kafka's
        ``AppendOrigin``). ``verification_guards``: transaction verification is in
        force (KIP-890), with the guards of the partitions the coordinator verified
        (:meth:`start_transaction_verification`); None: not in force.
        """

        def append(
            partition: Partition, tp: TopicPartition, records: bytearray
        ) -> LogAppendInfo:
            guard = (
                None
                if verification_guards is None
                else verification_guards.get(tp, NO_VERIFICATION_NEEDED)
            )
            return partition.append_records_to_leader(
                records, required_acks, now, origin, guard
            )

        return self._append(timeout_ms, required_acks, entries, append, request_id, now)

    def start_transaction_verification(
        self, producer: TransactionalProducer
    ) -> tuple[
        dict[TopicPartition, ErrorCode], dict[TopicPartition, VerificationGuard]
    ]:
        """The partitions of ``producer``'s batches to ask the transaction coordinator
        about, each with its guard (Kafka's
        ``maybeStartTransactionVerificationForPartitions``), and those that cannot even
        be asked about, with their errors (no replica here, not the leader); a
        partition where the producer's transaction is open needs neither."""
        errors: dict[TopicPartition, ErrorCode] = {}
        guards: dict[TopicPartition, VerificationGuard] = {}
        for tp, sequence in producer.base_sequences.items():
            partition = self.partitions.get(tp)
            if partition is None:
                errors[tp] = self._missing_partition_result(tp).error_code
                continue
            try:
                guard = partition.maybe_start_transaction_verification(
                    producer.producer_id, sequence, producer.producer_epoch
                )
            except ReplicationError as exc:
                errors[tp] = exc.error_code
                continue
            if guard is not NO_VERIFICATION_NEEDED:
                guards[tp] = guard
        return errors, guards

    def append_txn_markers(
        self,
        timeout_ms: int,
        markers: Mapping[TopicPartition, TxnMarkerEntry],
        request_id: int,
        now: float,
    ) -> ReplicaManagerResult:
        """WriteTxnMarkers on this leader (Kafka's appendRecords with origin
        COORDINATOR): each partition's commit or abort marker, answered once the ISR has
        it (acks=all), as a producer's batch is."""

        def append(
            partition: Partition, tp: TopicPartition, marker: TxnMarkerEntry
        ) -> LogAppendInfo:
            return partition.append_txn_marker_to_leader(
                marker.producer_id,
                marker.producer_epoch,
                marker.commit,
                marker.coordinator_epoch,
                now,
            )

        return self._append(timeout_ms, Acks.ALL, markers, append, request_id, now)

    def _append(
        self,
        timeout_ms: int,
        required_acks: Acks,
        entries: Mapping[TopicPartition, _Entry],
        append: Callable[[Partition, TopicPartition, _Entry], LogAppendInfo],
        request_id: int,
        now: float,
    ) -> ReplicaManagerResult:
        """``append`` each partition's entry to its leader: one function for the whole
        request (not one object per partition), given the partition and its entry."""
        results: dict[TopicPartition, ProducePartitionResult] = {}
        waiting: dict[TopicPartition, int] = {}
        for tp, entry in entries.items():
            partition = self.partitions.get(tp)
            # aside: no replica of this partition here
            if partition is None:
                results[tp] = self._missing_partition_result(tp)
                continue
            try:
                info = append(partition, tp, entry)
            # aside: not the leader, or the ISR too small for acks=all
            except ReplicationError as exc:
                results[tp] = self._refused(partition, exc.error_code, str(exc))
                continue
            # aside: the disk failed
            except OSError as exc:
                results[tp] = ProducePartitionResult(
                    ErrorCode.kafka_storage_error,
                    error_message=self.storage_failed(tp, exc),
                )
                continue
            # aside: records the log refuses
            except InvalidRecordError as exc:
                # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD,
                # OUT_OF_ORDER_SEQUENCE...: nothing of this partition's data was
                # appended.
                results[tp] = self._refused(
                    partition, exc.error_code, str(exc), exc.record_errors
                )
                continue
            results[tp] = ProducePartitionResult(
                ErrorCode.none,
                base_offset=info.first_offset,
                log_append_time=info.log_append_time,
                log_start_offset=partition.log.log_start_offset,
            )
            if required_acks == Acks.ALL:  # only acks=all waits for the HW to pass
                waiting[tp] = info.last_offset + 1
            self._partition_changed(tp)
        if not waiting:
            return self._result(now, ProduceResponse(request_id, results))
        operation = DelayedProduce(
            now + timeout_ms / 1000,
            request_id,
            results,
            waiting,
            self.partitions.get,
            created=now,
        )
        if self.produce_purgatory.try_complete_else_watch(operation, waiting):
            return self._result(now, operation.response)
        return self._parked(now)

    @staticmethod
    def _refused(
        partition: Partition,
        error: ErrorCode,
        message: str,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> ProducePartitionResult:
        """A leader's refusal of a partition's records. Like Kafka's
        ``appendToLocalLog``, it carries the log start offset, except for the
        refusals Kafka answers without one (a corrupt or too large batch, not the
        leader)."""
        start = (
            -1
            if error in _REFUSED_WITHOUT_LOG_START
            else partition.log.log_start_offset
        )
        return ProducePartitionResult(
            error,
            log_start_offset=start,
            error_message=message,
            record_errors=record_errors,
        )


@attrs.frozen
class TxnMarkerEntry:
    """One partition's marker of a WriteTxnMarkers request."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
