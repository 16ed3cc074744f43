"""ReplicaManagerService: the trio shell around the ReplicaManager core (issue 16).

The core decides; this module carries its decisions out, and is the only replication
module that imports trio (import-linter's "Replication cores do not import trio"). It

- owns the clock: every call into the core gets ``now=trio.current_time()``;
- sends the answers the core returns, through the callbacks the request handlers gave
  (:class:`ResponseCallbacks`);
- sleeps until the core's ``next_deadline()`` and then calls ``on_timer(now)``, which
  expires the purgatories' operations (Kafka's expiration reaper); a call that parks an
  operation due earlier wakes it;
- writes the high-watermark checkpoint every
  ``replica.high.watermark.checkpoint.interval.ms``;
- listens for log dirs the LogManager takes offline (a failed flush in its own tasks) and
  sends the answers that completes;
- runs Kafka's isr-expiration task every ``replica.lag.time.max.ms`` / 2 and sends the
  leaders' ISR proposals (those and the expansions followers' fetches make) to the
  controller with ``alter_partition``, handing the answers back to the core. Without
  ``alter_partition`` (no controller to ask) no ISR change is proposed.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition

from ._callbacks import FetchCallback, ProduceCallback, ResponseCallbacks
from ._fetcher import EpochAnswer, EpochRequest
from ._isr import IsrChangeAnswer, IsrChangeProposal
from ._partition import Partition, PartitionState
from ._replica_manager import ReplicaManager
from ._results import FetchParams, FetchPartition, Response

_logger = logging.getLogger(__name__)

AlterPartitionSender = Callable[
    [list[IsrChangeProposal]], Awaitable[list[IsrChangeAnswer]]
]
"""Sends proposals to the controller (AlterPartition) and returns its answers."""


@attrs.define(eq=False)
class ReplicaManagerService:
    core: ReplicaManager
    high_watermark_checkpoint_interval_ms: int = 5000
    callbacks: ResponseCallbacks = attrs.field(factory=ResponseCallbacks)
    replica_lag_time_max_ms: int = 30_000
    alter_partition: AlterPartitionSender | None = None
    _isr_changes: trio.Event = attrs.field(init=False, factory=trio.Event)
    _wake: trio.Event = attrs.field(init=False, factory=trio.Event)
    _sleeping_until: float = attrs.field(init=False, default=math.inf)
    """The deadline the expiry task sleeps until (to know when a call must wake it)."""

    def __attrs_post_init__(self) -> None:
        self.core.log_manager.dir_failure_listeners.append(self._on_log_dir_failure)

    # --- the core's calls, with the clock and the answers filled in -----------------------

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.core.get_partition(tp)

    def become_leader_or_follower(
        self,
        leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
    ) -> None:
        now = trio.current_time()
        self._carry_out(self.core.become_leader_or_follower(leaders, followers, now))

    def stop_replicas(self, topic_partitions: Iterable[TopicPartition]) -> None:
        self._carry_out(self.core.stop_replicas(topic_partitions, trio.current_time()))

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
    ) -> None:
        """Append; ``respond`` is called with the per-partition results, now or
        later."""
        request_id = self.callbacks.produce(respond)
        now = trio.current_time()
        self._carry_out(
            self.core.append_records(
                timeout_ms, required_acks, entries, request_id, now
            )
        )

    def fetch_messages(
        self, params: FetchParams, fetches: list[FetchPartition], respond: FetchCallback
    ) -> None:
        """Fetch; ``respond`` is called with the per-partition results, now or later."""
        request_id = self.callbacks.fetch(respond)
        now = trio.current_time()
        self._carry_out(self.core.fetch_messages(params, fetches, request_id, now))
        if self.core.has_isr_changes:
            self._isr_changes.set()  # a follower caught up and is proposed back

    def last_offsets_for_leader_epochs(
        self, requests: Iterable[EpochRequest]
    ) -> list[EpochAnswer]:
        """OffsetsForLeaderEpoch: where each asked epoch ends in this leader's log."""
        return self.core.last_offsets_for_leader_epochs(requests)

    def shutdown(self) -> None:
        """Answer every parked request now, and park none from here on."""
        self._carry_out(self.core.shutdown(trio.current_time()))

    def _on_log_dir_failure(self, log_dir: Path) -> None:
        self._carry_out(self.core.on_log_dir_failure(log_dir, trio.current_time()))

    def _carry_out(self, responses: list[Response]) -> None:
        try:
            self.callbacks.deliver(responses)
        finally:
            deadline = self.core.next_deadline()
            if deadline is not None and deadline < self._sleeping_until:
                self._wake.set()  # parked with an earlier deadline than the task waits for

    # --- the tasks --------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The expiry of parked requests and the HW checkpoint, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._expire_at_deadlines)
            nursery.start_soon(self._checkpointer)
            if self.alter_partition is not None:
                nursery.start_soon(self._isr_expiration)
                nursery.start_soon(self._send_isr_changes, self.alter_partition)
            task_status.started()

    async def _isr_expiration(self) -> None:
        lag = self.replica_lag_time_max_ms / 1000
        while True:
            await trio.sleep(lag / 2)
            self.core.maybe_shrink_isr(trio.current_time(), lag)
            if self.core.has_isr_changes:
                self._isr_changes.set()

    async def _send_isr_changes(self, send: AlterPartitionSender) -> None:
        while True:
            await self._isr_changes.wait()
            self._isr_changes = trio.Event()
            proposals = self.core.take_isr_changes()
            if not proposals:
                continue
            try:
                answers = await send(proposals)
            except Exception as exc:  # the controller unreachable: propose again later
                _logger.warning("AlterPartition failed: %s", exc)
                answers = [
                    IsrChangeAnswer(p.topic_partition, ErrorCode.request_timed_out)
                    for p in proposals
                ]
            self._carry_out(
                self.core.on_isr_change_answers(answers, trio.current_time())
            )

    async def _expire_at_deadlines(self) -> None:
        while True:
            self._wake = trio.Event()
            deadline = self.core.next_deadline()
            self._sleeping_until = math.inf if deadline is None else deadline
            with trio.move_on_at(self._sleeping_until):
                await self._wake.wait()
                continue  # an earlier deadline arrived: sleep until that one
            self._sleeping_until = math.inf
            self._carry_out(self.core.on_timer(trio.current_time()))

    async def _checkpointer(self) -> None:
        while True:
            await trio.sleep(self.high_watermark_checkpoint_interval_ms / 1000)
            try:
                self.core.checkpoint_high_watermarks()
            except OSError:
                _logger.exception("writing the high-watermark checkpoint failed")
