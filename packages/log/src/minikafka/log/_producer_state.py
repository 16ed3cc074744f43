"""Idempotent producers' state: what a partition's log remembers of each producer (KIP-98).

Seed 000's produce path with an idempotent producer (``enable.idempotence``, the default
since Kafka 3.0). The producer holds a producer id and epoch and numbers each partition's
records 0, 1, 2, ... in its batches' ``baseSequence``. When a produce request times out
it sends the same batch again, and the leader may already have appended the first copy.
So for each producer the log keeps its epoch and the metadata of its last five batches
(Kafka's ProducerStateManager and ProducerAppendInfo):

- a batch that repeats one of the five is a *duplicate*: it is not appended again, and
  the producer is answered with the original batch's offsets;
- any other batch must continue the sequence where the producer's last batch ended,
  in the producer's current epoch, or it is refused.

Five is the most a producer can have unacknowledged at once: with idempotence
``max.in.flight.requests.per.connection`` may not exceed 5, so no retry reaches further
back than that.

Only batch headers are read: producerId, producerEpoch, baseSequence and lastOffsetDelta
say everything. A batch with producerId -1 comes from a producer without idempotence:
the log keeps nothing for it and checks nothing.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence

import attrs

from minikafka.common import ErrorCode

from ._batch import (
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    InvalidRecordError,
    RecordBatchHeader,
)


class AppendOrigin(enum.Enum):
    """Who appends a leader's batches (Kafka's ``AppendOrigin``): a producer, whose
    sequences are checked, or a coordinator writing as a transaction's producer (its
    TxnOffsetCommit offsets), whose epoch only is."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


NUM_BATCHES_TO_RETAIN = 5
"""Batches remembered per producer: the idempotent producer's in-flight limit."""
MAX_SEQUENCE = 2**31 - 1
"""The largest sequence (Java's Integer.MAX_VALUE); the one after it is 0."""


class OutOfOrderSequenceError(InvalidRecordError):
    """A batch that does not continue its producer's sequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45)."""

    error_code = ErrorCode.out_of_order_sequence_number


class InvalidProducerEpochError(InvalidRecordError):
    """A batch from an older epoch than its producer's latest: INVALID_PRODUCER_EPOCH (47).

    A newer epoch means another instance of the producer took over (or the producer
    bumped its epoch to reset its sequences), so the old one's writes are fenced.
    """

    error_code = ErrorCode.invalid_producer_epoch


