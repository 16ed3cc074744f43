"""Fixtures of the cluster tests: KRaft clusters of real processes.

Every cluster is one controller (node 0) and brokers 1..N, each a ``minikafka broker``
process of its own (:class:`~minikafka.broker.testing.ProcessCluster`, what ``make
cluster`` runs), on ports the OS picked, under the test's own directory, with the
settings of :data:`tests.cluster._cluster.FAST`. Whatever runs at the end is killed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import FAST, MakeCluster, Proxies


@pytest.fixture
def make_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeCluster]:
    """``make_cluster(brokers=3, proxies=None, **{"key": "value"})``: a started cluster;
    the overrides go over :data:`FAST` into every node's properties. Given a list,
    ``proxies`` gets a :class:`Proxies` whose proxies carry every link between brokers."""
    made: list[ProcessCluster] = []
    started: list[Proxies] = []

    def make(
        brokers: int = 3, proxies: list[Proxies] | None = None, **overrides: str
    ) -> ProcessCluster:
        # The ports stay bound until the proxies have theirs: a proxy binding port 0 must
        # not be given one of them (a node would then find its port taken).
        held = [socket.create_server(("127.0.0.1", 0)) for _ in range(1 + 2 * brokers)]
        ports = [s.getsockname()[1] for s in held]
        replication: dict[int, tuple[int, int]] = {}
        try:
            if proxies is not None:
                links = Proxies({b: ports[brokers + b] for b in range(1, brokers + 1)})
                started.append(links)
                proxies.append(links)
                replication = {
                    b: (ports[brokers + b], links.port(b)) for b in range(1, brokers + 1)
                }
        finally:
            for s in held:
                s.close()
        cluster = ProcessCluster.create(
            tmp_path_factory.mktemp("cluster"),
            brokers,
            controller_port=ports[0],
            broker_ports=ports[1 : brokers + 1],
            replication_ports=replication,
            overrides={**FAST, **overrides},
        )
        made.append(cluster)
        cluster.up()
        return cluster

    yield make
    for cluster in made:
        cluster.kill_all()
    for links in started:
        links.close()
