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

The manager is a core (ARCHITECTURE.md's contract): no trio, no clock, no I/O but the log, which
it calls as the synchronous local library it is (an append is a ``write`` into the page
cache; handing every append out to the shell would only add a round trip). ``now`` is an
argument of every call that may depend on time and is never kept. Every call returns the
answers it produced as values (:data:`Response`: its own request's, and those of parked
requests it completed); the shell (:class:`ReplicaManagerService`) sends them, sleeps until
:meth:`next_deadline`, calls :meth:`on_timer`, and writes the HW checkpoint on its interval.
"""

from __future__ import annotations

import errno
import logging
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import (
    REPLICATION_OFFSET_CHECKPOINT,
    InvalidRecordError,
    KafkaStorageError,
    LogConfig,
    LogManager,
    LogOffsetMetadata,
    OffsetCheckpointFile,
    OffsetOutOfRangeError,
)
from minikafka.trace import NullTracer, Tracer

from ._delayed import DelayedFetch, DelayedOperations, DelayedProduce
from ._fetcher import EpochAnswer, EpochRequest
from ._isr import IsrChangeAnswer, IsrChangeProposal
from ._partition import Partition, PartitionState, ReplicationError
from ._purgatory import DelayedOperationPurgatory
from ._results import (
    FetchParams,
    FetchPartition,
    FetchPartitionResult,
    FetchResponse,
    ProducePartitionResult,
    ProduceResponse,
    Response,
)

_logger = logging.getLogger(__name__)

# The high watermarks live in the log dirs beside the LogManager's own checkpoints.
HIGH_WATERMARK_CHECKPOINT = REPLICATION_OFFSET_CHECKPOINT

_FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT})
"""A checkpoint write refused for want of space: the previous file is intact (the new one
is written beside it and renamed over it), so the dir stays online, as the log stays
online after a full disk's undone append (minikafka.log's one exception to Kafka)."""


# The refusals Kafka's ReplicaManager.appendToLocalLog answers with no log start offset
# (-1); it gives the partition's for every other (invalid records, producer sequence
# and epoch errors, too few in-sync replicas).
_REFUSED_WITHOUT_LOG_START = frozenset(
    {
        ErrorCode.corrupt_message,
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.kafka_storage_error,
    }
)


@attrs.frozen
class TopicSettings:
    """What a partition needs from its topic's configuration."""

    log_config: LogConfig
    min_insync_replicas: int = 1


