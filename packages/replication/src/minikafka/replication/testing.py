"""Helpers for tests of replication and of the packages built on it (broker, simulations).

A ReplicaManager over a LogManager in a temporary directory, with a manual clock for the
logs, driven by hand (:class:`ManualShell`: ``now`` passed to each call, the answers sent
to callbacks, as the trio shell does); partitions made leader in one call; callbacks that
keep what they were answered; follower fetches as the leader sees them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from minikafka.common import Acks, TopicPartition
from minikafka.log import Log, LogConfig, LogManager
from minikafka.log.testing import ManualClock
from minikafka.trace import NullTracer, Tracer

from ._callbacks import (
    DeleteRecordsCallback,
    FetchCallback,
    ProduceCallback,
    ResponseCallbacks,
)
from ._manager_base import ReplicaManagerResult, TopicSettings
from ._partition import Partition
from ._partition_base import PartitionState
from ._replica_manager import ReplicaManager
from ._results import (
    FetchParams,
    FetchPartition,
    FetchPartitionResult,
    ProducePartitionResult,
)

if TYPE_CHECKING:
    from ._shell import ReplicaManagerShell

T = TypeVar("T")

FetchAnswer = list[tuple[FetchPartition, FetchPartitionResult]]


def partition_state(
    replicas: tuple[int, ...] = (1,),
    *,
    leader: int | None = None,
    isr: tuple[int, ...] | None = None,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
) -> PartitionState:
    """The controller's decision: ``leader`` defaults to the first replica, the ISR to all."""
    return PartitionState(
        leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        replicas=replicas,
        isr=replicas if isr is None else isr,
    )


def open_partition(
    dir: Path,
    tp: TopicPartition | None = None,
    *,
    broker_id: int = 1,
    min_insync_replicas: int = 1,
    config: LogConfig | None = None,
    clock: ManualClock | None = None,
    tracer: Tracer | None = None,
) -> Partition:
    """A Partition over a fresh Log in ``dir/<topic>-<partition>`` (default ``t-0``).

    Neither leader nor follower until ``make_leader`` or ``make_follower``.
    """
    tp = tp or TopicPartition("t", 0)
    log = Log.open(dir / str(tp), config, clock=clock or ManualClock())
    return Partition(
        tp,
        uuid.uuid4(),
        broker_id,
        log,
        min_insync_replicas=min_insync_replicas,
        tracer=tracer or NullTracer(broker_id),
    )


@attrs.define
class SettingsTable:
    """``ReplicaManager.topic_settings``: per-topic overrides over one default, editable."""

    default: TopicSettings = attrs.field(factory=lambda: TopicSettings(LogConfig()))
    topics: dict[str, TopicSettings] = attrs.field(factory=dict)

    def __call__(self, topic: str) -> TopicSettings:
        return self.topics.get(topic, self.default)


def replica_manager_core(
    dir: Path,
    *,
    broker_id: int = 1,
    settings: Callable[[str], TopicSettings] | None = None,
    min_insync_replicas: int = 1,
    clock: ManualClock | None = None,
    tracer: Tracer | None = None,
) -> ReplicaManager:
    """A ReplicaManager core over a LogManager started on ``dir`` (no partition yet)."""
    logs = LogManager.startup([dir], clock=clock or ManualClock())
    table = settings or SettingsTable(TopicSettings(LogConfig(), min_insync_replicas))
    return ReplicaManager(
        broker_id, logs, table, tracer=tracer or NullTracer(broker_id)
    )


@attrs.define(eq=False)
class ManualShell:
    """A ReplicaManager driven by hand, as :class:`ReplicaManagerShell` drives it.

    Each call takes ``now`` (the trio shell reads its clock instead) and the answers the
    core returns go to the callbacks the caller gave. After each call, the log dirs the
    LogManager took offline meanwhile are told to the core at that call's ``now``, as the
    trio shell's task takes them from the LogManager's queue; :meth:`answer_offline_dirs`
    does it between calls (``failure_time``: the default time).
    """

    core: ReplicaManager
    callbacks: ResponseCallbacks = attrs.field(factory=ResponseCallbacks)
    failure_time: float = 0.0

    def _deliver(self, result: ReplicaManagerResult, now: float) -> None:
        self.callbacks.deliver(result.replies)
        self.answer_offline_dirs(now)

    def answer_offline_dirs(self, now: float | None = None) -> None:
        """Tell the core of the dirs taken offline since the last call, and answer
        what that completed."""
        at = self.failure_time if now is None else now
        for log_dir in self.core.log_manager.take_offline_dirs():
            self.callbacks.deliver(self.core.on_log_dir_failure(log_dir, at).replies)

    def append_records(
        self,
        timeout_ms: int,
        required_acks: Acks,
        entries: Mapping[TopicPartition, bytearray],
        respond: ProduceCallback,
        now: float,
    ) -> None:
        request_id = self.callbacks.produce(respond)
        self._deliver(
            self.core.append_records(
                timeout_ms, required_acks, entries, request_id, now
            ),
            now,
        )

    def fetch_messages(
        self,
        params: FetchParams,
        fetches: list[FetchPartition],
        respond: FetchCallback,
        now: float,
    ) -> None:
        request_id = self.callbacks.fetch(respond)
        self._deliver(self.core.fetch_messages(params, fetches, request_id, now), now)

    def delete_records(
        self,
        timeout_ms: int,
        offsets: Mapping[TopicPartition, int],
        respond: DeleteRecordsCallback,
        now: float,
    ) -> None:
        request_id = self.callbacks.delete_records(respond)
        self._deliver(
            self.core.delete_records(timeout_ms, offsets, request_id, now), now
        )

    def become_leader_or_follower(
        self,
        leaders: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        followers: Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]],
        now: float,
    ) -> None:
        self._deliver(self.core.become_leader_or_follower(leaders, followers, now), now)

    def stop_replicas(
        self, topic_partitions: Iterable[TopicPartition], now: float = 0.0
    ) -> None:
        self._deliver(self.core.stop_replicas(topic_partitions, now), now)

    def on_timer(self, now: float) -> int:
        """Expire what is due at ``now``; how many requests that answered."""
        result = self.core.on_timer(now)
        self._deliver(result, now)
        return len(result.replies)

    def shutdown(self, now: float = 0.0) -> None:
        self._deliver(self.core.shutdown(now), now)


