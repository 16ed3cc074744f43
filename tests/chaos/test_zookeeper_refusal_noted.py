"""A ZooKeeper-mode broker whose start-up gave up for want of ZooKeeper is noted as
such whichever step starts it again, not only ZooKeeper's heal (chaos seed 125: a
``broker-remove`` heal started it, and the run ended with a false "crash").

Staged on a stand-in for ``ProcessCluster`` (the real start-up refusal is staged in
``test_zookeeper_start.py``): broker 1 is killed, and started again by the kill's heal
into a start-up that gives up; another fault's step then comes before anything starts it
again.
"""

from __future__ import annotations

import time

from chaos.faults import ZOOKEEPER_REFUSED, Injector
from chaos.nemesis import Fault
from chaos.runner import crashes
from minikafka.broker._node_exits import NodeCrash

REFUSAL = (
    f"minikafka broker: stopped by an I/O error: {ZOOKEEPER_REFUSED} "
    "zookeeper.connect=10.234.0.254:23160 within 6 s"
)


class GivingUpCluster:
    """Brokers 0-2; a broker started gives up at once for want of ZooKeeper."""

    node_ids = (0, 1, 2)
    controller_ids = ()
    bootstrap = "127.0.0.1:9092"

    def __init__(self) -> None:
        self.pids: dict[int, int | None] = {0: 100, 1: 101, 2: 102}
        self.logs: dict[int, list[str]] = {n: ["started"] for n in self.node_ids}
        self.exits: list[tuple[int, int]] = []  # (node, pid) ended untold

    def pid(self, node: int) -> int | None:
        return self.pids[node]

    def tail(self, node: int, lines: int = 20) -> str:
        return "\n".join(self.logs[node][-lines:])

    def kill(self, node: int) -> None:
        self.pids[node] = None

    def start(self, node: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        pid = 200 + node + len(self.exits)
        self.logs[node] += [f"tracing to trace-node{node}-{pid}-*.jsonl", REFUSAL]
        self.exits.append((node, pid))
        self.pids[node] = None

    def crashes(self) -> list[NodeCrash]:
        return [
            NodeCrash(
                node, f"(pid {pid}) exited with status 1 without being told to", ""
            )
            for node, pid in self.exits
        ]


def test_a_start_up_given_up_for_want_of_zookeeper_is_noted_at_the_next_step() -> None:
    cluster = GivingUpCluster()
    injector = Injector(cluster, True, None, "", "chaos")  # type: ignore[arg-type]
    kill = Fault(0, 1, "kill", (1,))
    injector.start(kill, time.time())
    injector.heal(kill, time.time())  # broker 1 starts, and gives up
    assert injector.stopped_without_zookeeper == set()
    # The next step, whatever its kind, notes it before anything starts broker 1 again.
    other = Fault(2, 3, "kill", (2,))
    injector.start(other, time.time())
    assert injector.stopped_without_zookeeper == {1}
    cluster.logs[1].append("registered, broker epoch 90")  # started again, log goes on
    assert crashes(cluster, injector) == []  # type: ignore[arg-type]


def test_a_broker_that_ended_otherwise_is_still_a_crash() -> None:
    """Only the refusal's last line excuses an exit: a broker whose log ends otherwise
    is a crash."""
    cluster = GivingUpCluster()
    injector = Injector(cluster, True, None, "", "chaos")  # type: ignore[arg-type]
    cluster.pids[1] = None
    cluster.logs[1].append("Traceback (most recent call last):")
    cluster.exits.append((1, 101))
    injector.start(Fault(0, 1, "kill", (2,)), time.time())
    assert injector.stopped_without_zookeeper == set()
    assert crashes(cluster, injector) == [  # type: ignore[arg-type]
        "node 1 (pid 101) exited with status 1 without being told to"
    ]
