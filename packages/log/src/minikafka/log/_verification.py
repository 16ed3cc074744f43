"""The leader's defence against hanging transactions (KIP-890 part 1): Kafka's
``VerificationStateEntry`` and ``VerificationGuard`` in the producer state.

A transactional batch opens its producer's transaction in a partition
(:mod:`._ongoing_txns`). If the transaction coordinator never heard of that partition
(a producer that skipped AddPartitionsToTxn, or whose retried batch arrived after its
transaction was aborted), no marker will ever close it: the transaction *hangs*, and
holds the last stable offset back for good. So before the first transactional batch of a
producer that has no transaction open here, the leader asks the coordinator whether the
partition is in the producer's transaction, and appends only if it is.

The question and its answer are apart in time, and a marker may be written in between:
the leader asks, the coordinator says yes, an abort marker ends the transaction, a new
transaction begins without this partition, and the old yes arrives. So each question
gets a fresh :class:`VerificationGuard` (an object compared by identity) and the append
must present the guard the log still holds for the producer; any transactional batch or
marker of the producer clears it, so a stale yes no longer matches.

The entry also keeps the lowest sequence seen while verifying: a batch with a higher
sequence of the same epoch is refused (OUT_OF_ORDER_SEQUENCE) until the lowest is
written, so a retried earlier batch cannot be overtaken by a later one while the
coordinator is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from minikafka.common import ErrorCode

from ._batch import InvalidRecordError, RecordBatchHeader
from ._producer_state import AppendOrigin, BatchMetadata, OutOfOrderSequenceError

if TYPE_CHECKING:
    from ._log import Log

__all__ = [
    "NO_VERIFICATION_NEEDED",
    "InvalidTxnStateError",
    "VerificationGuard",
    "VerificationStates",
    "maybe_start_transaction_verification",
    "validate_producers",
]


@attrs.define(eq=False, frozen=True)
class VerificationGuard:
    """One question to the coordinator: equal only to itself."""


NO_VERIFICATION_NEEDED = VerificationGuard()
"""Kafka's ``VerificationGuard.SENTINEL``: the producer's transaction is open here, so
there is nothing to ask; an append presenting it verifies nothing."""


class InvalidTxnStateError(InvalidRecordError):
    """A transactional batch the coordinator has not placed in an open transaction
    here: Kafka's INVALID_TXN_STATE (48)."""

    error_code = ErrorCode.invalid_txn_state


@attrs.define(eq=False)
class VerificationStateEntry:
    timestamp: int
    guard: VerificationGuard
    lowest_sequence: int
    epoch: int

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        """A lower sequence of the same epoch, or any of a newer epoch, is the one to
        wait for now (a bumped epoch restarts the sequences)."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


@attrs.define(eq=False)
class VerificationStates:
    """The verifications under way in one partition, by producer id."""

    _entries: dict[int, VerificationStateEntry] = attrs.field(factory=dict)

    def start(
        self, producer_id: int, sequence: int, epoch: int, now: int
    ) -> VerificationGuard:
        """The guard of the producer's verification, a new one unless one is under way
        (Kafka's ``maybeCreateVerificationStateEntry``)."""
        entry = self._entries.get(producer_id)
        if entry is None:
            entry = VerificationStateEntry(now, VerificationGuard(), sequence, epoch)
            self._entries[producer_id] = entry
        else:
            entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry.guard

    def guard(self, producer_id: int) -> VerificationGuard:
        entry = self._entries.get(producer_id)
        return NO_VERIFICATION_NEEDED if entry is None else entry.guard

    def check(
        self,
        header: RecordBatchHeader,
        position: int,
        presented: VerificationGuard,
        transaction_open: bool,
        from_client: bool = True,
    ) -> None:
        """Refuse a producer's batch the coordinator has not verified (Kafka's
        ``batchMissingRequiredVerification``), then a client's that would overtake the
        lowest sequence waiting for verification (a coordinator's batches have no
        sequence of their own: not checked, as Kafka checks sequences for clients),
        in Kafka's order: the guard first."""
        if not header.is_transactional or header.is_control:
            return
        entry = self._entries.get(header.producer_id)
        if not transaction_open and (
            entry is None
            or presented is NO_VERIFICATION_NEEDED
            or presented is not entry.guard
        ):
            raise InvalidTxnStateError(
                "Record was not part of an ongoing transaction", position
            )
        if (
            from_client
            and entry is not None
            and header.base_sequence > entry.lowest_sequence
        ):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {header.producer_id}: "
                f"{header.base_sequence} (incoming seq. number), "
                f"{entry.lowest_sequence} (earliest seen sequence)",
                position,
            )

    def clear(self, producer_id: int) -> None:
        """A transactional batch or marker of the producer was appended: its
        transaction is open (or ended) here, and any answer still on its way is stale."""
        self._entries.pop(producer_id, None)

    def remove_expired(self, now: int, expiration_ms: int) -> None:
        """Forget verifications never completed, as Kafka's ``removeExpiredProducers``
        does after ``producer.id.expiration.ms``."""
        for producer_id, entry in list(self._entries.items()):
            if now - entry.timestamp >= expiration_ms:
                del self._entries[producer_id]

    def __len__(self) -> int:
        return len(self._entries)


def maybe_start_transaction_verification(
    log: Log, producer_id: int, sequence: int, epoch: int
) -> VerificationGuard:
    """The guard of a question to the transaction coordinator about the producer's
    transaction in ``log``'s partition, or :data:`NO_VERIFICATION_NEEDED` when it is
    open there already (Kafka's ``UnifiedLog.maybeStartTransactionVerification``)."""
    txns = log.ongoing_txns
    if txns.is_open(producer_id):
        return NO_VERIFICATION_NEEDED
    return txns.verifications.start(producer_id, sequence, epoch, log.clock())


def validate_producers(
    log: Log,
    batches: Sequence[tuple[int, RecordBatchHeader]],
    origin: AppendOrigin,
    guard: VerificationGuard | None,
) -> BatchMetadata | None:
    """A leader's check of its producers' batches before it appends them: their
    sequences and epochs (the producer state's ``validate_append``: the original of a
    retried batch, or an error), then, with ``guard`` (verification in force, KIP-890),
    that a transactional batch whose producer has no transaction open here comes with
    the guard of the coordinator's yes, else INVALID_TXN_STATE (Kafka's order in
    ``analyzeAndValidateProducerState``)."""
    duplicate = log.producer_state.validate_append(batches, origin)
    if duplicate is not None or guard is None:
        return duplicate
    txns = log.ongoing_txns
    for position, header in batches:
        txns.verifications.check(
            header,
            position,
            guard,
            txns.is_open(header.producer_id),
            origin is AppendOrigin.CLIENT,
        )
    return None
