"""Apache Kafka's three-broker cluster on the bench (``reference.cluster.KafkaCluster``): a
controller-only node and three broker-only nodes of one cluster id serve a topic of three
replicas, and the internal topics get three replicas too.

Serial: four JVMs start, and their start is timed by deadlines that a crowd of parallel
tests on two cores could exceed (``conftest.py``'s rule for clusters of processes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from reference.cluster import CONTROLLER_ID, KafkaCluster
from reference.kafka import run_tool
from tests.cluster._cluster import wait_for

pytestmark = [pytest.mark.external, pytest.mark.serial]

RECORDS = 200
WAIT = 60.0


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(Path(tmp_path_factory.mktemp("kafka-cluster"))) as cluster:
        yield cluster


def _describe(cluster: KafkaCluster, topic: str) -> str:
    return (
        run_tool(
            "kafka-topics",
            "--bootstrap-server",
            cluster.bootstrap,
            "--describe",
            "--topic",
            topic,
        )
        .check()
        .stdout
    )


def test_three_brokers_register_with_one_controller(
    kafka_cluster: KafkaCluster,
) -> None:
    # Guarantee: the three broker-only nodes, formatted with the controller's cluster id,
    # joined its quorum: the metadata lists brokers 1-3 (not the controller) and every
    # node's meta.properties carries the one cluster id.
    metadata = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}).list_topics(
        timeout=WAIT
    )
    assert sorted(metadata.brokers) == [1, 2, 3]
    # (confluent-kafka's stubs type cluster_id as None)
    assert str(metadata.cluster_id) == kafka_cluster.cluster_id
    for node in kafka_cluster.nodes:
        meta = (node.log_dir / "meta.properties").read_text()
        assert f"cluster.id={kafka_cluster.cluster_id}" in meta, node.node_id
    assert kafka_cluster.pid(CONTROLLER_ID) is not None


def test_acks_all_records_on_three_replicas_read_back(
    kafka_cluster: KafkaCluster,
) -> None:
    # Guarantee: a topic of replication factor 3 is served by the three brokers, every
    # record produced with acks=all is acknowledged without error, and a consumer in a
    # group reads them all back in order; its committed offset lands in
    # __consumer_offsets, which has three replicas (Kafka's default, not a single
    # node's 1).
    topic, group = "rf3-acks-all", "rf3-readers"
    run_tool(
        "kafka-topics",
        "--bootstrap-server",
        kafka_cluster.bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
    ).check()
    wait_for(
        lambda: "Isr: 1,2,3" in _sorted_isr(_describe(kafka_cluster, topic)),
        f"{topic}'s three replicas in sync",
        WAIT,
    )
    errors: list[str] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "acks": "all",
            "on_delivery": delivered,
        }
    )
    values = [f"record-{i}".encode() for i in range(RECORDS)]
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(WAIT) == 0, "records left unacknowledged"
    assert errors == []

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        read: list[bytes] = []

        def poll() -> bool:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                read.append(message.value() or b"")
            return len(read) >= RECORDS

        wait_for(poll, f"{RECORDS} records read back", WAIT)
        assert read == values
        consumer.commit(asynchronous=False)
        committed = consumer.committed([KafkaTopicPartition(topic, 0)], timeout=WAIT)
        assert committed[0].offset == RECORDS
    finally:
        consumer.close()
    assert "ReplicationFactor: 3" in _describe(kafka_cluster, "__consumer_offsets")


def _sorted_isr(described: str) -> str:
    """``kafka-topics --describe``'s partition line with its ISR in node order."""
    out = []
    for word in described.split():
        if "," in word and all(part.isdigit() for part in word.split(",")):
            word = ",".join(sorted(word.split(","), key=int))
        out.append(word)
    return " ".join(out)
