"""A ``reassign`` drawn while another reassignment is under way is skipped (chaos seed
405): a partition being moved lists its old and new replicas together, four of them,
and rotating that list asked Kafka's tool for four replicas, which it accepts unless
told ``--disallow-replication-factor-change``; the heal, refused beside a killed
broker, left two partitions at four replicas, and the run's end waited for three in
sync. The end now compares each ISR with the partition's own replicas and names those
that are not whole. Unit level: the admin operations and the cluster are fakes."""

from __future__ import annotations

import subprocess
import time
from types import SimpleNamespace
from typing import cast

import pytest

from chaos import operations, runner
from chaos.faults import Injector
from chaos.nemesis import Fault
from minikafka.broker.testing import ProcessCluster

MOVING = {0: [2, 3, 1], 1: [3, 1, 2, 4], 2: [1, 2, 3]}
"""Partition 1 in the middle of a move from broker 2 to broker 4."""


def _injector(monkeypatch: pytest.MonkeyPatch, asked: list[object]) -> Injector:
    monkeypatch.setattr(operations, "replicas", lambda servers, topic: MOVING)

    def reassign(servers: str, topic: str, assignment: dict[int, list[int]]) -> str:
        asked.append(assignment)
        return "started"

    monkeypatch.setattr(operations, "reassign", reassign)
    cluster = cast(ProcessCluster, object())  # an admin step touches no node
    return Injector(cluster, zookeeper=False, servers="127.0.0.1:9")


def test_a_reassign_during_another_is_skipped_and_its_heal_moves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []
    injector = _injector(monkeypatch, asked)
    fault = Fault(1.0, 2.0, "reassign")
    injector.start(fault, now=1.0)
    injector.heal(fault, now=2.0)
    [record] = injector.done
    assert record.started is None
    assert record.skipped == f"a reassignment is under way: {{1: {MOVING[1]}}}"
    assert asked == []  # neither the start nor the heal asked the tool for anything


def test_the_tool_is_told_never_to_change_the_replication_factor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> SimpleNamespace:
        ran.append(command)
        return SimpleNamespace(returncode=0, stdout="Successfully started\n", stderr="")

    monkeypatch.setattr(subprocess, "run", run)  # as operations calls it
    operations.reassign("127.0.0.1:9", "chaos", {0: [2, 3, 1]})
    [command] = ran
    assert "--disallow-replication-factor-change" in command


class _Metadata:
    """What confluent-kafka's ``list_topics`` answers, as far as the wait reads it."""

    def __init__(self, replicas: dict[int, tuple[list[int], list[int]]]) -> None:
        partitions = {
            p: SimpleNamespace(leader=r[0], replicas=r, isrs=isr)
            for p, (r, isr) in replicas.items()
        }
        topic = SimpleNamespace(error=None, partitions=partitions)
        self.topics = {runner.TOPIC: topic}


def test_the_end_names_a_partition_whose_isr_is_whole_at_four_replicas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three in sync of four replicas is not whole, four of four is not three: both
    named with what the metadata said."""
    answer = _Metadata(
        {
            0: ([1, 2, 3], [1, 2, 3]),
            1: ([3, 1, 2, 4], [3, 1, 2, 4]),
            2: ([1, 2], [1, 2]),
        }
    )

    class Admin:
        def __init__(self, config: dict[str, object]) -> None:
            pass

        def list_topics(self, topic: str, timeout: float) -> _Metadata:
            return answer

    monkeypatch.setattr(runner, "AdminClient", Admin)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    short = runner.not_whole("servers", 3, time.monotonic() + 0.2)
    assert short == [
        "1: leader 3 replicas [3, 1, 2, 4] isr [3, 1, 2, 4]",
        "2: leader 1 replicas [1, 2] isr [1, 2]",
    ]
    answer.topics[runner.TOPIC].partitions[1].isrs = [3, 1]
    assert not runner._whole("servers", 2, time.monotonic() + 0.2)
    answer.topics[runner.TOPIC].partitions[1] = SimpleNamespace(
        leader=3, replicas=[3, 1, 2], isrs=[1, 2, 3]
    )
    assert runner._whole("servers", 2, time.monotonic() + 0.2)
