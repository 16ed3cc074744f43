"""A ZooKeeper-mode broker obeying its controller, without a network.

Guarantees checked:
- what the controller decides reaches the broker unchanged through the wire (its values
  -> LeaderAndIsr v5 / UpdateMetadata v7 / StopReplica v3 bytes -> values);
- a request from an older controller epoch (a zombie controller) is refused whole with
  STALE_CONTROLLER_EPOCH and changes nothing; one for an older broker epoch with
  STALE_BROKER_EPOCH;
- LeaderAndIsr makes this broker lead or follow exactly the partitions it names with a
  newer leader epoch, following the leader at the address the request gives;
- UpdateMetadata builds the same MetadataImage a KRaft broker answers clients from,
  merging partition changes, and a topic shown with leader -2 leaves it;
- StopReplica stops replicas and, with delete, marks their logs for deletion.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from minikafka.broker.zk import ZkBrokerMetadata, from_wire, to_wire
from minikafka.common import TopicPartition
from minikafka.controller.zk import (
    ControllerToBroker,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    LiveLeader,
    MetadataBroker,
    MetadataEndpoint,
    StopReplica,
    StopReplicaPartition,
    UpdateMetadata,
    UpdateMetadataPartition,
)
from minikafka.net import Node, decode_request_body, encode_entity

TOPIC_ID = uuid.UUID(int=9)


def lai(
    epoch: int, *partitions: LeaderAndIsrPartition, broker_epoch: int = 50
) -> LeaderAndIsr:
    return LeaderAndIsr(
        0,
        epoch,
        broker_epoch,
        partitions,
        (LiveLeader(1, "127.0.0.1", 9093), LiveLeader(2, "h2", 9094)),
    )


def partition(
    index: int, leader: int, leader_epoch: int, isr: tuple[int, ...] = (1, 2)
) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition(
        "t", TOPIC_ID, index, 3, leader, leader_epoch, isr, 4, (1, 2), is_new=True
    )


def update(epoch: int, *partitions: UpdateMetadataPartition) -> UpdateMetadata:
    brokers = tuple(
        MetadataBroker(
            b, (MetadataEndpoint("PLAINTEXT", "127.0.0.1", 9092 + b, 0),), None
        )
        for b in (1, 2)
    )
    return UpdateMetadata(0, epoch, 50, partitions, brokers)


def state(index: int, leader: int, topic: str = "t") -> UpdateMetadataPartition:
    return UpdateMetadataPartition(
        topic, TOPIC_ID, index, 3, leader, 1, (1, 2), 2, (1, 2), ()
    )


def through_the_wire(request: ControllerToBroker) -> ControllerToBroker:
    wire = to_wire(request)
    data = encode_entity(wire)
    decoded = decode_request_body(int(wire.__api_key__), int(wire.__version__), data, 0)
    return from_wire(decoded)  # type: ignore[arg-type]


def test_the_controllers_requests_cross_the_wire_unchanged() -> None:
    requests: list[ControllerToBroker] = [
        lai(3, partition(0, 1, 5), partition(1, 2, 0)),
        update(3, state(0, 1), state(1, -2), state(0, 2, topic="u")),
        StopReplica(
            0,
            3,
            50,
            (
                StopReplicaPartition("t", 0, -2, True),
                StopReplicaPartition("u", 1, 4, False),
            ),
        ),
    ]
    for request in requests:
        assert through_the_wire(request) == request


def test_leader_and_isr_leads_and_follows_what_it_names() -> None:
    broker = ZkBrokerMetadata(1, broker_epoch=50)
    error, outcome = broker.leader_and_isr(
        lai(3, partition(0, 1, 5), partition(1, 2, 0))
    )
    assert error == ErrorCode.none
    assert outcome.errors == {
        TopicPartition("t", 0): ErrorCode.none,
        TopicPartition("t", 1): ErrorCode.none,
    }
    topic_id, led = outcome.leaders[TopicPartition("t", 0)]
    assert topic_id == TOPIC_ID
    assert (led.leader, led.leader_epoch, led.partition_epoch, led.isr) == (
        1,
        5,
        4,
        (1, 2),
    )
    assert set(outcome.followers) == {TopicPartition("t", 1)}
    assert outcome.leader_nodes == {TopicPartition("t", 1): Node(2, "h2", 9094)}
    # The same leader epoch again (a new controller resends everything): refused.
    _, again = broker.leader_and_isr(lai(4, partition(0, 1, 5), partition(1, 1, 1)))
    assert again.errors[TopicPartition("t", 0)] == ErrorCode.stale_controller_epoch
    assert set(again.leaders) == {TopicPartition("t", 1)}


def test_a_zombie_controller_is_refused_whole() -> None:
    broker = ZkBrokerMetadata(1, broker_epoch=50)
    broker.update_metadata(update(4))
    error, outcome = broker.leader_and_isr(lai(3, partition(0, 1, 9)))
    assert error == ErrorCode.stale_controller_epoch
    assert outcome.leaders == {}
    assert broker.leader_epochs == {}
    assert (
        broker.update_metadata(update(3, state(0, 1)))
        == ErrorCode.stale_controller_epoch
    )
    assert broker.image.topic("t") is None
    stale_broker = lai(5, partition(0, 1, 9), broker_epoch=49)
    assert broker.leader_and_isr(stale_broker)[0] == ErrorCode.stale_broker_epoch
    assert broker.controller_epoch == 4


def test_update_metadata_builds_the_image_clients_are_answered_from() -> None:
    broker = ZkBrokerMetadata(1, broker_epoch=50)
    assert broker.update_metadata(update(3, state(0, 1), state(1, 2))) == ErrorCode.none
    topic = broker.image.topic("t")
    assert topic is not None
    assert topic.topic_id == TOPIC_ID
    assert sorted(topic.partitions) == [0, 1]
    assert topic.partitions[1].leader == 2
    assert sorted(broker.image.brokers) == [1, 2]
    assert broker.image.brokers[2].endpoints[0].port == 9094
    broker.update_metadata(update(3, state(1, 1)))  # only what changed
    topic = broker.image.topic("t")
    assert topic is not None
    assert (topic.partitions[0].leader, topic.partitions[1].leader) == (1, 1)
    broker.update_metadata(update(3, state(0, -2), state(1, -2)))  # being deleted
    assert broker.image.topic("t") is None


def test_stop_replica_stops_and_deletes_and_refuses_an_older_leader_epoch() -> None:
    broker = ZkBrokerMetadata(1, broker_epoch=50)
    broker.leader_and_isr(lai(3, partition(0, 1, 5), partition(1, 2, 5)))
    error, outcome = broker.stop_replica(
        StopReplica(
            0,
            3,
            50,
            (
                StopReplicaPartition("t", 0, -2, True),
                StopReplicaPartition("t", 1, 4, False),
            ),
        )
    )
    assert error == ErrorCode.none
    assert outcome.deleted == {TopicPartition("t", 0)}
    assert outcome.stopped == {TopicPartition("t", 0)}
    assert outcome.errors[TopicPartition("t", 1)] == ErrorCode.fenced_leader_epoch
