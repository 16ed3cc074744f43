"""The events of the ZooKeeper-mode controller's one queue (Kafka 2.8's ``ControllerEvent``
subclasses, as the shell has them), their names for the log, and how a request whose
event failed is answered.

:class:`~._controller_shell.ZkControllerShell` puts every watch that fires, every request
from a broker or a client, every StopReplica answer and its own election and resignation
on one queue as one of these, and takes them off one at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    ControllerError,
    ControllerRequest,
)
from minikafka.controller.zk import (
    ZkResponse,
)
from minikafka.zk import BROKER_IDS, CONTROLLER, DELETE_TOPICS, TOPICS, WatchFired


class ControllerMovedError(Exception):
    """This controller's epoch is no longer ZooKeeper's: another one was elected."""


@attrs.frozen
class Elect:
    pass


@attrs.frozen
class Watch:
    fired: WatchFired


@attrs.frozen
class Submit:
    request: ControllerRequest
    reply: trio.MemorySendChannel[ZkResponse | ControllerError]


@attrs.frozen
class Shutdown:
    broker_id: int
    broker_epoch: int
    reply: trio.MemorySendChannel[ZkResponse | ControllerError]


@attrs.frozen
class StopReplicaAnswered:
    broker_id: int
    errors: Mapping[tuple[str, int], ErrorCode]


@attrs.frozen
class Resign:
    why: str


@attrs.frozen
class Reconnected:
    pass


@attrs.frozen
class CheckLeaderImbalance:
    """Kafka's ``AutoPreferredReplicaLeaderElection``, posted on a schedule."""


ControllerEvent = (
    Elect
    | Watch
    | Submit
    | Shutdown
    | StopReplicaAnswered
    | Resign
    | Reconnected
    | CheckLeaderImbalance
)


def event_name(path: str, kind: str) -> str | None:
    """The controller event a watch on ``path`` becomes (Kafka's names), if any."""
    if path == BROKER_IDS:
        return "BrokerChange"
    if path == TOPICS or (path.startswith(TOPICS + "/") and path.count("/") == 3):
        return "TopicChange"
    if path == DELETE_TOPICS:
        return "TopicDeletion"
    if path == CONTROLLER and kind == "DELETED":
        return "Reelect"
    return None


def event_log_name(event: ControllerEvent) -> str:
    """The event's name for the log (Kafka's names where the shell has one)."""
    match event:
        case Watch(fired):
            return event_name(fired.path, fired.kind) or f"Watch({fired.path})"
        case Submit(request):
            return type(request).__name__
        case Shutdown():
            return "ControlledShutdown"
        case CheckLeaderImbalance():
            return "AutoPreferredReplicaLeaderElection"
    return type(event).__name__.lstrip("_")


def fail_event(event: ControllerEvent, error: ErrorCode) -> None:
    """Answer a request whose event failed (unless it was answered before it failed)."""
    if isinstance(event, Submit | Shutdown):
        with contextlib.suppress(trio.WouldBlock):
            event.reply.send_nowait(ControllerError(error))
