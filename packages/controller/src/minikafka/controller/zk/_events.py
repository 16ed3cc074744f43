"""Trace events of the ZooKeeper-mode controller (seed 001).

Seed 001 tells a topic's creation as a sequence: a watch fires, the partitions and
replicas move through their state machines, leader and ISR are written to ZooKeeper, and
the brokers are told. Each step is an event here, so a trace replays that sequence: the
controller's election with its epoch, each watch that fired, every transition of either
state machine with the controller event that caused it, and each request the controller
sent to a broker with the answer it got.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = [
    "ControllerRequestSent",
    "StateTransition",
    "ZkControllerElected",
    "ZkWatchFired",
]


@register_event
@attrs.frozen
class StateTransition(TraceEvent):
    """A partition (``replica`` -1) or a replica changed state in the controller.

    ``machine`` is ``partition`` or ``replica``; the states are Kafka's names
    (``NewPartition``...); ``cause`` is the controller event being processed (Kafka's
    names: ``Startup``, ``BrokerChange``, ``TopicChange``, ``TopicDeletion``,
    ``ControlledShutdown``, ``AlterPartition``) and ``reason`` the edge's label in the
    tables of :mod:`._states`.
    """

    COMPONENT: ClassVar[str] = "zk_controller"
    EVENT: ClassVar[str] = "transition"

    machine: str
    topic: str
    partition: int
    replica: int
    from_state: str
    to_state: str
    cause: str
    reason: str


@register_event
@attrs.frozen
class ZkControllerElected(TraceEvent):
    """This broker won ``/controller`` and raised ``/controller_epoch`` to ``epoch``
    (``resigned`` True: it lost the role, its session or a write to a newer epoch)."""

    COMPONENT: ClassVar[str] = "zk_controller"
    EVENT: ClassVar[str] = "elected"

    controller_id: int
    epoch: int
    resigned: bool


@register_event
@attrs.frozen
class ZkWatchFired(TraceEvent):
    """A ZooKeeper watch fired on ``path`` (``kind``: CHILD, CHANGED, CREATED, DELETED)
    and was queued as the controller event ``queued``."""

    COMPONENT: ClassVar[str] = "zk_controller"
    EVENT: ClassVar[str] = "watch"

    kind: str
    path: str
    queued: str


@register_event
@attrs.frozen
class ControllerRequestSent(TraceEvent):
    """A request the controller sent a broker (``api``: LeaderAndIsr, UpdateMetadata,
    StopReplica) over ``partitions`` partitions, and the error the broker answered
    (``NONE``, ``STALE_CONTROLLER_EPOCH``..., or ``unreachable``)."""

    COMPONENT: ClassVar[str] = "zk_controller"
    EVENT: ClassVar[str] = "request"

    api: str
    broker_id: int
    controller_epoch: int
    partitions: int
    error: str
