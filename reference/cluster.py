"""Apache Kafka as a cluster: a controller and three brokers, each a JVM of its own.

:class:`KafkaCluster` is the shape of minikafka's ``ProcessCluster`` (what ``make
cluster`` and the cluster benchmarks run): one controller-only node (``node.id`` 0,
``process.roles=controller``, a KRaft quorum of one) and broker-only nodes 1, 2 and 3
(``process.roles=broker``), so that a comparison sees the same processes doing the same
jobs on both sides: the brokers serve clients and replicate, the controller only keeps
the metadata log. A combined node would save a JVM but put the controller's work (the
metadata log's appends and fsyncs, the brokers' heartbeats) into one of the brokers, which
minikafka's brokers do not carry.

Every node is formatted with one cluster id (``kafka-storage format --cluster-id``): the
controller with ``--standalone`` (a dynamic quorum of itself, KIP-853), the brokers with
``--no-initial-controllers``, as Kafka's operations guide formats a broker that joins an
existing quorum. The internal topics (``__consumer_offsets``, ``__transaction_state``, the
share-group state) take Kafka's own defaults, replication factor 3 and
``min.insync.replicas`` 2 for the transaction log, which three brokers can honour.

Heaps: ``-Xms256m -Xmx512m`` a broker and ``-Xms128m -Xmx256m`` the controller, some
1.5 GiB of resident memory for the four JVMs: beside three Python brokers and the other
tests of a 23 GiB, 2-core machine. All nodes start together (the brokers register once
the controller is up) and stop together, the brokers first (a broker's clean shutdown
asks the controller to move its leaders), then the controller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import attrs

from minikafka.common.testing import free_ports

from .kafka import BROKER, CONTROLLER, KafkaNode, new_cluster_id

CONTROLLER_ID = 0
BROKER_HEAP = ("256m", "512m")
CONTROLLER_HEAP = ("128m", "256m")


@attrs.define(eq=False)
class KafkaCluster:
    """A controller-only node and ``brokers`` broker-only nodes of one cluster, their
    files under ``directory``; ``overrides`` sets keys of every broker's
    ``server.properties`` (``min.insync.replicas``, ...)."""

    directory: Path
    brokers: int = 3
    overrides: Mapping[str, str] = attrs.field(factory=dict)
    host: str = "127.0.0.1"
    cluster_id: str = attrs.field(factory=new_cluster_id)
    controller: KafkaNode = attrs.field(init=False)
    broker_nodes: dict[int, KafkaNode] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        ports = free_ports(self.brokers + 1, self.host)
        self.controller = KafkaNode(
            self.directory / f"node-{CONTROLLER_ID}",
            host=self.host,
            controller_port=ports[0],
            port=ports[0],  # a controller-only node has no client listener
            node_id=CONTROLLER_ID,
            heap=CONTROLLER_HEAP[1],
            min_heap=CONTROLLER_HEAP[0],
            roles=CONTROLLER,
            cluster_id=self.cluster_id,
        )
        for i in range(1, self.brokers + 1):
            self.broker_nodes[i] = KafkaNode(
                self.directory / f"node-{i}",
                overrides={**internal_topics(self.brokers), **self.overrides},
                host=self.host,
                port=ports[i],
                controller_port=ports[0],  # not listened on: quorum names it
                node_id=i,
                heap=BROKER_HEAP[1],
                min_heap=BROKER_HEAP[0],
                roles=BROKER,
                quorum=self.controller.controller_bootstrap,
                cluster_id=self.cluster_id,
            )

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated, for a client's
        ``bootstrap.servers``."""
        return ",".join(node.bootstrap for node in self.broker_nodes.values())

    @property
    def nodes(self) -> list[KafkaNode]:
        return [self.controller, *self.broker_nodes.values()]

    @property
    def node_ids(self) -> list[int]:
        return [node.node_id for node in self.nodes]

    def pid(self, node_id: int) -> int | None:
        """The process of node ``node_id`` (the controller's is ``CONTROLLER_ID``), or
        None if it is not running."""
        node = self.broker_nodes.get(node_id)
        if node is None and node_id == CONTROLLER_ID:
            node = self.controller
        return None if node is None else node.pid

    def start(self, timeout: float = 120.0) -> None:
        """Formats every node (the first time), starts all the JVMs at once and waits
        until each logged that it started; on a failure the others are stopped."""
        deadline = time.monotonic() + timeout
        try:
            for node in self.nodes:
                node.launch()
            for node in self.nodes:
                node.wait_started(deadline)
        except BaseException:
            self.kill()
            raise

    def stop(self, timeout: float = 60.0) -> None:
        """A clean shutdown: the brokers (together), then the controller they report
        their shutdown to."""
        for node in self.broker_nodes.values():
            if node.process is not None:
                node.process.terminate()
        # stop() signals again: a JVM already running its shutdown hooks ignores it
        for node in self.broker_nodes.values():
            node.stop(timeout)
        self.controller.stop(timeout)

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def internal_topics(brokers: int) -> dict[str, str]:
    """Kafka's own defaults for its internal topics (RF 3, the transaction and share
    state logs' ``min.isr`` 2; ``KafkaNode`` lowers them to one replica for a single
    node), capped at the brokers there are."""
    replicas = min(3, brokers)
    min_isr = str(min(2, replicas))
    return {
        "offsets.topic.replication.factor": str(replicas),
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": min_isr,
    }
