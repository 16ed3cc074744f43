"""What Kafka's ``UnifiedLog`` forwards to its ``LocalLog`` (KIP-405's split).

The directory, the config, the clock, the segments, the log end offset and the recovery
point belong to the segments on disk (:class:`~._local_log.LocalLog`); the Log answers
for them all the same, as Kafka's does, so that callers never reach through it. Kept
apart so that :class:`~._log.Log` reads as what it adds: offsets, producers,
transactions, replication's hooks and retention.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from minikafka.common import TopicPartition
from minikafka.trace import Tracer

from ._config import LogConfig
from ._files import FilePool
from ._local_log import LocalLog
from ._segment import LogSegment


class LocalLogView:
    """The LocalLog's state, read (and the config set) through the Log."""

    __slots__ = ()  # the Log is an attrs class with slots: no __dict__ from here
    local: LocalLog  # the segments, the log end offset and the recovery point

    @property
    def dir(self) -> Path:
        return self.local.dir

    @property
    def topic_partition(self) -> TopicPartition:
        return self.local.topic_partition

    @property
    def config(self) -> LogConfig:
        return self.local.config

    @config.setter
    def config(self, config: LogConfig) -> None:  # a topic's configs were altered
        self.local.config = config

    @property
    def clock(self) -> Callable[[], int]:
        return self.local.clock

    @property
    def files(self) -> FilePool:
        return self.local.files

    @property
    def tracer(self) -> Tracer:
        return self.local.tracer

    @property
    def segments(self) -> list[LogSegment]:
        return self.local.segments

    @property
    def active_segment(self) -> LogSegment:
        return self.local.active_segment

    @property
    def size(self) -> int:
        return self.local.size

    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self.local.recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self.local.last_flush_ms

    @property
    def flush_requested_offset(self) -> int:
        return self.local.flush_requested_offset
