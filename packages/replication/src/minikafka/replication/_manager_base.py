"""What every part of the ReplicaManager shares: the partitions hosted here, the
purgatories and their timers, how every call ends, and the failed disks.

:class:`~._replica_manager.ReplicaManager` is made of parts, each a path of its own
over :class:`ReplicaManagerBase`:

- :class:`~._produce_path.ProducePath`: a producer's batches appended to the leader
  partitions, answered at once or parked as a DelayedProduce (``acks=all``);
- :class:`~._fetch_path.FetchPath`: a fetch read from the local log, answered at once or
  parked as a DelayedFetch; a follower's fetch moving the high watermark and the ISR;
  a follower's OffsetsForLeaderEpoch;
- :class:`~._replica_manager.ReplicaManager` itself: the partitions' state changes as
  the controller decides them, the ISR changes, the high-watermark checkpoint.

Every call ends the same way (:meth:`ReplicaManagerBase._result`): the answers of the
parked operations it completed, then its own, as replies; the AlterPartition proposals it
made on the way as messages. A disk that fails is answered, never raised
(:meth:`ReplicaManagerBase.storage_failed`): a full disk's refused write leaves
everything online, any other failure takes the log dir offline with its partitions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Never, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.log import KafkaStorageError, LogConfig, LogManager
from minikafka.trace import NullTracer, Tracer

from ._delayed import DelayedFetch, DelayedOperations, DelayedProduce
from ._isr import IsrChangeProposal
from ._partition import Partition
from ._purgatory import DelayedOperationPurgatory
from ._results import ProducePartitionResult, Response

_logger = logging.getLogger(__name__)

ReplicaManagerResult: TypeAlias = CoreResult[Never, Response, IsrChangeProposal]
"""What a ReplicaManager call hands its shell: no records (the log is written at once),
the answers to give (:data:`Response`), the AlterPartition proposals to send."""


@attrs.frozen
class TopicSettings:
    """What a partition needs from its topic's configuration."""

    log_config: LogConfig
    min_insync_replicas: int = 1


@attrs.define(eq=False)
class ReplicaManagerBase:
    """Every partition replica on this broker and the two purgatories, without the
    paths that use them (the parts :class:`~._replica_manager.ReplicaManager` is
    made of)."""

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
    _proposals: list[IsrChangeProposal] = attrs.field(init=False, factory=list)
    """The ISR proposals made during the current call (a shrink, or a follower's fetch
    that caught it up), handed out as that call's messages: empty between calls."""
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

    def _partition_changed(self, tp: TopicPartition) -> None:
        self.delayed.check(tp)

    # --- failed disks ---------------------------------------------------------------------

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
            # ``ReplicaManager.on_log_dir_failure``); the partitions are marked here at
            # once, so the core is right before the shell takes it.
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

    def _dir_failed(self, log_dir: Path) -> None:
        reason = f"log dir {log_dir} is offline: {self.log_manager.offline_dirs.get(log_dir)}"
        for tp, partition in self.partitions.items():
            if (
                self.log_manager.log_dir_of(tp) == log_dir
                and partition.offline_reason is None
            ):
                partition.mark_offline(reason)
                self._partition_changed(tp)

    # --- timers, shutdown, and how every call ends ------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`on_timer` has work: the earliest deadline of a parked request."""
        return self.delayed.next_deadline()

    def on_timer(self, now: float) -> ReplicaManagerResult:
        """Complete every parked request whose deadline has passed: their answers."""
        self.delayed.expire(now)
        return self._result(now)

    def shutdown(self, now: float) -> ReplicaManagerResult:
        """Answer every parked request now, and park none from here on.

        A consumer's long poll may wait up to ``fetch.max.wait.ms``; a stopping broker
        answers it at once with what there is, rather than hold its shutdown for it
        (Kafka's ReplicaManager shuts its purgatories down the same way).
        """
        self._shutting_down = True
        return self._expire_all(now)

    def _expire_all(self, now: float) -> ReplicaManagerResult:
        self.delayed.expire(math.inf)
        return self._result(now)

    def _parked(self, now: float) -> ReplicaManagerResult:
        if self._shutting_down:
            return self._expire_all(now)  # nothing waits once the broker is stopping
        return self._result(now)

    def _result(self, now: float, own: Response | None = None) -> ReplicaManagerResult:
        """How every call ends: the answers of what completed (then ``own``) and the
        proposals made meanwhile, both taken, so nothing is left for the next call."""
        proposals: tuple[IsrChangeProposal, ...] = ()
        if self._proposals:  # most calls propose nothing: no new list for them
            proposals, self._proposals = tuple(self._proposals), []
        return CoreResult(replies=self.delayed.answers(now, own), messages=proposals)