@attrs.frozen
class BatchMetadata:
    """One appended batch of a producer, as a retry of it is matched and answered."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


def _retained_batches() -> deque[BatchMetadata]:
    return deque(maxlen=NUM_BATCHES_TO_RETAIN)  # appending a sixth drops the oldest


@attrs.define(eq=False)
class ProducerStateEntry:
    """What the log knows of one producer: its epoch and its last few batches."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batch_metadata: deque[BatchMetadata] = attrs.field(factory=_retained_batches)
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def find_duplicate(self, header: RecordBatchHeader) -> BatchMetadata | None:
        """The retained batch ``header`` repeats: same epoch, same first and last sequence."""
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for batch in self.batch_metadata:
            if batch.first_seq == first and batch.last_seq == last:
                return batch
        return None

    def add_batch(self, header: RecordBatchHeader) -> None:
        """Remember an appended batch; ``header`` carries the offsets it was given."""
        if header.producer_epoch != self.producer_epoch:
            # The sequence starts over in a new epoch: the old epoch's batches can
            # no longer be retried, nor continued.
            self.producer_epoch = header.producer_epoch
            self.batch_metadata.clear()
        # a transaction marker moves the epoch, not the sequence
        if not header.is_control:
            self.batch_metadata.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
        self.last_timestamp = header.max_timestamp


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Does a batch starting at ``next_seq`` follow one ending at ``last_seq``?"""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


def check_sequence(
    header: RecordBatchHeader, position: int, current_epoch: int, last_seq: int
) -> None:
    """Raise unless a leader may append ``header`` after a producer at (epoch,
    last_seq).

    ``current_epoch`` is NO_PRODUCER_EPOCH for a producer the log has no state for.
    """
    epoch, first_seq = header.producer_epoch, header.base_sequence
    if epoch < current_epoch:
        raise InvalidProducerEpochError(
            f"batch at position {position}: epoch {epoch} of producer "
            f"{header.producer_id} "
            f"is smaller than the last seen epoch {current_epoch}",
            position,
        )
    if epoch != current_epoch:
        # A new epoch starts its sequence at 0. A producer the log knows nothing of may
        # start anywhere: it is new here, or retention removed all its batches, and
        # since KIP-360 it is accepted rather than answered UNKNOWN_PRODUCER_ID.
        if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequenceError(
                f"batch at position {position}: producer {header.producer_id} starts "
                "its "
                f"new epoch {epoch} at sequence {first_seq}, not 0 (current epoch "
                f"{current_epoch})",
                position,
            )
    elif current_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"batch at position {position}: producer {header.producer_id} (epoch "
            f"{epoch}) "
            f"sent sequence {first_seq}, expected {(last_seq + 1) & MAX_SEQUENCE}",
            position,
        )


@attrs.define(eq=False)
class ProducerStateManager:
    """Every idempotent producer a partition's log has batches of, by producer id.

    The Log checks a leader's append with :meth:`validate_append` before writing and
    records every append, leader's or follower's, with :meth:`update_batches` after.
    """

    producers: dict[int, ProducerStateEntry] = attrs.field(factory=dict)
    last_producer_offset: int = -1
    """The last offset of the newest batch that had a producer id (-1: none yet): a
    truncation above it removes nothing this state was built from."""

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def validate_coordinator_append(
        self, batches: Sequence[tuple[int, RecordBatchHeader]]
    ) -> None:
        """Check a coordinator's batches (a TxnOffsetCommit's offsets, written as the
        transaction's producer): the epoch only, never the sequence, which belongs to
        the producer's own partitions (Kafka checks sequences for client appends only).
        Raises InvalidProducerEpochError for a fenced epoch."""
        for _, header in batches:
            entry = self.producers.get(header.producer_id)
            if entry is not None and header.producer_epoch < entry.producer_epoch:
                raise InvalidProducerEpochError(
                    f"producer {header.producer_id}'s epoch {header.producer_epoch} is "
                    f"older than its epoch {entry.producer_epoch}"
                )

    def validate_append(
        self,
        batches: Sequence[tuple[int, RecordBatchHeader]],
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> BatchMetadata | None:
        """Check a producer's batches before a leader appends them (nothing is changed).

        Returns the original of a duplicate, in which case the request must append
        nothing: an idempotent producer sends one batch per partition per request, so
        a duplicate batch is a duplicate request (Kafka answers the same way). Raises
        OutOfOrderSequenceError or InvalidProducerEpochError for a batch that may not
        follow its producer's, where a later batch of the same request follows the
        earlier ones. A coordinator's batches: :meth:`validate_coordinator_append`.
        """
        if origin is AppendOrigin.COORDINATOR:
            self.validate_coordinator_append(batches)
            return None
        pending: dict[int, tuple[int, int]] | None = None  # id -> (epoch, last seq)
        for position, header in batches:
            producer_id = header.producer_id
            if producer_id < 0:
                continue  # not idempotent: nothing to check, nothing to remember
            # aside: an idempotent batch without a sequence
            if header.base_sequence < 0:
                raise InvalidRecordError(
                    f"batch at position {position} has producer id {producer_id} but "
                    f"sequence {header.base_sequence}",
                    position,
                )
            entry = self.producers.get(producer_id)
            # aside: a retry of a batch the log already holds
            # The common case, the batch after the producer's last, cannot repeat one of
            # the retained batches (they all lie behind it): only others are looked up.
            if entry is not None and not (
                header.producer_epoch == entry.producer_epoch
                and in_sequence(entry.last_seq, header.base_sequence)
            ):
                duplicate = entry.find_duplicate(header)
                if duplicate is not None:
                    return duplicate
            if pending is None:
                pending = {}
            if producer_id in pending:
                epoch, last_seq = pending[producer_id]
            elif entry is not None:
                epoch, last_seq = entry.producer_epoch, entry.last_seq
            else:
                epoch, last_seq = NO_PRODUCER_EPOCH, NO_SEQUENCE
            check_sequence(header, position, epoch, last_seq)
            pending[producer_id] = (header.producer_epoch, header.last_sequence)
        return None

    def update(self, header: RecordBatchHeader) -> None:
        """Record a batch the log now holds (its header carries the offsets it was given).

        No check: a follower and a rebuild take what the leader appended.
        """
        producer_id = header.producer_id
        if producer_id < 0:
            return
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        entry.add_batch(header)
        self.last_producer_offset = header.last_offset  # batches come in offset order

    def update_batches(self, batches: Iterable[tuple[int, RecordBatchHeader]]) -> None:
        """:meth:`update` for each appended ``(position, header)``."""
        for _, header in batches:
            if header.producer_id >= 0:
                self.update(header)

    def rebuild(self, headers: Iterable[RecordBatchHeader]) -> None:
        """Forget everything and replay ``headers``, the log's batches in offset order."""
        self.clear()
        for header in headers:
            if header.producer_id >= 0:
                self.update(header)

    def clear(self) -> None:
        self.producers.clear()
        self.last_producer_offset = -1
