"""What the client tools share: ``--bootstrap-server``, metadata, and Kafka's error names.

Kafka's command-line tools (``kafka-topics.sh``, ``kafka-console-producer.sh``,
``kafka-console-consumer.sh``) start from a bootstrap list, ask one of those servers for
Metadata, and from then on talk to the brokers the metadata names: the leader of a
partition for Produce, Fetch and ListOffsets, the controller for the admin APIs (Kafka's
AdminClient sends CreateTopics there, or to any broker, which forwards it under KRaft).
A bootstrap server gets a negative node id until the metadata says who it is, as in
Kafka's ``ClientUtils``.

This module is that much of a Kafka client, on minikafka's own NetworkClient and kio's
request classes; :class:`KafkaError` carries a broker's error code, printed under Kafka's
name (``TOPIC_ALREADY_EXISTS``), and every tool exits 1 on a :class:`ToolError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.net import ClientError, NetworkClient, Node, api_name

R = TypeVar("R", bound=ResponsePayload)

DEFAULT_REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms


class ToolError(Exception):
    """What a tool reports on stderr before it exits with status 1."""


class KafkaError(ToolError):
    """A broker answered with an error code."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.code = int(code)
        self.message = message
        text = error_name(code)
        super().__init__(f"{text}: {message}" if message else text)


def error_name(code: ErrorCode | int) -> str:
    """Kafka's name of an error code, as its ``Errors`` enum spells it."""
    try:
        return ErrorCode(int(code)).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE({int(code)})"


def check(code: ErrorCode | int, message: str | None = None) -> None:
    """Raise :class:`KafkaError` unless ``code`` is NONE."""
    if int(code) != ErrorCode.none:
        raise KafkaError(code, message)


def parse_bootstrap(servers: str) -> tuple[Node, ...]:
    """``host:port[,host:port...]`` (IPv6 as ``[::1]:9092``) as nodes -1, -2, ..."""
    nodes = []
    for i, item in enumerate(s.strip() for s in servers.split(",")):
        host, colon, port = item.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ToolError(f"invalid bootstrap server {item!r}: expected HOST:PORT")
        nodes.append(Node(-1 - i, host, int(port)))
    if not nodes:
        raise ToolError("no bootstrap server given")
    return tuple(nodes)


def metadata_request(
    topics: Sequence[str] | None, *, allow_auto_topic_creation: bool = False
) -> MetadataRequest:
    """Metadata v8 for ``topics`` (None: every topic), no authorized operations (KIP-430)."""
    return MetadataRequest(
        topics=None
        if topics is None
        else tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


CONSUMER_REPLICA_ID = -1  # a Fetch or ListOffsets from a client, not a follower
READ_UNCOMMITTED = 0


def list_offsets_request(topics: Mapping[str, Iterable[int]], timestamp: int) -> ListOffsetsRequest:
    """ListOffsets v5 of ``timestamp`` (-2 earliest, -1 latest, or a time) for each
    topic's partitions, as a read_uncommitted consumer asks."""
    return ListOffsetsRequest(
        replica_id=BrokerId(CONSUMER_REPLICA_ID),
        isolation_level=i8(READ_UNCOMMITTED),
        topics=tuple(
            ListOffsetsTopic(
                name=TopicName(name),
                partitions=tuple(
                    ListOffsetsPartition(
                        partition_index=i32(p),
                        current_leader_epoch=i32(-1),
                        timestamp=i64(timestamp),
                    )
                    for p in partitions
                ),
            )
            for name, partitions in topics.items()
        ),
    )


@attrs.define(eq=False)
class Cluster:
    """The brokers a tool knows, learnt from Metadata; requests go through ``client``."""

    client: NetworkClient
    bootstrap: tuple[Node, ...]
    brokers: dict[int, Node] = attrs.field(init=False, factory=dict)
    controller_id: int = attrs.field(init=False, default=-1)

    async def request(self, node: Node, body: RequestPayload, response_type: type[R]) -> R:
        """Send ``body`` to ``node`` and return its response, checked to be a ``response_type``."""
        response = await self._send(node, body, expect_response=True)
        if not isinstance(response, response_type):
            raise ToolError(f"{api_name(int(body.__api_key__))}: unexpected response {response!r}")
        return response

    async def send_only(self, node: Node, body: RequestPayload) -> None:
        """Send a request the broker does not answer (Produce with acks=0)."""
        await self._send(node, body, expect_response=False)

    async def _send(
        self, node: Node, body: RequestPayload, *, expect_response: bool
    ) -> ResponsePayload | None:
        try:
            return await self.client.send(node, body, expect_response=expect_response)
        except ClientError as e:
            raise ToolError(f"{api_name(int(body.__api_key__))} to {_where(node)}: {e}") from e

    async def metadata(
        self, topics: Sequence[str] | None, *, allow_auto_topic_creation: bool = False
    ) -> MetadataResponse:
        """Metadata for ``topics`` (None: every topic) from the first server that answers."""
        body = metadata_request(topics, allow_auto_topic_creation=allow_auto_topic_creation)
        failure: ToolError | None = None
        # Known brokers first (a refresh), then the bootstrap list.
        for node in (*self.brokers.values(), *self.bootstrap):
            try:
                response = await self.request(node, body, MetadataResponse)
            except ToolError as e:
                failure = e
                continue
            self.brokers = {
                int(b.node_id): Node(int(b.node_id), b.host, int(b.port)) for b in response.brokers
            }
            self.controller_id = int(response.controller_id)
            return response
        assert failure is not None
        raise failure

    def node(self, node_id: int) -> Node:
        """The broker ``node_id`` of the last metadata."""
        node = self.brokers.get(node_id)
        if node is None:
            raise KafkaError(ErrorCode.leader_not_available, f"broker {node_id} is not alive")
        return node

    def controller(self) -> Node:
        """Where admin requests go: the controller if it is a known broker, else a bootstrap."""
        return self.brokers.get(self.controller_id, self.bootstrap[0])


def _where(node: Node) -> str:
    name = f"node {node.node_id}" if node.node_id >= 0 else "bootstrap server"
    return f"{name} ({node.host}:{node.port})"


@asynccontextmanager
async def connect(
    bootstrap_servers: str,
    *,
    client_id: str,
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
) -> AsyncIterator[Cluster]:
    """A :class:`Cluster` over a NetworkClient, closed on exit.

    The NetworkClient runs its connections in a nursery; a lone error leaving the block
    comes out as itself (:func:`lone_errors`), so callers can ``except ToolError``.
    """
    nodes = parse_bootstrap(bootstrap_servers)
    with lone_errors():
        async with NetworkClient.open(
            client_id=client_id, request_timeout=request_timeout_ms / 1000
        ) as client:
            yield Cluster(client, nodes)


@contextmanager
def lone_errors() -> Iterator[None]:
    """Let an exception group holding one exception out as that exception.

    trio's nurseries wrap whatever leaves them in an exception group; a tool that failed
    for one reason reports that reason.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc
