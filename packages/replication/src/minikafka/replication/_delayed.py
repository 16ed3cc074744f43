"""DelayedProduce and DelayedFetch: the two operations the ReplicaManager parks.

DelayedProduce (``acks=all``) waits, for each partition it wrote, until the high
watermark reaches the offset after its last batch: then every in-sync replica has the
records. DelayedFetch waits until the partitions it reads hold at least
``fetch.min.bytes`` beyond the fetch offsets, or until ``fetch.max.wait.ms``. Both are
woken by the ReplicaManager through the purgatory's watch keys (the partitions), never
by polling.

Each carries the id its caller gave the request and, once completed, its answer as a
value (``response``): the ReplicaManager returns it to its shell, which sends it. No
operation holds a clock or a callback into the shell; ``created`` (when it was parked)
lets the ReplicaManager trace how long it waited, with the ``now`` of the call that
completed it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import LogOffsetMetadata, TopicPartition

from ._partition import Partition
from ._purgatory import DelayedOperation
from ._results import (
    FetchParams,
    FetchPartition,
    FetchPartitionResult,
    FetchResponse,
    ProducePartitionResult,
    ProduceResponse,
)


@attrs.define(eq=False)
class DelayedProduce(DelayedOperation):
    """Waits until every appended partition's HW passes its batches (acks=all)."""

    request_id: int
    results: dict[TopicPartition, ProducePartitionResult]
    required_offsets: dict[TopicPartition, int]  # partitions still waiting -> last offset + 1
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


@attrs.define(eq=False)
class DelayedFetch(DelayedOperation):
    """Waits for ``min_bytes`` of new data on the partitions it reads (long polling)."""

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
                return self.force_complete()  # KIP-320: the fetcher's epoch is out of date
            log = partition.log
            end_offset = log.log_end_offset if self.params.is_from_follower else log.high_watermark
            if end_offset == start.offset:
                continue
            end = log.offset_metadata(end_offset)
            if end.segment_base_offset != start.segment_base_offset:
                # Either the data runs into a newer segment (there is at least a batch to
                # send) or the log was truncated onto an older one: answer either way.
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
