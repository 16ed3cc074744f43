"""A broker a membership change stops that has not ended after
:data:`~chaos.membership.STOP_WAIT` is killed, never left ending on its own.

Chaos seed 303: ``broker-remove`` sent node 2 SIGTERM while ZooKeeper's server was
paused; its controlled shutdown timed out, a Metadata request in flight took 30 s more,
and its ZooKeeper session's close waited on the paused server: it ended 61 s later.
The drain's ``cluster.stop`` gave up after 60 s and raised, so the fault was recorded
as failed, not started, and had no heal to start the broker again; the end's
``heal_all`` found it still ending, and the run ended with three partitions short of
broker 2 ("not every partition had its whole ISR again after healing").
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from chaos import membership
from chaos.faults import Injector
from chaos.nemesis import Fault
from minikafka.broker.testing import ClusterError

HOME = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 0], 3: [3, 0, 1]}


class SlowToStop:
    """Four brokers; ``slow``'s shutdown outlasts any wait (the harness's
    ``ProcessCluster`` raises ClusterError then, the process still running)."""

    def __init__(self, slow: int) -> None:
        self.slow = slow
        self.zookeeper_mode = True
        self.broker_ports = {0: 1, 1: 2, 2: 3, 3: 4}
        self.node_ids = [0, 1, 2, 3]
        self.running = {0, 1, 2, 3}
        self.signalled: list[tuple[str, int]] = []

    def pid(self, node: int) -> int | None:
        return 100 + node if node in self.running else None

    def stop(self, node: int, timeout: float = 60.0) -> None:
        self.signalled.append(("SIGTERM", node))
        if node == self.slow:
            raise ClusterError(f"node {node} still running after {timeout:.0f}s")
        self.running.discard(node)

    def kill(self, node: int) -> None:
        self.signalled.append(("SIGKILL", node))
        self.running.discard(node)

    def start(self, node: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        assert node not in self.running
        self.running.add(node)


def _no_moves(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The drain's and the heal's reassignments, refused (ZooKeeper paused)."""
    waits: list[bool] = []

    def moved(
        servers: str, topic: str, target: dict[int, list[int]], *, wait: bool
    ) -> tuple[str, bool]:
        waits.append(wait)
        return "refused: reassign-partitions exited 1: timed out", False

    monkeypatch.setattr(membership, "_moved", moved)
    return waits


def test_a_broker_that_does_not_end_in_time_is_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_moves(monkeypatch)
    cluster: Any = SlowToStop(2)
    said, first = membership.remove_broker(cluster, 2, "s", "chaos", HOME)
    assert cluster.signalled == [("SIGTERM", 2), ("SIGKILL", 2)]
    assert cluster.pid(2) is None
    assert "broker 2 still running 90s after SIGTERM, killed (SIGKILL)" in said
    assert said.startswith("refused: ")  # what the tool said is kept
    assert first == {}


def test_a_broker_that_ends_in_time_is_not_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_moves(monkeypatch)
    cluster: Any = SlowToStop(-1)
    said = membership.retire_broker(cluster, 2, "s", "chaos", {})
    assert cluster.signalled == [("SIGTERM", 2)]
    assert said == (
        "nothing to move back; "
        "broker 2 shut down (its /brokers/ids znode gone with its session)"
    )


def test_the_removed_broker_comes_back_at_the_heal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_moves(monkeypatch)
    cluster: Any = SlowToStop(2)
    injector = Injector(cluster, False, None, "s", "chaos")
    injector._home_assignment = dict(HOME)
    fault = Fault(249.454, 266.275, "broker-remove", (2,))
    injector.start(fault, time.time())
    (record,) = injector.done
    assert record.error == "", record
    assert record.started is not None
    assert cluster.pid(2) is None  # not left ending on its own
    injector.heal(fault, time.time())
    assert record.error == "", record
    assert "broker 2 registered again" in record.detail
    assert cluster.pid(2) is not None
