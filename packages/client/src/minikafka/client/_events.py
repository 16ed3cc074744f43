"""Trace events of the producer (ARCHITECTURE.md, "Traces and labs"; seed 000's
producer: the RecordAccumulator and the Sender).

One event per batch, emitted by the Sender when the batch's outcome is known
(acknowledged, or failed for good): how many records it gathered and how many bytes,
why it left the accumulator, and how long it spent in each of the two places a batch
waits. Its records' delivery reports are handed out from that moment on, so a batch's
event is what its first record lived through, from the append that created the batch to
its report. Lab 12 reads them beside the brokers' ``net.request`` events of the same
``client_id``.

The event is stamped with the Sender's ``now`` when the outcome was known: the
producer's monotonic clock moved to the epoch (``PRODUCER_CLOCK``), so its ``ts`` lines
up with the brokers' events; the durations are differences of ``now``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = ["ProducerBatchCompleted"]


@register_event
@attrs.frozen
class ProducerBatchCompleted(TraceEvent):
    """A producer's batch is done: acknowledged (``error`` None) or failed for good.

    - ``client_id``: the producer's ``client.id``, as on its requests;
    - ``topic``, ``partition``: the batch's partition;
    - ``records``: how many records it holds;
    - ``size_bytes``: its bytes as sent, the v2 batch with its header (uncompressed:
      what the leader stores), or the accumulator's estimate for a batch never sent;
    - ``reason``: why it left the accumulator the first time it was drained, the first
      of the accumulator's ``LEAVE_REASONS`` that held then: ``full`` (a record did not
      fit, so a second batch waited behind it, or it reached ``batch.size``),
      ``linger`` (its first record had waited ``linger.ms``), ``flush`` (``flush()``
      was waiting for it), ``close`` (the producer was closing), ``memory`` (a
      ``produce()`` was blocked on ``buffer.memory``), ``piggyback`` (none of these: it
      went along with a ready batch of another partition of the same leader, as drain
      takes one batch of every partition the leader has); ``unsent`` for a batch that
      failed without ever leaving (``delivery.timeout.ms`` passed in its queue, or
      ``close()`` aborted it);
    - ``queue_ms``: from its creation (its first record's append) to its first drain,
      Kafka's ``record-queue-time``: the linger, and any wait for a request slot
      (``max.in.flight.requests.per.connection``) or a producer id;
    - ``in_flight_ms``: from its first drain to its outcome: the Produce request's round
      trip, retries included (0 for a batch that never left);
    - ``retries``: how many times it went back to its queue for another attempt;
    - ``base_offset``: the offset of its first record (-1 when it failed, and with
      ``acks=0``, which gets no answer);
    - ``error``: the error's name (``NOT_LEADER_OR_FOLLOWER``, ``_MSG_TIMED_OUT``), or
      None.
    """

    COMPONENT: ClassVar[str] = "producer"
    EVENT: ClassVar[str] = "batch"

    client_id: str
    topic: str
    partition: int
    records: int
    size_bytes: int
    reason: str
    queue_ms: float
    in_flight_ms: float
    retries: int
    base_offset: int
    error: str | None
