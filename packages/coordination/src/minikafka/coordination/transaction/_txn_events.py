"""Trace events of the transaction coordinator (ARCHITECTURE.md, "Traces and labs";
KIP-98).

A transaction's life is a few moves of its state table (``TXN_TRANSITIONS``): begun
(Ongoing), ended (PrepareCommit or PrepareAbort, when EndTxn or a timeout decides),
completed once every partition has its marker (CompleteCommit or CompleteAbort). Each
move is traced when its record is committed to ``__transaction_state``, so a reader of
the trace can tell how long a transaction stayed open, and how long its markers took.

The coordinator's clock is in ms; events are stamped with its ``now`` in seconds, as
every trace is.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = ["TxnStateChanged"]


@register_event
@attrs.frozen
class TxnStateChanged(TraceEvent):
    """A transactional id moved along an edge of ``TXN_TRANSITIONS`` (states are Kafka's
    names); the producer id and epoch and the partitions are those after the move."""

    COMPONENT: ClassVar[str] = "txn"
    EVENT: ClassVar[str] = "state_change"

    transactional_id: str
    previous_state: str
    state: str
    producer_id: int
    producer_epoch: int
    partitions: int