@attrs.define(eq=False)
class ReplicaManager:
    broker_id: int
    log_manager: LogManager
    topic_settings: Callable[[str], TopicSettings]
    """The topic's settings as the metadata image says (overrides over broker defaults)."""
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True, repr=False)
    partitions: dict[TopicPartition, Partition] = attrs.field(init=False, factory=dict)
    delayed: DelayedOperations = attrs.field(init=False)
    _shutting_down: bool = attrs.field(init=False, default=False)
    offline_partitions: dict[TopicPartition, str] = attrs.field(
        init=False, factory=dict
    )
    """Partitions whose log could not even be created or led here, with why."""
    _proposing: set[TopicPartition] = attrs.field(init=False, factory=set)
    """Partitions with an ISR proposal not handed out yet: what :meth:`take_isr_changes`
    looks at, so a follower's fetch never costs a scan of every partition."""
    _isr_check_failing: set[TopicPartition] = attrs.field(init=False, factory=set)
    """Partitions whose last ISR check raised (logged once, until one succeeds)."""

    @delayed.default
    def _delayed_operations(self) -> DelayedOperations:
        return DelayedOperations(self.tracer)

    @property
    def produce_purgatory(self) -> DelayedOperationPurgatory[DelayedProduce]:
        return self.delayed.produce

    @property
    def fetch_purgatory(self) -> DelayedOperationPurgatory[DelayedFetch]:
        return self.delayed.fetch

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    # --- metadata -----------------------------------------------------------------------

    def become_leader_or_follower(
        self,
        leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        now: float,
    ) -> list[Response]:
        """Lead and follow what the controller decided (Kafka's becomeLeaderOrFollower).

        Declarative: the broker passes the partitions whose state changed, with their
        new state, and each local replica is made to match. Returns the answers of the
        parked requests this completed (a new leader epoch, a lost leadership).
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
        return self.delayed.answers(now)

    def stop_replicas(
        self, topic_partitions: Iterable[TopicPartition], now: float
    ) -> list[Response]:
        """No longer a replica here (topic deleted or reassigned away): delete the logs.

        What waited on them is answered (NOT_LEADER / UNKNOWN_TOPIC): the answers.
        """
        for tp in topic_partitions:
            self._remove_partition(tp)
        return self.delayed.answers(now)

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

    def _partition_changed(self, tp: TopicPartition) -> None:
        self.delayed.check(tp)

    # --- produce ------------------------------------------------------------------------

    def append_records(
        self,
        timeout_ms: int,
        required_acks: Acks,
        entries: Mapping[TopicPartition, bytearray],
        request_id: int,
        now: float,
    ) -> list[Response]:
        """Append to each leader partition; answer now or when the HW passes (acks=all).

        The answer to ``request_id`` is among the returned responses unless it waits in
        the produce purgatory; a later call (a follower's fetch, :meth:`on_timer`)
        returns it then.
        """
        results: dict[TopicPartition, ProducePartitionResult] = {}
        waiting: dict[TopicPartition, int] = {}
        for tp, records in entries.items():
            partition = self.partitions.get(tp)
            # aside: no replica of this partition here
            if partition is None:
                results[tp] = self._missing_partition_result(tp)
                continue
            try:
                info = partition.append_records_to_leader(records, required_acks, now)
            # aside: not the leader, or the ISR too small for acks=all
            except ReplicationError as exc:
                results[tp] = self._refused(partition, exc.error_code, str(exc))
                continue
            # aside: the disk failed
            except OSError as exc:
                results[tp] = ProducePartitionResult(
                    ErrorCode.kafka_storage_error,
                    error_message=self.storage_failed(tp, exc),
                )
                continue
            # aside: records the log refuses
            except InvalidRecordError as exc:
                # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD,
                # OUT_OF_ORDER_SEQUENCE...: nothing of this partition's data was
                # appended.
                results[tp] = self._refused(
                    partition, exc.error_code, str(exc), exc.record_errors
                )
                continue
            results[tp] = ProducePartitionResult(
                ErrorCode.none,
                base_offset=info.first_offset,
                log_append_time=info.log_append_time,
                log_start_offset=partition.log.log_start_offset,
            )
            waiting[tp] = info.last_offset + 1
            self._partition_changed(tp)
        if required_acks != Acks.ALL or not waiting:
            return self.delayed.answers(now, ProduceResponse(request_id, results))
        operation = DelayedProduce(
            now + timeout_ms / 1000,
            request_id,
            results,
            waiting,
            self.partitions.get,
            created=now,
        )
        if self.produce_purgatory.try_complete_else_watch(operation, waiting):
            return self.delayed.answers(now, operation.response)
        return self._parked(now)

    # --- fetch --------------------------------------------------------------------------

    def fetch_messages(
        self,
        params: FetchParams,
        fetches: list[FetchPartition],
        request_id: int,
        now: float,
    ) -> list[Response]:
        """Read each partition; answer now or park a DelayedFetch until enough data.

        As for :meth:`append_records`: the answer to ``request_id`` is returned now, or
        by the call that completes the DelayedFetch.
        """
        results = self.read_from_local_log(params, fetches)
        if params.is_from_follower:
            # Only a read that succeeded says what the follower has: a fetch past the log
            # end or from a fenced epoch must not count toward the HW (Kafka updates the
            # follower's state from the read's result, after the read).
            results = [
                (
                    fetch,
                    self._update_follower_fetch_state(
                        params.replica_id, fetch, result, now
                    ),
                )
                for fetch, result in results
            ]
        total = sum(result.size for _, result in results)
        errors = any(result.error_code is not ErrorCode.none for _, result in results)
        if (
            params.max_wait_ms <= 0
            or not fetches
            or total >= params.min_bytes
            or errors
        ):
            return self.delayed.answers(now, FetchResponse(request_id, results))
        positions = [
            (fetch, self._fetch_position(fetch, result)) for fetch, result in results
        ]
        operation = DelayedFetch(
            now + params.max_wait_ms / 1000,
            request_id,
            params,
            positions,
            self.partitions.get,
            lambda: self.read_from_local_log(params, fetches),
            created=now,
        )
        keys = [fetch.topic_partition for fetch in fetches]
        if self.fetch_purgatory.try_complete_else_watch(operation, keys):
            return self.delayed.answers(now, operation.response)
        return self._parked(now)

    def read_from_local_log(
        self, params: FetchParams, fetches: list[FetchPartition]
    ) -> list[tuple[FetchPartition, FetchPartitionResult]]:
        """Read in request order within ``max_bytes`` overall (Kafka's
        readFromLocalLog).

        The first partition that has data is read even if its first batch is larger than
        the limits (``min_one_message``), so a consumer never gets stuck behind a batch
        bigger than its ``max.partition.fetch.bytes``; after that the limits hold.
        """
        limit = params.max_bytes
        min_one_message = True
        results: list[tuple[FetchPartition, FetchPartitionResult]] = []
        for fetch in fetches:
            result = self._read(
                params, fetch, min(fetch.max_bytes, limit), min_one_message
            )
            if result.size > 0:
                min_one_message = False
            limit = max(0, limit - result.size)
            results.append((fetch, result))
        return results

    def _read(
        self,
        params: FetchParams,
        fetch: FetchPartition,
        max_bytes: int,
        min_one_message: bool,
    ) -> FetchPartitionResult:
        partition = self.partitions.get(fetch.topic_partition)
        if partition is None:
            missing = self._missing_partition_result(fetch.topic_partition)
            return FetchPartitionResult(
                missing.error_code, error_message=missing.error_message
            )
        if (
            params.is_from_follower
            and partition.is_leader
            and params.replica_id not in partition.remote_replicas
        ):
            return FetchPartitionResult(
                ErrorCode.not_leader_or_follower,
                error_message=f"broker {params.replica_id} is not a replica of "
                f"{fetch.topic_partition}",
            )
        try:
            read = partition.read_records(
                fetch.fetch_offset,
                max_bytes,
                from_follower=params.is_from_follower,
                min_one_message=min_one_message,
                current_leader_epoch=fetch.current_leader_epoch,
            )
        except ReplicationError as exc:
            return FetchPartitionResult(exc.error_code, error_message=str(exc))
        except (
            OSError
        ) as exc:  # a read the disk refused (EIO): Kafka takes the dir offline
            message = self.storage_failed(fetch.topic_partition, exc)
            return FetchPartitionResult(
                ErrorCode.kafka_storage_error, error_message=message
            )
        except OffsetOutOfRangeError as exc:
            log = partition.log
            return FetchPartitionResult(
                ErrorCode.offset_out_of_range,
                high_watermark=log.high_watermark,
                last_stable_offset=log.high_watermark,
                log_start_offset=log.log_start_offset,
                error_message=str(exc),
            )
        return FetchPartitionResult(
            ErrorCode.none,
            high_watermark=read.high_watermark,
            last_stable_offset=read.last_stable_offset,
            log_start_offset=read.log_start_offset,
            records=read.info.records,
        )

    def _fetch_position(
        self, fetch: FetchPartition, result: FetchPartitionResult
    ) -> LogOffsetMetadata | None:
        if result.error_code is not ErrorCode.none:
            return None
        partition = self.partitions[fetch.topic_partition]
        return partition.log.offset_metadata(fetch.fetch_offset)

    def _update_follower_fetch_state(
        self,
        replica_id: int,
        fetch: FetchPartition,
        result: FetchPartitionResult,
        now: float,
    ) -> FetchPartitionResult:
        partition = self.partitions.get(fetch.topic_partition)
        if partition is None or result.error_code is not ErrorCode.none:
            return result
        moved = partition.update_follower_fetch_state(
            replica_id, fetch.fetch_offset, now
        )
        if partition.has_unsent_isr_change:
            self._proposing.add(fetch.topic_partition)  # it caught up: proposed back
        if not moved:
            return result
        self._partition_changed(fetch.topic_partition)
        # The follower hears at once of the HW its own fetch moved, as in Kafka.
        hw = partition.log.high_watermark
        return attrs.evolve(result, high_watermark=hw, last_stable_offset=hw)

    # --- failed disks ---------------------------------------------------------------------

    @staticmethod
    def _refused(
        partition: Partition,
        error: ErrorCode,
        message: str,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> ProducePartitionResult:
        """A leader's refusal of a partition's records. Like Kafka's
        ``appendToLocalLog``, it carries the log start offset, except for the
        refusals Kafka answers without one (a corrupt or too large batch, not the
        leader)."""
        start = (
            -1
            if error in _REFUSED_WITHOUT_LOG_START
            else partition.log.log_start_offset
        )
        return ProducePartitionResult(
            error,
            log_start_offset=start,
            error_message=message,
            record_errors=record_errors,
        )

    def _missing_partition_result(self, tp: TopicPartition) -> ProducePartitionResult:
        reason = self.offline_partitions.get(tp)
        if reason is not None:
            return ProducePartitionResult(
                ErrorCode.kafka_storage_error,
                error_message=f"{tp} is offline: {reason}",
            )
        return ProducePartitionResult(
            ErrorCode.unknown_topic_or_partition,
            error_message=f"{tp} is not hosted on broker {self.broker_id}",
        )

    def storage_failed(self, tp: TopicPartition, exc: OSError) -> str:
        """A write or read of ``tp``'s log failed: the message for the answer.

        A full disk whose write the log undid leaves everything online; anything else
        takes the partition's log dir offline (which queues it for the shell too).
        """
        message = str(exc)
        if isinstance(exc, KafkaStorageError) and not exc.offline:
            _logger.warning("%s: %s", tp, message)
            return message
        log_dir = self.log_manager.log_dir_of(tp)
        if log_dir is None:
            self._partition_failed(tp, exc)
        else:
            # The LogManager queues the dir for the shell (which calls
            # :meth:`on_log_dir_failure`); the partitions are marked here at once, so the
            # core is right before the shell takes it.
            self.log_manager.mark_dir_offline(log_dir, f"{tp}: {message}")
            self._dir_failed(log_dir)
        return message

    def _partition_failed(self, tp: TopicPartition, exc: Exception) -> None:
        reason = (
            str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
        )
        # A disk's failure says all in its message; anything else is a bug to trace.
        _logger.error(
            "%s is offline until restart: %s",
            tp,
            reason,
            exc_info=None if isinstance(exc, OSError) else exc,
        )
        partition = self.partitions.get(tp)
        if partition is None:
            self.offline_partitions[tp] = reason
        else:
            partition.mark_offline(reason)

    def on_log_dir_failure(self, log_dir: Path, now: float) -> list[Response]:
        """The LogManager took ``log_dir`` offline: so are the partitions in it.

        What waits on them is answered now (the returned responses): a DelayedProduce
        with KAFKA_STORAGE_ERROR, a DelayedFetch with the same error on a fresh read.
        The shell calls this for each dir it takes from the LogManager's queue
        (``wait_offline_dirs``).
        """
        self._dir_failed(log_dir)
        return self.delayed.answers(now)

    def _dir_failed(self, log_dir: Path) -> None:
        reason = f"log dir {log_dir} is offline: {self.log_manager.offline_dirs.get(log_dir)}"
        for tp, partition in self.partitions.items():
            if (
                self.log_manager.log_dir_of(tp) == log_dir
                and partition.offline_reason is None
            ):
                partition.mark_offline(reason)
                self._partition_changed(tp)

    # --- OffsetsForLeaderEpoch (KIP-101, KIP-279) ----------------------------------------

    def last_offsets_for_leader_epochs(
        self, requests: Iterable[EpochRequest]
    ) -> list[EpochAnswer]:
        """What this leader answers a follower's OffsetsForLeaderEpoch, per partition:
        where the asked epoch ends here, or why it cannot say (Kafka's
        ``ReplicaManager.lastOffsetForLeaderEpoch``)."""
        answers = []
        for request in requests:
            tp = request.topic_partition
            partition = self.partitions.get(tp)
            if partition is None:
                # As Fetch answers it: unknown here (Kafka's answer to a partition that
                # does not exist), or offline with its log dir.
                error = self._missing_partition_result(tp).error_code
                answers.append(EpochAnswer(tp, error))
                continue
            try:
                epoch, end = partition.last_offset_for_leader_epoch(
                    request.current_leader_epoch, request.leader_epoch
                )
            except ReplicationError as exc:
                answers.append(EpochAnswer(tp, exc.error_code))
            else:
                answers.append(EpochAnswer(tp, ErrorCode.none, epoch, end))
        return answers

    # --- the ISR's changes (KIP-497) -----------------------------------------------------

    def maybe_shrink_isr(self, now: float, max_lag: float) -> None:
        """Every led partition proposes dropping followers not caught up within
        ``max_lag`` seconds (Kafka's isr-expiration task; the shell runs it every
        ``replica.lag.time.max.ms`` / 2). The proposals wait in :meth:`take_isr_changes`.

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
            if shrunk:
                self._proposing.add(tp)

    @property
    def has_isr_changes(self) -> bool:
        """Whether :meth:`take_isr_changes` has anything to hand out."""
        return bool(self._proposing)

    def take_isr_changes(self) -> list[IsrChangeProposal]:
        """The AlterPartition proposals not sent yet (shrinks, and expansions made by
        followers' fetches), each handed out once."""
        proposing, self._proposing = self._proposing, set()
        proposals = (
            self.partitions[tp].take_isr_change()
            for tp in proposing
            if tp in self.partitions
        )
        return [proposal for proposal in proposals if proposal is not None]

    def on_isr_change_answers(
        self, answers: Iterable[IsrChangeAnswer], now: float
    ) -> list[Response]:
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

    # --- timers and shutdown -------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`on_timer` has work: the earliest deadline of a parked request."""
        return self.delayed.next_deadline()

    def on_timer(self, now: float) -> list[Response]:
        """Complete every parked request whose deadline has passed: their answers."""
        self.delayed.expire(now)
        return self.delayed.answers(now)

    def shutdown(self, now: float) -> list[Response]:
        """Answer every parked request now, and park none from here on.

        A consumer's long poll may wait up to ``fetch.max.wait.ms``; a stopping broker
        answers it at once with what there is, rather than hold its shutdown for it
        (Kafka's ReplicaManager shuts its purgatories down the same way).
        """
        self._shutting_down = True
        return self._expire_all(now)

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

    def _expire_all(self, now: float) -> list[Response]:
        self.delayed.expire(math.inf)
        return self.delayed.answers(now)

    def _parked(self, now: float) -> list[Response]:
        if self._shutting_down:
            return self._expire_all(now)  # nothing waits once the broker is stopping
        return self.delayed.answers(now)
