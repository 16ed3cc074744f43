"""Kafka's ``kafka-cluster.sh`` against a minikafka KRaft cluster of processes (one
controller, node 0, and brokers 1-3): ``cluster-id``, and ``unregister`` (KIP-631's
UnregisterBroker) through a broker, which forwards it to the active controller, and
through the controller's own listener (``--bootstrap-controller``, KIP-919).

A broker is stopped before it is unregistered, as an operator retires one; the tool's
lines are read, and the broker is then gone from the cluster's DescribeCluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minikafka.broker.testing import ProcessCluster, free_ports
from reference.kafka import ToolRun, run_tool
from tests.cluster._cluster import (
    FAST,
    WAIT,
    check_crashes,
    registered_brokers,
    wait_for,
)

pytestmark = [pytest.mark.external, pytest.mark.timeout(240)]


def tool(*args: str, returncode: int = 0) -> ToolRun:
    return run_tool("kafka-cluster", *args, timeout=WAIT).check(returncode)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    ports = free_ports(4)
    made = ProcessCluster.create(
        tmp_path_factory.mktemp("kafka-cluster-tool"),
        3,
        controller_ports=ports[:1],
        broker_ports=ports[1:],
        overrides=FAST,
    )
    try:
        made.up()
        yield made
    finally:
        made.kill_all()


def brokers_listed(cluster: ProcessCluster) -> set[int]:
    """The brokers DescribeCluster lists, fenced ones too (KIP-1073): the registered."""
    return set(registered_brokers(cluster))


@pytest.mark.kafka_tool("kafka-cluster", "cluster-id")
def test_cluster_id_prints_the_clusters_id(cluster: ProcessCluster) -> None:
    run = tool("cluster-id", "--bootstrap-server", cluster.bootstrap)
    assert run.stdout == f"Cluster ID: {cluster.cluster_id}\n"


@pytest.mark.kafka_tool("kafka-cluster", "unregister --bootstrap-server")
@pytest.mark.kafka_tool("kafka-cluster", "unregister --bootstrap-controller")
def test_unregister_removes_a_stopped_brokers_registration(
    cluster: ProcessCluster, request: pytest.FixtureRequest
) -> None:
    # Guarantee: a stopped broker, still registered (fenced), is unregistered through a
    # broker and through the controller, as Kafka's tool says; a second time, the
    # controller refuses the unknown id, BROKER_ID_NOT_REGISTERED, the tool's stack
    # trace naming Kafka's exception.
    wait_for(lambda: brokers_listed(cluster) == {1, 2, 3}, "three brokers")
    cluster.stop(3)
    cluster.stop(2)
    run = tool("unregister", "--bootstrap-server", cluster.bootstrap, "--id", "3")
    assert run.stdout == "Broker 3 is no longer registered.\n"
    controller = f"127.0.0.1:{cluster.controller_port}"
    run = tool("unregister", "--bootstrap-controller", controller, "--id", "2")
    assert run.stdout == "Broker 2 is no longer registered.\n"
    wait_for(lambda: brokers_listed(cluster) == {1}, "brokers 2 and 3 gone")

    again = tool(
        "unregister", "--bootstrap-server", cluster.bootstrap, "--id", "3", returncode=1
    )
    assert again.stdout == ""
    assert "BrokerIdNotRegisteredException" in again.stderr, again.stderr
    check_crashes(request.node, [str(c) for c in cluster.crashes()])
