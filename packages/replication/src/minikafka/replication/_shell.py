"""ReplicaManagerShell: the trio shell around the ReplicaManager core.

The core decides; this module carries its decisions out, and is the only replication
module that imports trio (import-linter's "Replication cores do not import trio"). It

- owns the clock: every call into the core gets ``now``, read once from an
  :class:`~minikafka.trace.EpochClock` over trio's clock (:meth:`now`: seconds since
  the epoch, so the core stamps its trace events with it; the replica fetchers read
  the same one);
- sends the answers the core returns (its results' replies), through the callbacks the
  request handlers gave (:class:`ResponseCallbacks`);
- sleeps until the core's ``next_deadline()`` and then calls ``on_timer(now)``, which
  expires the purgatories' operations (Kafka's expiration reaper); a call that parks an
  operation due earlier wakes it (the shell runtime's ``run_timers`` and ``Wakeup``,
  ``minikafka.common.shell``);
- writes the high-watermark checkpoint every
  ``replica.high.watermark.checkpoint.interval.ms``;
- takes the log dirs the LogManager took offline (a failed flush in its own tasks, a
  failed write in a request) from its queue, tells the core and sends the answers that
  completes (Kafka's ReplicaManager polls the ``LogDirFailureChannel`` the same way);
- runs Kafka's isr-expiration task every ``replica.lag.time.max.ms`` / 2 and sends the
  leaders' ISR proposals (its results' messages: those and the expansions followers'
  fetches make) to the controller with ``alter_partition``, handing the answers back to
  the core. The proposals wait here until the sending task takes them, and go in one
  AlterPartition per round, as Kafka's ``AlterPartitionManager`` batches them; one the
  metadata made moot meanwhile is not sent. Without ``alter_partition`` (no controller
  to ask) no ISR change is proposed.

No exception in these tasks ends the broker: one would cancel the nursery of :meth:`run`
and with it the broker's. Each task runs round after round inside :meth:`_guarded`,
with a stated policy:

- the expiration reaper and anything else unexpected: logged at ERROR with its
  traceback once (again only if the failure changes) and the task goes on, as Kafka's
  ``ShutdownableThread`` and ``KafkaScheduler`` log an uncaught exception and keep
  running; a round that failed at once is tried again after ``task_retry_backoff_ms``;
- the high-watermark checkpoint: a write the disk refuses takes that log dir offline
  (the core's :meth:`ReplicaManager.checkpoint_high_watermarks`, Kafka's
  ``LogDirFailureChannel``); only a full disk leaves it online, to be written again;
- the isr-expiration task: one partition's failure is logged once and the others are
  checked all the same (the core's :meth:`ReplicaManager.maybe_shrink_isr`);
- AlterPartition: proposals whose send failed (it raised, or timed out) are sent again
  after ``alter_partition_retry_backoff_ms``, as long as their partition still waits
  for that answer (Kafka's ``AlterPartitionManager`` keeps them unsent and retries).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, FailureLog, FatalFaultError, TopicPartition
from minikafka.common.shell import Wakeup, run_timers
from minikafka.log import AppendOrigin, VerificationGuard
from minikafka.trace import EpochClock

from ._callbacks import (
    DeleteRecordsCallback,
    FetchCallback,
    ProduceCallback,
    ResponseCallbacks,
)
from ._fetcher import EpochAnswer, EpochRequest
from ._isr import IsrChangeAnswer, IsrChangeProposal, isr_change_retried
from ._manager_base import ReplicaManagerResult
from ._partition import Partition
from ._partition_base import PartitionState
from ._produce_path import TxnMarkerEntry
from ._replica_manager import ReplicaManager
from ._results import FetchParams, FetchPartition
from ._txn_verification import TransactionalProducer, TxnVerifier

_logger = logging.getLogger(__name__)

AlterPartitionSender = Callable[
    [list[IsrChangeProposal]], Awaitable[list[IsrChangeAnswer]]
]
"""Sends proposals to the controller (AlterPartition) and returns its answers."""


@attrs.define(eq=False)
class ReplicaManagerShell:
    core: ReplicaManager
    high_watermark_checkpoint_interval_ms: int = 5000
    callbacks: ResponseCallbacks = attrs.field(factory=ResponseCallbacks)
    replica_lag_time_max_ms: int = 30_000
    alter_partition: AlterPartitionSender | None = None
    alter_partition_retry_backoff_ms: int = 100
    """How soon proposals whose send failed are sent again (Kafka's AlterPartitionManager
    reschedules after 50 ms, its controller channel backing off reconnects meanwhile)."""
    task_retry_backoff_ms: int = 100
    """How soon a task whose round failed at once runs again (``retry.backoff.ms``)."""
    txn_verifier: TxnVerifier | None = None
    """Asks transaction coordinators before a transactional producer's first write to
    a partition (KIP-890; the broker's ``AddPartitionsToTxnManager``)."""
    _isr_changes: trio.Event = attrs.field(init=False, factory=trio.Event)
    _unsent: dict[TopicPartition, IsrChangeProposal] = attrs.field(
        init=False, factory=dict
    )
    """Proposals the core made since the last AlterPartition, the latest per partition."""
    _resend: list[IsrChangeProposal] = attrs.field(init=False, factory=list)
    """Proposals sent without an answer, to be sent again."""
    _failures: FailureLog = attrs.field(init=False, factory=lambda: FailureLog(_logger))
    _wakeup: Wakeup = attrs.field(init=False, factory=Wakeup)
    _sleeping_until: float = attrs.field(init=False, default=math.inf)
    """The deadline the expiry task sleeps until (to know when a call must wake it)."""
    _clock: EpochClock = attrs.field(
        init=False, factory=lambda: EpochClock(trio.current_time)
    )

    def now(self) -> float:
        """The time the replication cores are given: trio's clock moved to the epoch."""
        return self._clock()

    # --- the core's calls, with the clock and the answers filled in -----------------------

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.core.get_partition(tp)

    def become_leader_or_follower(
        self,
        leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
    ) -> None:
        now = self.now()
        self._carry_out(self.core.become_leader_or_follower(leaders, followers, now))

    def stop_replicas(self, topic_partitions: Iterable[TopicPartition]) -> None:
        self._carry_out(self.core.stop_replicas(topic_partitions, self.now()))

    def update_topic_settings(self, topic: str) -> None:
        self.core.update_topic_settings(topic)

    def remove_stray_logs(self) -> list[TopicPartition]:
        return self.core.remove_stray_logs()

    def append_records(
        self,
        timeout_ms: int,
        required_acks: Acks,
        entries: Mapping[TopicPartition, bytearray],
        respond: ProduceCallback,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verification_guards: Mapping[TopicPartition, VerificationGuard] | None = None,
    ) -> None:
        """Append; ``respond`` is called with the per-partition results, now or
        later. ``verification_guards``: see the core's ``append_records``."""
        request_id = self.callbacks.produce(respond)
        now = self.now()
        self._carry_out(
            self.core.append_records(
                timeout_ms,
                required_acks,
                entries,
                request_id,
                now,
                origin,
                verification_guards,
            )
        )

    def start_transaction_verification(
        self, producer: TransactionalProducer
    ) -> tuple[
        dict[TopicPartition, ErrorCode], dict[TopicPartition, VerificationGuard]
    ]:
        """The guards of the partitions to verify with the transaction coordinator
        (KIP-890), and the partitions refused outright: the core's."""
        return self.core.start_transaction_verification(producer)

    def append_txn_markers(
        self,
        timeout_ms: int,
        markers: Mapping[TopicPartition, TxnMarkerEntry],
        respond: ProduceCallback,
    ) -> None:
        """WriteTxnMarkers on this leader; ``respond`` is called with the
        per-partition results once the ISR has the markers (or at once, refused)."""
        request_id = self.callbacks.produce(respond)
        now = self.now()
        self._carry_out(
            self.core.append_txn_markers(timeout_ms, markers, request_id, now)
        )

    def fetch_messages(
        self, params: FetchParams, fetches: list[FetchPartition], respond: FetchCallback
    ) -> None:
        """Fetch; ``respond`` is called with the per-partition results, now or later."""
        request_id = self.callbacks.fetch(respond)
        now = self.now()
        # A follower that caught up is proposed back: the result's messages.
        self._carry_out(self.core.fetch_messages(params, fetches, request_id, now))

    def delete_records(
        self,
        timeout_ms: int,
        offsets: Mapping[TopicPartition, int],
        respond: DeleteRecordsCallback,
    ) -> None:
        """DeleteRecords; ``respond`` is called with the per-partition results, now or
        once the followers have caught up with the new log start."""
        request_id = self.callbacks.delete_records(respond)
        now = self.now()
        self._carry_out(self.core.delete_records(timeout_ms, offsets, request_id, now))

    def last_offsets_for_leader_epochs(
        self, requests: Iterable[EpochRequest]
    ) -> list[EpochAnswer]:
        """OffsetsForLeaderEpoch: where each asked epoch ends in this leader's log."""
        return self.core.last_offsets_for_leader_epochs(requests)

    def is_offline(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is offline here (its disk failed, or becoming its leader or
        follower did): every request for it is answered KAFKA_STORAGE_ERROR."""
        partition = self.core.get_partition(tp)
        if partition is None:
            return tp in self.core.offline_partitions
        return partition.offline_reason is not None

    def shutdown(self) -> None:
        """Answer every parked request now, and park none from here on."""
        self._carry_out(self.core.shutdown(self.now()))

    def answer_offline_dirs(self, log_dirs: Iterable[Path]) -> None:
        """Tell the core that ``log_dirs`` went offline and send what that answered; a
        failing answer callback is logged here and the next dir is still told."""
        for log_dir in log_dirs:
            with self._guarded(f"answering the requests waiting on offline {log_dir}"):
                self._carry_out(self.core.on_log_dir_failure(log_dir, self.now()))

    def _carry_out(self, result: ReplicaManagerResult) -> None:
        """Keep the proposals for the AlterPartition task, then send the answers."""
        if result.messages and self.alter_partition is not None:
            for proposal in result.messages:
                self._unsent[proposal.topic_partition] = proposal
            self._isr_changes.set()
        try:
            self.callbacks.deliver(result.replies)
        finally:
            deadline = self.core.next_deadline()
            if deadline is not None and deadline < self._sleeping_until:
                self._wakeup.set()  # parked earlier than the expiry task sleeps until

    # --- the tasks --------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The expiry of parked requests and the HW checkpoint, until cancelled."""
        retry = self.task_retry_backoff_ms / 1000
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                functools.partial(
                    run_timers,
                    self._next_deadline,
                    self._expire_due,
                    self.now,
                    self._wakeup,
                    retry_after=retry,
                )
            )
            nursery.start_soon(
                self._forever,
                "writing the high-watermark checkpoint",
                self._checkpoint,
            )
            nursery.start_soon(
                self._forever, "taking offline log dirs", self._take_offline_dirs
            )
            if self.alter_partition is not None:
                nursery.start_soon(
                    self._forever, "the isr-expiration task", self._isr_expiration
                )
                nursery.start_soon(
                    self._forever,
                    "sending AlterPartition",
                    functools.partial(self._send_isr_changes, self.alter_partition),
                    self.alter_partition_retry_backoff_ms / 1000,
                )
            task_status.started()

    async def _isr_expiration(self) -> None:
        lag = self.replica_lag_time_max_ms / 1000
        await trio.sleep(lag / 2)
        self._carry_out(self.core.maybe_shrink_isr(self.now(), lag))

    async def _send_isr_changes(self, send: AlterPartitionSender) -> None:
        if not self._resend:
            await self._isr_changes.wait()
        self._isr_changes = trio.Event()
        again = self._still_waiting(self._resend)
        unsent, self._unsent = list(self._unsent.values()), {}
        proposals = again + self._still_waiting(unsent)
        self._resend = []
        if not proposals:
            return
        try:
            answers = await send(proposals)
        except BaseException:
            self._resend = proposals  # still unanswered: after the backoff, again
            raise
        by_partition = {p.topic_partition: p for p in proposals}
        self._resend = [
            by_partition[a.topic_partition]
            for a in answers
            if isr_change_retried(a.error_code) and a.topic_partition in by_partition
        ]
        # The channel's own errors (the controller unreachable or too slow) and any
        # error Kafka retries: sent again after the backoff, the proposal still pending.
        decided = [a for a in answers if not isr_change_retried(a.error_code)]
        # An answer counts only for the proposal it answers (Kafka checks the pending
        # state is still the one proposed): metadata that came during the round trip
        # may have replaced it, and a newer proposal may be pending now.
        still = {p.topic_partition for p in self._still_waiting(proposals)}
        decided = [a for a in decided if a.topic_partition in still]
        self._carry_out(self.core.on_isr_change_answers(decided, self.now()))
        if self._resend:
            # Not this task's error (the controller may be moving or down): a warning
            # the first time, and the next round waits out the backoff before the next
            # attempt, as often as it takes.
            first = [p for p in self._resend if p not in again]
            _logger.log(
                logging.WARNING if first else logging.DEBUG,
                "AlterPartition for %s was not answered; sending it again",
                ", ".join(str(p.topic_partition) for p in self._resend),
            )
            await trio.sleep(self.alter_partition_retry_backoff_ms / 1000)

    def _still_waiting(
        self, proposals: list[IsrChangeProposal]
    ) -> list[IsrChangeProposal]:
        """The proposals their partition still waits an answer to: a new leader epoch or
        the metadata's own ISR (or the partition's deletion) made the others moot, and
        the core forgot them (it holds one proposal per partition)."""
        waiting = []
        for proposal in proposals:
            partition = self.core.get_partition(proposal.topic_partition)
            pending = None if partition is None else partition.pending_isr_change
            if pending is not None and pending.proposal == proposal:
                waiting.append(proposal)
        return waiting

    def _next_deadline(self) -> float | None:
        """The core's next deadline, which the expiry task is about to sleep until (a
        call that parks an earlier one must wake it)."""
        deadline = self.core.next_deadline()
        self._sleeping_until = math.inf if deadline is None else deadline
        return deadline

    def _expire_due(self, now: float) -> bool:
        """Complete what is due (Kafka's expiration reaper); False if it raised."""
        done = False
        with self._guarded("expiring parked requests"):
            self._carry_out(self.core.on_timer(now))
            done = True
        return done

    async def _take_offline_dirs(self) -> None:
        self.answer_offline_dirs(await self.core.log_manager.wait_offline_dirs())

    async def _checkpoint(self) -> None:
        await trio.sleep(self.high_watermark_checkpoint_interval_ms / 1000)
        self.core.checkpoint_high_watermarks()

    # --- fault isolation ----------------------------------------------------------------------

    async def _forever(
        self,
        task: str,
        one_round: Callable[[], Awaitable[None]],
        backoff_s: float = 0.0,
    ) -> None:
        """Run ``one_round`` again and again until cancelled; a round that raises is
        reported by :meth:`_guarded`, and the next one starts after ``backoff_s`` (the
        timed tasks begin each round with their own interval, and need none)."""
        while True:
            failed = True
            with self._guarded(task):
                await one_round()
                failed = False
            if failed:
                await trio.sleep(backoff_s)

    @contextlib.contextmanager
    def _guarded(self, task: str) -> Iterator[None]:
        """Stop whatever ``task`` raises here, never in the broker's nursery.

        Kafka's ``ShutdownableThread`` and ``KafkaScheduler`` log an uncaught exception
        and keep the thread or task going; so does this: ERROR with the traceback for a
        new failure, and the same failure again only at DEBUG (a round every few
        seconds would bury everything else in the log). ``trio.Cancelled`` is a
        BaseException and passes through, so shutdown still stops every task, and so
        does a ``FatalFaultError``, which ends the process.
        """
        try:
            yield
        except FatalFaultError:
            raise  # the process cannot go on: not this task's to keep
        except Exception as exc:
            self._failures.failed(task, task, exc, "the task goes on")
        else:
            self._failures.succeeded(task, task)
