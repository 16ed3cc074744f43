"""Kafka's Java Admin client's ``unregisterBroker`` (KIP-631) against minikafka: on a
KRaft cluster of processes, a stopped broker is unregistered and, asked again, the id is
unknown (BrokerIdNotRegisteredException); a ZooKeeper-mode broker does not list the API,
so the client refuses to send it (UnsupportedVersionException), as against Kafka 3.x's
ZooKeeper brokers.

confluent-kafka (librdkafka), kafka-python and aiokafka have no such call.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import registered_brokers, shared_cluster, wait_for
from tests.compat import _java

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with shared_cluster(tmp_path_factory.mktemp("unregister"), 2) as made:
        yield made


@pytest.fixture
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with shared_cluster(
        tmp_path_factory.mktemp("unregister-zk"), 1, mode="zookeeper"
    ) as made:
        yield made


def unregister(broker_id: int) -> dict[str, object]:
    return {"op": "admin", "action": "unregister_broker", "broker_id": broker_id}


@pytest.mark.compat("UnregisterBroker", "java")
def test_the_java_admin_unregisters_a_stopped_broker(kraft: ProcessCluster) -> None:
    wait_for(lambda: registered_brokers(kraft) == {1: False, 2: False}, "two brokers")
    kraft.stop(2)
    run = _java.scenario(kraft.bootstrap, [unregister(2), unregister(2)])
    assert run.result(0) == 2
    assert run.error(1)["type"] == "BrokerIdNotRegisteredException"
    wait_for(lambda: registered_brokers(kraft) == {1: False}, "broker 2 gone")


def test_a_zookeeper_mode_broker_does_not_offer_it(zookeeper: ProcessCluster) -> None:
    run = _java.scenario(zookeeper.bootstrap, [unregister(0)])
    error = run.error(0)
    assert error["type"] == "UnsupportedVersionException", error
