"""Evidence that a consumer's committed offset went back because the consumer reset its
position, told by a stale partition leader that its position was out of range.

A ZooKeeper-mode leader cut off from the controller keeps its partitions' leadership
until a LeaderAndIsr reaches it, and answers reads meanwhile: a fetch at the group's
committed offset, written under the new leader past the old one's log end, gets
OFFSET_OUT_OF_RANGE, and a consumer with ``auto.offset.reset`` looks the log start up
(ListOffsets) and reads from there; what it commits next is less than the group had.
Kafka's ZooKeeper-mode brokers and librdkafka do the same (chaos/README.md, seed 103).

The evidence, all of it required: after the group committed the larger offset, the
committing process read the partition again from the log start (the final log's first
offset), and in between a broker that still led the partition at a leader epoch the
controller had replaced (:func:`chaos.traces.stale_leaderships`) answered a ListOffsets
(:func:`chaos.traces.offset_lookups`). librdkafka skips the lookup when an earlier
Fetch answer told it the log start (``rd_kafka_offset_reset``); such a reset leaves no
ListOffsets in the traces and stays a ``nonmonotonic_commit``, to be looked into.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import attrs

from .history import FinalState, Op, TopicPartition
from .traces import (
    Record,
    StaleLeadership,
    TraceEvent,
    offset_lookups,
    stale_leaderships,
)


@attrs.frozen
class ResetEvidence:
    """What explains a commit going back as the consumer's reset by a stale leader."""

    stale: list[StaleLeadership]
    lookups: list[TraceEvent]
    polls: dict[tuple[int, TopicPartition], list[Op]]
    log_start: dict[TopicPartition, int]

    @classmethod
    def of(
        cls, ops: Sequence[Op], final: FinalState, traces: Sequence[Record]
    ) -> ResetEvidence:
        polls: defaultdict[tuple[int, TopicPartition], list[Op]] = defaultdict(list)
        for op in ops:
            if op.kind == "poll" and op.outcome == "ok" and op.records:
                polls[(op.process, op.tp)].append(op)
        for read in polls.values():
            read.sort(key=lambda op: (op.invoke, op.index))
        log_start = {tp: records[0][0] for tp, records in final.items() if records}
        return cls(stale_leaderships(traces), offset_lookups(traces), polls, log_start)

    def explain(self, highest: Op, later: Op) -> tuple[str, Op] | None:
        """Why ``later`` committed less than ``highest`` had, and the first read after
        the reset, if the evidence is all there: the re-read from the log start, the
        stale leader, its ListOffsets."""
        tp, start = later.tp, self.log_start.get(later.tp)
        if start is None or start >= _offset(highest):
            return None
        reread = [
            op
            for op in self.polls.get((later.process, tp), [])
            if highest.complete < op.invoke < later.invoke
            and min(offset for offset, _ in op.records) <= start
        ]
        if not reread:
            return None
        read = reread[0]  # the first read after the reset
        for stale in self.stale:
            if (stale.topic, stale.partition) != tp:
                continue
            lo = max(highest.complete, stale.since)
            hi = min(read.complete, stale.until)
            lookup = next(
                (e for e in self.lookups if e.node == stale.node and lo <= e.ts <= hi),
                None,
            )
            if lookup is not None:
                learned = (
                    f"learned it at {stale.until:.3f}"
                    if stale.until != float("inf")
                    else "never learned it in the traces"
                )
                detail = (
                    f"group {later.group!r} committed {_offset(highest)} "
                    f"(op {highest.index}), then {_offset(later)} (op {later.index}): "
                    f"process {later.process} read {tp[0]}-{tp[1]} again from offset "
                    f"{min(o for o, _ in read.records)} (op {read.index}), its position "
                    f"reset after broker {stale.node}, still leading at leader epoch "
                    f"{stale.epoch} (the controller elected epoch {stale.newer_epoch} at "
                    f"{stale.since:.3f}, the broker {learned}), "
                    f"answered a ListOffsets at {lookup.ts:.3f}"
                )
                return detail, read
        return None


def _offset(op: Op) -> int:
    assert op.offset is not None  # only commits with an offset go back
    return op.offset
