"""minikafka's own consumer with ``group.protocol=consumer`` (KIP-848) against the broker,
alone and in one group with confluent-kafka's consumer-protocol members.

The same harness as the confluent-kafka tests (each member polls in a thread, commits
what it handled synchronously before polling again), with minikafka's
:class:`~minikafka.client.Consumer` as the client. The guarantees checked: members share
a topic's partitions, each partition owned by one member; every record is consumed once
per group; a member that closes leaves (epoch -1) and the others take its partitions and
go on from its committed offsets; minikafka's members and librdkafka's reconcile towards
the same broker-made assignment.
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import BrokerProcess
from minikafka.client import Consumer as MiniConsumer
from tests.compat._groups import WAIT
from tests.compat.test_consumer_protocol_confluent import (
    PARTITIONS,
    Members,
    assert_once,
    broker,
    name,
)
from tests.compat.test_groups_confluent import ConfluentGroups

__all__ = ["broker", "name"]  # the fixtures, shared


def minikafka(config: dict[str, Any]) -> MiniConsumer:
    return MiniConsumer(config)


def test_minikafka_members_share_the_partitions_and_take_over_a_closed_ones(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    members = Members(broker.bootstrap, name, name)
    try:
        for member in ("a", "b", "c"):
            members.clients[member] = minikafka
            members.start(member)
        members.wait(
            lambda: members.shared() and len(members.owned) == 3,
            "three minikafka members own two partitions each",
        )
        client.produce(name, 150, name + "-1")
        members.wait(lambda: len(members.consumed) >= 150, "the first 150 consumed")
        leaving = set(members.owned["c"])
        members.close("c")
        members.wait(
            lambda: members.shared() and len(members.owned) == 2,
            "a and b take c's partitions",
        )
        client.produce(name, 150, name + "-2")
        members.wait(lambda: len(members.consumed) >= 300, "all 300 consumed")
        assert_once(members.consumed, 300)
        second = {p for m, (p, _) in members.consumed[150:]}
        assert second & leaving, "c's old partitions were read by the others"
        assert all(m != "c" for m, _ in members.consumed[150:])
        assert members.errors == []
    finally:
        members.close_all()


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
def test_a_mixed_group_of_minikafka_and_librdkafka_members_reads_every_record_once(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    members = Members(broker.bootstrap, name, name)
    try:
        members.clients.update({"mini-a": minikafka, "mini-c": minikafka})
        for member in ("mini-a", "rdkafka-b", "mini-c"):
            members.start(member)
        # Two each, the uniform assignor's target: not a moment of reconciliation when
        # a newcomer owns one while another holds one more until it revokes it.
        members.wait(
            lambda: (
                members.shared()
                and sorted(len(p) for p in members.owned.values()) == [2, 2, 2]
            ),
            "minikafka and librdkafka members own two partitions each",
        )
        client.produce(name, 300, name)
        members.wait(lambda: len(members.consumed) >= 300, "all 300 consumed")
        assert_once(members.consumed, 300)
        for member, (partition, _) in members.consumed:
            assert partition in members.owned[member]
        assert members.errors == []
    finally:
        members.close_all()


def test_an_unknown_remote_assignor_reaches_the_application_as_unsupported_assignor(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    consumer = MiniConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": name,
            "group.protocol": "consumer",
            "group.remote.assignor": "no-such-assignor",
        }
    )
    try:
        consumer.subscribe([name])
        messages = consumer.consume(10, WAIT)
        errors = [m.error() for m in messages if m.error() is not None]
        assert [e.code() for e in errors if e is not None] == [
            ErrorCode.unsupported_assignor
        ]
    finally:
        consumer.close()
