"""The follower's half of replication: a fetcher per leader broker (seed 000; KIP-101,
KIP-279, KIP-320; Kafka's ``AbstractFetcherThread`` and ``ReplicaFetcherThread``).

A follower replicates the way a consumer reads: it sends the leader Fetch requests, with
its own broker id as ``replica_id``, asks for each partition from its log end, and
appends what comes back with the leader's offsets and epochs. Two things make it more
than a consumer:

- **Truncation first.** A follower that was, or followed, a leader in an earlier epoch
  may hold records the current leader never had (they were never committed). Before its
  first fetch in a new leader epoch it asks the leader, with OffsetsForLeaderEpoch, where
  its own latest epoch ends on the leader, and truncates to that (KIP-101, with KIP-279's
  rule for an epoch the leader never had: use the largest epoch both know).
- **Epoch fencing.** Every request names the leader epoch the follower believes current
  (KIP-320); a leader that has moved on answers FENCED_LEADER_EPOCH, one that has not yet
  heard of the epoch answers UNKNOWN_LEADER_EPOCH, and the follower backs off
  (``replica.fetch.backoff.ms``) until the metadata brings the new leader.

The fetcher is a core: it builds requests as values (the messages of a ``CoreResult``:
the partitions of one OffsetsForLeaderEpoch or one Fetch to the leader), takes answers as
values, and calls the follower's Partitions directly for the appends and truncations (the
log is a local, synchronous library here, as it is for the ReplicaManager). Its shell
sends the requests to the leader's broker.

One partition's trouble is that partition's alone (Kafka's ``partitionsWithError``). A
fetch answer may end inside a batch (the leader cuts it at ``replica.fetch.max.bytes``):
the log appends the whole batches and the next fetch asks again from the cut batch's
start. But records that are truly corrupt, a disk that refuses the append, or a bug: any
exception while appending or truncating one partition marks that partition failed, it is
fetched again after ``replica.fetch.backoff.ms``, and the fetcher goes on with the
others. The failures come back as values (:class:`FetchFailure`) for the shell to log
once and to report; a storage error also takes the log dir offline there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.log import UNDEFINED_EPOCH

from ._partition import Partition
from ._partition_base import ReplicationError
from ._results import FetchPartition, FetchPartitionResult

REPLICA_FETCH_MAX_BYTES = 1024 * 1024
"""``replica.fetch.max.bytes``: Kafka's default, per partition."""
REPLICA_FETCH_BACKOFF_MS = 1000
"""``replica.fetch.backoff.ms``: Kafka's default."""


@attrs.define(eq=False)
class PartitionFetchState:
    """Where one partition's fetching stands (Kafka's ``PartitionFetchState``)."""

    fetch_offset: int
    current_leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    error: str | None = None
    """Why the partition's last round failed (None while it fetches well)."""
    failures: int = 0
    """Rounds failed in a row; back to 0 once an append or truncation succeeds."""
    failed_since: float | None = None

    @property
    def state(self) -> str:
        """``failed``, ``truncating``, ``delayed`` (backing off) or ``fetching``."""
        if self.error is not None:
            return "failed"
        if self.truncating:
            return "truncating"
        return "delayed" if self.delayed_until > 0 else "fetching"


@attrs.frozen
class FetchFailure:
    """One partition that failed a round: the shell logs it (at ERROR when ``first``)."""

    topic_partition: TopicPartition
    fetch_offset: int
    error: Exception
    first: bool
    """The first failure since the partition last made progress."""


@attrs.frozen
class FetchRound:
    """What one batch of answers did: partitions that advanced (a Fetch's answers),
    truncations made (OffsetsForLeaderEpoch's), partitions that failed."""

    advanced: int = 0
    failures: tuple[FetchFailure, ...] = ()
    truncated: tuple[tuple[TopicPartition, int], ...] = ()
    """``(partition, offset)`` for each log truncated to ``offset``."""
    appended: tuple[tuple[TopicPartition, int, int, int], ...] = ()
    """``(partition, fetch offset, new log end, bytes)`` for each log an append moved:
    what the shell traces as the follower's side of the round."""


@attrs.frozen
class EpochRequest:
    """One partition of an OffsetsForLeaderEpoch request to the leader."""

    topic_partition: TopicPartition
    current_leader_epoch: int
    leader_epoch: int


