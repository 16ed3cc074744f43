"""The transaction coordinator's requests (KIP-98): Kafka's ``TransactionCoordinator``,
as a core.

Each call takes ``now`` (ms) and returns a :class:`~minikafka.common.CoreResult`: the
``__transaction_state`` records to append (:class:`TxnRecord`), the answers to give once
they are appended (:class:`TxnReply`; an answer that must wait for its record to be
*committed* comes from :meth:`TransactionCoordinator.complete_write` instead), and the
markers to write to the transaction's partitions (:class:`TxnMarkers`, Kafka's
WriteTxnMarkers). A move of a transaction is prepared, written, and completed only when
the shell reports its record committed; meanwhile other requests for the id are answered
CONCURRENT_TRANSACTIONS.

InitProducerId with a transactional id (a new id, an epoch bump, KIP-360's recovery,
the rotation of an exhausted epoch, and the fencing of a producer whose transaction is
open: aborted, the new producer told to retry), AddPartitionsToTxn (AddOffsetsToTxn is
one, with the group's partition of ``__consumer_offsets``), EndTxn, the completion once
the markers are written, loading and unloading a partition, and what time decides
(aborting timed-out transactions, expiring idle ids). TxnOffsetCommit is the group
coordinator's. KIP-890 part 1's verification (a partition leader asking whether a
partition is in a producer's transaction) is answered at once, nothing written. Not
yet: the transactions version 2 protocol (KIP-890 part 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.trace import NullTracer, Tracer

# A failed write of either coordinator's record is reported the same way in Kafka
# (appendTransactionToLog as storeGroup).
from ..group._results import store_group_error as _write_error
from ._txn_config import TxnConfig
from ._txn_events import TxnStateChanged
from ._txn_log import key_bytes, value_bytes
from ._txn_metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    ProducerEpochExhaustedError,
    ProducerFencedError,
    TransactionMetadata,
    TxnTransitMetadata,
)
from ._txn_state import TransactionState
from ._txn_state_manager import TransactionStateManager, TransactionUnavailableError

__all__ = [
    "TransactionCoordinator",
    "TxnConfig",
    "TxnMarkers",
    "TxnRecord",
    "TxnReply",
    "TxnResult",
]

_S = TransactionState


@attrs.frozen
class TxnRecord:
    """A record for ``__transaction_state``-``partition`` (value None: a tombstone)."""

    partition: int
    key: bytes
    value: bytes | None
    write_id: int = 0
    """Which write of the id this is: the shell reports its outcome with it, so a late
    report of an earlier write (answered when its partition was unloaded) completes
    nothing."""


@attrs.frozen
class TxnReply:
    """An answer to the request numbered ``request_id``."""

    request_id: int
    error_code: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@attrs.frozen
class TxnMarkers:
    """Commit or abort markers for each of a transaction's partitions (WriteTxnMarkers
    to their leaders); the shell reports them written with ``markers_written``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    coordinator_epoch: int
    """The leader epoch of the id's ``__transaction_state`` partition here: a
    partition's leader refuses markers from an older one (a coordinator that lost the
    partition, TRANSACTION_COORDINATOR_FENCED)."""


TxnResult = CoreResult[TxnRecord, TxnReply, TxnMarkers]


@attrs.define
class _Write:
    """A prepared move whose record is being written, and what follows its commit."""

    transit: TxnTransitMetadata
    request_id: int | None
    """Whom to answer once the record is committed (None: nobody)."""
    write_id: int
    gives_producer: bool = False
    """The answer carries the producer id and epoch (InitProducerId's does)."""


