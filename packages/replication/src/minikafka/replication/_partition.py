"""Partition: one replica of a topic partition on this broker, as leader or follower.

Seed 000's replication vocabulary, kept on the leader:

- LEO (log end offset): the offset the next record will get, one per replica. The
  leader knows its own from its log and each follower's from the offsets the follower
  fetches from (a follower fetching offset ``n`` has everything below ``n``).
- ISR (in-sync replicas): the replicas that keep up. The controller owns the list; the
  leader proposes changes with AlterPartition (KIP-497): it drops a follower that has not
  caught up for ``replica.lag.time.max.ms`` (:meth:`Partition.maybe_shrink_isr`) and adds
  one back once it has reached the high watermark in the current leader epoch. While a
  proposal is in flight the leader counts the *maximal* ISR (the committed one plus any
  replica being added) for the HW, so no acknowledged write ever rests on fewer replicas
  than the controller may decide.
- HW (high watermark): the smallest LEO among the ISR. Records below it are on every
  in-sync replica, so consumers may read them and ``acks=all`` may be answered.
- ``min.insync.replicas``: an ``acks=all`` write is refused with NOT_ENOUGH_REPLICAS when
  the ISR is smaller than this, because the write could not be as durable as promised.

A Partition is a core: it changes only when called, with ``now`` passed in, and reports
its trace events to the tracer it was given (its broker's, so that brokers sharing a
process write distinguishable streams).
"""

from __future__ import annotations

import uuid

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, ApiError, TopicPartition
from minikafka.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchDataInfo,
    Log,
    LogAppendInfo,
    TimestampAndOffset,
)
from minikafka.trace import NullTracer, Tracer

from ._events import (
    BecameFollower,
    BecameLeader,
    FollowerFetched,
    FollowerTruncated,
    HighWatermarkAdvanced,
    IsrChanged,
    IsrChangeProposed,
)
from ._isr import IsrChangeProposal, PendingIsrChange, ReplicaState


