"""The admin client's controller calls while the controller moves, as Kafka's
``KafkaAdminClient`` sends its ``ControllerNodeProvider`` calls: the metadata names a
controller that is no longer it (it answers NOT_CONTROLLER) or that is gone (its
connection is refused), and the call is sent again, whole, to the controller fresh
metadata names, until ``default.api.timeout.ms``. CreateTopics, DeleteTopics and
CreatePartitions are sent again for NOT_CONTROLLER in any topic's answer (their
``handleNotControllerError`` reads the answer's ``errorCounts``); ElectLeaders only
for a lost connection (Kafka's hands NOT_CONTROLLER to its caller).

The admin runs against fake brokers in virtual time (``autojump_clock``); the tests
check what was sent where and what the call answered."""

from __future__ import annotations

import datetime
from typing import cast

import pytest
import trio
import trio.testing
from kio.schema.create_partitions.v1.request import CreatePartitionsRequest
from kio.schema.create_partitions.v1.response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from kio.schema.create_topics.v4.request import CreateTopicsRequest
from kio.schema.create_topics.v4.response import (
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import (
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from kio.schema.elect_leaders.v1.request import ElectLeadersRequest
from kio.schema.elect_leaders.v1.response import (
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.request import MetadataRequest
from kio.schema.metadata.v8.response import MetadataResponse, MetadataResponseBroker
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i32Timedelta

from minikafka.client import (
    AsyncAdminClient,
    ElectionType,
    KafkaException,
    NewPartitions,
    NewTopic,
)
from minikafka.common import TopicPartition
from minikafka.net import DisconnectedError, NetworkClient, Node

NODES = [Node(i, "h", 9000 + i) for i in (1, 2, 3)]
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
OK, STALE = ErrorCode.none, ErrorCode.not_controller


class MovingController:
    """Brokers 1-3. The successive Metadata answers name the controllers in
    ``named`` (the last one from then on); only ``active`` answers as the controller,
    the others NOT_CONTROLLER wherever the request's answer has an error code (every
    topic, or ElectLeaders' top-level error); a broker in ``down`` refuses the
    connection. ``sent`` is each request but Metadata: its name, node and topics."""

    def __init__(self, named: list[int], active: int, down: set[int]) -> None:
        self.named = named
        self.active = active
        self.down = down
        self.sent: list[tuple[str, int, tuple[str, ...]]] = []

    def load(self, node: Node) -> int | None:
        return None

    async def send(self, node: Node, body: object) -> object:
        await trio.lowlevel.checkpoint()
        if node.node_id in self.down:
            raise DisconnectedError(f"cannot connect to node {node.node_id}")
        if isinstance(body, MetadataRequest):
            controller = self.named.pop(0) if len(self.named) > 1 else self.named[0]
            return _metadata(controller)
        error = OK if node.node_id == self.active else STALE
        if isinstance(body, CreateTopicsRequest):
            names = tuple(str(t.name) for t in body.topics)
            answer: object = CreateTopicsResponse(
                throttle_time=NO_THROTTLE,
                topics=tuple(
                    CreatableTopicResult(
                        name=t.name, error_code=error, error_message=None
                    )
                    for t in body.topics
                ),
            )
        elif isinstance(body, DeleteTopicsRequest):
            names = tuple(str(t) for t in body.topic_names)
            answer = DeleteTopicsResponse(
                throttle_time=NO_THROTTLE,
                responses=tuple(
                    DeletableTopicResult(name=t, error_code=error)
                    for t in body.topic_names
                ),
            )
        elif isinstance(body, CreatePartitionsRequest):
            names = tuple(str(t.name) for t in body.topics)
            answer = CreatePartitionsResponse(
                throttle_time=NO_THROTTLE,
                results=tuple(
                    CreatePartitionsTopicResult(
                        name=t.name, error_code=error, error_message=None
                    )
                    for t in body.topics
                ),
            )
        else:
            assert isinstance(body, ElectLeadersRequest)
            assert body.topic_partitions is not None
            names = tuple(str(t.topic) for t in body.topic_partitions)
            answer = ElectLeadersResponse(
                throttle_time=NO_THROTTLE,
                error_code=error,
                replica_election_results=()
                if error != OK
                else tuple(
                    ReplicaElectionResult(
                        topic=t.topic,
                        partition_result=tuple(
                            PartitionResult(
                                partition_id=p, error_code=OK, error_message=None
                            )
                            for p in t.partitions
                        ),
                    )
                    for t in body.topic_partitions
                ),
            )
        self.sent.append(
            (type(body).__name__.removesuffix("Request"), node.node_id, names)
        )
        return answer


def _metadata(controller: int) -> MetadataResponse:
    return MetadataResponse(
        throttle_time=NO_THROTTLE,
        brokers=tuple(
            MetadataResponseBroker(
                node_id=BrokerId(n.node_id), host=n.host, port=i32(n.port)
            )
            for n in NODES
        ),
        cluster_id="c",
        controller_id=BrokerId(controller),
        topics=(),
    )


def admin(cluster: MovingController, api_timeout_ms: int = 60_000) -> AsyncAdminClient:
    client = AsyncAdminClient(
        cast(NetworkClient, cluster), (Node(-1, "h", 9003),), 30_000, api_timeout_ms
    )
    client.brokers = {n.node_id: n for n in NODES}
    return client


async def test_create_topics_is_sent_again_whole_after_a_topic_not_controller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Broker 1 was the controller: every topic of its answer is NOT_CONTROLLER, and
    # the whole request goes to broker 2, the controller the next metadata names.
    cluster = MovingController(named=[1, 2], active=2, down=set())
    answers = await admin(cluster).create_topics([NewTopic("a"), NewTopic("b")])
    assert answers == {"a": None, "b": None}
    assert cluster.sent == [
        ("CreateTopics", 1, ("a", "b")),
        ("CreateTopics", 2, ("a", "b")),
    ]


async def test_delete_topics_is_sent_again_after_not_controller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = MovingController(named=[3, 3, 2], active=2, down=set())
    answers = await admin(cluster).delete_topics(["a"])
    assert answers == {"a": None}
    assert cluster.sent == [
        ("DeleteTopics", 3, ("a",)),
        ("DeleteTopics", 3, ("a",)),
        ("DeleteTopics", 2, ("a",)),
    ]


async def test_delete_topics_reaches_the_controller_elected_after_a_dead_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The controller the metadata names is dead; the next names broker 2.
    cluster = MovingController(named=[1, 2], active=2, down={1})
    assert await admin(cluster).delete_topics(["a"]) == {"a": None}
    assert cluster.sent == [("DeleteTopics", 2, ("a",))]


async def test_create_partitions_is_sent_again_after_not_controller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = MovingController(named=[1, 2], active=2, down=set())
    answers = await admin(cluster).create_partitions([NewPartitions("a", 3)])
    assert answers == {"a": None}
    assert [node for _, node, _ in cluster.sent] == [1, 2]


async def test_elect_leaders_reaches_the_controller_elected_after_a_dead_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = MovingController(named=[1, 2], active=2, down={1})
    answers = await admin(cluster).elect_leaders(
        ElectionType.PREFERRED, [TopicPartition("a", 0)]
    )
    assert answers == {TopicPartition("a", 0): None}
    assert cluster.sent == [("ElectLeaders", 2, ("a",))]


async def test_elect_leaders_hands_not_controller_to_its_caller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Kafka's electLeaders completes its future with NOT_CONTROLLER, unretried.
    cluster = MovingController(named=[1, 2], active=2, down=set())
    with pytest.raises(KafkaException) as raised:
        await admin(cluster).elect_leaders(
            ElectionType.PREFERRED, [TopicPartition("a", 0)]
        )
    assert raised.value.args[0].code() == ErrorCode.not_controller
    assert cluster.sent == [("ElectLeaders", 1, ("a",))]


async def test_no_controller_within_the_api_timeout_is_request_timed_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Every broker answers NOT_CONTROLLER: asked again, with a doubling backoff, until
    # default.api.timeout.ms has passed, then REQUEST_TIMED_OUT naming the last answer.
    cluster = MovingController(named=[1], active=-1, down=set())
    start = trio.current_time()
    with pytest.raises(KafkaException) as raised:
        await admin(cluster, api_timeout_ms=10_000).create_topics([NewTopic("a")])
    error = raised.value.args[0]
    assert error.code() == ErrorCode.request_timed_out
    assert "NOT_CONTROLLER from node 1" in error.str()
    assert trio.current_time() - start == pytest.approx(10.0, abs=1.0)
    assert 5 < len(cluster.sent) < 20  # 0.1, 0.2, 0.4, 0.8 s, then 1 s apart
