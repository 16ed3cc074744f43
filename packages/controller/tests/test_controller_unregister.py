"""UnregisterBroker in the QuorumController core (KIP-631): what Kafka's
``ReplicationControlManager.unregisterBroker`` writes, and what it refuses.

A broker that stops heartbeating is fenced but keeps its registration; unregistering it
writes an UnregisterBrokerRecord with its id and epoch, after the partition changes that
take it out of every ISR and leadership (the same changes as fencing it, so a broker
already fenced needs none). Only an id the controller does not know is refused,
BROKER_ID_NOT_REGISTERED; an unfenced broker may be unregistered too.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.controller import (
    NO_LEADER,
    AppendRecords,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRegistration,
    RegisterBrokerRecord,
    Reply,
    UnregisterBrokerRecord,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from minikafka.controller.testing import ControllerHarness


def cluster(n: int) -> ControllerHarness:
    harness = ControllerHarness.start()
    harness.add_brokers(range(1, n + 1))
    return harness


def fence_by_timeout(h: ControllerHarness, broker: int) -> None:
    """Every broker but ``broker`` heartbeats; ``broker``'s session runs out."""
    timeout = h.controller.config.broker_session_timeout_ms / 1000
    h.now += timeout / 2
    for other in h.broker_epochs:
        if other != broker:
            h.heartbeat(other)
    h.advance(timeout / 2 + 0.001)
    h.commit()
    assert not h.controller.cluster.is_unfenced(broker)


def unregister(h: ControllerHarness, broker: int) -> ErrorCode:
    response = h.request(UnregisterBrokerRequest(broker))
    assert isinstance(response, UnregisterBrokerResponse)
    return response.error_code


def test_unregistering_a_fenced_broker_writes_its_record_and_forgets_it() -> None:
    h = cluster(3)
    h.create_topic("t", assignments=((1, 2, 3),))
    fence_by_timeout(h, 1)
    # Fenced but registered, it may still be named in a manual assignment.
    h.create_topic("named", assignments=((2, 1),))
    epoch = h.broker_epochs[1]
    before = h.last_offset

    assert unregister(h, 1) == ErrorCode.none
    # Fencing already took it out of the ISR: the registration's record is all there is.
    assert h.appended_since(before) == [UnregisterBrokerRecord(1, epoch)]
    assert 1 not in h.controller.cluster.brokers
    assert sorted(h.image().brokers) == [2, 3]  # what DescribeCluster lists
    # Its replica stays in the assignment (Kafka's unregister moves no replica).
    assert h.partition("t", 0).replicas == (1, 2, 3)

    # A new topic is placed on the brokers that remain, and no more than they can hold.
    placed = h.create_topic("u", partitions=6, replication_factor=2)
    assert placed.error_code == ErrorCode.none
    for p in range(6):
        assert set(h.partition("u", p).replicas) <= {2, 3}
    response = h.request(CreateTopicsRequest((CreatableTopic("v", 1, 3),)))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.invalid_replication_factor
    # Unregistered, it may not: Kafka's "no such broker is registered".
    named = CreatableTopic("w", -1, -1, ((2, 1),))
    response = h.request(CreateTopicsRequest((named,)))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.invalid_replica_assignment


def test_an_unknown_broker_is_refused_and_nothing_is_written() -> None:
    h = cluster(2)
    before = h.last_offset
    assert unregister(h, 7) == ErrorCode.broker_id_not_registered
    assert h.last_offset == before
    # Unregistered once, the id is unknown the second time.
    fence_by_timeout(h, 2)
    assert unregister(h, 2) == ErrorCode.none
    before = h.last_offset
    assert unregister(h, 2) == ErrorCode.broker_id_not_registered
    assert h.last_offset == before


def test_an_unfenced_leader_is_taken_out_of_its_isrs_as_fencing_does() -> None:
    h = cluster(3)
    topic_id = h.create_topic("t", assignments=((1, 2, 3), (2, 1, 3))).topic_id
    assert topic_id is not None
    h.create_topic("alone", assignments=((1,),))
    alone_id = h.topic_id("alone")
    epoch = h.broker_epochs[1]
    before = h.last_offset

    assert unregister(h, 1) == ErrorCode.none
    assert h.appended_since(before) == [
        PartitionChangeRecord(0, topic_id, isr=(2, 3), leader=2),
        PartitionChangeRecord(1, topic_id, isr=(2, 3)),
        # The last ISR member stays in the ISR, with no leader, as when it is fenced.
        PartitionChangeRecord(0, alone_id, leader=NO_LEADER),
        UnregisterBrokerRecord(1, epoch),
    ]
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2, 3), (2, 3), leader=2, leader_epoch=1, partition_epoch=1
    )
    assert h.partition("alone", 0).isr == (1,)
    # Its session no longer counts: its deadline passes and nothing is fenced.
    timeout = h.controller.config.broker_session_timeout_ms / 1000
    h.now += timeout / 2
    h.heartbeat(2)
    h.heartbeat(3)
    assert not h.advance(timeout / 2 + 0.001).records


def test_the_broker_registers_again_as_a_new_broker() -> None:
    h = cluster(2)
    fence_by_timeout(h, 2)
    assert unregister(h, 2) == ErrorCode.none
    before = h.last_offset
    assert h.register(2).error_code == ErrorCode.none
    (record,) = h.appended_since(before)
    assert isinstance(record, RegisterBrokerRecord)
    assert record.broker_id == 2
    assert record.fenced
    assert not h.heartbeat(2).is_fenced


def test_an_unregistration_the_log_refused_leaves_the_broker_registered() -> None:
    """The quorum refuses the records: the revert brings the registration back, and
    the broker's session with it, so a dead unfenced broker is still fenced."""
    h = cluster(2)
    h.create_topic("t", assignments=((1, 2),))
    base = h.committed_offset + 1
    rid = h.send(UnregisterBrokerRequest(1))
    written = h.appended_since(base - 1)
    assert written[-1] == UnregisterBrokerRecord(1, h.broker_epochs[1])
    h.refuse(AppendRecords(1, base, tuple(written)), ErrorCode.not_controller)
    assert h.reply(rid) == Reply(rid, None, ErrorCode.not_controller)
    assert h.controller.cluster.is_unfenced(1)
    timeout = h.controller.config.broker_session_timeout_ms / 1000
    h.now += timeout / 2
    h.heartbeat(2)
    fenced = h.advance(timeout / 2 + 0.001)
    assert fenced.records[0].records[0] == FenceBrokerRecord(1, h.broker_epochs[1])
