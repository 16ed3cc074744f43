"""The RecordAccumulator: records gathered into per-partition batches (seed 000).

``produce()`` does not send anything. It appends the record to the last open batch of
its partition's queue (a new batch when that one has no room for it under
``batch.size``), and the Sender, on its own schedule, takes whole batches from the
fronts of the queues. A partition's first batch is *ready* to go when

- it is full (or a second batch already waits behind it),
- it is ``linger.ms`` old: the producer's trade of a little latency for fuller batches,
- the producer is flushing or closing, or
- the buffer is exhausted and a ``produce()`` is waiting for room,

and not while it waits out ``retry.backoff.ms`` after a failed attempt. Drain takes at
most one batch per partition per request and fills a request up to
``max.request.size``, starting each time at the partition after the one it started at
before, so that no partition starves behind the others of its broker (Kafka's
``drainIndex``).

``buffer.memory`` bounds the bytes held in batches that are not yet acknowledged;
an append that does not fit raises :class:`BufferFull` and the shell makes the caller
wait, up to ``max.block.ms``.

The first time a batch is drained it keeps the time and the reason it left (the first
of :data:`LEAVE_REASONS` that holds for it then): what the producer's trace event of the
batch reports (``_events``).

A core: every call takes ``now`` (seconds), and it does no I/O.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence

import attrs

from minikafka.common import TopicPartition
from minikafka.log import CompressionType, Header, Record, build_batch

# A v2 batch's header, and a record's framing (length, attributes, timestamp and
# offset deltas, key and value lengths, header count): Kafka's
# DefaultRecord.sizeInBytes, near enough for deciding when a batch is full.
BATCH_OVERHEAD = 61
_RECORD_OVERHEAD = 21

# Why a batch left the accumulator, in the order drain asks: a batch that is full and
# has lingered too left because it was full.
FULL = "full"  # a record did not fit (a batch waits behind it), or batch.size reached
LINGER = "linger"  # its first record has waited linger.ms
FLUSH = "flush"  # flush() is waiting for it
CLOSE = "close"  # the producer is closing
MEMORY = "memory"  # a produce() is blocked on buffer.memory
PIGGYBACK = "piggyback"  # none: it went along with a ready batch of the same leader
LEAVE_REASONS = (FULL, LINGER, FLUSH, CLOSE, MEMORY, PIGGYBACK)


class BufferFull(Exception):
    """``buffer.memory`` is in use: the append must wait for acknowledgements."""


@attrs.define(eq=False)
class PendingRecord:
    """A record as ``produce()`` gave it, and the handle its delivery report goes to."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int
    handle: object = None  # the shell's: whatever it needs to report the delivery
    size: int = attrs.field(init=False)  # bytes it adds to a batch, about

    @size.default
    def _size(self) -> int:
        size = _RECORD_OVERHEAD + len(self.key or b"") + len(self.value or b"")
        for header in self.headers:
            size += len(header.key) + len(header.value or b"") + 2
        return size


@attrs.define(eq=False)
class ProducerBatch:
    """One batch of one partition, from its first append to its acknowledgement."""

    topic_partition: TopicPartition
    created: float
    records: list[PendingRecord] = attrs.field(factory=list)
    size: int = BATCH_OVERHEAD
    attempts: int = 0
    retry_at: float = 0.0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False  # the batch's attribute bit: part of a transaction
    # built at the first drain; a retry sends the same bytes
    payload: bytes | None = None
    closed: bool = False  # drained once: no more appends
    # its last attempt was refused as out of sequence (or its producer unknown): it is
    # not in the log, so it may be numbered afresh under a new producer id
    refused: bool = False
    drained: float | None = None  # when it was first drained
    reason: str = ""  # why it left then: one of LEAVE_REASONS

    def build(self, compression: CompressionType) -> bytes:
        """The v2 batch, built once: a retried idempotent batch must carry the same
        records under the same sequence, or the broker cannot tell it is a duplicate."""
        if self.payload is None:
            records = [
                Record(i, r.timestamp_ms, r.key, r.value, r.headers)
                for i, r in enumerate(self.records)
            ]
            self.payload = build_batch(
                records,
                base_offset=0,
                compression=compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
                is_transactional=self.transactional,
            )
        return self.payload


