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

This module holds becoming leader or follower, both write paths and the high
watermark. The ISR's changes are in :class:`~._isr_changes.IsrChanges`, the reads in
:class:`~._partition_reads.PartitionReads`, the state they share in
:class:`~._partition_base.PartitionBase`.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks
from minikafka.log import (
    AppendOrigin,
    KafkaStorageError,
    LogAppendInfo,
    OutOfOrderSequenceError,
    VerificationGuard,
    maybe_start_transaction_verification,
)

from ._events import (
    BecameFollower,
    BecameLeader,
    FollowerFetched,
    FollowerTruncated,
    HighWatermarkAdvanced,
    IsrChanged,
)
from ._isr import ReplicaState
from ._isr_changes import IsrChanges
from ._partition_base import PartitionState, ReplicationError
from ._partition_reads import PartitionReads


@attrs.define(eq=False)
class Partition(IsrChanges, PartitionReads):
    """One replica of a topic partition on this broker, as leader or follower. Its
    state is :class:`~._partition_base.PartitionBase`'s; its ISR proposals and its
    reads are its parts'."""

    # --- becoming leader or follower ----------------------------------------------------

    def make_leader(self, state: PartitionState, now: float) -> bool:
        """Lead as the controller decided; False if ``state`` is older than what we have."""
        if self._is_stale(state):
            return False
        new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
        previous_isr = self.isr
        self._update_assignment(state)
        if new_epoch:
            self.refused_by_disk = None
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
        self.refused_by_disk = None
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
        self,
        records: bytearray | memoryview,
        required_acks: Acks,
        now: float,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Append a producer's batches (seed 000: "Partition.appendRecordsToLeader");
        ``verification_guard``: the coordinator's yes for a transactional producer
        (KIP-890, the log's ``append_as_leader``)."""
        self._check_leader_for_write(required_acks)
        info = self._append_to_log(records, origin, verification_guard)
        self.maybe_increment_leader_hw(now)
        return info

    def _append_to_log(
        self,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        verification_guard: VerificationGuard | None,
    ) -> LogAppendInfo:
        """The log's ``append_as_leader``, remembering a full disk's refusal until
        something is written (:attr:`refused_by_disk`)."""
        refused = self.refused_by_disk  # None on every append but after a full disk
        end = self.log.log_end_offset if refused is not None else -1
        try:
            info = self.log.append_as_leader(
                records,
                self.leader_epoch,
                origin=origin,
                verification_guard=verification_guard,
            )
        except KafkaStorageError as exc:
            if not exc.offline:  # a full disk: the write undone, the partition online
                self.refused_by_disk = str(exc)
            raise
        except OutOfOrderSequenceError:
            if refused is None:
                raise
            # The gap is the batch the disk refused: Kafka's partition, offline since,
            # answers KAFKA_STORAGE_ERROR (retried as not written), never a gap.
            raise ReplicationError(ErrorCode.kafka_storage_error, refused) from None
        if refused is not None and self.log.log_end_offset != end:
            self.refused_by_disk = None  # written (a duplicate writes nothing)
        return info

    def maybe_start_transaction_verification(
        self, producer_id: int, sequence: int, epoch: int
    ) -> VerificationGuard:
        """The guard of a question to the transaction coordinator (KIP-890), on the
        leader only (Kafka's ``Partition.maybeStartTransactionVerification``)."""
        self._check_online()
        if not self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} is not the leader of "
                f"{self.topic_partition}",
            )
        return maybe_start_transaction_verification(
            self.log, producer_id, sequence, epoch
        )

    def _check_leader_for_write(self, required_acks: Acks) -> None:
        """Refuse a write here: not online, not the leader, or (acks=all) too few
        in-sync replicas."""
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

    def append_txn_marker_to_leader(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now: float,
    ) -> LogAppendInfo:
        """Append a transaction's commit or abort marker, sent by its coordinator
        (WriteTxnMarkers): as a producer's acks=all batch, it needs the leader and
        ``min.insync.replicas`` in-sync replicas."""
        self._check_leader_for_write(Acks.ALL)
        info = self.log.append_txn_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, self.leader_epoch
        )
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
        if self.tracer.wants(HighWatermarkAdvanced):
            tp = self.topic_partition
            hw = self.log.high_watermark
            # The field values, not the event: this runs on every produce a leader
            # alone in its ISR answers (Tracer.emit_fields).
            self.tracer.emit_fields(
                HighWatermarkAdvanced,
                (tp.topic, tp.partition, previous, hw, self.leader_epoch),
                now,
            )
        return True

    def update_follower_fetch_state(
        self,
        broker_id: int,
        fetch_offset: int,
        now: float,
        log_start_offset: int = -1,
    ) -> bool:
        """A follower fetched from ``fetch_offset``: it has everything below. True if HW moved.

        ``log_start_offset`` is the follower's own (Fetch v5+): the low watermark's input.
        """
        replica = self.remote_replicas.get(broker_id)
        if replica is None:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {broker_id} is not a replica of {self.topic_partition}",
            )
        replica.update_fetch_state(fetch_offset, self.log.log_end_offset, now)
        if log_start_offset >= 0:
            replica.log_start_offset = log_start_offset
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

    def low_watermark(self) -> int:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset among the
        leader and its in-sync followers (-1 while a follower has not said its own).
        Below it no in-sync replica keeps a record.

        Kafka counts every live replica; minikafka, whose core does not know which
        brokers are alive, counts the ISR, which a dead follower leaves.
        """
        starts = [self.log.log_start_offset]
        starts += [
            r.log_start_offset
            for r in self.remote_replicas.values()
            if r.broker_id in self.isr
        ]
        return min(starts)

    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords (KIP-107): move the log start offset to ``offset`` (-1: the
        high watermark) and return the offset asked, -1 made the high watermark: the
        answer waits until the low watermark reaches it (a deletion below the log start
        moves nothing, and waits only for what it asked).

        Only the leader deletes, only below its high watermark (a record not yet
        committed may not be deleted, as it may not be read), and only where the topic's
        ``cleanup.policy`` includes ``delete``, as Kafka's ``deleteRecordsOnLeader``.
        """
        self._check_online()
        if not self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition}",
            )
        log = self.log
        if not log.config.delete:
            # A compacted topic's records are keyed state, not a stream to cut.
            raise ReplicationError(
                ErrorCode.policy_violation,
                f"records of {self.topic_partition} cannot be deleted: its "
                f"cleanup.policy is {','.join(sorted(log.config.cleanup_policy))}",
            )
        converted = log.high_watermark if offset == -1 else offset
        if not 0 <= converted <= log.high_watermark:
            raise ReplicationError(
                ErrorCode.offset_out_of_range,
                f"cannot delete {self.topic_partition} below {offset}: the high "
                f"watermark is {log.high_watermark}",
            )
        log.maybe_increment_log_start_offset(converted, "client")
        return converted

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
