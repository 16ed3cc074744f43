"""The client's metadata core: what a Metadata answer does to the brokers and leaders it
knows (Kafka's ``NetworkClient.DefaultMetadataUpdater.handleSuccessfulResponse``)."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from minikafka.client._metadata import ClientMetadata
from minikafka.common import TopicPartition
from minikafka.net import Node

T0 = TopicPartition("t", 0)


def answer(brokers: tuple[int, ...], leader: int, error: ErrorCode) -> MetadataResponse:
    """A Metadata answer naming ``brokers``, topic ``t``'s partition 0 led by ``leader``
    (no partitions at all when the topic's ``error`` is not NONE and ``leader`` is -1,
    as a broker that does not know the topic answers)."""
    partitions = (
        ()
        if error is not ErrorCode.none and leader < 0
        else (
            MetadataResponsePartition(
                error_code=ErrorCode.none,
                partition_index=i32(0),
                leader_id=BrokerId(leader),
                leader_epoch=i32(3),
                replica_nodes=(BrokerId(1), BrokerId(2)),
                isr_nodes=(BrokerId(leader),),
                offline_replicas=(),
            ),
        )
    )
    return MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=tuple(
            MetadataResponseBroker(node_id=BrokerId(b), host="h", port=i32(9000 + b))
            for b in brokers
        ),
        cluster_id="c",
        controller_id=BrokerId(brokers[0] if brokers else -1),
        topics=(
            MetadataResponseTopic(
                error_code=error,
                name=TopicName("t"),
                is_internal=False,
                partitions=partitions,
            ),
        ),
    )


def known() -> ClientMetadata:
    """A client that knows brokers 1 and 2 and that broker 2 leads ``t-0``."""
    metadata = ClientMetadata((Node(-1, "h", 9001),), max_age_ms=60_000)
    metadata.want("t")
    assert metadata.update(answer((1, 2), 2, ErrorCode.none), now=10.0)
    assert metadata.leader_of(T0) == 2
    assert not metadata.update_due(11.0)
    return metadata


def test_an_answer_naming_no_broker_is_ignored_and_another_is_due() -> None:
    # Guarantee: a broker that knows no live broker (ZooKeeper mode before its first
    # UpdateMetadata, every broker fenced in its KRaft image) cannot make the client
    # forget the brokers and leaders it knows (librdkafka drops every broker on such an
    # answer and may never ask anyone again: chaos/README.md, seeds 107, 109, 112).
    metadata = known()
    for empty in (
        answer((), -1, ErrorCode.leader_not_available),  # ZooKeeper mode, empty cache
        answer((), 2, ErrorCode.none),  # KRaft: every broker fenced, the topic known
    ):
        assert not metadata.update(empty, now=12.0)
        assert metadata.nodes == {1: Node(1, "h", 9001), 2: Node(2, "h", 9002)}
        assert metadata.leader_of(T0) == 2
        assert metadata.leader_epoch_of(T0) == 3
        assert metadata.update_due(12.0)
        assert metadata.any_node(0) == Node(1, "h", 9001)


def test_the_next_answer_naming_brokers_is_taken() -> None:
    # Guarantee: ignoring an empty answer does not stop the client following the
    # cluster: the next answer that names brokers replaces what it knew.
    metadata = known()
    assert not metadata.update(answer((), -1, ErrorCode.leader_not_available), 12.0)
    assert metadata.update(answer((1,), 1, ErrorCode.none), now=13.0)
    assert metadata.nodes == {1: Node(1, "h", 9001)}
    assert metadata.leader_of(T0) == 1
    assert not metadata.update_due(13.5)
