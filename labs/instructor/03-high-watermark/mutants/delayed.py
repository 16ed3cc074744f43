"""Wrong on purpose: the purgatory's two completions, each function wrong in one way.

Each is minikafka's ``DelayedProduce.try_complete`` or ``DelayedFetch.try_complete``
with one knob of :func:`produce` or :func:`fetch` turned; mutants.toml switches one
function in at a time.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.replication._delayed import DelayedFetch, DelayedProduce
from minikafka.replication._results import ProducePartitionResult


def produce(
    self: DelayedProduce,
    *,
    any_done: bool = False,
    keep_errors: bool = True,
    missing_fails: bool = True,
) -> bool:
    """minikafka's completion of an acks=all produce, unless a knob says otherwise."""
    done_one = False
    for tp, required in list(self.required_offsets.items()):
        partition = self.partitions(tp)
        if partition is None:
            error: ErrorCode | None = (
                ErrorCode.unknown_topic_or_partition
                if missing_fails
                else ErrorCode.none
            )
        else:
            error = partition.check_enough_replicas_reach_offset(required)
        if error is None:
            continue
        done_one = True
        del self.required_offsets[tp]
        if error is not ErrorCode.none and keep_errors:
            self.results[tp] = ProducePartitionResult(error)
    if any_done and done_one:
        self.required_offsets.clear()
    return not self.required_offsets and self.force_complete()


def produce_when_one_is_done(self: DelayedProduce) -> bool:
    """Answers once any partition is done, not every one."""
    return produce(self, any_done=True)


def produce_drops_errors(self: DelayedProduce) -> bool:
    """A partition that failed (the ISR shrank below min.insync.replicas, the leader
    moved) is answered as written."""
    return produce(self, keep_errors=False)


def produce_missing_is_written(self: DelayedProduce) -> bool:
    """A partition that disappeared is answered as written."""
    return produce(self, missing_fails=False)


def fetch(
    self: DelayedFetch,
    *,
    consumer_to_leo: bool = False,
    follower_to_hw: bool = False,
    cap: bool = True,
    moved: bool = True,
    epoch: bool = True,
    segment: bool = True,
    records: bool = False,
) -> bool:
    """minikafka's completion of a long poll, unless a knob says otherwise."""
    accumulated = 0
    for fetch, start in self.fetches:
        if start is None:
            continue
        partition = self.partitions(fetch.topic_partition)
        if partition is None or not partition.is_leader or partition.offline_reason:
            if moved:
                return self.force_complete()
            continue
        if epoch and 0 <= fetch.current_leader_epoch != partition.leader_epoch:
            return self.force_complete()
        log = partition.log
        follower = self.params.is_from_follower
        to_leo = not follower_to_hw if follower else consumer_to_leo
        end_offset = log.log_end_offset if to_leo else log.high_watermark
        if end_offset == start.offset:
            continue
        end = log.offset_metadata(end_offset)
        if segment and end.segment_base_offset != start.segment_base_offset:
            return self.force_complete()
        if start.offset < end_offset:
            if records:
                available = end_offset - start.offset
            else:
                available = end.relative_position - start.relative_position
            accumulated += min(available, fetch.max_bytes) if cap else available
    return accumulated >= self.params.min_bytes and self.force_complete()


def fetch_consumer_to_log_end(self: DelayedFetch) -> bool:
    """A consumer's long poll counts the bytes above the HW too."""
    return fetch(self, consumer_to_leo=True)


def fetch_follower_to_hw(self: DelayedFetch) -> bool:
    """A follower's long poll counts only up to the HW."""
    return fetch(self, follower_to_hw=True)


def fetch_uncapped(self: DelayedFetch) -> bool:
    """A partition's bytes count beyond what its fetch may take (max_bytes)."""
    return fetch(self, cap=False)


def fetch_ignores_moved(self: DelayedFetch) -> bool:
    """A partition that moved away or disappeared does not answer the poll at once."""
    return fetch(self, moved=False)


def fetch_ignores_epoch(self: DelayedFetch) -> bool:
    """A changed leader epoch does not answer the poll at once."""
    return fetch(self, epoch=False)


def fetch_ignores_new_segment(self: DelayedFetch) -> bool:
    """Data that runs into a new segment does not answer the poll at once."""
    return fetch(self, segment=False)


def fetch_counts_records(self: DelayedFetch) -> bool:
    """min_bytes is counted in records (offsets), not in bytes."""
    return fetch(self, records=True)