@attrs.define(eq=False)
class TransactionCoordinator:
    manager: TransactionStateManager
    next_producer_id: Callable[[], int]
    """A new producer id from the broker's block (Kafka's ProducerIdManager)."""
    config: TxnConfig = attrs.field(factory=TxnConfig)
    value_version: int = 1
    """The ``TransactionLogValue`` version written: Kafka 4's is 1."""
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True)
    """Where the moves of each transaction are traced (:class:`TxnStateChanged`)."""
    _writes: dict[str, _Write] = attrs.field(init=False, factory=dict)
    _last_write_id: int = attrs.field(init=False, default=0)
    _completions_to_retry: dict[str, tuple[int, int]] = attrs.field(
        init=False, factory=dict
    )
    """Transactional id -> (coordinator epoch, when): completions whose record could
    not be written, written again then."""
    _next_abort_check: int | None = attrs.field(init=False, default=None)
    _next_expiry_check: int | None = attrs.field(init=False, default=None)

    # --- InitProducerId -----------------------------------------------------------------

    def init_producer_id(
        self,
        request_id: int,
        transactional_id: str,
        txn_timeout_ms: int,
        expected: tuple[int, int] | None,
        now: int,
    ) -> TxnResult:
        """InitProducerId with a transactional id; ``expected`` is the producer id and
        epoch a producer recovering from an error names (KIP-360), None for a new one."""
        if not transactional_id:
            return self._error(request_id, ErrorCode.invalid_request)
        if not 0 < txn_timeout_ms <= self.config.transaction_max_timeout_ms:
            return self._error(request_id, ErrorCode.invalid_transaction_timeout)
        try:
            meta = self.manager.get(transactional_id)
        except TransactionUnavailableError as exc:
            return self._error(request_id, exc.error_code)
        if meta is None:
            meta = self.manager.put(
                TransactionMetadata(
                    transactional_id,
                    self.next_producer_id(),
                    NO_PRODUCER_ID,
                    NO_PRODUCER_EPOCH,
                    NO_PRODUCER_EPOCH,
                    txn_timeout_ms,
                    txn_last_update_timestamp=now,
                )
            )
        if meta.pending is not None:
            return self._error(request_id, ErrorCode.concurrent_transactions)
        if expected is not None and not _valid_producer(meta, *expected):
            return self._error(request_id, ErrorCode.producer_fenced)
        if meta.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return self._error(request_id, ErrorCode.concurrent_transactions)
        if meta.state in (_S.ONGOING, _S.PREPARE_EPOCH_FENCE):
            # A new producer while a transaction is open: fence the old one with a
            # bumped epoch, abort its transaction, and have the new one retry.
            return self._fence_and_abort(meta, now) + self._error(
                request_id, ErrorCode.concurrent_transactions
            )
        if meta.state not in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            return self._error(request_id, ErrorCode.unknown_server_error)
        try:
            transit = meta.prepare_increment_producer_epoch(
                txn_timeout_ms, None if expected is None else expected[1], now
            )
        except ProducerEpochExhaustedError:
            transit = meta.prepare_producer_id_rotation(
                self.next_producer_id(), txn_timeout_ms, now, expected is not None
            )
        except ProducerFencedError:
            return self._error(request_id, ErrorCode.producer_fenced)
        return self._write(meta, transit, request_id, gives_producer=True)

    # --- AddPartitionsToTxn and EndTxn ---------------------------------------------------

    def add_partitions_to_txn(
        self,
        request_id: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        now: int,
    ) -> TxnResult:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition):
        the transaction is Ongoing with these partitions once the record is written."""
        meta, error = self._producer_metadata(
            transactional_id, producer_id, producer_epoch
        )
        if meta is None:
            return self._error(request_id, error)
        if meta.pending is not None or meta.state in (
            _S.PREPARE_COMMIT,
            _S.PREPARE_ABORT,
        ):
            return self._error(request_id, ErrorCode.concurrent_transactions)
        if meta.state is _S.ONGOING and partitions <= meta.topic_partitions:
            return self._error(request_id, ErrorCode.none)  # added already
        if meta.state not in (
            _S.EMPTY,
            _S.ONGOING,
            _S.COMPLETE_COMMIT,
            _S.COMPLETE_ABORT,
        ):
            return self._error(request_id, ErrorCode.invalid_txn_state)
        return self._write(
            meta, meta.prepare_add_partitions(partitions, now), request_id
        )

    def verify_partitions_in_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with ``verify_only`` (KIP-890 part 1): whether each
        partition is in the producer's open transaction, asked by the partition's
        leader before it appends the producer's first transactional batch there (Kafka's
        ``handleVerifyPartitionsInTransaction``). Nothing is written: a partition not
        added is TRANSACTION_ABORTABLE; the producer's id and epoch are checked as for
        an add, and an ending transaction is CONCURRENT_TRANSACTIONS. A move being
        written is not waited for: the leader's append checks its guard at the end."""
        meta, error = self._producer_metadata(
            transactional_id, producer_id, producer_epoch
        )
        if meta is None:
            return dict.fromkeys(partitions, error)
        if meta.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return dict.fromkeys(partitions, ErrorCode.concurrent_transactions)
        return {
            tp: ErrorCode.none
            if tp in meta.topic_partitions
            else ErrorCode.transaction_abortable
            for tp in partitions
        }

    def end_txn(
        self,
        request_id: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now: int,
    ) -> TxnResult:
        """EndTxn: PrepareCommit or PrepareAbort is written (and answered), then the
        markers go out; a retry of an end already done is answered NONE, an end that
        contradicts the state INVALID_TXN_STATE."""
        meta, error = self._producer_metadata(
            transactional_id, producer_id, producer_epoch
        )
        if meta is None:
            return self._error(request_id, error)
        if meta.pending is not None:
            return self._error(request_id, ErrorCode.concurrent_transactions)
        done, ending = (
            (_S.COMPLETE_COMMIT, _S.PREPARE_COMMIT)
            if commit
            else (_S.COMPLETE_ABORT, _S.PREPARE_ABORT)
        )
        if meta.state is _S.ONGOING:
            target = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            transit = meta.prepare_abort_or_commit(target, now)
            return self._write(meta, transit, request_id)
        if meta.state is done:
            return self._error(request_id, ErrorCode.none)
        if meta.state is ending:
            return self._error(request_id, ErrorCode.concurrent_transactions)
        return self._error(request_id, ErrorCode.invalid_txn_state)

    # --- leadership of __transaction_state ----------------------------------------------

    def load_partition(
        self,
        partition: int,
        coordinator_epoch: int,
        records: Iterable[tuple[bytes, bytes | None]],
        now: int,
    ) -> TxnResult:
        """This broker leads ``partition`` in ``coordinator_epoch``: replay its records;
        the transactions it finds ended but not completed get their markers again
        (Kafka's ``loadTransactionsForTxnTopicPartition``)."""
        loaded = self.manager.load_partition(partition, records, coordinator_epoch)
        if self._next_abort_check is None or self._next_expiry_check is None:
            config = self.config
            self._next_abort_check = (
                now + config.abort_timed_out_transaction_cleanup_interval_ms
            )
            self._next_expiry_check = (
                now + config.remove_expired_transaction_cleanup_interval_ms
            )
        return TxnResult(messages=tuple(self._markers(m) for m in loaded.to_complete))

    def unload_partition(self, partition: int) -> TxnResult:
        """Leadership of ``partition`` moved away: its ids are forgotten, and a request
        whose record was being written is answered NOT_COORDINATOR."""
        self.manager.unload_partition(partition)
        for transactional_id in [
            t
            for t in self._completions_to_retry
            if self.manager.partition_for(t) == partition
        ]:
            del self._completions_to_retry[transactional_id]  # the next leader's now
        out = TxnResult()
        for transactional_id in [
            t for t in self._writes if self.manager.partition_for(t) == partition
        ]:
            out += self._answer(
                self._writes.pop(transactional_id), ErrorCode.not_coordinator
            )
        return out

    # --- what time decides -------------------------------------------------------------

    def abort_timed_out(self, now: int) -> TxnResult:
        """Abort every open transaction past its ``transaction.timeout.ms``, fencing its
        producer with a bumped epoch first, as Kafka's ``abortTimedOutTransactions``."""
        out = TxnResult()
        for meta in self.manager.timed_out(now):
            out += self._fence_and_abort(meta, now)
        return out

    def expire_transactional_ids(self, now: int) -> TxnResult:
        """Remove the ids idle between transactions for longer than
        ``transactional.id.expiration.ms``: a tombstone each."""
        out = TxnResult()
        expiry = self.config.transactional_id_expiration_ms
        for meta in self.manager.expired(now, expiry):
            out += self._write(meta, meta.prepare_dead(), None)
        return out

    def next_deadline(self) -> int | None:
        """When :meth:`on_timer` is next due (ms; None: nothing is led here yet)."""
        due = [when for _, when in self._completions_to_retry.values()]
        if self._next_abort_check is not None and self._next_expiry_check is not None:
            due += [self._next_abort_check, self._next_expiry_check]
        return min(due, default=None)

    def on_timer(self, now: int) -> TxnResult:
        """The periodic checks that are due: timed-out transactions aborted every
        ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, idle ids
        expired every ``transaction.remove.expired.transaction.cleanup.interval.ms``
        (Kafka's two scheduled tasks)."""
        config = self.config
        out = TxnResult()
        for transactional_id, (epoch, when) in list(self._completions_to_retry.items()):
            if when <= now:
                del self._completions_to_retry[transactional_id]
                out += self.markers_written(transactional_id, epoch, now)
        if self._next_abort_check is None or self._next_expiry_check is None:
            return out
        if now >= self._next_abort_check:
            out += self.abort_timed_out(now)
            self._next_abort_check = (
                now + config.abort_timed_out_transaction_cleanup_interval_ms
            )
        if now >= self._next_expiry_check:
            out += self.expire_transactional_ids(now)
            self._next_expiry_check = (
                now + config.remove_expired_transaction_cleanup_interval_ms
            )
        return out

    # --- the records and markers the shell reports --------------------------------------

    def complete_write(
        self,
        transactional_id: str,
        error: ErrorCode,
        now: int,
        write_id: int | None = None,
    ) -> TxnResult:
        """The record of the id's pending move is committed (``error`` NONE) or could
        not be (the move is forgotten and the requester gets the error, Kafka's
        mapping: a coordinator that lost its partition says NOT_COORDINATOR).
        ``write_id``: the record's (:class:`TxnRecord`), to tell a late report of an
        earlier write from the current one's (None: the current one)."""
        write = self._writes.get(transactional_id)
        if write is None or write_id not in (None, write.write_id):
            return TxnResult()  # answered already, when its partition was unloaded
        del self._writes[transactional_id]
        try:
            meta = self.manager.get(transactional_id)
        except TransactionUnavailableError:
            meta = None
        if meta is None or meta.pending != write.transit:
            return self._answer(write, ErrorCode.not_coordinator)
        if error is not ErrorCode.none:
            meta.abandon_transition()
            if write.transit.state in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
                # The markers are written and nobody will ask again: the completion is
                # retried after a backoff, as Kafka's txnLogAppendRetryQueue does.
                epoch = self.manager.coordinator_epoch(transactional_id)
                retry_at = now + self.config.retry_backoff_ms
                self._completions_to_retry[transactional_id] = (epoch or 0, retry_at)
            return self._answer(write, _write_error(error))
        previous = meta.state
        meta.complete_transition(write.transit)
        if self.tracer.enabled:
            event = TxnStateChanged(
                transactional_id,
                previous.value,
                meta.state.value,
                meta.producer_id,
                meta.producer_epoch,
                len(meta.topic_partitions),
            )
            self.tracer.emit(event, now / 1000)
        out = self._answer(write, ErrorCode.none)
        if meta.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            out += TxnResult(messages=(self._markers(meta),))
        if meta.state is _S.DEAD:
            self.manager.remove(transactional_id)
        return out

    def markers_written(
        self, transactional_id: str, coordinator_epoch: int, now: int
    ) -> TxnResult:
        """Every partition of the ending transaction has its marker: it completes."""
        try:
            meta = self.manager.get(transactional_id)
        except TransactionUnavailableError:
            return TxnResult()  # the partition moved: its new coordinator resends them
        if (
            meta is None
            or self.manager.coordinator_epoch(transactional_id) != coordinator_epoch
            or meta.pending is not None
            or meta.state not in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT)
        ):
            return TxnResult()
        return self._write(meta, meta.prepare_complete(now), None)

    # --- helpers -------------------------------------------------------------------------

    def _producer_metadata(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[TransactionMetadata | None, ErrorCode]:
        """The id's metadata if the request's producer owns it, else the error."""
        if not transactional_id:
            return None, ErrorCode.invalid_request
        try:
            meta = self.manager.get(transactional_id)
        except TransactionUnavailableError as exc:
            return None, exc.error_code
        if meta is None or meta.producer_id != producer_id:
            return None, ErrorCode.invalid_producer_id_mapping
        if meta.producer_epoch != producer_epoch:
            return None, ErrorCode.producer_fenced
        return meta, ErrorCode.none

    def _fence_and_abort(self, meta: TransactionMetadata, now: int) -> TxnResult:
        """Bump the epoch of an open transaction (once: a fencing whose abort could not
        be written is not bumped again) and write its abort."""
        if meta.state is _S.ONGOING and meta.producer_epoch < MAX_PRODUCER_EPOCH:
            # (At the last epoch there is none to fence with: the abort goes alone.)
            meta.complete_transition(meta.prepare_fence_producer_epoch())
        transit = meta.prepare_abort_or_commit(_S.PREPARE_ABORT, now)
        return self._write(meta, transit, None)

    def _write(
        self,
        meta: TransactionMetadata,
        transit: TxnTransitMetadata,
        request_id: int | None,
        gives_producer: bool = False,
    ) -> TxnResult:
        self._last_write_id += 1
        write_id = self._last_write_id
        self._writes[meta.transactional_id] = _Write(
            transit, request_id, write_id, gives_producer
        )
        value = (
            None
            if transit.state is _S.DEAD
            else value_bytes(transit, self.value_version)
        )
        record = TxnRecord(
            self.manager.partition_for(meta.transactional_id),
            key_bytes(meta.transactional_id),
            value,
            write_id,
        )
        return TxnResult(records=(record,))

    def _markers(self, meta: TransactionMetadata) -> TxnMarkers:
        epoch = self.manager.coordinator_epoch(meta.transactional_id)
        return TxnMarkers(
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
            meta.state is _S.PREPARE_COMMIT,
            frozenset(meta.topic_partitions),
            -1 if epoch is None else epoch,
        )

    @staticmethod
    def _answer(write: _Write, error: ErrorCode) -> TxnResult:
        if write.request_id is None:
            return TxnResult()
        if error is not ErrorCode.none or not write.gives_producer:
            return TxnResult(replies=(TxnReply(write.request_id, error),))
        reply = TxnReply(
            write.request_id,
            ErrorCode.none,
            write.transit.producer_id,
            write.transit.producer_epoch,
        )
        return TxnResult(replies=(reply,))

    @staticmethod
    def _error(request_id: int, error: ErrorCode) -> TxnResult:
        return TxnResult(replies=(TxnReply(request_id, error),))


def _valid_producer(meta: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Whether a recovering producer's id and epoch may take this id over (Kafka's
    ``isValidProducerId``): the metadata is new (no epoch yet), the id is the current
    one (its epoch is checked at the bump), or it is the previous one at an exhausted
    epoch (a retry of a rotation whose answer was lost)."""
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or (producer_id == meta.last_producer_id and epoch >= 2**15 - 2)
    )
