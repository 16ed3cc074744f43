"""Fixtures of the cluster tests: KRaft clusters of real processes.

Every cluster is one controller (node 0) and brokers 1..N (or, with ``controllers=3``, a
Raft quorum of controllers 0..2 and brokers 3..), each a ``minikafka broker``
process of its own (:class:`~minikafka.broker.testing.ProcessCluster`, what ``make
cluster`` runs), on ports the OS picked, under the test's own directory, with the
settings of :data:`tests.cluster._cluster.FAST`. Whatever runs at the end is killed.

After every test, each cluster it ran (``make_cluster``'s, a module's
:func:`~tests.cluster._cluster.shared_cluster`, one laid out under its ``tmp_path`` by
``minikafka cluster``) is asked for :meth:`~ProcessCluster.crashes`: a node that wrote a
traceback, or ended without being told to, fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker._node_exits import NodeCrash
from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.net.testing import FaultProxies
from tests.cluster._cluster import FAST, REPORTS, SHARED, MakeCluster, check_crashes

_MADE = pytest.StashKey[list[ProcessCluster]]()
"""The clusters ``make_cluster`` made for a test, for its crash check."""
_REPORTED: set[tuple[Path, NodeCrash]] = set()
"""Crashes already reported (a shared cluster's stay in its logs for the next tests)."""


@pytest.fixture(autouse=True)
def _no_node_crashed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a passing test after which a node of one of its clusters crashed (set up
    before, torn down after, ``make_cluster``: it sees what its clusters' kill left)."""
    # ``minikafka cluster`` runs, in processes of their own, under the test's dir: asked
    # for now, it is torn down after this fixture.
    uses_tmp = "tmp_path" in request.fixturenames
    tmp_path: Path | None = request.getfixturevalue("tmp_path") if uses_tmp else None
    yield
    clusters = {c.root: c for c in [*SHARED, *request.node.stash.get(_MADE, [])]}
    if tmp_path is not None:
        for layout in [
            *tmp_path.glob("cluster.json"),
            *tmp_path.glob("*/cluster.json"),
        ]:
            root = layout.parent.resolve()
            if root not in clusters:
                clusters[root] = ProcessCluster.load(root)
    new = []
    for root, cluster in clusters.items():
        for crash in cluster.crashes():
            if (root, crash) not in _REPORTED:
                _REPORTED.add((root, crash))
                new.append(crash)
    check_crashes(request.node, new)


def _print_diagnostics(cluster: ProcessCluster) -> None:
    """What each node last said: a failure on a loaded CI machine can then be read from
    the test's output alone (the cluster's directory is gone with the machine)."""
    for node in cluster.node_ids:
        print(
            f"----- node {node} (pid {cluster.pid(node)}): the end of {cluster.log_file(node)}"
        )
        print(cluster.tail(node, 40))
    print("----- the last replication and election events of the cluster's traces")
    for event in _replication_events(cluster.root / "traces")[-40:]:
        print(json.dumps(event, separators=(",", ":")))


_SHOWN = {"election", "isr_change", "become_leader", "become_follower", "truncated"}
_SHOWN |= {
    "follower_truncate",
    "broker_registration",
    "hw_advance",
    "isr_propose",
    "elected",
}


def _replication_events(traces: Path) -> list[dict[str, object]]:
    events = []
    for path in traces.glob("*.jsonl"):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line the SIGKILL cut short
            if event.get("event") in _SHOWN and not str(
                event.get("topic", "")
            ).startswith("__"):
                events.append(event)
    events.sort(key=lambda e: float(e.get("ts", 0)))
    return events


@pytest.fixture
def make_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[MakeCluster]:
    """``make_cluster(brokers=3, proxies=None, controllers=1, controller_proxies=None,
    mode="kraft", security_protocol="PLAINTEXT", **{"key": "value"})``: a started
    cluster (``mode="zookeeper"``: in ZooKeeper mode, its server on the first controller
    port; ``security_protocol``: what every listener speaks); the overrides go over
    :data:`FAST` into every node's properties. Given a list, ``proxies`` gets a
    :class:`FaultProxies` whose proxies carry every link between brokers, and
    ``controller_proxies`` one whose proxies carry every link into each controller (the
    voters are named by the proxies' ports)."""
    made = request.node.stash.setdefault(_MADE, [])
    started: list[FaultProxies] = []

    def make(
        brokers: int = 3,
        proxies: list[FaultProxies] | None = None,
        controllers: int = 1,
        controller_proxies: list[FaultProxies] | None = None,
        mode: str = "kraft",
        security_protocol: str = "PLAINTEXT",
        **overrides: str,
    ) -> ProcessCluster:
        # free_ports's ports lie below the OS's ephemeral range: a proxy binding port 0
        # is never given one of them (a node would then find its port taken).
        ports = free_ports(2 * controllers + 2 * brokers)
        cports, bports = ports[:controllers], ports[controllers : controllers + brokers]
        spare = ports[controllers + brokers :]
        # Brokers are numbered after the controllers; ZooKeeper mode has none (0, 1, ...).
        first = 0 if mode == "zookeeper" else controllers
        ids = range(first, first + brokers)
        replication: dict[int, tuple[int, int]] = {}
        listen: dict[int, int] = {}
        if proxies is not None:
            links = FaultProxies({b: spare[i] for i, b in enumerate(ids)})
            started.append(links)
            proxies.append(links)
            replication = {b: (spare[i], links.port(b)) for i, b in enumerate(ids)}
        if controller_proxies is not None:
            listen = {c: spare[brokers + c] for c in range(controllers)}
            into = FaultProxies(listen)
            started.append(into)
            controller_proxies.append(into)
            cports = [into.port(c) for c in range(controllers)]
        cluster = ProcessCluster.create(
            tmp_path_factory.mktemp("cluster"),
            brokers,
            controllers=controllers,
            controller_ports=cports,
            broker_ports=bports,
            replication_ports=replication,
            controller_listen_ports=listen,
            overrides={**FAST, **overrides},
            zookeeper=mode == "zookeeper",
            zookeeper_port=cports[0],
            security_protocol=security_protocol,
        )
        made.append(cluster)
        cluster.up()
        return cluster

    yield make
    call = request.node.stash.get(REPORTS, {}).get("call")
    if call is not None and call.failed:
        for cluster in made:
            _print_diagnostics(cluster)
    for cluster in made:
        cluster.kill_all()  # ZooKeeper too
    for links in started:
        links.close()
