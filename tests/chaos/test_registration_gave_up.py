"""A KRaft broker that stops because its registration did not go through within
``initial.broker.registration.timeout.ms`` (Kafka's ``BrokerLifecycleManager`` stops
so) is not a crash of the run; any other untold exit still is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import minikafka.broker._server as server
from chaos.runner import REGISTRATION_GAVE_UP, crashes
from minikafka.broker._node_exits import NodeCrash


class Cluster:
    """Brokers 1 and 2 each ended with status 1, untold; only 1 gave up registering."""

    def __init__(self) -> None:
        self.logs = {
            1: [
                "registering with the controller quorum",
                f"ERROR Shutting down because we were {REGISTRATION_GAVE_UP}.",
                "minikafka broker: stopped: not registered within 60000 ms",
                "started again by the heal",  # the log goes on after the end's heal
            ],
            2: ["minikafka broker: cannot start: a listener cannot be bound"],
        }

    def tail(self, node: int, lines: int = 20) -> str:
        return "\n".join(self.logs[node][-lines:])

    def crashes(self) -> list[NodeCrash]:
        return [
            NodeCrash(n, f"(pid {100 + n}) exited with status 1 without being told to")
            for n in (1, 2)
        ]


class Injector:
    def __init__(self) -> None:
        self.halted: set[int] = set()
        self.stopped_without_zookeeper: set[int] = set()

    def note_zookeeper_refusals(self) -> None:
        pass


def test_a_broker_that_gave_up_registering_is_not_a_crash() -> None:
    cluster: Any = Cluster()
    injector: Any = Injector()
    assert crashes(cluster, injector) == [
        "node 2 (pid 102) exited with status 1 without being told to"
    ]


def test_the_broker_says_what_the_harness_looks_for() -> None:
    """The line the harness looks for is the broker's own."""
    assert REGISTRATION_GAVE_UP in Path(server.__file__).read_text()