@attrs.frozen
class EpochAnswer:
    """The leader's answer: ``leader_epoch`` ends at ``end_offset`` in its log."""

    topic_partition: TopicPartition
    error_code: ErrorCode
    leader_epoch: int = UNDEFINED_EPOCH
    end_offset: int = -1


@attrs.frozen
class FetchedPartition:
    """One partition of the leader's Fetch answer, records as bytes."""

    topic_partition: TopicPartition
    error_code: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""

    @classmethod
    def of(
        cls, fetch: FetchPartition, result: FetchPartitionResult
    ) -> FetchedPartition:
        """The leader's own answer (records as a file slice) as a follower receives it."""
        records = result.records.read_bytes() if result.records is not None else b""
        return cls(
            fetch.topic_partition,
            result.error_code,
            result.high_watermark,
            result.log_start_offset,
            records,
        )


@attrs.define(eq=False)
class ReplicaFetcher:
    """Fetches the partitions this broker follows from one leader broker."""

    broker_id: int
    source_broker: int
    local: Mapping[TopicPartition, Partition]
    """The follower's partitions (its ReplicaManager's)."""
    fetch_max_bytes: int = REPLICA_FETCH_MAX_BYTES
    backoff: float = REPLICA_FETCH_BACKOFF_MS / 1000
    states: dict[TopicPartition, PartitionFetchState] = attrs.field(factory=dict)

    # --- which partitions -----------------------------------------------------------------

    def add_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Start (or restart, in a new leader epoch) fetching ``tps``: truncation first."""
        for tp in tps:
            partition = self.local[tp]
            self.states[tp] = PartitionFetchState(
                partition.log.log_end_offset, partition.leader_epoch
            )

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.states.pop(tp, None)

    # --- truncation (KIP-101, KIP-279) ----------------------------------------------------

    def epoch_requests(self, now: float) -> CoreResult[Never, Never, EpochRequest]:
        """OffsetsForLeaderEpoch for the partitions that must truncate before fetching:
        the messages are the partitions of one request to the leader."""
        requests = []
        for tp, state in self.states.items():
            if not state.truncating or state.delayed_until > now:
                continue
            latest = self.local[tp].log.leader_epoch_cache.latest_epoch
            if latest is None:
                # Nothing written in any epoch: nothing can diverge; fetch from the end.
                state.truncating = False
                state.fetch_offset = self.local[tp].log.log_end_offset
                continue
            requests.append(EpochRequest(tp, state.current_leader_epoch, latest))
        return CoreResult(messages=tuple(requests))

    def on_epoch_answers(
        self, answers: Iterable[EpochAnswer], now: float
    ) -> FetchRound:
        """Truncate where the leader says: the (partition, offset) truncations made, and
        the partitions whose truncation failed."""
        truncated = []
        failures = []
        for answer in answers:
            tp = answer.topic_partition
            state = self.states.get(tp)
            if state is None or not state.truncating:
                continue
            if answer.error_code is not ErrorCode.none:
                state.delayed_until = now + self.backoff
                continue
            partition = self.local[tp]
            try:
                target, complete = self._truncation_offset(partition, answer)
                if target < partition.log.log_end_offset:
                    partition.truncate_to(target, now)
                    truncated.append((tp, target))
            except (
                Exception
            ) as exc:  # this partition's alone: see the module's docstring
                failures.append(self._failed(tp, state, exc, now))
                continue
            # Not complete: this log did not know the leader's epoch; it truncated to its
            # own end of an older one and asks again about its new latest epoch.
            state.truncating = not complete
            state.fetch_offset = partition.log.log_end_offset
            self._succeeded(state)
        return FetchRound(failures=tuple(failures), truncated=tuple(truncated))

    @staticmethod
    def _truncation_offset(
        partition: Partition, answer: EpochAnswer
    ) -> tuple[int, bool]:
        """Kafka's ``getOffsetTruncationState``: where to truncate, and whether that is
        the end of truncating."""
        log = partition.log
        if answer.end_offset < 0:
            # The leader has no answer (an old message format, or its log was deleted):
            # KIP-101's fallback, the high watermark, which both have committed.
            return min(log.high_watermark, log.log_end_offset), True
        if answer.leader_epoch == UNDEFINED_EPOCH:
            return min(answer.end_offset, log.log_end_offset), True
        epoch, local_end = log.leader_epoch_cache.end_offset_for(
            answer.leader_epoch, log.log_end_offset
        )
        if epoch != answer.leader_epoch:
            # KIP-279: the leader's largest epoch <= ours is one this log never had.
            return min(max(local_end, 0), log.log_end_offset), False
        return min(answer.end_offset, local_end), True

    # --- fetching ---------------------------------------------------------------------------

    def fetch_request(self, now: float) -> CoreResult[Never, Never, FetchPartition]:
        """The partitions to fetch now, each from its log end, naming the leader epoch:
        the messages are the partitions of one Fetch to the leader."""
        fetches = []
        for tp, state in self.states.items():
            if state.truncating or state.delayed_until > now:
                continue
            state.delayed_until = 0.0  # a backoff that has run out
            fetches.append(
                FetchPartition(
                    tp,
                    state.fetch_offset,
                    self.fetch_max_bytes,
                    state.current_leader_epoch,
                    # The leader's low watermark waits on it (DeleteRecords, KIP-107).
                    self.local[tp].log.log_start_offset,
                )
            )
        return CoreResult(messages=tuple(fetches))

    def on_fetch_answers(
        self, fetched: Iterable[FetchedPartition], now: float
    ) -> FetchRound:
        """Append what the leader sent; which partitions advanced and which failed."""
        advanced = 0
        failures = []
        appended = []
        for data in fetched:
            tp = data.topic_partition
            state = self.states.get(tp)
            if state is None or state.truncating:
                continue
            # Kafka's PartitionStates.updateAndMoveToEnd: the next request names this
            # partition last. The leader returns the first partition's first batch whole
            # however large (min_one_message) but may cut the others to nothing that is
            # whole, so each partition must come first in its turn.
            self.states[tp] = self.states.pop(tp)
            if data.error_code is ErrorCode.none:
                partition = self.local[tp]
                try:
                    partition.append_records_to_follower(
                        data.records, data.high_watermark, data.log_start_offset
                    )
                except ReplicationError:
                    # Not a follower here any more, or offline: the metadata will say.
                    state.delayed_until = now + self.backoff
                    continue
                except Exception as exc:  # this partition's alone: see the docstring
                    failures.append(self._failed(tp, state, exc, now))
                    continue
                self._succeeded(state)
                end = partition.log.log_end_offset
                if end > state.fetch_offset:
                    advanced += 1
                    appended.append((tp, state.fetch_offset, end, len(data.records)))
                state.fetch_offset = end
            elif data.error_code is ErrorCode.offset_out_of_range:
                if 0 <= state.fetch_offset < data.log_start_offset:
                    # Behind the leader's log start (its retention deleted what this
                    # replica lacks): start over empty at the leader's start (Kafka's
                    # truncateFullyAndStartAt).
                    try:
                        self.local[tp].truncate_fully_and_start_at(
                            data.log_start_offset, now
                        )
                    except Exception as exc:  # this partition's alone
                        failures.append(self._failed(tp, state, exc, now))
                        continue
                    state.fetch_offset = data.log_start_offset
                else:
                    # Past the leader's end (an unclean election): find out where the
                    # logs agree again before fetching.
                    state.truncating = True
            else:
                # The leader moved (the metadata will say where), or an error of the
                # leader's own: back off and ask again.
                state.delayed_until = now + self.backoff
        return FetchRound(advanced, tuple(failures), appended=tuple(appended))

    # --- failed partitions (Kafka's partitionsWithError) --------------------------------

    def _failed(
        self, tp: TopicPartition, state: PartitionFetchState, exc: Exception, now: float
    ) -> FetchFailure:
        """Mark ``tp`` failed: it is retried after the backoff, the others go on."""
        first = state.error is None
        state.error = f"{type(exc).__name__}: {exc}"
        state.failures += 1
        if first:
            state.failed_since = now
        state.delayed_until = now + self.backoff
        return FetchFailure(tp, state.fetch_offset, exc, first)

    @staticmethod
    def _succeeded(state: PartitionFetchState) -> None:
        state.delayed_until = 0.0
        state.error = None
        state.failures = 0
        state.failed_since = None

    def failed_partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        """The partitions whose last round failed, and where each stands."""
        return {tp: s for tp, s in self.states.items() if s.error is not None}
