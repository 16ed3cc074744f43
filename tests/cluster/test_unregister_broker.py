"""UnregisterBroker on a KRaft cluster of real processes (KIP-631), as an operator
retires a broker: stop it, then ``kafka-cluster.sh unregister`` (here ``minikafka
cluster unregister``) or ``Admin.unregisterBroker`` (minikafka's admin client).

- **A stopped broker keeps its registration**: fenced, DescribeCluster v2 still lists it
  when asked for the fenced brokers (KIP-1073), and a manual assignment may name it.
- **Unregistered, it is gone**: DescribeCluster lists it no more, fenced or not; a new
  topic is placed on the other brokers and a manual assignment naming it is refused
  (INVALID_REPLICA_ASSIGNMENT); unregistering it again is BROKER_ID_NOT_REGISTERED.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import KafkaException as LibrdkafkaException
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import ProcessCluster
from minikafka.client import AdminClient, KafkaException
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    admin,
    registered_brokers,
    state,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)


def unregister_tool(
    cluster: ProcessCluster, broker: int
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka.broker", "cluster", "unregister"]
    return subprocess.run(
        [*command, "--bootstrap-server", cluster.bootstrap, "--id", str(broker)],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def test_a_stopped_broker_unregistered_is_gone_from_the_cluster(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(brokers=3)  # controller 0, brokers 1 to 3
    wait_for(
        lambda: registered_brokers(cluster) == {1: False, 2: False, 3: False},
        "three unfenced brokers",
    )
    cluster.stop(3)
    # Stopped, it is fenced but still registered: listed when fenced brokers are asked
    # for, and a manual assignment may still name it.
    wait_for(
        lambda: registered_brokers(cluster) == {1: False, 2: False, 3: True},
        "broker 3 fenced",
    )
    client = admin(cluster)
    named = client.create_topics([NewTopic("named", 1, replica_assignment=[[1, 3]])])
    named["named"].result(timeout=WAIT)

    result = unregister_tool(cluster, 3)
    assert (result.returncode, result.stdout) == (
        0,
        "Broker 3 is no longer registered.\n",
    ), result.stderr
    wait_for(
        lambda: registered_brokers(cluster) == {1: False, 2: False}, "broker 3 gone"
    )

    # The partition it was a replica of keeps it in its replicas (Kafka moves nothing).
    assert state(cluster, "named").replicas == (1, 3)
    placed = client.create_topics([NewTopic("placed", 6, 2)])
    placed["placed"].result(timeout=WAIT)
    wait_for(lambda: state(cluster, "placed", 5).leader != -1, "placed is led")
    for p in range(6):
        assert 3 not in state(cluster, "placed", p).replicas
    refused = client.create_topics(
        [NewTopic("refused", 1, replica_assignment=[[1, 3]])]
    )
    with pytest.raises(LibrdkafkaException) as caught:
        refused["refused"].result(timeout=WAIT)
    assert caught.value.args[0].name() == "INVALID_REPLICA_ASSIGNMENT"

    # minikafka's admin client: the id is unknown now.
    sync_admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with pytest.raises(KafkaException) as again:
        sync_admin.unregister_broker(3).result(timeout=WAIT)
    assert again.value.args[0].code() == ErrorCode.broker_id_not_registered
    result = unregister_tool(cluster, 3)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: BROKER_ID_NOT_REGISTERED"), result.stderr
