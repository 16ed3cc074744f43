"""Making this broker's replicas what the controller decided: one path for both modes.

A KRaft broker learns its leaderships from a metadata delta it replays; a ZooKeeper-mode
broker from a LeaderAndIsr request (and StopReplica). Either way, what follows is Kafka's
``ReplicaManager.becomeLeaderOrFollower`` and ``stopReplicas``, in this order: the fetchers
let go of every partition that changes (a log about to be deleted is nobody's to append
to), deleted replicas go, the rest lead or follow, the followers fetch from their
leaders, and the coordinators follow the leadership of ``__consumer_offsets`` and
``__transaction_state``.

Metadata is applied under a :class:`LoggingFaultHandler`, the non-fatal fault handler
Kafka's brokers publish metadata with: a step that raises is logged at ERROR and
counted, and the next step, and the next delta, are applied all the same. A partition
that fails to lead or follow is marked offline by the ReplicaManager, the others go on.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Set
from types import TracebackType

import attrs

from minikafka.common import FatalFaultError, TopicPartition
from minikafka.net import Node
from minikafka.replication import PartitionState, ReplicaManagerShell

from ._coordinators import Coordinators
from ._replica_fetchers import ReplicaFetcherManager

_logger = logging.getLogger("minikafka.broker")

States = Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]]


@attrs.define(eq=False)
class LoggingFaultHandler:
    """Kafka's ``LoggingFaultHandler``: a fault is logged at ERROR with its traceback,
    counted, and the caller goes on. A broker publishes metadata with one ("metadata
    publishing"; the count is Kafka's ``metadata-apply-error-count``), since one delta
    that cannot be applied must not take the broker, and every other partition, down.

    ``with handler.guard(message):`` runs a step under it. A step a loop retries (the
    metadata fetch, the heartbeat) passes a ``key``: the same failure of the same key is
    then logged at ERROR once, and again only once it changes or the step has
    succeeded meanwhile, so a loop that retries every 100 ms cannot flood the log.
    """

    type: str
    count: int = attrs.field(init=False, default=0)
    """How many faults were handled."""
    _failing: dict[str, str] = attrs.field(init=False, factory=dict)
    """key -> the failure last logged for it."""

    def guard(self, message: str, key: str | None = None) -> FaultGuard:
        return FaultGuard(self, message, key)

    def handle_fault(
        self, message: str, exc: Exception, key: str | None = None
    ) -> None:
        self.count += 1
        failure = f"{type(exc).__name__}: {exc}"
        if key is not None:
            if self._failing.get(key) == failure:
                _logger.debug("%s fault again: %s: %s", self.type, message, failure)
                return
            self._failing[key] = failure
        _logger.error("Encountered %s fault: %s", self.type, message, exc_info=exc)

    def succeeded(self, key: str) -> None:
        if self._failing.pop(key, None) is not None:
            _logger.info("%s succeeded again", key)


@attrs.define(eq=False)
class FaultGuard:
    """One step under a :class:`LoggingFaultHandler`: an ``Exception`` it raises is
    handled there and goes no further. ``trio.Cancelled`` (a BaseException) passes, and
    so does a ``FatalFaultError``: that one ends the process (Kafka's
    ProcessTerminatingFaultHandler)."""

    handler: LoggingFaultHandler
    message: str
    key: str | None = None

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if isinstance(exc, Exception) and not isinstance(exc, FatalFaultError):
            self.handler.handle_fault(self.message, exc, self.key)
            return True
        if exc is None and self.key is not None:
            self.handler.succeeded(self.key)
        return False


def apply_replica_changes(
    replica_manager: ReplicaManagerShell,
    fetchers: ReplicaFetcherManager,
    coordinators: Coordinators,
    *,
    leaders: States,
    followers: States,
    leader_nodes: Mapping[TopicPartition, Node],
    deleted: Set[TopicPartition] = frozenset(),
    stopped: Set[TopicPartition] = frozenset(),
    faults: LoggingFaultHandler,
    where: str,
) -> bool:
    """``deleted``: no longer replicas here, logs deleted; ``stopped``: no longer fetched
    nor led (a ZooKeeper-mode StopReplica without delete), logs kept.

    Each step runs under ``faults`` (``where`` says which delta or request, for the
    log), as Kafka's BrokerMetadataPublisher applies the replica manager's delta and
    the coordinators' elections each in a try of its own. Returns whether every step
    succeeded."""
    before = faults.count

    def step(what: str, action: Callable[[], object]) -> None:
        with faults.guard(f"Error {what} {where}"):
            action()

    step(
        "removing the replica fetchers",
        lambda: fetchers.remove_partitions(
            set(deleted) | set(stopped) | set(leaders) | set(followers)
        ),
    )
    if deleted:
        step("deleting replicas", lambda: replica_manager.stop_replicas(deleted))
    step(
        "applying the leader and follower changes",
        lambda: replica_manager.become_leader_or_follower(leaders, followers),
    )
    step("starting the replica fetchers", lambda: fetchers.add_partitions(leader_nodes))
    step(
        "updating the coordinators",
        lambda: coordinators.follow_leadership(
            {tp: state.leader_epoch for tp, (_, state) in leaders.items()},
            set(deleted) | set(stopped) | set(followers),
        ),
    )
    return faults.count == before
