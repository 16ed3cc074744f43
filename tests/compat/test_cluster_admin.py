"""The cluster's admin APIs from real clients: ElectLeaders (KIP-460) and the
reassignment APIs (KIP-455), against a three-broker KRaft cluster of real processes (the
requests are forwarded by the broker a client asks to the controller, KIP-590).

kafka-python's KafkaAdminClient moves a partition from brokers {1, 2} to {3, 2}
(AlterPartitionReassignments), lists what is moving (ListPartitionReassignments), and
elects the preferred leader (ElectLeaders); confluent-kafka's AdminClient asks the same
election of a partition whose preferred replica leads already, which the controller
answers ELECTION_NOT_NEEDED, and changes a topic's config through one broker
(IncrementalAlterConfigs), which every broker then describes and the leader enforces.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import ElectionType, KafkaError, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import (
    WAIT,
    admin,
    create_on,
    shared_cluster,
    state,
    wait_for,
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One cluster for the module: each test has its own topic."""
    with shared_cluster(tmp_path_factory.mktemp("cluster")) as made:
        yield made


@pytest.mark.compat("AlterPartitionReassignments", "kafka-python")
@pytest.mark.compat("ListPartitionReassignments", "kafka-python")
@pytest.mark.compat("ElectLeaders", "kafka-python")
def test_kafka_python_moves_a_partition_and_elects_its_preferred_leader(
    cluster: ProcessCluster,
) -> None:
    create_on(cluster, "kp-move", [1, 2])
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        tp = TopicPartition("kp-move", 0)
        assert client.alter_partition_reassignments({tp: [3, 2]}) == {tp: None}
        moving = client.list_partition_reassignments()
        # Copying an empty log is quick: the move may be over already.
        assert set(moving) <= {tp}
        wait_for(lambda: state(cluster, "kp-move").replicas == (3, 2), "replicas 3, 2")
        assert client.list_partition_reassignments() == {}
        wait_for(lambda: len(state(cluster, "kp-move").isr) == 2, "both in sync")
        # Leadership left broker 1 for an in-sync replica; ask for the preferred one, 3.
        client.elect_leaders(0, {"kp-move": [0]}, raise_errors=False)
        wait_for(lambda: state(cluster, "kp-move").leader == 3, "broker 3 leading")
    finally:
        client.close()


@pytest.mark.compat("ElectLeaders", "confluent-kafka")
def test_confluent_kafka_elects_a_preferred_leader_or_hears_it_is_not_needed(
    cluster: ProcessCluster,
) -> None:
    create_on(cluster, "ck-elect", [2, 3])
    client = admin(cluster)
    partition = ConfluentTopicPartition("ck-elect", 0)
    future = client.elect_leaders(ElectionType.PREFERRED, [partition])
    results = future.result(timeout=WAIT)  # each partition's outcome: None or its error
    [(answered, error)] = list(results.items())
    assert (answered.topic, answered.partition) == ("ck-elect", 0)
    assert error is not None  # broker 2, the preferred replica, leads already
    assert error.code() == KafkaError.ELECTION_NOT_NEEDED
    # As every broker has replayed it (each answers Metadata from its own image).
    wait_for(
        lambda: state(cluster, "ck-elect").leader == 2, "broker 2 leading ck-elect"
    )


@pytest.mark.compat("IncrementalAlterConfigs", "confluent-kafka")
def test_a_config_change_through_one_broker_reaches_every_broker(
    cluster: ProcessCluster,
) -> None:
    create_on(cluster, "ck-config", [1, 2, 3])
    # Asked of broker 3 alone: it forwards the change to the controller (KIP-590).
    port = cluster.broker_ports[max(cluster.broker_ports)]
    client = AdminClient({"bootstrap.servers": f"{cluster.host}:{port}"})
    entry = ConfigEntry(
        "max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(
        ResourceType.TOPIC, "ck-config", incremental_configs=[entry]
    )
    [future] = client.incremental_alter_configs([resource]).values()
    assert future.result(timeout=WAIT) is None

    def described_by(broker: int) -> str:
        one = AdminClient(
            {"bootstrap.servers": f"{cluster.host}:{cluster.broker_ports[broker]}"}
        )
        wanted = ConfigResource(ResourceType.TOPIC, "ck-config")
        [configs] = one.describe_configs([wanted]).values()
        value: str = configs.result(timeout=WAIT)["max.message.bytes"].value
        return value

    # Each broker answers DescribeConfigs from its own metadata image.
    for broker in cluster.broker_ports:
        wait_for(
            lambda b=broker: described_by(b) == "2000",  # type: ignore[misc]
            f"broker {broker} has it",
        )
    # The leader, broker 1, refuses a record over the new limit.
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    producer.produce(
        "ck-config", b"x" * 5000, on_delivery=lambda e, _: errors.append(e)
    )
    assert producer.flush(WAIT) == 0
    assert [e and e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]
