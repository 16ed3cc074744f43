"""LogManagerTasks: a LogManager's background work, run on Kafka's schedule.

Kafka's ``LogManager.startup`` hands its tasks to the broker's ``KafkaScheduler``:
retention (``kafka-log-retention``), the flusher (``kafka-log-flusher``), the
recovery-point and log-start-offset checkpoints, and the cleaner threads. Here the
:class:`~._manager.LogManager` keeps every task as a plain method that a test calls
with a ``ManualClock``, and this class is the trio side that calls them: one task per
schedule in the broker's nursery, sleeping between passes. Each pass runs inside
:meth:`LogManager.guarded <minikafka.log._manager.LogManager.guarded>`, so nothing a
pass raises ends the broker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from ._names import LOG_START_OFFSET_CHECKPOINT

if TYPE_CHECKING:
    from ._log import Log
    from ._manager import LogManager


@attrs.frozen
class LogManagerTasks:
    """The trio tasks that run ``manager``'s background work (its ``schedule``)."""

    manager: LogManager

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the scheduled tasks until cancelled (the broker's nursery owns this).

        No task lets an exception out (see ``LogManager.guarded``): one would cancel
        the others and end the broker.
        """
        manager, s = self.manager, self.manager.schedule
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                self._every,
                "retention",
                s.retention_check_interval_ms,
                manager.cleanup_logs,
            )
            nursery.start_soon(self._flush_loop)
            nursery.start_soon(
                self._every,
                "recovery-point checkpoint",
                s.recovery_point_checkpoint_interval_ms,
                manager.checkpoint_recovery_points,
            )
            nursery.start_soon(
                self._every,
                "log-start-offset checkpoint",
                s.start_offset_checkpoint_interval_ms,
                lambda: manager.checkpoint(LOG_START_OFFSET_CHECKPOINT),
            )
            if s.cleaner_enable:
                nursery.start_soon(
                    self._every, "log cleaner", s.cleaner_backoff_ms, manager.clean_logs
                )
            task_status.started()

    async def _every(
        self, task: str, interval_ms: int, step: Callable[[], object]
    ) -> None:
        while True:
            await trio.sleep(interval_ms / 1000)
            # A pass that fails is tried again at the next interval.
            with self.manager.guarded(task):
                step()

    async def _flush_loop(self) -> None:
        manager = self.manager
        while True:
            await trio.sleep(manager.schedule.flush_check_interval_ms / 1000)
            due: list[tuple[Log, int]] = []
            with manager.guarded("flush"):
                due = manager.logs_to_flush()
            for log, offset in due:
                tp = log.topic_partition
                if manager.is_offline(tp):
                    continue  # an fsync of another log in its dir failed in this pass
                # A failed fsync takes the dir offline (guarded): after "fsyncgate"
                # neither a retried fsync nor a clean shutdown may claim these bytes
                # are on disk, so the recovery point stays where it was.
                with manager.guarded("fsync", tp):
                    # fsync can take long on a busy disk: a worker thread, off the loop.
                    await trio.to_thread.run_sync(log.fsync_up_to, offset)
                    log.mark_flushed(offset)
