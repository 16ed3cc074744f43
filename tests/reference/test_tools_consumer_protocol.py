"""Kafka 4.1.1's kafka-consumer-groups on a KIP-848 consumer group of minikafka.

Two confluent-kafka consumers with ``group.protocol=consumer`` hold the group while the
tool, which describes a group with ConsumerGroupDescribe, lists it and prints its
partitions, members and state as it does for Kafka's own consumer groups.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess
from reference.kafka import run_tool
from tests.cluster._cluster import WAIT, wait_for
from tests.reference import _tools as out

GROUP, TOPIC, PARTITIONS = "kip848-tool", "kip848-tool-topic", 4


@pytest.fixture
def held_group(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker whose group is held by two consumer-protocol members, c1 and c2."""
    overrides = {"group.consumer.heartbeat.interval.ms": "500"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(WAIT)
        stop = threading.Event()
        owned: dict[str, int] = {}

        def consume(name: str) -> None:
            consumer = Consumer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "group.id": GROUP,
                    "group.protocol": "consumer",
                    "client.id": name,
                }
            )
            consumer.subscribe([TOPIC])
            while not stop.is_set():
                consumer.poll(0.1)
                owned[name] = len(consumer.assignment())
            consumer.close()

        threads = [threading.Thread(target=consume, args=(n,)) for n in ("c1", "c2")]
        for thread in threads:
            thread.start()
        try:
            wait_for(lambda: owned == {"c1": 2, "c2": 2}, "two members, two each")
            yield broker
        finally:
            stop.set()
            for thread in threads:
                thread.join(WAIT)


@pytest.mark.kafka_tool("kafka-consumer-groups", "--list")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe --members")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe --state")
def test_the_tool_describes_a_consumer_protocol_group(
    held_group: BrokerProcess,
) -> None:
    at = ["--bootstrap-server", held_group.bootstrap]

    def tool(*args: str) -> str:
        run = run_tool("kafka-consumer-groups", *at, *args, timeout=WAIT).check(0)
        return run.stdout

    assert GROUP in tool("--list").split()
    rows = out.table(tool("--describe", "--group", GROUP))
    assert sorted(int(r["PARTITION"]) for r in rows) == list(range(PARTITIONS))
    assert {r["CLIENT-ID"] for r in rows} == {"c1", "c2"}
    members = out.table(tool("--describe", "--group", GROUP, "--members"))
    assert sorted((r["CLIENT-ID"], r["#PARTITIONS"]) for r in members) == [
        ("c1", "2"),
        ("c2", "2"),
    ]
    [state] = out.table(tool("--describe", "--group", GROUP, "--state"))
    assert (state["ASSIGNMENT-STRATEGY"], state["STATE"], state["#MEMBERS"]) == (
        "uniform",
        "Stable",
        "2",
    )
