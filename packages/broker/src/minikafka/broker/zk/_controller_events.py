"""The events of the ZooKeeper-mode controller's one queue (Kafka 2.8's ``ControllerEvent``
subclasses, as the shell has them), their names for the log, which call of the core a
request's event is, and how a request whose event failed is answered.

:class:`~._controller_shell.ZkControllerShell` puts every watch that fires, every request
from a broker or a client, every StopReplica answer and its own election and resignation
and the topic config changes its broker reads on one queue as one of these, and takes
them off one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.shell import Waiters
from minikafka.controller import (
    AllocateProducerIdsRequest,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    ControllerError,
    ControllerRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from minikafka.controller.zk import (
    ZkController,
    ZkControllerResult,
    ZkResponse,
)
from minikafka.zk import BROKER_IDS, CONTROLLER, DELETE_TOPICS, TOPICS, WatchFired

Answer: TypeAlias = ZkResponse | ControllerError | None
"""What a request's event is answered: the core's reply, or the error that refused it
(None, no reply, would be a bug, which the request hears as UNKNOWN_SERVER_ERROR)."""


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
    request_id: int
    """Whose answer it is, among the shell's waiters."""


@attrs.frozen
class Shutdown:
    broker_id: int
    broker_epoch: int
    request_id: int


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


@attrs.frozen
class TopicConfigChanged:
    """A topic's config change notification, which this broker has read: the
    controller reads the topic's config again (``unclean.leader.election.enable``)."""

    topic: str


@attrs.frozen
class BrokerConfigChanged:
    """A dynamic broker config's change notification (``""``: the cluster-wide
    default's, or this broker's own), which this broker has read: the controller reads
    it again (``unclean.leader.election.enable``)."""

    name: str


ControllerEvent = (
    Elect
    | Watch
    | Submit
    | Shutdown
    | StopReplicaAnswered
    | Resign
    | Reconnected
    | CheckLeaderImbalance
    | TopicConfigChanged
    | BrokerConfigChanged
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
        case TopicConfigChanged(topic):
            return f"TopicConfigChange({topic})"
        case BrokerConfigChanged(name):
            return f"BrokerConfigChange({name or '<default>'})"
    return type(event).__name__.lstrip("_")


def fail_event(
    event: ControllerEvent, error: ErrorCode, waiters: Waiters[Answer]
) -> None:
    """Answer a request whose event failed (unless it was answered before it failed:
    the first answer counts)."""
    if isinstance(event, Submit | Shutdown):
        waiters.answer(event.request_id, ControllerError(error))


def process_request(
    core: ZkController, request: ControllerRequest, now: float
) -> ZkControllerResult:
    """A Submit event's request, handed to the core (Kafka's ``KafkaController.process``
    for the events a request becomes); UNSUPPORTED_VERSION for one this mode lacks."""
    match request:
        case AlterPartitionRequest():
            return core.on_alter_partition(request, now)
        case CreateTopicsRequest():
            return core.on_create_topics(request, now)
        case CreatePartitionsRequest():
            return core.on_create_partitions(request, now)
        case DeleteTopicsRequest():
            return core.on_delete_topics(request, now)
        case AllocateProducerIdsRequest():
            return core.on_allocate_producer_ids(request, now)
        case ElectLeadersRequest():
            return core.on_elect_leaders(request, now)
        case AlterPartitionReassignmentsRequest():
            return core.on_alter_partition_reassignments(request, now)
        case ListPartitionReassignmentsRequest():
            return CoreResult(replies=(core.list_reassignments(),))
    raise ControllerError(ErrorCode.unsupported_version)
