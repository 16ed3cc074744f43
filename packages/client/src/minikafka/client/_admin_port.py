"""What the admin client's request families need of it: the port the mixins of
:class:`AsyncAdminClient` (``_admin_topics``, ``_admin_groups``, ``_admin_cluster``...)
are written against, and :func:`to_controller`, how each of them sends a request to the
controller.

Each family lives in its own module and is mixed into :class:`AsyncAdminClient`; the
mixins' methods take ``self`` as an :class:`AdminPort`, the routing the class provides
(send a body to a node or to any broker, the metadata, the controller, a group's
coordinator), so mypy checks both sides without the modules importing each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

import trio
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import MetadataResponse
from kio.static.primitive import i32Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.net import NetworkClient, Node

from ._message import TRANSPORT, KafkaError, KafkaException

R = TypeVar("R", bound=ResponsePayload)
V = TypeVar("V")

RETRY_BACKOFF_S = 0.1  # retry.backoff.ms: the first wait before asking again
RETRY_BACKOFF_MAX_S = 1.0  # retry.backoff.max.ms: each wait doubles up to this


class AdminPort(Protocol):
    client: NetworkClient
    bootstrap: tuple[Node, ...]
    brokers: dict[int, Node]
    controller_id: int
    api_timeout_ms: int

    async def request(
        self, node: Node, body: RequestPayload, response_type: type[R]
    ) -> R: ...

    async def metadata(
        self,
        topics: Sequence[str] | None = None,
        *,
        allow_auto_topic_creation: bool = False,
    ) -> MetadataResponse: ...

    def node(self, node_id: int) -> Node: ...

    async def controller(self) -> Node: ...

    async def find_coordinator(self, group: str, key_type: int = 0) -> Node: ...

    async def at_any_broker(self, call: Callable[[Node], Awaitable[V]]) -> V: ...

    def _timeout(self) -> i32Timedelta: ...


class HasTopicPartition(Protocol):
    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


AnyPartition = TypeVar("AnyPartition", bound=HasTopicPartition)
"""A mapping's key type: either TopicPartition (mappings are invariant in their key)."""


def key(tp: HasTopicPartition) -> TopicPartitionKey:
    """A partition as the admin calls key their answers: ``minikafka.common``'s
    ``TopicPartition`` (topic and partition only, as Kafka's), from it or from the
    client's confluent-kafka-shaped one (whose offset is not part of a key)."""
    return TopicPartitionKey(tp.topic, tp.partition)


def by_topic(partitions: Sequence[TopicPartitionKey]) -> dict[str, list[int]]:
    """Partitions grouped by topic, each topic's in the order given."""
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


def where(node: Node) -> str:
    """A node as an error message names it: ``node 1 (host:port)`` or ``bootstrap server``."""
    name = f"node {node.node_id}" if node.node_id >= 0 else "bootstrap server"
    return f"{name} ({node.host}:{node.port})"


def never(answer: object) -> bool:
    """A controller's answer that is never read as NOT_CONTROLLER (ElectLeaders')."""
    return False


async def to_controller(
    admin: AdminPort,
    send: Callable[[Node], Awaitable[V]],
    not_controller: Callable[[V], bool] = never,
) -> V:
    """``send(controller)`` to the controller the metadata names, fresh metadata each
    time, again while it cannot be reached (the connection fails or the request times
    out: it died or is being elected) or its answer is ``not_controller`` (it moved),
    until ``default.api.timeout.ms`` has passed since the first try: then
    REQUEST_TIMED_OUT, naming the last failure. The answer otherwise, errors included.

    Kafka's ``KafkaAdminClient`` sends its ``ControllerNodeProvider`` calls so: a
    disconnect is retried until the call's deadline, and a call whose ``handleResponse``
    finds NOT_CONTROLLER (``handleNotControllerError``) forgets the controller, asks
    for metadata and is sent again whole, waiting ``retry.backoff.ms`` doubled each time
    up to ``retry.backoff.max.ms`` (unjittered here). Where each call looks for
    NOT_CONTROLLER is its own: ``not_controller``."""
    deadline = trio.current_time() + admin.api_timeout_ms / 1000
    failure = "no controller asked"
    backoff = RETRY_BACKOFF_S
    while trio.current_time() < deadline:
        with trio.move_on_at(deadline):
            try:
                controller = await admin.controller()
                answer = await send(controller)
            except KafkaException as e:
                if e.args[0].code() != TRANSPORT:
                    raise
                failure = e.args[0].str()
            else:
                if not not_controller(answer):
                    return answer
                failure = f"NOT_CONTROLLER from {where(controller)}"
            await trio.sleep(backoff)
            backoff = min(2 * backoff, RETRY_BACKOFF_MAX_S)
    raise KafkaException(
        KafkaError(
            ErrorCode.request_timed_out,
            f"no answer from the controller within default.api.timeout.ms "
            f"({admin.api_timeout_ms} ms): {failure}",
        )
    )
