"""Combined nodes as voters of one quorum, with real processes (KIP-631's combined mode in
a cluster: each node both a broker and a controller, as Kafka allows).

Three nodes, each ``process.roles=broker,controller``, all three named by
``controller.quorum.voters``: the metadata quorum is theirs, and so are the partitions.
The guarantees checked, with a real client:

- the three elect one leader and serve: a topic is created and written ``acks=all``;
- **a leader failover of the quorum**: SIGKILL the node that leads the quorum (a broker
  too, holding replicas); the two others elect a new leader, which creates topics, and
  the producer, which never stopped, loses nothing it was told was written;
- the killed node starts again, follows the new leader and serves again.
"""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import (
    FAST,
    WAIT,
    admin,
    create_topic,
    read_values,
    wait_for,
)
from tests.cluster.test_controller_failover import NumberedProducer

pytestmark = pytest.mark.timeout(300)

NODES = (0, 1, 2)


@attrs.define(eq=False)
class CombinedCluster(ProcessCluster):
    """A :class:`ProcessCluster` whose nodes are all combined: each listens for clients
    on its broker port and for the quorum on its controller port."""

    quorum_ports: dict[int, int] = attrs.field(factory=dict)

    def properties(self, node: int) -> dict[str, str]:
        voters = ",".join(
            f"{n}@{self.host}:{p}" for n, p in sorted(self.quorum_ports.items())
        )
        return {
            "node.id": str(node),
            "process.roles": "broker,controller",
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": (
                f"PLAINTEXT://{self.host}:{self.broker_ports[node]},"
                f"CONTROLLER://{self.host}:{self.quorum_ports[node]}"
            ),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.node_dir(node)),
            **self.overrides,
        }

    def quorum_status(self, nodes: tuple[int, ...] = NODES) -> dict[str, str]:
        """``minikafka metadata-quorum --bootstrap-controller ... describe --status``
        asked of ``nodes``, as a dict ({} if none of them leads the quorum)."""
        voters = ",".join(f"{self.host}:{self.quorum_ports[n]}" for n in nodes)
        command = [sys.executable, "-m", "minikafka.broker", "metadata-quorum"]
        command += ["--bootstrap-controller", voters, "describe", "--status"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            return {}
        lines = (line.partition(":") for line in done.stdout.splitlines())
        return {key.strip(): value.strip() for key, _, value in lines}

    def quorum_leader(self, nodes: tuple[int, ...] = NODES) -> int:
        """The leader of the quorum as ``nodes`` see it, once one of them leads."""
        found: list[int] = []

        def elected() -> bool:
            found[:] = [int(self.quorum_status(nodes).get("LeaderId", "-1"))]
            return found[0] in nodes

        wait_for(elected, f"a leader of the quorum among {nodes}")
        return found[0]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[CombinedCluster]:
    """The three nodes, formatted with one cluster id and started together (a quorum
    elects its leader once a majority is up, and a broker is ready once unfenced)."""
    held = [socket.create_server(("127.0.0.1", 0)) for _ in range(2 * len(NODES))]
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    made = CombinedCluster(
        tmp_path,
        cluster_id,
        {},
        {n: ports[n] for n in NODES},
        {"default.replication.factor": "3", "offsets.topic.replication.factor": "3"}
        | FAST,
        quorum_ports={n: ports[len(NODES) + n] for n in NODES},
    )
    try:
        for node in NODES:
            made.add_node(node)  # its properties, and its directory formatted
        for node in NODES:
            made.start(node, wait=False)
        for node in NODES:
            made.wait_ready(node, 0, WAIT)
        yield made
    finally:
        made.kill_all()


def test_combined_nodes_form_one_kraft_quorum_through_a_leader_failover(
    cluster: CombinedCluster,
) -> None:
    leader = cluster.quorum_leader()
    create_topic(cluster, "data")
    producer = NumberedProducer(cluster, "data")
    try:
        wait_for(lambda: len(producer.acked) >= 200, "200 records acknowledged")
        cluster.kill(leader)
        survivors = tuple(n for n in NODES if n != leader)
        new_leader = cluster.quorum_leader(survivors)
        # The new active controller serves: a creation goes through it.
        client = admin(cluster)  # held until the answer: a collected one cancels it
        futures = client.create_topics([NewTopic("after", 1, 2)], operation_timeout=30)
        futures["after"].result(timeout=WAIT)
        before = len(producer.acked)
        wait_for(
            lambda: len(producer.acked) >= before + 200,
            "200 more records acknowledged after the failover",
        )
    finally:
        producer.stop()
    assert new_leader != leader
    assert producer.errors == []
    values = {int(v) for v in read_values(cluster, "data")}
    assert set(producer.acked) <= values

    # The killed node comes back, follows the new leader and catches up with it.
    cluster.start(leader)
    wait_for(
        lambda: cluster.quorum_status().get("MaxFollowerLag") == "0",
        "the restarted node caught up with the quorum (MaxFollowerLag 0)",
    )
    assert cluster.quorum_leader() in NODES
    assert cluster.crashes() == []  # the SIGKILL was sent by this test: no crash
