"""A ZooKeeper fault's heal, carried out on a lane of its own beside the membership
steps (``chaos.carry``), does not start a broker a membership step is working on: a
removed broker's return that gave up its start-up for want of ZooKeeper is started
again by that return, once, not by both.

Staged on a stand-in for ``ProcessCluster``: a broker started while ZooKeeper's server
is paused gives up at once; started once it answers, it runs. The ZooKeeper heal runs
while the removal's heal waits for its broker (as it does on its own thread).
"""

from __future__ import annotations

import time

import pytest

from chaos import membership, operations
from chaos.faults import ZOOKEEPER_REFUSED, Injector
from chaos.nemesis import Fault
from minikafka.broker.testing import ClusterError

REFUSAL = f"minikafka broker: stopped: {ZOOKEEPER_REFUSED} zookeeper.connect"


class ZooKeeperServer:
    def pid(self) -> int:
        return 99


class Cluster:
    """Brokers 0-2, their ZooKeeper server paused or answering."""

    node_ids = (0, 1, 2)
    controller_ids = ()
    bootstrap = "127.0.0.1:9092"
    zookeeper = ZooKeeperServer()

    def __init__(self) -> None:
        self.broker_ports = {0: 9092, 1: 9093, 2: 9094}
        self.pids: dict[int, int | None] = {0: 100, 1: 101, 2: 102}
        self.logs: dict[int, list[str]] = {n: ["started"] for n in self.node_ids}
        self.answering = True
        self.starts: list[int] = []

    def pid(self, node: int) -> int | None:
        return self.pids[node]

    def tail(self, node: int, lines: int = 20) -> str:
        return "\n".join(self.logs[node][-lines:])

    def start(self, node: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        assert self.pids[node] is None, f"broker {node} started twice"
        self.starts.append(node)
        if self.answering:
            self.pids[node] = 200 + len(self.starts)
            self.logs[node].append("registered")
        else:
            self.logs[node].append(REFUSAL)
            if wait:
                raise ClusterError(f"node {node} exited before it was ready")


def test_a_zookeeper_heal_leaves_a_returning_broker_to_its_heal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = Cluster()
    injector = Injector(cluster, True)  # type: ignore[arg-type]
    pause = Fault(0.0, 10.0, "pause-zookeeper")
    remove = Fault(1.0, 5.0, "broker-remove", (1,))

    def zookeeper_down(cluster: Cluster, kind: str) -> str:
        cluster.answering = False
        return "paused"

    def zookeeper_up(cluster: Cluster, kind: str, pid: int | None) -> None:
        cluster.answering = True

    def remove_broker(
        cluster: Cluster, node: int, *args: object
    ) -> tuple[str, dict[int, list[int]]]:
        cluster.pids[node] = None
        cluster.logs[node].append("shut down")
        return "drained; shut down", {}

    def return_broker(cluster: Cluster, node: int, *args: object) -> str:
        try:
            cluster.start(node, timeout=60.0)  # gives up: ZooKeeper is paused
        finally:
            # Meanwhile, on ZooKeeper's lane, the pause is healed.
            injector.heal(pause, time.time())
        return "registered again"

    monkeypatch.setattr(operations, "zookeeper_down", zookeeper_down)
    monkeypatch.setattr(operations, "zookeeper_up", zookeeper_up)
    monkeypatch.setattr(membership, "remove_broker", remove_broker)
    monkeypatch.setattr(membership, "return_broker", return_broker)
    monkeypatch.setattr(injector, "_home", lambda: {0: [0, 1, 2]})
    injector.start(pause, time.time())
    injector.start(remove, time.time())
    injector.heal(remove, time.time())
    by_kind = {record.fault.kind: record for record in injector.done}
    assert by_kind["broker-remove"].error == ""
    assert "gave up its start-up" in by_kind["broker-remove"].detail
    assert "started again" not in by_kind["pause-zookeeper"].detail
    assert cluster.starts == [1, 1]  # the return's, given up; then once it answers
    assert cluster.pid(1) is not None
    assert 1 in injector.stopped_without_zookeeper


def test_a_zookeeper_heal_starts_a_broker_no_membership_step_works_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The supervisor's restart is kept for the brokers no step is working on."""
    cluster = Cluster()
    injector = Injector(cluster, True)  # type: ignore[arg-type]
    monkeypatch.setattr(operations, "zookeeper_down", lambda c, k: "killed")
    monkeypatch.setattr(operations, "zookeeper_up", lambda c, k, p: None)
    zookeeper = Fault(0.0, 10.0, "kill-zookeeper")
    injector.start(zookeeper, time.time())
    cluster.pids[2] = None
    cluster.logs[2].append(REFUSAL)
    injector.heal(zookeeper, time.time())
    assert cluster.starts == [2]
    assert "broker(s) [2] started again" in injector.done[0].detail