@attrs.frozen
class ReadyCheck:
    nodes: frozenset[int]  # leaders with at least one ready batch
    next_check: float  # seconds until a batch may become ready (linger, backoff)
    unknown_leaders: frozenset[
        str
    ]  # topics with a batch and a partition without leader


@attrs.define
class RecordAccumulator:
    batch_size: int
    buffer_memory: int
    linger_ms: int
    retry_backoff_ms: int
    compression: CompressionType = CompressionType.NONE
    _queues: dict[TopicPartition, collections.deque[ProducerBatch]] = attrs.field(
        factory=dict
    )
    _used: int = 0  # bytes of batches not yet acknowledged (in queues or in flight)
    _flushing: int = 0
    _closing: bool = False
    _waiting_for_room: int = 0
    _drain_index: dict[int, int] = attrs.field(factory=dict)

    # --- appending ----------------------------------------------------------------

    def append(self, tp: TopicPartition, record: PendingRecord, now: float) -> bool:
        """Add ``record`` to ``tp``'s open batch or a new one; True when that batch is
        now full or a new batch was started (the Sender has something to look at now).
        Raises :class:`BufferFull` if the bytes are not there."""
        queue = self._queues.setdefault(tp, collections.deque())
        size = record.size
        last = queue[-1] if queue else None
        if last is not None and not last.closed and last.size + size <= self.batch_size:
            last.records.append(record)
            last.size += size
            self._used += size
            return last.size >= self.batch_size
        needed = BATCH_OVERHEAD + size
        if self._used + needed > self.buffer_memory:
            raise BufferFull(
                f"{self._used} of buffer.memory {self.buffer_memory} in use"
            )
        batch = ProducerBatch(tp, now, [record], needed)
        queue.append(batch)
        self._used += needed
        return True

    def wait_for_room(self, waiting: bool) -> None:
        """A producer is (or stops being) blocked on a full buffer: batches go at once."""
        self._waiting_for_room += 1 if waiting else -1

    # --- the Sender's side --------------------------------------------------------

    @property
    def _urgent(self) -> bool:
        """No batch lingers: the producer flushes or closes, or a thread waits for room."""
        return self._flushing > 0 or self._closing or self._waiting_for_room > 0

    def ready(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        now: float,
        may_send: Callable[[TopicPartition, ProducerBatch], bool] = lambda tp, b: True,
    ) -> ReadyCheck:
        """Kafka's ``RecordAccumulator.ready``: which leaders have a batch to take
        now."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check = float("inf")
        linger = self.linger_ms / 1000
        urgent = self._urgent
        for tp, queue in self._queues.items():
            if not queue:
                continue
            leader = leader_of(tp)
            if leader is None:
                unknown.add(tp.topic)
                continue
            batch = queue[0]
            if leader in nodes or not may_send(tp, batch):
                continue
            if batch.attempts > 0 and now < batch.retry_at:
                next_check = min(next_check, batch.retry_at - now)
                continue
            full = len(queue) > 1 or batch.size >= self.batch_size
            waited = now - batch.created
            if full or urgent or batch.attempts > 0 or waited >= linger:
                nodes.add(leader)
            else:
                next_check = min(next_check, linger - waited)
        return ReadyCheck(frozenset(nodes), next_check, frozenset(unknown))

    def next_ready(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        may_send: Callable[[TopicPartition, ProducerBatch], bool],
        has_room: Callable[[int], bool],
    ) -> float | None:
        """When the first batch :meth:`ready` would take becomes ready: a queue's first
        batch, of a known leader ``has_room`` for another request, ready at its
        ``retry_at`` after a failed attempt, at once (its creation) when full or urgent,
        else ``linger.ms`` after its creation. The Sender's deadline: absolute, so the
        answer does not depend on when it is asked."""
        soonest: float | None = None
        linger = self.linger_ms / 1000
        urgent = self._urgent
        for tp, queue in self._queues.items():
            if not queue:
                continue
            leader = leader_of(tp)
            batch = queue[0]
            if leader is None or not has_room(leader) or not may_send(tp, batch):
                continue
            if batch.attempts > 0:
                at = batch.retry_at
            elif len(queue) > 1 or batch.size >= self.batch_size or urgent:
                at = batch.created
            else:
                at = batch.created + linger
            soonest = at if soonest is None else min(soonest, at)
        return soonest

    def drain(
        self,
        node: int,
        partitions: Sequence[TopicPartition],
        max_request_size: int,
        now: float,
        may_send: Callable[[TopicPartition, ProducerBatch], bool] = lambda tp, b: True,
    ) -> list[ProducerBatch]:
        """The batches for one request to ``node`` (whose ``partitions`` it leads): at
        most one per partition, first in its queue, up to ``max_request_size`` bytes
        (always at least one batch)."""
        if not partitions:
            return []
        start = self._drain_index.get(node, 0) % len(partitions)
        self._drain_index[node] = start + 1
        taken: list[ProducerBatch] = []
        size = 0
        for i in range(len(partitions)):
            tp = partitions[(start + i) % len(partitions)]
            queue = self._queues.get(tp)
            if not queue:
                continue
            batch = queue[0]
            if batch.attempts > 0 and now < batch.retry_at:
                continue
            if taken and size + batch.size > max_request_size:
                break
            if not may_send(tp, batch):
                continue
            if batch.drained is None:
                batch.drained = now
                batch.reason = self._leave_reason(batch, len(queue), now)
            queue.popleft()
            batch.closed = True
            taken.append(batch)
            size += batch.size
        return taken

    def _leave_reason(self, batch: ProducerBatch, queued: int, now: float) -> str:
        """Which of ready()'s conditions holds for ``batch`` (first in a queue of
        ``queued``) as it is drained. Drain takes the first batch of every partition of
        a ready leader, so a batch may go before any holds for it: ``piggyback``."""
        if queued > 1 or batch.size >= self.batch_size:
            return FULL
        if now - batch.created >= self.linger_ms / 1000:
            return LINGER
        if self._flushing > 0:
            return FLUSH
        if self._closing:
            return CLOSE
        if self._waiting_for_room > 0:
            return MEMORY
        return PIGGYBACK

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        """Put a failed batch back at the front of its queue for another attempt after
        ``retry.backoff.ms``; batches that carry sequence numbers go back in sequence
        order (Kafka's ``insertInSequenceOrder``), ahead of every batch not yet sent."""
        batch.attempts += 1
        batch.retry_at = now + self.retry_backoff_ms / 1000
        queue = self._queues.setdefault(batch.topic_partition, collections.deque())
        index = 0
        if batch.base_sequence >= 0:
            while (
                index < len(queue)
                and queue[index].base_sequence >= 0
                and queue[index].base_sequence < batch.base_sequence
            ):
                index += 1
        queue.insert(index, batch)

    def release(self, batch: ProducerBatch) -> None:
        """The batch is done (acknowledged or failed for good): its bytes are free."""
        self._used -= batch.size

    def expired(self, delivery_timeout_ms: int, now: float) -> list[ProducerBatch]:
        """Batches still queued ``delivery.timeout.ms`` after their first record: taken
        out, for the caller to fail (Kafka's ``expiredBatches``)."""
        limit = delivery_timeout_ms / 1000
        gone: list[ProducerBatch] = []
        for queue in self._queues.values():
            while queue and now - queue[0].created >= limit:
                gone.append(queue.popleft())
        return gone

    def abort_all(self) -> list[ProducerBatch]:
        """Every queued batch, taken out (a producer closed without flushing)."""
        gone = [batch for queue in self._queues.values() for batch in queue]
        for queue in self._queues.values():
            queue.clear()
        return gone

    # --- flushing and state -------------------------------------------------------

    def begin_flush(self) -> None:
        self._flushing += 1

    def end_flush(self) -> None:
        self._flushing -= 1

    def close(self) -> None:
        self._closing = True

    @property
    def used_bytes(self) -> int:
        return self._used

    def queued_batches(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def partitions_with_batches(self) -> Iterable[TopicPartition]:
        return (tp for tp, queue in self._queues.items() if queue)
