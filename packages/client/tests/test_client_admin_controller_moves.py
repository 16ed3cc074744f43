"""The admin client's AlterPartitionReassignments through a controller change: the
controller the metadata names is dead, then the next one answers NOT_CONTROLLER, and
the call still reaches the controller elected after them, as Kafka's
``KafkaAdminClient`` retries a controller call (``handleNotControllerError``; a lost
connection retried until ``default.api.timeout.ms``). Without that retry a
reassignment tool run during a controller election fails at once (a chaos run's
membership heal left replicas on brokers shut down for good)."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import trio
from kio.schema.alter_partition_reassignments.v1 import response as answer
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta

from minikafka.client import KafkaException
from minikafka.client._admin_cluster import ClusterAdmin
from minikafka.common import TopicPartition
from minikafka.net import ApiKey, ClientError, Node

V = TypeVar("V")

DEAD, MOVED, ELECTED = (Node(n, "127.0.0.1", 9090 + n) for n in (0, 1, 3))


def _response(error: ErrorCode) -> answer.AlterPartitionReassignmentsResponse:
    partitions = (
        ()
        if error != ErrorCode.none
        else (
            answer.ReassignablePartitionResponse(
                partition_index=i32(0), error_code=ErrorCode.none, error_message=None
            ),
        )
    )
    topics = (
        (
            answer.ReassignableTopicResponse(
                name=TopicName("chaos"), partitions=partitions
            ),
        )
        if partitions
        else ()
    )
    return answer.AlterPartitionReassignmentsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=error,
        error_message=None,
        responses=topics,
    )


class Network:
    """The NetworkClient part: a dead node cannot be connected to."""

    def __init__(self, dead: set[int]) -> None:
        self.dead = dead

    async def api_versions(self, node: Node) -> dict[int, tuple[int, int]]:
        if node.node_id in self.dead:
            raise ClientError(
                f"all attempts to connect to {node.host}:{node.port} failed"
            )
        return {int(ApiKey.ALTER_PARTITION_REASSIGNMENTS): (0, 1)}


class ElectingCluster(ClusterAdmin):
    """An admin port whose metadata names each of ``controllers`` in turn; ``answers``
    is what each live one says to AlterPartitionReassignments."""

    def __init__(self, controllers: list[Node], answers: dict[int, ErrorCode]) -> None:
        self.controllers = controllers
        self.answers = answers
        self.client: Any = Network({DEAD.node_id})
        self.bootstrap: tuple[Node, ...] = (DEAD,)
        self.brokers: dict[int, Node] = {}
        self.controller_id = -1
        self.api_timeout_ms = 30_000
        self.sent: list[int] = []

    async def controller(self) -> Node:
        node = (
            self.controllers.pop(0)
            if len(self.controllers) > 1
            else self.controllers[0]
        )
        self.controller_id = node.node_id
        return node

    async def metadata(
        self, topics: Any = None, *, allow_auto_topic_creation: bool = False
    ) -> Any:
        raise AssertionError("the reassignment asks the controller, not the metadata")

    def node(self, node_id: int) -> Node:
        raise AssertionError("the reassignment asks the controller, not a broker")

    async def find_coordinator(self, group: str, key_type: int = 0) -> Node:
        raise AssertionError("the reassignment asks the controller, not a coordinator")

    async def at_any_broker(self, call: Callable[[Node], Awaitable[V]]) -> V:
        raise AssertionError("the reassignment asks the controller, not any broker")

    async def request(self, node: Node, body: Any, response_type: type[Any]) -> Any:
        self.sent.append(node.node_id)
        return _response(self.answers[node.node_id])

    def _timeout(self) -> i32Timedelta:
        return i32Timedelta.parse(datetime.timedelta(seconds=30))


async def test_a_reassignment_waits_out_a_controller_election() -> None:
    """Dead controller, then NOT_CONTROLLER, then the elected one: the partition's
    answer is the elected controller's, and only live controllers were asked."""
    cluster = ElectingCluster(
        [DEAD, MOVED, ELECTED],
        {MOVED.node_id: ErrorCode.not_controller, ELECTED.node_id: ErrorCode.none},
    )
    with trio.fail_after(10):
        answers = await cluster.alter_partition_reassignments(
            {TopicPartition("chaos", 0): [3, 0, 1]}
        )
    assert answers == {TopicPartition("chaos", 0): None}
    assert cluster.sent == [MOVED.node_id, ELECTED.node_id]


async def test_a_controller_that_never_comes_is_an_error_after_the_timeout() -> None:
    """No controller within ``default.api.timeout.ms``: REQUEST_TIMED_OUT naming the
    last NOT_CONTROLLER (Kafka's TimeoutException, caused by it), not a hang."""
    cluster = ElectingCluster([MOVED], {MOVED.node_id: ErrorCode.not_controller})
    cluster.api_timeout_ms = 300
    with trio.fail_after(10), pytest.raises(KafkaException) as raised:
        await cluster.alter_partition_reassignments(
            {TopicPartition("chaos", 0): [3, 0, 1]}
        )
    error = raised.value.args[0]
    assert error.code() == ErrorCode.request_timed_out
    assert "NOT_CONTROLLER from node 1" in error.str()
