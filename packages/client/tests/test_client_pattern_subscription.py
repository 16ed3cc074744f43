"""The consumer subscribed by regular expression, without a network: the metadata asks
for every topic and leaves internal ones out of a pattern's reach (unless
``exclude.internal.topics=false``); the classic member joins only once the topics are
listed, with the names its pattern matched, and joins again when they change (a topic
created or deleted); ``subscribe`` refuses a pattern the broker refuses with
INVALID_REGULAR_EXPRESSION and changes nothing; and the consumer protocol's heartbeat
and topic-id lookup carry what the member decided."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from minikafka.client import (
    ClientMetadata,
    ConsumerConfig,
    ConsumerCoordinator,
    KafkaException,
    MemberState,
)
from minikafka.client._consumer import consumer_cores, subscribe_cores
from minikafka.client._group_wire import heartbeat_body, topic_ids_request
from minikafka.common import TopicPartition
from minikafka.coordination import Assignment, decode_subscription, encode_assignment
from minikafka.coordination.member import (
    ConsumerGroupHeartbeat,
    ConsumerProtocolMember,
    JoinGroup,
)
from minikafka.net import Node


def listing(*topics: str, internal: tuple[str, ...] = ()) -> MetadataResponse:
    """An all-topics Metadata answer: one broker leading one partition of each."""
    return MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=(
            MetadataResponseBroker(
                node_id=BrokerId(1), host="h", port=i32(1), rack=None
            ),
        ),
        cluster_id="c",
        controller_id=BrokerId(1),
        topics=tuple(
            MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(t),
                is_internal=t in internal,
                partitions=(
                    MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(0),
                        leader_id=BrokerId(1),
                        leader_epoch=i32(0),
                        replica_nodes=(BrokerId(1),),
                        isr_nodes=(BrokerId(1),),
                        offline_replicas=(),
                    ),
                ),
                topic_authorized_operations=i32(-2147483648),
            )
            for t in (*topics, *internal)
        ),
        cluster_authorized_operations=i32(-2147483648),
    )


def config(**more: object) -> ConsumerConfig:
    return ConsumerConfig.from_dict(
        {
            "bootstrap.servers": "h:1",
            "group.id": "g",
            "enable.auto.commit": False,
            **{k.replace("_", "."): v for k, v in more.items()},
        }
    )


def test_every_topic_is_listed_internal_ones_left_out_deleted_ones_gone() -> None:
    metadata = ClientMetadata((Node(-1, "h", 1),))
    assert metadata.cluster_topics() is None  # not listed yet
    metadata.update(listing("a", "b", internal=("__consumer_offsets",)), 0.0, True)
    assert metadata.cluster_topics() == {"a", "b"}
    assert metadata.partitions("__consumer_offsets") is not None  # known, not offered
    metadata.update(listing("b"), 1.0, True)
    assert metadata.cluster_topics() == {"b"}
    assert metadata.partitions("a") is None  # deleted
    metadata.exclude_internal = False  # exclude.internal.topics=false
    metadata.update(listing("b", internal=("__consumer_offsets",)), 2.0, True)
    assert metadata.cluster_topics() == {"b", "__consumer_offsets"}


def classic(*topics: str) -> ConsumerCoordinator:
    fetcher, coordinator = consumer_cores(config())
    assert isinstance(coordinator, ConsumerCoordinator)
    subscribe_cores(fetcher, coordinator, topics)
    coordinator.on_timer(0.0)
    fetcher.metadata.nodes = {1: Node(1, "h", 1)}
    coordinator.on_find_coordinator(ErrorCode.none, 1, 0.0)
    return coordinator


def joins(c: ConsumerCoordinator, now: float) -> list[JoinGroup]:
    return [r for r in c.on_timer(now).messages if isinstance(r, JoinGroup)]


def joined_topics(join: JoinGroup) -> list[str]:
    return list(decode_subscription(join.protocols[0][1]).topics)


def test_the_classic_member_joins_with_the_names_its_pattern_matched() -> None:
    c = classic("^orders-.*")
    metadata = c.metadata
    assert isinstance(metadata, ClientMetadata)
    assert metadata.all_topics  # Metadata for every topic from now on
    assert joins(c, 0.0) == []  # not before the topics are listed
    metadata.update(
        listing("orders-eu", "orders-us", "audit", internal=("__orders-x",)), 0.0, True
    )
    [join] = joins(c, 0.0)
    assert joined_topics(join) == ["orders-eu", "orders-us"]
    assert {"orders-eu", "orders-us"} <= metadata.wanted


def test_a_matching_topic_created_later_makes_the_member_join_again() -> None:
    c = classic("^orders-.*")
    metadata = c.metadata
    assert isinstance(metadata, ClientMetadata)
    metadata.update(listing("orders-eu", "audit"), 0.0, True)
    [first] = joins(c, 0.0)
    assert joined_topics(first) == ["orders-eu"]
    [_sync] = c.on_join(ErrorCode.none, 1, "range", "other", "me", [], 0.0).messages
    mine = Assignment([TopicPartition("orders-eu", 0)])
    c.on_sync(ErrorCode.none, encode_assignment(mine), 0.0)
    c.events.clear()
    c.events_done()
    assert c.state is MemberState.STABLE
    metadata.update(listing("orders-eu", "audit", "audit-2"), 1.0, True)
    assert joins(c, 1.0) == []  # a topic that does not match changes nothing
    assert c.state is MemberState.STABLE
    metadata.update(listing("orders-eu", "orders-us", "audit"), 2.0, True)
    assert joins(c, 2.0) == []  # eager: on_revoke first
    assert [e.kind for e in c.events] == ["revoke"]
    c.events.clear()
    c.events_done()
    [again] = joins(c, 2.0)
    assert joined_topics(again) == ["orders-eu", "orders-us"]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_subscribe_refuses_an_invalid_pattern_with_kafkas_error_and_keeps_the_old(
    protocol: str,
) -> None:
    fetcher, coordinator = consumer_cores(config(group_protocol=protocol))
    subscribe_cores(fetcher, coordinator, ["^good-.*"])
    with pytest.raises(KafkaException) as refused:
        subscribe_cores(fetcher, coordinator, ["^bad(?<=x)"])
    error = refused.value.args[0]
    assert error.code() == ErrorCode.invalid_regular_expression
    assert "SubscribedTopicRegex `^bad(?<=x)` is not a valid regular expression" in (
        error.str()
    )
    pattern = fetcher.subscriptions.pattern
    assert pattern is not None
    assert pattern.regex == "^good-.*"


def test_the_consumer_protocol_leaves_matching_to_the_broker() -> None:
    fetcher, coordinator = consumer_cores(config(group_protocol="consumer"))
    assert isinstance(coordinator, ConsumerProtocolMember)
    subscribe_cores(fetcher, coordinator, ["^orders-.*"])
    assert not fetcher.metadata.all_topics  # the member never lists the topics
    body = heartbeat_body(
        ConsumerGroupHeartbeat(
            "g", "m", 0, subscribed_topic_names=(), subscribed_topic_regex="^orders-.*"
        ),
        {},
    )
    assert body.subscribed_topic_regex == "^orders-.*"
    assert body.subscribed_topic_names == ()
    assert topic_ids_request(None).topics is None  # ids of any topic it may be given
    assert [str(t.name) for t in topic_ids_request({"b", "a"}).topics or ()] == [
        "a",
        "b",
    ]


def test_unsubscribing_stops_asking_for_every_topic() -> None:
    fetcher, coordinator = consumer_cores(config())
    subscribe_cores(fetcher, coordinator, ["^t.*"])
    subscribe_cores(fetcher, coordinator, ["t"])
    assert not fetcher.metadata.all_topics
