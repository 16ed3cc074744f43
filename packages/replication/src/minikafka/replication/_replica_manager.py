"""ReplicaManager: every partition replica on this broker, and the two purgatories.

Seed 000's produce path ends here (``ReplicaManager.appendRecords`` -> the leader
Partition -> Log), and so does its fetch path (``fetchMessages`` -> Partition -> Log ->
file slices). What is decided here, per request:

- produce: ``acks=0`` and ``acks=1`` are answered as soon as the leader has appended;
  ``acks=all`` parks a :class:`DelayedProduce` keyed by the partitions it wrote;
- fetch: answered at once if ``fetch.max.wait.ms`` is 0, if there is an error, or if at
  least ``fetch.min.bytes`` are there; otherwise a :class:`DelayedFetch` waits;
- every append and every high-watermark move checks the keys of the partitions it
  touched, which is what completes the waiting operations (data arrives -> fetch
  answered; HW passes the batch -> produce answered).

A disk that fails is answered, never raised: KAFKA_STORAGE_ERROR for the
partition whose write it refused. A full disk's refused write is undone by the log, which
stays online, so writes resume once space is freed; any other failure, and every failed
fsync, takes the log dir offline until restart (Kafka's LogDirFailureChannel): its
partitions answer KAFKA_STORAGE_ERROR and the acks=all produces waiting on them are
answered at once.

Which partitions exist and who leads them is not decided here: the broker hands over
the partitions whose state changed (:meth:`become_leader_or_follower`,
:meth:`stop_replicas`), and the manager makes the local replicas match, declaratively.

The manager is made of parts, each in a module of its own: the produce path
(:class:`~._produce_path.ProducePath`), the fetch path (:class:`~._fetch_path.FetchPath`),
and what both share, the partitions, the purgatories and their timers, the failed disks
(:class:`~._manager_base.ReplicaManagerBase`). This module holds the rest: the state
changes the controller decides, the ISR changes (KIP-497), the high-watermark
checkpoint.

The manager is a core (ARCHITECTURE.md's contract): no trio, no clock, no I/O but the log, which
it calls as the synchronous local library it is (an append is a ``write`` into the page
cache; handing every append out to the shell would only add a round trip). ``now`` is an
argument of every call that may depend on time and is never kept. Every call that drives
it returns one :data:`ReplicaManagerResult`: as replies, the answers it produced
(:data:`Response`: its own request's, and those of parked requests it completed); as
messages, the AlterPartition proposals (KIP-497) it made on the way, for the controller.
It writes no records of its own: the log is written directly. The shell
(:class:`ReplicaManagerShell`) sends the answers, sends the proposals on its own cadence
(Kafka's ``AlterPartitionManager`` batches them), sleeps until :meth:`next_deadline`, calls
:meth:`on_timer`, and writes the HW checkpoint on its interval.
"""

from __future__ import annotations

import errno
import logging
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.log import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile

from ._delayed import DelayedDeleteRecords
from ._fetch_path import FetchPath
from ._isr import IsrChangeAnswer
from ._manager_base import ReplicaManagerResult
from ._partition import Partition
from ._partition_base import PartitionState, ReplicationError
from ._produce_path import ProducePath
from ._results import DeleteRecordsPartitionResult, DeleteRecordsResponse

_logger = logging.getLogger(__name__)

# The high watermarks live in the log dirs beside the LogManager's own checkpoints.
HIGH_WATERMARK_CHECKPOINT = REPLICATION_OFFSET_CHECKPOINT

_FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT})
"""A checkpoint write refused for want of space: the previous file is intact (the new one
is written beside it and renamed over it), so the dir stays online, as the log stays
online after a full disk's undone append (minikafka.log's one exception to Kafka)."""


