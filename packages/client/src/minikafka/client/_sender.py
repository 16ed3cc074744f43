"""The Sender: ready batches to their leaders, and what each answer means (seed 000).

On each :meth:`Sender.on_timer` the Sender asks the accumulator which leaders have a batch
ready, and for each leader with fewer than ``max.in.flight.requests.per.connection``
requests unanswered, drains one request's worth of batches. An answer completes a
batch (every record's delivery report, with its offset), sends it back to the queue for
another attempt after ``retry.backoff.ms`` (a retriable error: the leader moved, too few
in-sync replicas, a lost connection), or fails it (a fatal error, ``retries`` used up,
``delivery.timeout.ms`` passed).

**Idempotence** (KIP-98, on by default since Kafka 3.0). The producer gets a producer id
and epoch (InitProducerId) and numbers each partition's batches with consecutive
sequence numbers, first record first. The partition's leader keeps the last five
batches' sequences per producer and appends a batch only if its first sequence follows
the last one appended: a retried batch that did reach the log the first time is
answered as a duplicate (with its original offset), and a batch that arrives after a
gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER. Up to five requests may be in flight,
so when a batch fails, those sent after it fail with OUT_OF_ORDER too, and each goes
back to its queue in sequence order: the leader's check is what keeps the log in order
with no duplicates. The Sender only saves itself requests that would be refused: a
retried batch is sent again once nothing of its partition is in flight (Kafka's
``shouldStopDrainBatchesForPartition``).
A batch that fails for good leaves a gap no later batch can fill; then (and on
UNKNOWN_PRODUCER_ID or an out-of-order batch with nothing before it unresolved) the
producer asks for a new producer id and numbers from zero again (Kafka bumps the epoch
instead, KIP-360). Only what cannot be in the log is numbered afresh: a batch never
sent, and one the leader refused as out of sequence. A batch whose last attempt went
unanswered (a timeout, a lost connection) may have been appended, so it is retried
under the producer id and sequence it was sent with, which the leader can still match
to its first copy; under a new id the leader could not, and would append it twice.
Its partition's new batches wait until it is resolved, so the partition stays in order
(Kafka's ``TransactionManager`` rewrites the sequences of the partition whose gap
caused the bump only, and ``RecordAccumulator`` holds a partition's new batches while
batches of a stale producer id or epoch are in flight).

**Transactions** (KIP-98). A transactional producer's Sender is given the
:class:`~._transactions.TransactionManager`, which gets the producer id instead (its
InitProducerId names the transactional id); a batch goes only to a partition the
transaction coordinator has added to the transaction, carries the transactional bit,
and a batch failed for good leaves the transaction abortable rather than asking for a
new producer id.

A core: every call takes ``now`` and returns one :class:`~minikafka.common.CoreResult`:
its messages are the Produce requests to make (:class:`ProducePlan`), its replies the
delivery reports (:class:`Delivery`) for the shell to hand to the application; it
writes no records. :meth:`Sender.next_deadline` is when a batch may become ready by
itself (linger, backoff), for the shell to call :meth:`Sender.on_timer`. When its
tracer is enabled it emits one :class:`~._events.ProducerBatchCompleted` per batch as the batch is
resolved (acknowledged or failed for good), to the tracer it was given: the producer
that assembles it passes its own (``Producer(config, tracer=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Never, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, CoreResult, TopicPartition
from minikafka.log import Record
from minikafka.trace import NullTracer, Tracer

from ._accumulator import ProducerBatch, RecordAccumulator
from ._config import ProducerConfig
from ._events import ProducerBatchCompleted
from ._message import MSG_TIMED_OUT, TRANSPORT, KafkaError
from ._metadata import ClientMetadata
from ._transactions import TransactionManager

_SEQUENCE_LIMIT = 2**31  # sequences wrap at Integer.MAX_VALUE, as in Kafka
_METADATA_ERRORS = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.leader_not_available,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.kafka_storage_error,
    }
)
_PRODUCER_ID_ERRORS = frozenset(
    {
        ErrorCode.out_of_order_sequence_number,
        ErrorCode.unknown_producer_id,
        ErrorCode.invalid_producer_epoch,
    }
)


@attrs.frozen
class ProducePlan:
    """One Produce request: its leader and the batches in it."""

    node: int
    batches: tuple[ProducerBatch, ...]


@attrs.frozen
class PartitionResponse:
    error: int
    base_offset: int = -1
    log_append_time: int = -1
    error_message: str | None = None


@attrs.frozen
class Delivery:
    """One batch's outcome, for the delivery reports of all its records: each appended at
    ``base_offset`` plus its place in the batch, or every one failed with ``error``."""

    batch: ProducerBatch
    base_offset: int  # -1 on error, and with acks=0 (no answer, no offset)
    log_append_time: int  # -1 unless the topic stamps LogAppendTime
    error: KafkaError | None

    def offset(self, index: int) -> int:
        return self.base_offset + index if self.base_offset >= 0 else -1

    def timestamp(self, index: int) -> int:
        if self.log_append_time >= 0:
            return self.log_append_time
        return self.batch.records[index].timestamp_ms

    def record(self, index: int) -> Record:
        """The record as it was stored (its offset and timestamp as the broker gave)."""
        pending = self.batch.records[index]
        return Record(
            self.offset(index),
            self.timestamp(index),
            pending.key,
            pending.value,
            pending.headers,
        )


SenderResult: TypeAlias = CoreResult[Never, Delivery, ProducePlan]
"""What a call into the Sender hands back: delivery reports (replies) and Produce
requests to make (messages); a producer appends to no log of its own."""


@attrs.define
class Sender:
    config: ProducerConfig
    accumulator: RecordAccumulator
    metadata: ClientMetadata
    producer_id: int = -1
    producer_epoch: int = -1
    _next_sequence: dict[TopicPartition, int] = attrs.field(factory=dict)
    # (producer id, partition) -> base sequences sent and not yet resolved
    _unresolved: dict[tuple[int, TopicPartition], set[int]] = attrs.field(factory=dict)
    _in_flight: dict[TopicPartition, int] = attrs.field(factory=dict)
    _requests: dict[int, int] = attrs.field(factory=dict)
    # partitions with batches unresolved under an older producer id (of _unresolved's
    # keys: kept here so that a new batch's check does not scan them all)
    _stale: set[TopicPartition] = attrs.field(factory=set)
    # (producer id, partition) -> reports held back until earlier batches resolve
    _held: dict[tuple[int, TopicPartition], dict[int, Delivery]] = attrs.field(
        factory=dict
    )
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True)
    transactions: TransactionManager | None = attrs.field(default=None, kw_only=True)

    @property
    def idempotent(self) -> bool:
        return self.config.enable_idempotence

    def needs_producer_id(self) -> bool:
        """An idempotent producer's own InitProducerId is due (a transactional one's
        comes from its transaction manager)."""
        return self.idempotent and self.transactions is None and self.producer_id < 0

    def has_pending_batches(self) -> bool:
        """A batch is queued or in flight: an EndTxn waits until none is."""
        return self.accumulator.queued_batches() > 0 or self.in_flight_requests() > 0

    def set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """InitProducerId answered: number every partition from zero under this id."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self._next_sequence.clear()
        self._stale = {tp for pid, tp in self._unresolved if pid != producer_id}

    def in_flight_requests(self) -> int:
        return sum(self._requests.values())

    # --- sending ------------------------------------------------------------------

    def on_timer(self, now: float) -> SenderResult:
        """The requests to make now (at most one per ready leader), and the reports of
        batches that ran out of ``delivery.timeout.ms`` in their queue."""
        reports: list[Delivery] = []
        self._expire(now, reports)
        if self.needs_producer_id():
            return CoreResult(replies=tuple(reports))
        check = self.accumulator.ready(self.metadata.leader_of, now, self._may_send)
        if check.unknown_leaders:
            self.metadata.request_update()
        queued = list(self.accumulator.partitions_with_batches())
        plans: list[ProducePlan] = []
        for node in sorted(check.nodes):
            if not self._has_room(node):
                continue
            batches = self.accumulator.drain(
                node,
                self.metadata.led_by(node, queued),
                self.config.max_request_size,
                now,
                self._may_send,
            )
            if not batches:
                continue
            for batch in batches:
                self._stamp(batch, reports)
                batch.refused = False  # this attempt's answer is still to come
                tp = batch.topic_partition
                self._in_flight[tp] = self._in_flight.get(tp, 0) + 1
            self._requests[node] = self._requests.get(node, 0) + 1
            plans.append(ProducePlan(node, tuple(batches)))
        return CoreResult(replies=tuple(reports), messages=tuple(plans))

    def next_deadline(self) -> float | None:
        """When a batch the Sender could send may become ready by itself (linger,
        backoff); in the past when one is ready now. None while nothing can go until an
        answer comes (every leader with a batch has its requests in flight) or until
        the metadata or a producer id arrives: each of those comes with a call."""
        return self.accumulator.next_ready(
            self.metadata.leader_of, self._may_send, self._has_room
        )

    def _has_room(self, node: int) -> bool:
        """Fewer than ``max.in.flight.requests.per.connection`` requests unanswered."""
        return self._requests.get(node, 0) < self.config.max_in_flight

    def _may_send(self, tp: TopicPartition, batch: ProducerBatch) -> bool:
        if not self.idempotent:
            return True
        if self.producer_id < 0:
            return False
        if self.transactions is not None and not self.transactions.is_send_allowed(tp):
            return False  # AddPartitionsToTxn first
        # A retry goes only once nothing of its partition is in flight: the batches sent
        # after it are being refused as out of order and come back behind it, and until
        # they have, anything sent after the retry would be refused too.
        if batch.attempts > 0:
            return self._in_flight.get(tp, 0) == 0
        # A new batch waits while batches sent under an older producer id are not
        # resolved: appended before them it would put the partition out of order.
        return not self._older_unresolved(tp)

    def _older_unresolved(self, tp: TopicPartition) -> bool:
        return tp in self._stale

    def _stamp(self, batch: ProducerBatch, reports: list[Delivery]) -> None:
        """Give a batch its producer id and sequence (kept across retries). Its bytes are
        built by whoever sends it (``ProducerBatch.build``), once, outside the lock the
        application's thread appends under: a drained batch takes no more records."""
        if not self.idempotent:
            return
        if batch.base_sequence >= 0 and (
            batch.producer_id == self.producer_id or not batch.refused
        ):
            # A retry: the same bytes under the same producer id and sequence, also
            # after the producer id changed (its first attempt may be in the log).
            return
        tp = batch.topic_partition
        if batch.base_sequence >= 0:  # refused under an older id: not in the log
            self._forget(batch.producer_id, tp, batch.base_sequence)
            # Later batches of the old id held their reports back for this one.
            self._release_held((batch.producer_id, tp), reports)
        sequence = self._next_sequence.get(tp, 0)
        batch.payload = None
        batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
        batch.base_sequence = sequence
        batch.transactional = self.transactions is not None
        self._next_sequence[tp] = (sequence + len(batch.records)) % _SEQUENCE_LIMIT
        self._unresolved.setdefault((self.producer_id, tp), set()).add(sequence)

    # --- answers ------------------------------------------------------------------

    def on_response(
        self,
        plan: ProducePlan,
        results: Mapping[TopicPartition, PartitionResponse],
        now: float,
    ) -> SenderResult:
        """The Produce response (for ``acks=0``, the request written: no offsets): the
        reports it completes. A batch sent back to its queue goes with a later
        :meth:`on_timer`."""
        self._request_done(plan)
        reports: list[Delivery] = []
        for batch in plan.batches:
            answer = results.get(batch.topic_partition)
            if answer is None:
                answer = PartitionResponse(
                    ErrorCode.unknown_server_error,
                    error_message="no answer for the partition",
                )
            self._on_batch_answer(batch, answer, now, reports)
        return CoreResult(replies=tuple(reports))

    def on_request_failed(
        self, plan: ProducePlan, message: str, now: float
    ) -> SenderResult:
        """No answer: the connection failed or the request timed out. Every batch in it
        may or may not have been appended: retried (a duplicate is caught by its
        sequence when idempotent); the reports of those that may not be."""
        self._request_done(plan)
        self.metadata.request_update()
        reports: list[Delivery] = []
        for batch in plan.batches:
            self._retry_or_fail(batch, KafkaError(TRANSPORT, message), now, reports)
        return CoreResult(replies=tuple(reports))

    def _request_done(self, plan: ProducePlan) -> None:
        self._requests[plan.node] -= 1
        for batch in plan.batches:
            self._in_flight[batch.topic_partition] -= 1

    def _on_batch_answer(
        self,
        batch: ProducerBatch,
        answer: PartitionResponse,
        now: float,
        reports: list[Delivery],
    ) -> None:
        error = answer.error
        if error in (ErrorCode.none, ErrorCode.duplicate_sequence_number):
            self._succeed(batch, answer, now, reports)
            return
        kafka_error = KafkaError(error, answer.error_message)
        if error in _METADATA_ERRORS:
            self.metadata.request_update()
        if self.idempotent and error in _PRODUCER_ID_ERRORS:
            batch.refused = True
            if batch.producer_id != self.producer_id or self._earlier_unresolved(batch):
                # Something before it is being retried, or the producer id changed:
                # this batch comes back in sequence order (re-stamped if need be).
                self.accumulator.reenqueue(batch, now)
                return
            self._fail(batch, kafka_error, now, reports)
            return
        self._retry_or_fail(batch, kafka_error, now, reports)

    def _retry_or_fail(
        self,
        batch: ProducerBatch,
        error: KafkaError,
        now: float,
        reports: list[Delivery],
    ) -> None:
        past_deadline = (now - batch.created) * 1000 >= self.config.delivery_timeout_ms
        if (
            error.retriable()
            and batch.attempts < self.config.retries
            and not past_deadline
        ):
            self.accumulator.reenqueue(batch, now)
        elif past_deadline and error.retriable():
            self._fail(
                batch,
                KafkaError(MSG_TIMED_OUT, f"delivery.timeout.ms passed: {error.str()}"),
                now,
                reports,
            )
        else:
            self._fail(batch, error, now, reports)

    def _earlier_unresolved(self, batch: ProducerBatch) -> bool:
        pending = self._unresolved.get(
            (batch.producer_id, batch.topic_partition), set()
        )
        return any(_before(s, batch.base_sequence) for s in pending)

    def _succeed(
        self,
        batch: ProducerBatch,
        answer: PartitionResponse,
        now: float,
        reports: list[Delivery],
    ) -> None:
        self._resolve(batch, now, answer.base_offset, None)
        self._report(
            batch,
            Delivery(batch, answer.base_offset, answer.log_append_time, None),
            reports,
        )

    def _fail(
        self,
        batch: ProducerBatch,
        error: KafkaError,
        now: float,
        reports: list[Delivery],
    ) -> None:
        self._resolve(batch, now, -1, error)
        if self.transactions is not None:
            # The transaction cannot commit without it: only an abort is left (the
            # abort also ends the sequence gap, the epoch being bumped).
            self.transactions.on_batch_failed(
                error,
                sequenced=batch.base_sequence >= 0
                and batch.producer_id == self.producer_id,
            )
        elif (
            self.idempotent
            and batch.base_sequence >= 0
            and batch.producer_id == self.producer_id
        ):
            # A gap in this partition's sequences that no later batch can fill: start
            # again under a new producer id (see the module docstring).
            self.producer_id = self.producer_epoch = -1
            self._next_sequence.clear()
        self._report(batch, Delivery(batch, -1, -1, error), reports)

    def _report(
        self, batch: ProducerBatch, delivery: Delivery, reports: list[Delivery]
    ) -> None:
        """Reports of a partition go out in the order its records were produced, as
        Kafka promises. A later batch can be answered first: after a leader moved, the
        new leader may take it while an earlier one's answer is still to come from the
        dead leader's connection (and will say DUPLICATE_SEQUENCE_NUMBER). Its report
        waits until every earlier batch of the partition is resolved."""
        key = (batch.producer_id, batch.topic_partition)
        if batch.base_sequence >= 0 and self._earlier_unresolved(batch):
            self._held.setdefault(key, {})[batch.base_sequence] = delivery
            return
        reports.append(delivery)
        self._release_held(key, reports)

    def _release_held(
        self, key: tuple[int, TopicPartition], reports: list[Delivery]
    ) -> None:
        """The held reports of ``key`` with no earlier batch unresolved, in order."""
        held = self._held.get(key)
        pending = self._unresolved.get(key, set())
        while held:
            first = min(held)
            if any(_before(s, first) for s in pending):
                break
            reports.append(held.pop(first))

    def _resolve(
        self,
        batch: ProducerBatch,
        now: float,
        base_offset: int,
        error: KafkaError | None,
    ) -> None:
        self.accumulator.release(batch)
        self._forget(batch.producer_id, batch.topic_partition, batch.base_sequence)
        if self.tracer.enabled:
            self.tracer.emit(self._batch_event(batch, now, base_offset, error), now)

    def _forget(self, producer_id: int, tp: TopicPartition, sequence: int) -> None:
        """A batch sent under ``producer_id`` is resolved (or numbered afresh)."""
        key = (producer_id, tp)
        pending = self._unresolved.get(key)
        if pending is not None:
            pending.discard(sequence)
            if not pending:
                del self._unresolved[key]  # no stale id is left waiting on it
                if producer_id != self.producer_id and not any(
                    pid != self.producer_id and partition == tp
                    for pid, partition in self._unresolved
                ):
                    self._stale.discard(tp)

    def _batch_event(
        self,
        batch: ProducerBatch,
        now: float,
        base_offset: int,
        error: KafkaError | None,
    ) -> ProducerBatchCompleted:
        """The batch's trace event: its times from its creation and first drain to
        ``now``, its bytes as sent (the accumulator's estimate if it never left)."""
        drained = now if batch.drained is None else batch.drained
        tp = batch.topic_partition
        return ProducerBatchCompleted(
            self.config.client_id,
            tp.topic,
            tp.partition,
            len(batch.records),
            batch.size if batch.payload is None else len(batch.payload),
            batch.reason or "unsent",
            (drained - batch.created) * 1000.0,
            (now - drained) * 1000.0,
            batch.attempts,
            base_offset,
            None if error is None else error.name(),
        )

    def _expire(self, now: float, reports: list[Delivery]) -> None:
        for batch in self.accumulator.expired(self.config.delivery_timeout_ms, now):
            self._fail(
                batch,
                KafkaError(
                    MSG_TIMED_OUT,
                    f"{len(batch.records)} record(s) for {batch.topic_partition} not "
                    f"delivered within delivery.timeout.ms ({self.config.delivery_timeout_ms})",
                ),
                now,
                reports,
            )

    def abort(self, error: KafkaError, now: float) -> SenderResult:
        """Fail every queued batch (a producer closed without flushing): their reports."""
        reports: list[Delivery] = []
        for batch in self.accumulator.abort_all():
            self._fail(batch, error, now, reports)
        return CoreResult(replies=tuple(reports))

    @property
    def acks(self) -> Acks:
        return self.config.acks


def _before(a: int, b: int) -> bool:
    """Sequence ``a`` comes before ``b`` (sequences wrap at 2**31)."""
    return a != b and (b - a) % _SEQUENCE_LIMIT < _SEQUENCE_LIMIT // 2
