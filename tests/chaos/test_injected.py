"""The nemesis's faults beyond kills, pauses and partitions are carried out for real,
each staged by hand on a ZooKeeper-mode process cluster of three brokers in network
namespaces (as root): a slow link puts a qdisc on the node's interface (netem, or tbf
where the kernel lacks netem) and its heal takes it off; ZooKeeper's server killed is
gone and answers again once healed, paused it is stopped (state ``T``) and continues;
a preferred leader election started mid-fault gets each partition's answer; a
reassignment moves every partition's replicas to another order and its heal moves them
back; the brokers take every acknowledged write through all of it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from chaos.faults import Injector
from chaos.nemesis import ZOOKEEPER, Fault
from chaos.netcluster import bootstrap, place
from chaos.netns import Network, unavailable
from chaos.operations import replicas, rotated
from chaos.runner import TOPIC, RunOptions, _cluster, _create_topic, _whole
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import wait_for

pytestmark = [pytest.mark.serial, pytest.mark.timeout(600)]


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _qdisc(network: Network, node: int) -> str:
    shown = subprocess.run(
        network.command(node, ["tc", "qdisc", "show", "dev", "eth0"]),
        capture_output=True,
        text=True,
        check=True,
    )
    return shown.stdout


def _registered(servers: str) -> set[int]:
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    return set(client.list_topics(timeout=10).brokers)


def _acknowledged(servers: str, count: int) -> int:
    producer = Producer(
        {"bootstrap.servers": servers, "enable.idempotence": True, "log_level": 0}
    )
    acked: list[int] = []
    for i in range(count):
        producer.produce(
            TOPIC, str(i).encode(), on_delivery=lambda e, _m: acked.append(e is None)
        )
    producer.flush(120)
    return sum(acked)


def test_slow_links_zookeeper_faults_and_admin_operations_are_carried_out(
    tmp_path: Path,
) -> None:
    why = unavailable()
    if why is not None:
        pytest.skip(f"network namespaces cannot be made here: {why}")
    if not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    cluster = _cluster(tmp_path, RunOptions(0, 0.0, mode="zk"))
    network = Network.create(cluster.node_ids)
    try:
        place(cluster, network)
        servers = bootstrap(cluster, network)
        cluster.up(timeout=120.0)
        _create_topic(servers, 3)
        assert _whole(servers, 3, time.monotonic() + 60)
        injector = Injector(cluster, True, network, servers, TOPIC)

        slow = Fault(0, 1, "slow", (1,), (), (("delay_ms", 100.0),))
        injector.start(slow, time.time())
        assert "tc " in injector.done[-1].detail, injector.done[-1]
        assert "netem" in _qdisc(network, 1) or "tbf" in _qdisc(network, 1)
        assert _acknowledged(servers, 50) == 50  # slow, not cut off
        injector.heal(slow, time.time())
        assert "tbf" not in _qdisc(network, 1)
        assert "netem" not in _qdisc(network, 1)

        killed = Fault(0, 1, "kill-zookeeper", (ZOOKEEPER,))
        injector.start(killed, time.time())
        assert cluster.zookeeper.pid() is None
        injector.heal(killed, time.time())
        assert cluster.zookeeper.is_ok()

        paused = Fault(0, 1, "pause-zookeeper", (ZOOKEEPER,))
        injector.start(paused, time.time())
        pid = cluster.zookeeper.pid()
        assert pid is not None
        # A signal is delivered asynchronously: stopped within moments.
        wait_for(lambda: _state(pid) == "T", "ZooKeeper's server stopped", 10)
        injector.heal(paused, time.time())
        wait_for(lambda: _state(pid) != "T", "ZooKeeper's server continued")
        assert _whole(servers, 3, time.monotonic() + 90)

        # A reassignment naming a broker no longer registered (paused past its
        # ZooKeeper session) is refused by Kafka's tool: said so, nothing moved.
        before = replicas(servers, TOPIC)
        host = Fault(0, 1, "pause", (1,))
        injector.start(host, time.time())
        wait_for(lambda: 1 not in _registered(servers), "broker 1's session expired")
        refused = Fault(0, 1, "reassign")
        injector.start(refused, time.time())
        assert "refused: " in injector.done[-1].detail, injector.done[-1]
        injector.heal(refused, time.time())
        injector.heal(host, time.time())
        assert _whole(servers, 3, time.monotonic() + 90)
        assert replicas(servers, TOPIC) == before

        # The admin operations, mid-fault: broker 1's link slowed meanwhile.
        host = slow
        injector.start(host, time.time())
        moved = Fault(0, 1, "reassign")
        injector.start(moved, time.time())
        assert not injector.done[-1].error, injector.done[-1]
        assert "refused" not in injector.done[-1].detail, injector.done[-1]
        wait_for(lambda: replicas(servers, TOPIC) == rotated(before), "reassigned")
        elect = Fault(0, 1, "elect-leaders")
        injector.start(elect, time.time())
        record = injector.done[-1]
        assert not record.error, record
        assert all(f"{p}:" in record.detail for p in range(3)), record.detail
        injector.heal(elect, time.time())
        injector.heal(moved, time.time())
        injector.heal(host, time.time())
        assert all(not r.error for r in injector.done), injector.done
        wait_for(lambda: replicas(servers, TOPIC) == before, "reassigned back")
        assert _whole(servers, 3, time.monotonic() + 90)
        assert _acknowledged(servers, 50) == 50
    finally:
        try:
            cluster.kill_all()
        finally:
            network.close()
