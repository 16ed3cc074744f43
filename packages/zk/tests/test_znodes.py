"""Kafka's znodes' JSON, both ways: what Kafka 2.8's ``ZkData`` writes decodes, what is
encoded has Kafka's keys and versions, and bytes that are not Kafka's say which path."""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from minikafka.zk import (
    BrokerRegistration,
    ControllerRegistration,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    ZnodeError,
)
from minikafka.zk._znodes import (
    decode_controller_epoch,
    encode_controller_epoch,
    partition_state_path,
)


def test_a_broker_registration_is_kafkas_version_5() -> None:
    broker = BrokerRegistration(
        2,
        ("PLAINTEXT://127.0.0.1:9093", "REPLICATION://127.0.0.1:9193"),
        {"PLAINTEXT": "PLAINTEXT", "REPLICATION": "PLAINTEXT"},
        rack="r1",
        timestamp_ms=1700000000000,
    )
    written = json.loads(broker.encode())
    assert written["version"] == 5
    assert (written["host"], written["port"]) == ("127.0.0.1", 9093)  # for old clients
    assert written["timestamp"] == "1700000000000"  # a string, as Kafka writes it
    assert written["jmx_port"] == -1
    assert BrokerRegistration.decode(2, broker.encode()) == broker


def test_the_registration_kafka_documents_decodes() -> None:
    kafkas = (
        b'{"version":5,"host":"localhost","port":9092,"jmx_port":9999,'
        b'"timestamp":"2233345666","endpoints":["CLIENT://host1:9092",'
        b'"REPLICATION://host1:9093"],"rack":"dc1","features":{}}'
    )
    decoded = BrokerRegistration.decode(7, kafkas)
    assert decoded.endpoints == ("CLIENT://host1:9092", "REPLICATION://host1:9093")
    assert decoded.rack == "dc1"
    assert decoded.timestamp_ms == 2233345666


def test_a_topic_assignment_round_trips_with_reassignment_and_topic_id() -> None:
    topic_id = uuid.uuid4()
    assignment = TopicAssignment({0: (1, 2), 1: (2, 3)}, topic_id, {1: (3,)}, {1: (1,)})
    written = json.loads(assignment.encode())
    assert written["version"] == 3
    assert written["partitions"] == {
        "0": [1, 2],
        "1": [2, 3],
    }  # partitions keyed as text
    # Kafka's Uuid.toString: 22 characters of URL-safe base64.
    assert len(written["topic_id"]) == 22
    assert base64.urlsafe_b64decode(written["topic_id"] + "==") == topic_id.bytes
    assert TopicAssignment.decode("t", assignment.encode()) == assignment


def test_partition_state_and_controller_znodes_round_trip() -> None:
    state = LeaderIsrAndControllerEpoch(
        leader=1, leader_epoch=3, isr=(1, 2), controller_epoch=5
    )
    assert json.loads(state.encode()) == {
        "version": 1,
        "leader": 1,
        "leader_epoch": 3,
        "controller_epoch": 5,
        "isr": [1, 2],
    }
    assert LeaderIsrAndControllerEpoch.decode("t", 0, state.encode()) == state
    controller = ControllerRegistration(1, 1700000000000)
    assert json.loads(controller.encode()) == {
        "version": 1,
        "brokerid": 1,
        "timestamp": "1700000000000",
    }
    assert ControllerRegistration.decode(controller.encode()) == controller
    assert decode_controller_epoch(encode_controller_epoch(12)) == 12
    assert encode_controller_epoch(12) == b"12"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'{"leader":"1","leader_epoch":0,"isr":[1]}',
        b'{"isr":[true]}',
    ],
)
def test_bytes_that_are_not_kafkas_name_the_path(data: bytes) -> None:
    with pytest.raises(ZnodeError, match=partition_state_path("orders", 3)):
        LeaderIsrAndControllerEpoch.decode("orders", 3, data)
    with pytest.raises(ZnodeError):
        decode_controller_epoch(b"x" + data)
