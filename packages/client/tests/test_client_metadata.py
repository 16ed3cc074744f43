"""The client's metadata core: what a Metadata answer does to the brokers and leaders it
knows (Kafka's ``NetworkClient.DefaultMetadataUpdater.handleSuccessfulResponse``)."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12
from kio.schema.metadata.v12.response import (
    MetadataResponseBroker as MetadataResponseBrokerV12,
)
from kio.schema.metadata.v12.response import (
    MetadataResponsePartition as MetadataResponsePartitionV12,
)
from kio.schema.metadata.v12.response import (
    MetadataResponseTopic as MetadataResponseTopicV12,
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


TOPIC_ID = uuid.UUID(int=0x122)


def answer_v12(
    brokers: tuple[int, ...],
    leader: int,
    epoch: int,
    topic_id: uuid.UUID = TOPIC_ID,
) -> MetadataResponseV12:
    """A Metadata v12 answer naming ``brokers``, topic ``t`` (of id ``topic_id``)
    whose partition 0 is led by ``leader`` in leader epoch ``epoch``."""
    return MetadataResponseV12(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=tuple(
            MetadataResponseBrokerV12(node_id=BrokerId(b), host="h", port=i32(9000 + b))
            for b in brokers
        ),
        cluster_id="c",
        controller_id=BrokerId(brokers[0]),
        topics=(
            MetadataResponseTopicV12(
                error_code=ErrorCode.none,
                name=TopicName("t"),
                topic_id=topic_id,
                is_internal=False,
                partitions=(
                    MetadataResponsePartitionV12(
                        error_code=ErrorCode.none,
                        partition_index=i32(0),
                        leader_id=BrokerId(leader),
                        leader_epoch=i32(epoch),
                        replica_nodes=(BrokerId(3), BrokerId(4), BrokerId(5)),
                        isr_nodes=(BrokerId(leader),),
                        offline_replicas=(),
                    ),
                ),
                topic_authorized_operations=i32(-2147483648),
            ),
        ),
    )


def moved_to_4() -> ClientMetadata:
    """A client that has heard broker 4 took ``t-0`` over in leader epoch 1 (broker 5,
    its leader in epoch 0, was fenced)."""
    metadata = ClientMetadata((Node(-1, "h", 9003),), max_age_ms=60_000)
    metadata.want("t")
    assert metadata.update(answer_v12((3, 4, 5), 5, 0), now=10.0)
    assert metadata.update(answer_v12((3, 4, 5), 4, 1), now=11.0)
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (4, 1)
    return metadata


def test_an_answer_from_a_broker_behind_the_cluster_does_not_move_a_leader_back() -> (
    None
):
    # Guarantee: a broker cut off from the controllers answers from its old image,
    # itself the leader in an older epoch; the client keeps the newer leader, as
    # Kafka's Metadata.updateLatestMetadata does (KIP-320), and sends there, rather
    # than to the stale leader whose Produce can only time out (chaos/README.md,
    # seed 122). The other brokers and partitions of the answer are taken.
    metadata = moved_to_4()
    assert metadata.update(answer_v12((3, 4, 5, 6), 5, 0), now=12.0)
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (4, 1)
    assert set(metadata.nodes) == {3, 4, 5, 6}
    assert not metadata.update_due(12.5)


def test_an_equal_or_newer_leader_epoch_is_taken() -> None:
    # Guarantee: the rule only refuses what is older: the same epoch (an ISR change)
    # and a newer one (the leader moved again) are followed.
    metadata = moved_to_4()
    assert metadata.update(answer_v12((3, 4, 5), 4, 1), now=12.0)
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (4, 1)
    assert metadata.update(answer_v12((3, 4, 5), 5, 2), now=13.0)
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (5, 2)


def test_a_topic_created_again_is_followed_from_its_first_epoch() -> None:
    # Guarantee: a topic deleted and created under the same name has a new id and
    # starts again at leader epoch 0: its leaders are taken, not refused as older
    # than the old topic's (Kafka resets the last seen epoch on a new topic id).
    metadata = moved_to_4()
    again = uuid.UUID(int=0x123)
    assert metadata.update(answer_v12((3, 4, 5), 3, 0, topic_id=again), now=12.0)
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (3, 0)
    assert metadata.update(answer_v12((3, 4, 5), 5, 0, topic_id=again), now=13.0)
    assert metadata.leader_of(T0) == 5


def test_a_v8_answer_is_taken_as_it_is() -> None:
    # Guarantee: before Metadata v9 Kafka's client does not trust leader epochs
    # (MetadataResponse.hasReliableLeaderEpochs) and takes the answer's leaders: so
    # does this one (the refresher asks with v12; a v8 answer comes from elsewhere).
    metadata = moved_to_4()
    assert metadata.update(answer((3, 4, 5), 5, ErrorCode.none), now=12.0)
    assert metadata.leader_of(T0) == 5
