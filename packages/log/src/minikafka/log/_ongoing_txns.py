"""A partition's open transactions and its last stable offset (KIP-98).

A transactional producer's records are appended like any others, and become *decided*
only when the producer's marker (:mod:`._markers`) follows them. A read_committed
consumer may read only up to the **last stable offset** (LSO): the first offset of the
oldest transaction still undecided, or the high watermark when none is. So, beside the
producers' sequences (:mod:`._producer_state`), the log keeps (Kafka's
``ProducerStateManager`` ``ongoingTxns`` and ``unreplicatedTxns``):

- each producer's open transaction, from the offset of its first batch in this
  partition;
- the transactions a marker has ended but whose marker is not yet below the high
  watermark (not *replicated*): until it is, a new leader might not have the marker,
  so the transaction still holds the LSO back.

A marker must come from the producer's current epoch or a newer one, and from the
coordinator's current epoch or a newer one (an older coordinator is a zombie: Kafka's
TRANSACTION_COORDINATOR_FENCED). It ends the producer's transaction and yields a
:class:`CompletedTxn`; an aborted one becomes an entry of the segment's ``.txnindex``
(:class:`~._txn_index.AbortedTxn`), with the LSO the abort left.
"""

from __future__ import annotations

import attrs

from minikafka.common import ErrorCode

from ._batch import InvalidRecordError, RecordBatchHeader
from ._markers import EndTxnMarker
from ._producer_state import InvalidProducerEpochError
from ._txn_index import AbortedTxn
from ._verification import VerificationStates

__all__ = ["CompletedTxn", "OngoingTransactions", "TransactionCoordinatorFencedError"]


class TransactionCoordinatorFencedError(InvalidRecordError):
    """A marker from an older coordinator epoch than the producer's last one:
    TRANSACTION_COORDINATOR_FENCED (52)."""

    error_code = ErrorCode.transaction_coordinator_fenced


@attrs.frozen
class CompletedTxn:
    """A transaction a marker ended: the producer's records from ``first_offset`` to the
    marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@attrs.define(eq=False)
class OngoingTransactions:
    _open: dict[int, int] = attrs.field(factory=dict)
    """Producer id -> the first offset of its open transaction, in append order (so
    in first-offset order: the oldest open transaction is the first)."""
    _unreplicated: dict[int, CompletedTxn] = attrs.field(factory=dict)
    """Marker offset -> the transaction it ended, while the marker is above the HW."""
    _coordinator_epochs: dict[int, int] = attrs.field(factory=dict)
    verifications: VerificationStates = attrs.field(factory=VerificationStates)
    """KIP-890's questions to the transaction coordinator under way, by producer id:
    any transactional batch or marker of the producer ends its question."""
    _producer_epochs: dict[int, int] = attrs.field(factory=dict)

    def on_batch(self, header: RecordBatchHeader) -> None:
        """A data batch was appended: a transactional one opens (or continues) its
        producer's transaction."""
        if header.is_transactional and not header.is_control:
            self._open.setdefault(header.producer_id, header.base_offset)
            self.verifications.clear(header.producer_id)
        if header.producer_id >= 0:
            self._producer_epochs[header.producer_id] = max(
                header.producer_epoch, self._producer_epochs.get(header.producer_id, -1)
            )

    def is_open(self, producer_id: int) -> bool:
        """Whether the producer has a transaction open here (Kafka's
        ``hasOngoingTransaction``)."""
        return producer_id in self._open

    def check_marker(
        self, producer_id: int, producer_epoch: int, marker: EndTxnMarker
    ) -> None:
        """Refuse a marker from a fenced producer epoch or coordinator epoch (before the
        leader appends it)."""
        known = self._producer_epochs.get(producer_id, -1)
        if producer_epoch < known:
            raise InvalidProducerEpochError(
                f"a marker of producer {producer_id} at epoch {producer_epoch}, older "
                f"than its epoch {known}"
            )
        coordinator = self._coordinator_epochs.get(producer_id, -1)
        if marker.coordinator_epoch < coordinator:
            raise TransactionCoordinatorFencedError(
                f"a marker of producer {producer_id} from coordinator epoch "
                f"{marker.coordinator_epoch}, older than {coordinator}"
            )

    def on_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
        offset: int,
    ) -> CompletedTxn:
        """A marker was appended at ``offset``: its producer's transaction is decided
        (a marker with no open transaction, a retried one, ends an empty range)."""
        first = self._open.pop(producer_id, offset)
        self.verifications.clear(producer_id)
        completed = CompletedTxn(producer_id, first, offset, not marker.commit)
        self._unreplicated[offset] = completed
        self._coordinator_epochs[producer_id] = marker.coordinator_epoch
        self._producer_epochs[producer_id] = max(
            producer_epoch, self._producer_epochs.get(producer_id, -1)
        )
        return completed

    def aborted_entry(self, completed: CompletedTxn) -> AbortedTxn:
        """The ``.txnindex`` entry of an aborted transaction: the LSO once it ended is the
        oldest transaction still open, or the offset after its marker."""
        return AbortedTxn(
            completed.producer_id,
            completed.first_offset,
            completed.last_offset,
            self._first_open(default=completed.last_offset + 1),
        )

    def on_high_watermark(self, high_watermark: int) -> None:
        """Markers below the high watermark are on every in-sync replica: their
        transactions no longer hold the LSO back."""
        if not self._unreplicated:  # no marker waits: nothing to build a list for
            return
        for offset in [o for o in self._unreplicated if o < high_watermark]:
            del self._unreplicated[offset]

    def first_unstable_offset(self) -> int | None:
        """The first offset a read_committed reader may not read yet (None: the HW is
        the LSO): the oldest open or unreplicated transaction's first offset."""
        if not self._unreplicated and not self._open:
            return None  # no transaction: asked on every append, so no list built
        candidates = [t.first_offset for t in self._unreplicated.values()]
        if self._open:
            candidates.append(next(iter(self._open.values())))
        return min(candidates, default=None)

    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: the first unstable offset, never past the high watermark."""
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def truncate_to(self, offset: int) -> None:
        """The log was truncated at ``offset``: transactions that began there or later
        are gone, and one whose marker was cut off is open again from its first offset
        (markers below the high watermark are never truncated)."""
        still_open = {p: f for p, f in self._open.items() if f < offset}
        for marker_offset, txn in list(self._unreplicated.items()):
            if marker_offset >= offset:
                del self._unreplicated[marker_offset]
                if txn.first_offset < offset:
                    still_open[txn.producer_id] = txn.first_offset
        # Oldest first, as appends made them.
        self._open = dict(sorted(still_open.items(), key=lambda item: item[1]))

    def snapshot_fields(self, producer_id: int) -> tuple[int, int]:
        """What a ``.snapshot`` keeps of a producer's transactions: the coordinator
        epoch of its last marker and its open transaction's first offset (-1: none)."""
        return (
            self._coordinator_epochs.get(producer_id, -1),
            self._open.get(producer_id, -1),
        )

    def restore(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        txn_first_offset: int,
    ) -> None:
        """A producer as a snapshot kept it (Kafka's ``loadFromSnapshot``); the open
        transactions stay in first-offset order."""
        self._producer_epochs[producer_id] = producer_epoch
        if coordinator_epoch >= 0:
            self._coordinator_epochs[producer_id] = coordinator_epoch
        if txn_first_offset >= 0:
            self._open[producer_id] = txn_first_offset
            self._open = dict(sorted(self._open.items(), key=lambda item: item[1]))

    def _first_open(self, default: int) -> int:
        return next(iter(self._open.values()), default)