class ReplicationError(ApiError):
    """A request this partition refuses, carrying the Kafka error code to answer with."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@attrs.frozen
class PartitionState:
    """What the controller decided for one partition (Kafka's LeaderAndIsrPartitionState).

    In KRaft mode the broker reads it from the metadata image; in ZooKeeper mode it comes
    in a LeaderAndIsr request. Either way the Partition only obeys it.
    """

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@attrs.frozen
class LogReadResult:
    """A read for a fetch, with the offsets the response reports beside the records."""

    info: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int


@attrs.define(eq=False)
class Partition:
    topic_partition: TopicPartition
    topic_id: uuid.UUID
    local_broker_id: int
    log: Log
    min_insync_replicas: int = 1
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: frozenset[int] = frozenset()
    remote_replicas: dict[int, ReplicaState] = attrs.field(factory=dict)
    # the log end when this leadership began
    leader_epoch_start_offset: int | None = None
    pending_isr_change: PendingIsrChange | None = None
    offline_reason: str | None = None
    """Why the log is offline (its dir failed a write or fsync); None while it is usable.

    Kafka's ``HostedPartition.Offline``: until the broker restarts, every produce, fetch
    and ListOffsets on the partition is answered KAFKA_STORAGE_ERROR."""
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True, repr=False)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    # --- becoming leader or follower ----------------------------------------------------

    def make_leader(self, state: PartitionState, now: float) -> bool:
        """Lead as the controller decided; False if ``state`` is older than what we have."""
        if self._is_stale(state):
            return False
        new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
        previous_isr = self.isr
        self._update_assignment(state)
        if new_epoch:
            # Every follower must fetch again before the leader counts its LEO (Kafka
            # resets the remote replicas' state when a leader epoch starts).
            self.remote_replicas = {
                b: ReplicaState(b, last_caught_up_time=now)
                for b in self.replicas
                if b != self.local_broker_id
            }
            # KIP-101: the new epoch starts at the leader's log end offset.
            self.log.leader_epoch_cache.assign(
                self.leader_epoch, self.log.log_end_offset
            )
            self.leader_epoch_start_offset = self.log.log_end_offset
            if self.tracer.enabled:
                tp = self.topic_partition
                event = BecameLeader(
                    tp.topic,
                    tp.partition,
                    self.leader_epoch,
                    self.partition_epoch,
                    self.replicas,
                    tuple(sorted(self.isr)),
                    self.log.log_end_offset,
                )
                self.tracer.emit(event, now)
        else:
            if self.isr != previous_isr and self.tracer.enabled:
                tp = self.topic_partition
                changed = IsrChanged(
                    tp.topic,
                    tp.partition,
                    self.leader_epoch,
                    self.partition_epoch,
                    tuple(sorted(previous_isr)),
                    tuple(sorted(self.isr)),
                )
                self.tracer.emit(changed, now)
            for b in self.replicas:
                if b != self.local_broker_id and b not in self.remote_replicas:
                    self.remote_replicas[b] = ReplicaState(b, last_caught_up_time=now)
            for b in list(self.remote_replicas):
                if b not in self.replicas:
                    del self.remote_replicas[b]
        self.maybe_increment_leader_hw(now)
        return True

    def make_follower(self, state: PartitionState, now: float) -> bool:
        """Follow ``state.leader``; False if ``state`` is older than what we have."""
        if self._is_stale(state):
            return False
        new_epoch = (
            state.leader_epoch != self.leader_epoch or state.leader != self.leader_id
        )
        self._update_assignment(state)
        if new_epoch and self.tracer.enabled:
            tp = self.topic_partition
            event = BecameFollower(
                tp.topic,
                tp.partition,
                self.leader_id,
                self.leader_epoch,
                self.partition_epoch,
            )
            self.tracer.emit(event, now)
        self.remote_replicas = {}
        self.leader_epoch_start_offset = None
        return True

    def _is_stale(self, state: PartitionState) -> bool:
        # An older leader epoch, or the same one at an older partition epoch (an ISR
        # change we have already applied a newer version of): Kafka skips both.
        return (state.leader_epoch, state.partition_epoch) < (
            self.leader_epoch,
            self.partition_epoch,
        )

    def _update_assignment(self, state: PartitionState) -> None:
        # The controller's state is the truth: a proposal still in flight is answered by
        # it (the new partition epoch), or made moot.
        self.pending_isr_change = None
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = tuple(state.replicas)
        self.isr = frozenset(state.isr)

    # --- the leader's write path ----------------------------------------------------------

    def append_records_to_leader(
        self, records: bytearray | memoryview, required_acks: Acks, now: float
    ) -> LogAppendInfo:
        """Append a producer's batches (seed 000: "Partition.appendRecordsToLeader")."""
        self._check_online()
        if not self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} is not the leader of "
                f"{self.topic_partition}",
            )
        # Checked before the append: with too few in-sync replicas an acks=all write
        # could not reach the promised number of copies, so it is refused outright.
        if required_acks == Acks.ALL and len(self.isr) < self.min_insync_replicas:
            raise ReplicationError(
                ErrorCode.not_enough_replicas,
                f"the ISR of {self.topic_partition} has {len(self.isr)} replica(s), "
                "below "
                f"min.insync.replicas={self.min_insync_replicas}",
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_leader_hw(now)
        return info

    def maybe_increment_leader_hw(self, now: float) -> bool:
        """Move the HW to the smallest LEO in the ISR; True if it moved."""
        if not self.is_leader:
            return False
        new_hw = self.log.log_end_offset
        for broker_id in self.maximal_isr:
            if broker_id == self.local_broker_id:
                continue
            replica = self.remote_replicas.get(broker_id)
            new_hw = min(new_hw, replica.log_end_offset if replica else -1)
        if new_hw < 0:
            return False  # a follower in the ISR has not fetched in this epoch yet
        previous = self.log.high_watermark
        if not self.log.maybe_increment_high_watermark(new_hw):
            return False
        if self.tracer.enabled:
            tp = self.topic_partition
            hw = self.log.high_watermark
            self.tracer.emit(
                HighWatermarkAdvanced(
                    tp.topic, tp.partition, previous, hw, self.leader_epoch
                ),
                now,
            )
        return True

    def update_follower_fetch_state(
        self, broker_id: int, fetch_offset: int, now: float
    ) -> bool:
        """A follower fetched from ``fetch_offset``: it has everything below. True if HW moved."""
        replica = self.remote_replicas.get(broker_id)
        if replica is None:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {broker_id} is not a replica of {self.topic_partition}",
            )
        replica.update_fetch_state(fetch_offset, self.log.log_end_offset, now)
        # Traced before the HW moves, so a trace reads in causal order: the fetch, then
        # the ``hw_advance`` it caused (the event's HW is the one the fetch found).
        if self.tracer.enabled:
            tp, end = self.topic_partition, self.log.log_end_offset
            self.tracer.emit(
                FollowerFetched(
                    tp.topic,
                    tp.partition,
                    broker_id,
                    fetch_offset,
                    end,
                    self.log.high_watermark,
                    end - fetch_offset,
                    (now - replica.last_caught_up_time) * 1000,
                ),
                now,
            )
        moved = self.maybe_increment_leader_hw(now)
        self._maybe_expand_isr(replica, now)
        return moved

    # --- the ISR's changes (KIP-497) -------------------------------------------------------

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the HW is computed over: the committed ISR, plus a replica whose
        addition is in flight (a removal in flight still counts the replica)."""
        pending = self.pending_isr_change
        return self.isr if pending is None else pending.maximal_isr

    def maybe_shrink_isr(self, now: float, max_lag: float) -> bool:
        """Propose dropping every follower not caught up within ``max_lag`` seconds
        (``replica.lag.time.max.ms``); True if a proposal was made."""
        if not self.is_leader or self.pending_isr_change is not None:
            return False
        out_of_sync = {
            b
            for b in self.isr
            if b != self.local_broker_id
            and (r := self.remote_replicas.get(b)) is not None
            and now - r.last_caught_up_time > max_lag
        }
        if not out_of_sync:
            return False
        # Until the controller agrees, the slow followers still count for the HW: the
        # shrink is not real before it commits (the maximal ISR stays the old one).
        self._propose(self.isr - out_of_sync, maximal=self.isr)
        if self.tracer.enabled:
            leaving = tuple(sorted(out_of_sync))
            lags = tuple(
                (now - self.remote_replicas[b].last_caught_up_time) * 1000
                for b in leaving
            )
            self._trace_proposal("shrink", leaving, lags, now)
        return True

    def _maybe_expand_isr(self, replica: ReplicaState, now: float) -> None:
        """Propose adding a follower back once it has caught up to the HW, in this epoch."""
        if not self.is_leader or self.pending_isr_change is not None:
            return
        if replica.broker_id in self.isr or replica.broker_id not in self.replicas:
            return
        start = self.leader_epoch_start_offset
        caught_up = replica.log_end_offset >= self.log.high_watermark and (
            start is not None and replica.log_end_offset >= start
        )
        if caught_up:
            grown = self.isr | {replica.broker_id}
            self._propose(grown, maximal=grown)
            if self.tracer.enabled:
                self._trace_proposal("expand", (replica.broker_id,), (0.0,), now)

    def _trace_proposal(
        self,
        kind: str,
        replicas: tuple[int, ...],
        lag_ms: tuple[float, ...],
        now: float,
    ) -> None:
        pending = self.pending_isr_change
        assert pending is not None
        tp = self.topic_partition
        self.tracer.emit(
            IsrChangeProposed(
                tp.topic,
                tp.partition,
                kind,
                self.leader_epoch,
                self.partition_epoch,
                tuple(sorted(self.isr)),
                pending.proposal.new_isr,
                replicas,
                lag_ms,
                self.log.high_watermark,
            ),
            now,
        )

    def _propose(self, new_isr: frozenset[int], *, maximal: frozenset[int]) -> None:
        proposal = IsrChangeProposal(
            self.topic_partition,
            self.topic_id,
            self.leader_epoch,
            tuple(sorted(new_isr)),
            self.partition_epoch,
        )
        self.pending_isr_change = PendingIsrChange(proposal, maximal)

    @property
    def has_unsent_isr_change(self) -> bool:
        pending = self.pending_isr_change
        return pending is not None and not pending.sent

    def take_isr_change(self) -> IsrChangeProposal | None:
        """The proposal to send now, if one waits unsent (each is sent once)."""
        pending = self.pending_isr_change
        if pending is None or pending.sent:
            return None
        pending.sent = True
        return pending.proposal

    def on_isr_change_answer(
        self,
        error_code: ErrorCode,
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
        now: float,
    ) -> bool:
        """The controller's answer to the proposal in flight; True if the HW moved.

        Accepted: the new ISR and partition epoch are this leader's now (the metadata log
        will say the same). Refused (a stale partition epoch, a fenced leader epoch):
        the proposal is dropped and the leader waits for the metadata, then proposes
        again if it still should."""
        if self.pending_isr_change is None:
            return False
        self.pending_isr_change = None
        fresh = (
            leader_epoch == self.leader_epoch and partition_epoch > self.partition_epoch
        )
        if error_code is ErrorCode.none and fresh:
            previous = self.isr
            self.isr = frozenset(isr)
            self.partition_epoch = partition_epoch
            if self.tracer.enabled:
                tp = self.topic_partition
                self.tracer.emit(
                    IsrChanged(
                        tp.topic,
                        tp.partition,
                        self.leader_epoch,
                        self.partition_epoch,
                        tuple(sorted(previous)),
                        tuple(sorted(self.isr)),
                    ),
                    now,
                )
        return self.maybe_increment_leader_hw(now)

    def check_enough_replicas_reach_offset(
        self, required_offset: int
    ) -> ErrorCode | None:
        """For DelayedProduce: the answer once the HW reaches ``required_offset``, else None."""
        if self.offline_reason is not None:
            # The records may never reach the disk: the producer must not wait for a
            # high watermark that cannot move, nor be told they are safe.
            return ErrorCode.kafka_storage_error
        if not self.is_leader:
            return ErrorCode.not_leader_or_follower
        if self.log.high_watermark < required_offset:
            return None
        # The records are in, but the ISR may have shrunk below the minimum meanwhile.
        if len(self.isr) < self.min_insync_replicas:
            return ErrorCode.not_enough_replicas_after_append
        return ErrorCode.none

    # --- the follower's write path (seed 000: followers fetch like consumers) --------------

    def append_records_to_follower(
        self, records: bytes, leader_high_watermark: int, leader_log_start_offset: int
    ) -> None:
        """Append what the leader sent, with the leader's offsets and epochs, and take
        the leader's HW (capped at this log's end) and log start offset."""
        self._check_online()
        if self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} leads {self.topic_partition}: it fetches "
                "from no one",
            )
        log = self.log
        if records:
            log.append_as_follower(records)
        # Kafka's follower HW: the leader's, but never past what this replica has.
        log.update_high_watermark(min(leader_high_watermark, log.log_end_offset))
        if 0 <= leader_log_start_offset <= log.high_watermark:
            log.maybe_increment_log_start_offset(leader_log_start_offset, "leader")

    def truncate_to(self, offset: int, now: float) -> bool:
        """A follower drops what its leader never had (KIP-101); True if it dropped any."""
        self._check_online()
        end = self.log.log_end_offset
        truncated = self.log.truncate_to(offset)
        if truncated and self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(
                FollowerTruncated(
                    tp.topic,
                    tp.partition,
                    self.leader_id,
                    self.leader_epoch,
                    end,
                    offset,
                ),
                now,
            )
        return truncated

    def truncate_fully_and_start_at(self, offset: int, now: float) -> None:
        """A follower behind its leader's log start drops everything and starts empty
        at ``offset``, where the leader's log now begins."""
        self._check_online()
        end = self.log.log_end_offset
        self.log.truncate_fully_and_start_at(offset)
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(
                FollowerTruncated(
                    tp.topic,
                    tp.partition,
                    self.leader_id,
                    self.leader_epoch,
                    end,
                    offset,
                ),
                now,
            )

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[int, int]:
        """OffsetsForLeaderEpoch, as the leader answers it (KIP-279): the largest epoch
        at most ``leader_epoch`` this log knows, and where it ends. The asker names the
        leader epoch it believes current, checked as in KIP-320."""
        self._check_leader_epoch(current_leader_epoch)
        return self.log.leader_epoch_cache.end_offset_for(
            leader_epoch, self.log.log_end_offset
        )

    # --- the read path --------------------------------------------------------------------

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        from_follower: bool,
        min_one_message: bool,
        current_leader_epoch: int = -1,
    ) -> LogReadResult:
        """Batches from ``fetch_offset``: consumers up to the HW, followers to the
        LEO."""
        self._check_leader_epoch(current_leader_epoch)
        log = self.log
        # Snapshot the offsets before reading, as Kafka does: the response must not
        # claim a HW beyond the data it carries.
        high_watermark = log.high_watermark
        info = log.read(
            fetch_offset,
            max_bytes,
            max_offset=None if from_follower else high_watermark,
            min_one_message=min_one_message,
        )
        return LogReadResult(
            info,
            high_watermark=high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            # No transactions yet: the last stable offset is the high watermark.
            last_stable_offset=high_watermark,
        )

    def fetch_offset_for_timestamp(
        self, timestamp: int, current_leader_epoch: int = -1
    ) -> TimestampAndOffset | None:
        """ListOffsets for a consumer: earliest, latest (the HW) or the first at a
        time."""
        self._check_leader_epoch(current_leader_epoch)
        log = self.log
        hw = log.high_watermark
        # KIP-207: a new leader learns the HW from its followers' fetches, so until the
        # HW reaches the start of its epoch, "latest" could be lower than what the
        # previous leader already answered. Kafka answers OFFSET_NOT_AVAILABLE
        # (retriable) then.
        start = self.leader_epoch_start_offset
        lagging = start is not None and start > hw
        if timestamp == LATEST_TIMESTAMP:
            if lagging:
                raise self._offset_not_available(hw)
            # A consumer may not see past the HW, so "latest" is the HW, not the LEO.
            return TimestampAndOffset(
                -1, hw, log.leader_epoch_cache.epoch_for_offset(hw)
            )
        found = log.fetch_offset_by_timestamp(timestamp)
        if timestamp == EARLIEST_TIMESTAMP:
            return found
        if found is not None and found.offset >= hw:
            found = None  # nothing a consumer may read yet has such a timestamp
        if found is None and lagging:
            raise self._offset_not_available(hw)
        return found

    def _offset_not_available(self, hw: int) -> ReplicationError:
        return ReplicationError(
            ErrorCode.offset_not_available,
            f"the high watermark {hw} of {self.topic_partition} has not reached the start "
            f"{self.leader_epoch_start_offset} of leader epoch {self.leader_epoch} yet",
        )

    def _check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: a client that names a leader epoch is told when its view is off."""
        self._check_online()
        if not self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition}",
            )
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise ReplicationError(
                ErrorCode.fenced_leader_epoch,
                f"leader epoch {current_leader_epoch} is older than {self.leader_epoch}",
            )
        if current_leader_epoch > self.leader_epoch:
            raise ReplicationError(
                ErrorCode.unknown_leader_epoch,
                f"leader epoch {current_leader_epoch} is newer than {self.leader_epoch}",
            )

    def mark_offline(self, reason: str) -> None:
        """The log's dir failed: refuse everything with KAFKA_STORAGE_ERROR until restart."""
        self.offline_reason = reason

    def _check_online(self) -> None:
        if self.offline_reason is not None:
            raise ReplicationError(
                ErrorCode.kafka_storage_error,
                f"{self.topic_partition} is offline on broker {self.local_broker_id}: "
                f"{self.offline_reason}",
            )
