"""The failures of a LogManager's dirs and background work.

:class:`LogDirFailureChannel`: the log dirs taken offline after a failed write, as a queue.

Kafka wraps every I/O call of a log in one rule: an ``IOException`` becomes
KAFKA_STORAGE_ERROR for the request, and the log's dir is reported to the
``LogDirFailureChannel``, which takes the whole dir offline until the broker restarts
(after a failed write nobody can say what reached the file). The channel is a queue, not
a callback: whoever must act on a failed dir (the ReplicaManager's shell) takes it in its
own task, so nothing it does can fail the background task, or the request, whose write
failed.

:class:`BackgroundFailures`: a background task's failure, logged once (not at every
interval), by task and partition.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import trio

from minikafka.common import FailureLog, TopicPartition

_logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class LogDirFailureChannel:
    offline_dirs: dict[Path, str] = attrs.field(factory=dict)
    """Log dirs taken offline, with why (until restart)."""
    _queue: list[Path] = attrs.field(factory=list, init=False)
    """Dirs taken offline and not yet taken by :meth:`take` (the queue Kafka's
    ReplicaManager's handler thread polls)."""
    _went_offline: trio.Event = attrs.field(factory=trio.Event, init=False)

    def mark_offline(self, log_dir: Path, reason: str) -> None:
        """Take ``log_dir`` offline until restart, once, saying why in one line."""
        if log_dir in self.offline_dirs:
            return
        self.offline_dirs[log_dir] = reason
        _logger.error(
            "log dir %s is offline until restart: %s; "
            "its partitions answer KAFKA_STORAGE_ERROR",
            log_dir,
            reason,
        )
        self._queue.append(log_dir)
        self._went_offline.set()

    def take(self) -> list[Path]:
        """The dirs taken offline since the last call, each once, in order."""
        taken, self._queue = self._queue, []
        return taken

    async def wait(self) -> list[Path]:
        """Wait until a dir goes offline; then :meth:`take` (Kafka's
        ``takeNextOfflineLogDir``)."""
        while not self._queue:
            await self._went_offline.wait()
            self._went_offline = trio.Event()
        return self.take()


@attrs.define(eq=False)
class BackgroundFailures:
    """The background tasks' failures, each logged once (``minikafka.common.FailureLog``)
    by (task, partition or None)."""

    _log: FailureLog = attrs.field(factory=lambda: FailureLog(_logger))

    def failed(self, task: str, tp: TopicPartition | None, exc: Exception) -> None:
        name = task_name(task, tp)
        self._log.failed(
            (task, tp), name, exc, "it is tried again at the next interval"
        )

    def forget(self, tp: TopicPartition) -> None:
        """The partition's log is gone: a new one of that name starts afresh."""
        for step in self._log.steps():
            if isinstance(step, tuple) and step[1] == tp:
                self._log.forget(step)

    def succeeded(self, task: str, tp: TopicPartition | None) -> None:
        self._log.succeeded((task, tp), task_name(task, tp))


def task_name(task: str, tp: TopicPartition | None) -> str:
    return task if tp is None else f"{task} of {tp}"