def replica_manager(
    dir: Path,
    *,
    broker_id: int = 1,
    settings: Callable[[str], TopicSettings] | None = None,
    min_insync_replicas: int = 1,
    clock: ManualClock | None = None,
    tracer: Tracer | None = None,
) -> ManualShell:
    """A ReplicaManager over a LogManager started on ``dir`` (no partition yet), by hand."""
    core = replica_manager_core(
        dir,
        broker_id=broker_id,
        settings=settings,
        min_insync_replicas=min_insync_replicas,
        clock=clock,
        tracer=tracer,
    )
    return ManualShell(core)


def lead(
    manager: ManualShell | ReplicaManagerShell,
    tp: TopicPartition,
    replicas: tuple[int, ...] | None = None,
    *,
    isr: tuple[int, ...] | None = None,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    topic_id: uuid.UUID | None = None,
    now: float | None = None,
) -> Partition:
    """Make ``manager``'s broker the leader of ``tp`` (replicas default: that broker alone)
    at ``now`` (default: 0 by hand, the shell's clock for a ReplicaManagerShell)."""
    if now is None:
        now = 0.0 if isinstance(manager, ManualShell) else manager.now()
    core = manager.core
    existing = core.get_partition(tp)
    if topic_id is None:
        topic_id = existing.topic_id if existing is not None else uuid.uuid4()
    state = partition_state(
        replicas or (core.broker_id,),
        leader=core.broker_id,
        isr=isr,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
    )
    manager.callbacks.deliver(
        core.become_leader_or_follower({tp: (topic_id, state)}, {}, now).replies
    )
    partition = core.get_partition(tp)
    assert partition is not None
    assert partition.is_leader
    return partition


@attrs.define
class Answers(Generic[T]):
    """A response callback that keeps every answer it is given."""

    calls: list[T] = attrs.field(factory=list)

    def __call__(self, answer: T) -> None:
        self.calls.append(answer)

    @property
    def answered(self) -> bool:
        return bool(self.calls)

    @property
    def only(self) -> T:
        """The one answer (a request is answered exactly once)."""
        assert len(self.calls) == 1, f"expected one answer, got {len(self.calls)}"
        return self.calls[0]


ProduceAnswers = Answers[dict[TopicPartition, ProducePartitionResult]]
"""A produce callback that keeps the per-partition results it was answered."""

TP = TopicPartition("orders", 0)  # the partition a test leads, unless it names another
OTHER = TopicPartition("orders", 1)


def discard(_answer: object) -> None:
    """A response callback for requests whose answer a test does not look at."""


def follower_fetch(
    manager: ManualShell,
    broker_id: int,
    tp: TopicPartition,
    fetch_offset: int,
    now: float = 0.0,
    *,
    current_leader_epoch: int = -1,
    max_bytes: int = 1 << 20,
) -> FetchPartitionResult:
    """A follower's fetch from ``fetch_offset`` answered at once (max_wait 0): its result."""
    params = FetchParams(
        replica_id=broker_id, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes
    )
    answers: Answers[FetchAnswer] = Answers()
    fetch = FetchPartition(tp, fetch_offset, max_bytes, current_leader_epoch)
    manager.fetch_messages(params, [fetch], answers, now)
    [(_, result)] = answers.only
    return result


def consumer_params(
    *, max_wait_ms: int = 0, min_bytes: int = 1, max_bytes: int = 1 << 20
) -> FetchParams:
    """A consumer's fetch settings (replica id -1)."""
    return FetchParams(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes
    )
