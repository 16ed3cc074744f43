"""DelayedProduce, DelayedFetch and DelayedDeleteRecords: the operations the
ReplicaManager parks, and DelayedOperations, its three purgatories.

DelayedProduce (``acks=all``) waits, for each partition it wrote, until the high
watermark reaches the offset after its last batch: then every in-sync replica has the
records. DelayedFetch waits until the partitions it reads hold at least
``fetch.min.bytes`` beyond the fetch offsets, or until ``fetch.max.wait.ms``.
DelayedDeleteRecords (KIP-107) waits until each partition's low watermark, the smallest
log start among the leader and its in-sync followers, reaches the offset deleted below.
All are woken by the ReplicaManager through the purgatory's watch keys (the
partitions), never by polling.

Each carries the id its caller gave the request and, once completed, its answer as a
value (``response``): the ReplicaManager returns it to its shell, which sends it. No
operation holds a clock or a callback into the shell; ``created`` (when it was parked)
lets :class:`DelayedOperations` trace how long it waited, with the ``now`` of the call
that completed it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.log import LogOffsetMetadata
from minikafka.trace import NullTracer, Tracer

from ._events import DelayedOperationCompleted
from ._partition import Partition
from ._purgatory import DelayedOperation, DelayedOperationPurgatory
from ._results import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    FetchParams,
    FetchPartition,
    FetchPartitionResult,
    FetchResponse,
    ProducePartitionResult,
    ProduceResponse,
    Response,
)


@attrs.define(eq=False)
class DelayedProduce(DelayedOperation):
    """Waits until every appended partition's HW passes its batches (acks=all)."""

    KIND: ClassVar[str] = "produce"
    request_id: int
    results: dict[TopicPartition, ProducePartitionResult]
    required_offsets: dict[
        TopicPartition, int
    ]  # partitions still waiting -> last offset + 1
    partitions: Callable[[TopicPartition], Partition | None]
    created: float = attrs.field(default=0.0, kw_only=True)
    """When it was parked, on the shell's clock (for the trace)."""
    expired: bool = attrs.field(init=False, default=False)
    response: ProduceResponse | None = attrs.field(init=False, default=None)
    """The answer, once completed."""

    def try_complete(self) -> bool:
        for tp, required in list(self.required_offsets.items()):
            partition = self.partitions(tp)
            if partition is None:
                error: ErrorCode | None = ErrorCode.unknown_topic_or_partition
            else:
                error = partition.check_enough_replicas_reach_offset(required)
            if error is None:
                continue
            del self.required_offsets[tp]
            if error is not ErrorCode.none:
                self.results[tp] = ProducePartitionResult(error)
        return not self.required_offsets and self.force_complete()

    def on_expiration(self) -> None:
        # Written to the leader but not acknowledged by enough replicas in time: the
        # producer hears REQUEST_TIMED_OUT and may retry (the idempotent producer's
        # sequence numbers make that retry harmless).
        self.expired = True
        for tp in self.required_offsets:
            self.results[tp] = ProducePartitionResult(
                ErrorCode.request_timed_out,
                error_message="the in-sync replicas did not confirm in time",
            )
        self.required_offsets.clear()

    def on_complete(self) -> None:
        self.response = ProduceResponse(self.request_id, self.results)

    @property
    def partition_count(self) -> int:
        return len(self.results)


@attrs.define(eq=False)
class DelayedFetch(DelayedOperation):
    """Waits for ``min_bytes`` of new data on the partitions it reads (long polling)."""

    KIND: ClassVar[str] = "fetch"
    request_id: int
    params: FetchParams
    fetches: list[tuple[FetchPartition, LogOffsetMetadata | None]]
    """Each partition with where its fetch offset lies (None: the read failed)."""
    partitions: Callable[[TopicPartition], Partition | None]
    read: Callable[[], list[tuple[FetchPartition, FetchPartitionResult]]]
    created: float = attrs.field(default=0.0, kw_only=True)
    """When it was parked, on the shell's clock (for the trace)."""
    expired: bool = attrs.field(init=False, default=False)
    response: FetchResponse | None = attrs.field(init=False, default=None)
    """The answer, once completed."""

    def try_complete(self) -> bool:
        accumulated = 0
        for fetch, start in self.fetches:
            if start is None:
                continue
            partition = self.partitions(fetch.topic_partition)
            if partition is None or not partition.is_leader or partition.offline_reason:
                return self.force_complete()  # the answer is now an error: give it
            if 0 <= fetch.current_leader_epoch != partition.leader_epoch:
                # KIP-320: the fetcher's epoch is out of date
                return self.force_complete()
            log = partition.log
            end_offset = (
                log.log_end_offset
                if self.params.is_from_follower
                else log.last_stable_offset
                if self.params.read_committed
                else log.high_watermark
            )
            if end_offset == start.offset:
                continue
            end = log.offset_metadata(end_offset)
            if end.segment_base_offset != start.segment_base_offset:
                # Either the data runs into a newer segment (there is at least a batch
                # to send) or the log was truncated onto an older one: answer either
                # way.
                return self.force_complete()
            if start.offset < end_offset:
                available = end.relative_position - start.relative_position
                accumulated += min(available, fetch.max_bytes)
        return accumulated >= self.params.min_bytes and self.force_complete()

    def on_expiration(self) -> None:
        # fetch.max.wait.ms passed: answered with whatever there is (see on_complete).
        self.expired = True

    def on_complete(self) -> None:
        # Read again: the answer carries whatever is there now, up to the limits.
        self.response = FetchResponse(self.request_id, self.read())

    @property
    def partition_count(self) -> int:
        return len(self.fetches)


