"""A process cluster whose nodes each run in a network namespace of their own.

:class:`~minikafka.broker.testing.ProcessCluster` lays its nodes out on one host
address. :func:`place` moves each node onto its namespace's address
(:class:`chaos.netns.Network`): every ``HOST:PORT`` a node's ``server.properties``
names (its listeners, advertised listeners, the controller quorum's voters) becomes the
address of the node that owns that port, each node's process is started under ``ip
netns exec`` (which execs it in place, so the pid signalled is the node's), and in
ZooKeeper mode the ZooKeeper server listens on the bridge's address in the host's
namespace, which every node reaches. The harness's clients, in the host's namespace,
reach every node through the bridge whatever the partition: a partition is between the
nodes, as :mod:`chaos.netns` cuts it.

ZooKeeper itself is outside every partition (the nemesis does not target it): an
isolated broker keeps its ZooKeeper session, as a broker cut off from its peers but not
from the ensemble does in a real deployment.
"""

from __future__ import annotations

from minikafka.broker.testing import ProcessCluster

from .netns import Network


def place(cluster: ProcessCluster, network: Network) -> None:
    """Rewrite ``cluster``'s node properties onto ``network``'s addresses and start its
    nodes in their namespaces from now on (before :meth:`ProcessCluster.up`)."""
    for node in cluster.node_ids:
        place_node(cluster, network, node)
    # ZooKeeper's server listens where the nodes reach it: the bridge's address.
    cluster.host = network.layout.host_address


def place_node(cluster: ProcessCluster, network: Network, node: int) -> None:
    """Rewrite ``node``'s properties onto ``network``'s addresses and start it in its
    namespace from now on (a broker added mid-run too: its properties name the others
    on ``cluster.host``, the bridge's address by then)."""
    old = cluster.host
    moves = {
        f"{old}:{cluster.port(n)}": f"{network.address(n)}:{cluster.port(n)}"
        for n in cluster.node_ids
    }
    moves |= {
        f"{old}:{cluster.listen_port(n)}": (
            f"{network.address(n)}:{cluster.listen_port(n)}"
        )
        for n in cluster.node_ids
    }
    if cluster.zookeeper_port is not None:
        where = f"{network.layout.host_address}:{cluster.zookeeper_port}"
        moves[f"{old}:{cluster.zookeeper_port}"] = where
    path = cluster.properties_file(node)
    lines = []
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        parts = [moves.get(part, part) for part in _split(value)]
        lines.append(f"{key}={''.join(parts)}" if _ else line)
    path.write_text("".join(f"{line}\n" for line in lines))
    cluster.command_prefix[node] = network.command(node, [])


def _split(value: str) -> list[str]:
    """``value`` cut into ``HOST:PORT`` candidates and the separators between them
    (``,``, ``//``, ``@``), so that joining the pieces gives ``value`` back."""
    pieces: list[str] = []
    word = ""
    for char in value:
        if char in ",/@":
            pieces += [word, char]
            word = ""
        else:
            word += char
    return [*pieces, word]


def bootstrap(cluster: ProcessCluster, network: Network) -> str:
    """The brokers' addresses, as the harness's clients reach them."""
    return ",".join(
        f"{network.address(b)}:{p}" for b, p in sorted(cluster.broker_ports.items())
    )
