"""A process cluster moved into network namespaces names each node by its own
namespace's address, and starts each node under ``ip netns exec``."""

from __future__ import annotations

from pathlib import Path

from chaos.netcluster import bootstrap, place
from chaos.netns import Layout, Network
from minikafka.broker.testing import ProcessCluster


def _properties(cluster: ProcessCluster, node: int) -> dict[str, str]:
    lines = cluster.properties_file(node).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_each_node_listens_and_is_named_on_its_namespace_address(
    tmp_path: Path,
) -> None:
    cluster = ProcessCluster.create(
        tmp_path, 2, controllers=1, controller_ports=[7000], broker_ports=[7001, 7002]
    )
    network = Network(Layout("mktest", 201, tuple(cluster.node_ids)))
    try:
        place(cluster, network)
        controller, broker = _properties(cluster, 0), _properties(cluster, 2)
        assert controller["listeners"] == "CONTROLLER://10.201.0.1:7000"
        assert broker["listeners"] == "PLAINTEXT://10.201.0.3:7002"
        assert broker["controller.quorum.voters"] == "0@10.201.0.1:7000"
        assert cluster.command_prefix[1] == ["ip", "netns", "exec", "mktestn1"]
        assert bootstrap(cluster, network) == "10.201.0.2:7001,10.201.0.3:7002"
    finally:
        network._open = False  # nothing was made: nothing to remove


def test_zookeeper_mode_brokers_reach_zookeeper_on_the_bridge(tmp_path: Path) -> None:
    cluster = ProcessCluster.create(
        tmp_path,
        3,
        broker_ports=[7001, 7002, 7003],
        zookeeper=True,
        zookeeper_port=7000,
    )
    network = Network(Layout("mktest", 202, tuple(cluster.node_ids)))
    try:
        place(cluster, network)
        props = _properties(cluster, 1)
        assert props["zookeeper.connect"] == "10.202.0.254:7000"
        assert props["listeners"] == "PLAINTEXT://10.202.0.2:7002"
        assert cluster.host == "10.202.0.254"  # where ZooKeeper's server listens
    finally:
        network._open = False