@attrs.define(eq=False)
class DelayedDeleteRecords(DelayedOperation):
    """Waits until every partition's low watermark reaches the offset asked (KIP-107):
    then no in-sync replica keeps a deleted record, and a new leader cannot serve
    one."""

    KIND: ClassVar[str] = "delete_records"
    request_id: int
    results: dict[TopicPartition, DeleteRecordsPartitionResult]
    required_offsets: dict[TopicPartition, int]
    """Partitions still waiting -> the offset asked (-1 made the high watermark), which
    their low watermark must reach."""
    partitions: Callable[[TopicPartition], Partition | None]
    created: float = attrs.field(default=0.0, kw_only=True)
    expired: bool = attrs.field(init=False, default=False)
    response: DeleteRecordsResponse | None = attrs.field(init=False, default=None)

    def try_complete(self) -> bool:
        for tp, required in list(self.required_offsets.items()):
            partition = self.partitions(tp)
            if partition is None or not partition.is_leader or partition.offline_reason:
                # The leadership moved (or the log failed): the asker must retry there.
                self.results[tp] = DeleteRecordsPartitionResult(
                    ErrorCode.not_leader_or_follower
                )
            elif (low := partition.low_watermark()) >= required:
                self.results[tp] = DeleteRecordsPartitionResult(ErrorCode.none, low)
            else:
                continue
            del self.required_offsets[tp]
        return not self.required_offsets and self.force_complete()

    def on_expiration(self) -> None:
        self.expired = True
        for tp in self.required_offsets:
            self.results[tp] = DeleteRecordsPartitionResult(
                ErrorCode.request_timed_out,
                error_message="the replicas did not reach the new log start in time",
            )
        self.required_offsets.clear()

    def on_complete(self) -> None:
        self.response = DeleteRecordsResponse(self.request_id, self.results)

    @property
    def partition_count(self) -> int:
        return len(self.results)


@attrs.define(eq=False)
class DelayedOperations:
    """The ReplicaManager's three purgatories, and the answers of what they complete.

    Completion happens deep inside a ReplicaManager call (a follower's fetch moves the HW,
    which completes a produce; a re-read that fails takes a log dir offline, which
    completes others), so the completed operations are gathered in ``_completed`` and
    every public call of the ReplicaManager ends by taking their answers
    (:meth:`answers`, the replies of its result): the list is empty between calls, and
    holds no time.
    """

    tracer: Tracer = attrs.field(factory=NullTracer)
    produce: DelayedOperationPurgatory[DelayedProduce] = attrs.field(
        init=False, factory=lambda: DelayedOperationPurgatory("Produce")
    )
    fetch: DelayedOperationPurgatory[DelayedFetch] = attrs.field(
        init=False, factory=lambda: DelayedOperationPurgatory("Fetch")
    )
    delete_records: DelayedOperationPurgatory[DelayedDeleteRecords] = attrs.field(
        init=False, factory=lambda: DelayedOperationPurgatory("DeleteRecords")
    )
    _completed: list[DelayedProduce | DelayedFetch | DelayedDeleteRecords] = (
        attrs.field(init=False, factory=list)
    )

    def check(self, tp: TopicPartition) -> None:
        """Something behind ``tp`` changed: let the operations watching it check again.

        Run on every append and every follower fetch; a purgatory where nothing waits on
        ``tp`` (an ``acks=1`` produce, a partition no consumer long-polls) costs one
        lookup, not a check.
        """
        if self.produce.has_watchers(tp):
            self._completed += self.produce.check_and_complete(tp)
        if self.fetch.has_watchers(tp):
            self._completed += self.fetch.check_and_complete(tp)
        if self.delete_records.has_watchers(tp):
            self._completed += self.delete_records.check_and_complete(tp)

    def check_delete_records(self, tp: TopicPartition) -> None:
        """A follower said its log start offset: the low watermark may have moved. Run
        on every follower fetch, so a partition no deletion waits on costs one lookup."""
        if self.delete_records.has_watchers(tp):
            self._completed += self.delete_records.check_and_complete(tp)

    def expire(self, now: float) -> None:
        """Complete the operations whose deadline is ``now`` or before (all: ``math.inf``)."""
        self._completed += self.produce.expire(now)
        self._completed += self.fetch.expire(now)
        self._completed += self.delete_records.expire(now)

    def next_deadline(self) -> float | None:
        # Asked after every call the shell makes: no generator, and most often all None.
        earliest: float | None = None
        for purgatory in (self.produce, self.fetch, self.delete_records):
            deadline = purgatory.next_deadline()
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    def answers(self, now: float, own: Response | None = None) -> tuple[Response, ...]:
        """The answers of the operations completed since the last call, then ``own``:
        the replies of the ReplicaManager's result.

        Each is traced with how long its request waited (``now`` minus when it was parked).
        """
        if not self._completed:  # most calls completed nothing parked: their own only
            return () if own is None else (own,)
        completed, self._completed = self._completed, []
        responses: list[Response] = []
        for operation in completed:
            if self.tracer.enabled:
                outcome = "expired" if operation.expired else "completed"
                waited_ms = max(now - operation.created, 0.0) * 1000
                event = DelayedOperationCompleted(
                    operation.KIND, outcome, waited_ms, operation.partition_count
                )
                self.tracer.emit(event, now)
            assert operation.response is not None  # set by on_complete
            responses.append(operation.response)
        if own is not None:
            responses.append(own)
        return tuple(responses)
