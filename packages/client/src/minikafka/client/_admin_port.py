"""What the admin client's request families need of it: the port the mixins of
:class:`AsyncAdminClient` (``_admin_groups``, ``_admin_cluster``) are written against.

Each family lives in its own module and is mixed into :class:`AsyncAdminClient`; the
mixins' methods take ``self`` as an :class:`AdminPort`, the routing the class provides
(send a body to a node or to any broker, the metadata, the controller, a group's
coordinator), so mypy
checks both sides without the modules importing each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from kio.schema.metadata.v8.response import MetadataResponse
from kio.static.primitive import i32Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.net import NetworkClient, Node

R = TypeVar("R", bound=ResponsePayload)
V = TypeVar("V")


class AdminPort(Protocol):
    client: NetworkClient
    bootstrap: tuple[Node, ...]
    brokers: dict[int, Node]
    controller_id: int

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