@attrs.define(eq=False)
class ReplicaManager(ProducePath, FetchPath):
    """Every partition replica on this broker, and the two purgatories (Kafka's
    ``ReplicaManager``): the produce and fetch paths are its parts, the state they share
    :class:`~._manager_base.ReplicaManagerBase`."""

    # --- metadata -----------------------------------------------------------------------

    def become_leader_or_follower(
        self,
        leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        now: float,
    ) -> ReplicaManagerResult:
        """Lead and follow what the controller decided (Kafka's becomeLeaderOrFollower).

        Declarative: the broker passes the partitions whose state changed, with their
        new state, and each local replica is made to match. Its replies are the answers
        of the parked requests this completed (a new leader epoch, a lost leadership).
        """
        for tp, (topic_id, state) in leaders.items():
            if tp in self.offline_partitions:
                continue  # its disk failed: nothing is done with it until restart
            try:
                partition = self._get_or_create_partition(tp, topic_id)
                if partition.make_leader(state, now):
                    _logger.info(
                        "leading %s at leader epoch %d, ISR %s",
                        tp,
                        state.leader_epoch,
                        state.isr,
                    )
            except Exception as exc:
                # Creating the log or writing its leader-epoch checkpoint failed (a full
                # disk), or a bug in this one state change: this partition is offline;
                # the metadata and every other partition go on (Kafka's
                # ReplicaManager.markPartitionOffline in applyLocalLeadersDelta).
                self._partition_failed(tp, exc)
            self._partition_changed(tp)
        for tp, (topic_id, state) in followers.items():
            if tp in self.offline_partitions:
                continue
            try:
                partition = self._get_or_create_partition(tp, topic_id)
                if partition.make_follower(state, now):
                    _logger.info("following broker %d for %s", state.leader, tp)
            except Exception as exc:
                self._partition_failed(tp, exc)
            self._partition_changed(tp)
        return self._result(now)

    def stop_replicas(
        self, topic_partitions: Iterable[TopicPartition], now: float
    ) -> ReplicaManagerResult:
        """No longer a replica here (topic deleted or reassigned away): delete the logs.

        What waited on them is answered (NOT_LEADER / UNKNOWN_TOPIC): the replies.
        """
        for tp in topic_partitions:
            self._remove_partition(tp)
        return self._result(now)

    def update_topic_settings(self, topic: str) -> None:
        """Re-read a topic's settings after its configuration changed."""
        settings = self.topic_settings(topic)
        for tp, partition in self.partitions.items():
            if tp.topic == topic:
                partition.log.config = settings.log_config
                partition.min_insync_replicas = settings.min_insync_replicas

    def remove_stray_logs(self) -> list[TopicPartition]:
        """Delete logs on disk that the metadata no longer places here (deleted while down)."""
        stray = [tp for tp in self.log_manager.logs if tp not in self.partitions]
        for tp in stray:
            _logger.info("deleting stray log %s: no longer a replica here", tp)
            self.log_manager.delete_log(tp)
        return stray

    def _get_or_create_partition(
        self, tp: TopicPartition, topic_id: uuid.UUID
    ) -> Partition:
        partition = self.partitions.get(tp)
        settings = self.topic_settings(tp.topic)
        if partition is None or partition.topic_id != topic_id:
            if partition is not None:  # the topic was recreated under the same name
                self._remove_partition(tp)
            log = self.log_manager.get_or_create_log(tp, settings.log_config)
            partition = Partition(tp, topic_id, self.broker_id, log, tracer=self.tracer)
            self.partitions[tp] = partition
        partition.log.config = settings.log_config
        partition.min_insync_replicas = settings.min_insync_replicas
        return partition

    def _remove_partition(self, tp: TopicPartition) -> None:
        self.offline_partitions.pop(tp, None)
        if (
            self.partitions.pop(tp, None) is None
            and self.log_manager.get_log(tp) is None
        ):
            return
        try:
            self.log_manager.delete_log(tp)
        except OSError as exc:  # the rename failed: a restart finds it as a stray log
            _logger.error("could not delete the log of %s: %s", tp, exc)
        # Whatever waits on it is answered now (with NOT_LEADER / UNKNOWN_TOPIC).
        self._partition_changed(tp)

    # --- delete records ---------------------------------------------------------------

    def delete_records(
        self,
        timeout_ms: int,
        offsets: Mapping[TopicPartition, int],
        request_id: int,
        now: float,
    ) -> ReplicaManagerResult:
        """DeleteRecords (KIP-107): each led partition's log start moves to its offset
        (-1: the high watermark) at once; the answer waits in a DelayedDeleteRecords
        until every in-sync follower has moved its own (the low watermark), or
        ``timeout_ms``.
        """
        results: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        for tp, offset in offsets.items():
            partition = self.partitions.get(tp)
            if partition is None:
                missing = self._missing_partition_result(tp)
                results[tp] = DeleteRecordsPartitionResult(
                    missing.error_code, error_message=missing.error_message
                )
                continue
            try:
                asked = partition.delete_records_on_leader(offset)
            except ReplicationError as exc:
                results[tp] = DeleteRecordsPartitionResult(
                    exc.error_code, error_message=str(exc)
                )
                continue
            except OSError as exc:  # the checkpoint or the disk refused: dir offline
                results[tp] = DeleteRecordsPartitionResult(
                    ErrorCode.kafka_storage_error,
                    error_message=self.storage_failed(tp, exc),
                )
                continue
            # The fetches parked on the partition now answer OFFSET_OUT_OF_RANGE or
            # less data; the followers hear of the new start on their next fetch.
            self._partition_changed(tp)
            required[tp] = asked
        if timeout_ms <= 0 or not required:
            # No wait asked for (or nothing to wait on): the low watermark as it is.
            for tp in required:
                low = self.partitions[tp].low_watermark()
                results[tp] = DeleteRecordsPartitionResult(ErrorCode.none, low)
            return self._result(now, DeleteRecordsResponse(request_id, results))
        operation = DelayedDeleteRecords(
            now + timeout_ms / 1000,
            request_id,
            results,
            required,
            self.partitions.get,
            created=now,
        )
        if self.delayed.delete_records.try_complete_else_watch(operation, required):
            return self._result(now, operation.response)
        return self._parked(now)

    # --- failed disks ---------------------------------------------------------------------

    def on_log_dir_failure(self, log_dir: Path, now: float) -> ReplicaManagerResult:
        """The LogManager took ``log_dir`` offline: so are the partitions in it.

        What waits on them is answered now (the result's replies): a DelayedProduce
        with KAFKA_STORAGE_ERROR, a DelayedFetch with the same error on a fresh read.
        The shell calls this for each dir it takes from the LogManager's queue
        (``wait_offline_dirs``).
        """
        self._dir_failed(log_dir)
        return self._result(now)

    # --- the ISR's changes (KIP-497) -----------------------------------------------------

    def maybe_shrink_isr(self, now: float, max_lag: float) -> ReplicaManagerResult:
        """Every led partition proposes dropping followers not caught up within
        ``max_lag`` seconds (Kafka's isr-expiration task; the shell runs it every
        ``replica.lag.time.max.ms`` / 2). The proposals are the result's messages.

        A partition whose check raises is logged at ERROR once (until one succeeds) and
        skipped: the others' followers still leave the ISR on time, which is what the
        acks=all produces waiting on them need."""
        for tp, partition in self.partitions.items():
            if partition.offline_reason is not None:
                continue
            try:
                shrunk = partition.maybe_shrink_isr(now, max_lag)
            except Exception as exc:
                if tp not in self._isr_check_failing:
                    self._isr_check_failing.add(tp)
                    _logger.error(
                        "the ISR check of %s failed; the other partitions go on",
                        tp,
                        exc_info=exc,
                    )
                continue
            self._isr_check_failing.discard(tp)
            proposal = partition.take_isr_change() if shrunk else None
            if proposal is not None:
                self._proposals.append(proposal)
        return self._result(now)

    def on_isr_change_answers(
        self, answers: Iterable[IsrChangeAnswer], now: float
    ) -> ReplicaManagerResult:
        """The controller's answers: the parked requests they completed (an ISR that
        shrank moves the HW, which answers acks=all produces)."""
        for answer in answers:
            partition = self.partitions.get(answer.topic_partition)
            if partition is not None and partition.on_isr_change_answer(
                answer.error_code,
                answer.isr,
                answer.leader_epoch,
                answer.partition_epoch,
                now,
            ):
                self._partition_changed(answer.topic_partition)
        return self._parked(now)

    # --- the high-watermark checkpoint --------------------------------------------------

    def checkpoint_high_watermarks(self) -> None:
        """Write every partition's HW beside the logs, one file per online log dir (the
        shell calls it on its interval; Kafka's ``checkpointHighWatermarks``).

        A write the disk refuses is a storage failure: Kafka's ``OffsetCheckpointFile``
        hands the dir to the ``LogDirFailureChannel``, and here it goes offline the way
        a failed append's does (:meth:`storage_failed`), its partitions answering
        KAFKA_STORAGE_ERROR. A full disk is the one exception: it leaves the previous
        file intact and the dir online, and the next interval writes it again.
        """
        manager = self.log_manager
        for log_dir in manager.log_dirs:
            if log_dir in manager.offline_dirs:
                continue  # its files are not to be touched until restart
            path = log_dir / HIGH_WATERMARK_CHECKPOINT
            hws = {
                tp: log.high_watermark
                for tp, log in manager.logs.items()
                if manager.log_dir_of(tp) == log_dir
            }
            try:
                OffsetCheckpointFile(path).write(hws)
            except OSError as exc:
                if exc.errno in _FULL_DISK:
                    _logger.error(
                        "cannot write %s: %s; the previous one is kept and it is "
                        "written again at the next interval",
                        path,
                        exc.strerror or exc,
                    )
                    continue
                manager.mark_dir_offline(log_dir, f"writing {path} failed: {exc}")
                self._dir_failed(log_dir)
