"""The faults that are not a node's process or a partition, carried out for real: a
slow link, ZooKeeper's server killed or paused, and the admin operations started
mid-fault (a preferred leader election, a reassignment), each as Kafka's users run
them. :class:`chaos.faults.Injector` calls these; each returns what it did, for the
fault's record (``detail``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ProcessCluster

from . import netns

ZOOKEEPER_WAIT = 60.0
"""Seconds ZooKeeper's server gets to answer ``ruok`` once started again."""


def slow(network: netns.Network, node: int, params: dict[str, float]) -> str:
    """``node``'s link slowed (:func:`chaos.netns.slow`: netem, or tbf without it)."""
    how = netns.slow(
        network,
        node,
        params.get("delay_ms", 100.0),
        params.get("jitter_ms", 0.0),
        params.get("loss_percent", 0.0),
    )
    if how == "netem":
        return "tc netem: delay, jitter and loss as drawn"
    return (
        f"tc tbf (no netem qdisc here): egress at {netns.TBF_RATE}, queued packets wait"
    )


def zookeeper_down(cluster: ProcessCluster, kind: str) -> str:
    """ZooKeeper's server SIGKILLed (``kill-zookeeper``) or SIGSTOPped."""
    pid = cluster.zookeeper.pid()
    if pid is None:
        raise RuntimeError("ZooKeeper's server is not running")
    if kind == "pause-zookeeper":
        os.kill(pid, signal.SIGSTOP)
        return f"SIGSTOP to ZooKeeper's server (pid {pid})"
    cluster.zookeeper.kill()
    return f"SIGKILL to ZooKeeper's server (pid {pid})"


def zookeeper_up(cluster: ProcessCluster, kind: str, pid: int | None) -> None:
    """ZooKeeper's server continued (``pid``, the one paused) or started again."""
    if kind == "pause-zookeeper" and pid is not None:
        os.kill(pid, signal.SIGCONT)
    elif cluster.zookeeper.pid() is None:
        cluster.zookeeper.start(ZOOKEEPER_WAIT)


ELECT_WAIT = 60.0
"""Seconds a preferred leader election gets to be answered."""


def elect_preferred(servers: str, topic: str) -> str:
    """A preferred leader election over ``topic``'s partitions (Kafka's
    ``ElectLeaders``, KIP-460), as ``kafka-leader-election.sh --election-type
    PREFERRED`` starts one; each partition's answer, summed up. A partition whose
    preferred leader is down or already leads answers with an error: that is Kafka's
    answer, not a failure to start the operation."""
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    found = client.list_topics(topic, timeout=10).topics[topic]
    partitions = [TopicPartition(topic, p) for p in sorted(found.partitions)]
    try:
        answers = client.elect_leaders(ElectionType.PREFERRED, partitions).result(
            timeout=ELECT_WAIT
        )
    except (
        KafkaException
    ) as exc:  # the whole request answered so (mid-fault: a timeout)
        return f"elect-leaders PREFERRED answered {exc.args[0].name()}"
    except TimeoutError:
        # The same outcome as librdkafka's _TIMED_OUT above, whose timer and this wait
        # race: chaos seed 174's start answered _TIMED_OUT, its heal timed out here.
        return f"elect-leaders PREFERRED unanswered within {ELECT_WAIT:g}s"
    said = sorted(
        f"{tp.partition}:{'ok' if error is None else error.name()}"
        for tp, error in answers.items()
    )
    return "elect-leaders PREFERRED " + " ".join(said)


def replicas(servers: str, topic: str, timeout: float = 10.0) -> dict[int, list[int]]:
    """Each partition of ``topic`` and its replicas, in order; empty if no broker
    listed its partitions within ``timeout`` seconds. A broker whose metadata is behind
    (restarted, or not told of the topic yet) answers the topic with an error and no
    partitions, which is not the assignment: another Metadata is asked, as Kafka's
    tool asks again."""
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    deadline = time.monotonic() + timeout
    while True:
        found = client.list_topics(topic, timeout=timeout).topics[topic]
        if found.partitions or time.monotonic() >= deadline:
            return {p: list(m.replicas) for p, m in sorted(found.partitions.items())}
        time.sleep(0.2)  # polling the cluster's metadata, inside the deadline


def rotated(assignment: dict[int, list[int]]) -> dict[int, list[int]]:
    """Every partition's replicas rotated by one: the same brokers, another
    preferred leader (the first replica)."""
    return {p: r[1:] + r[:1] for p, r in assignment.items()}


def reassign(servers: str, topic: str, assignment: dict[int, list[int]]) -> str:
    """``assignment`` started by ``minikafka reassign-partitions --execute`` (Kafka's
    ``kafka-reassign-partitions.sh``), from its JSON file; the tool's last line."""
    document = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": r}
            for p, r in sorted(assignment.items())
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(document, file)
    try:
        command = [sys.executable, "-m", "minikafka.tools", "reassign-partitions"]
        command += ["--bootstrap-server", servers, "--execute"]
        command += ["--reassignment-json-file", file.name]
        # Moves, never a change of replication factor: a list read wrong is refused.
        command += ["--disallow-replication-factor-change"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(file.name)
    output = done.stdout + done.stderr
    said = last_line(output)
    if done.returncode != 0:
        raise RefusedError(
            f"reassign-partitions exited {done.returncode}: {said}",
            per_partition=PER_PARTITION in output,
        )
    moves = " ".join(f"{p}:{r}" for p, r in sorted(assignment.items()))
    return f"reassign-partitions --execute {moves}: {said}"


def unregister(servers: str, node: int) -> str:
    """Broker ``node``'s registration removed by ``minikafka cluster unregister``
    (Kafka's ``kafka-cluster.sh unregister``: UnregisterBroker, KIP-631), as an operator
    retires a KRaft broker for good; what the tool said, its exit status named when it
    failed (the controller moving mid-fault: the registration stays, fenced)."""
    command = [sys.executable, "-m", "minikafka.broker", "cluster", "unregister"]
    command += ["--bootstrap-server", servers, "--id", str(node)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    said = last_line(done.stdout + done.stderr)
    if done.returncode != 0:
        return f"cluster unregister --id {node} exited {done.returncode}: {said}"
    return f"cluster unregister --id {node}: {said}"


_FRAME = "│╭╮╰╯─ "
"""The box a usage error is drawn in (typer's): not what the tool said."""


def last_line(output: str) -> str:
    """The tool's last line of text, out of the box a usage error is drawn in."""
    lines = [line.strip(_FRAME) for line in output.splitlines()]
    said = [line for line in lines if line and line != "Error"]
    return said[-1] if said else ""


PER_PARTITION = "Error reassigning partition(s)"
"""What the tool says when the controller refused some partitions of the file, one line
each: the others may have moved."""


class RefusedError(RuntimeError):
    """Kafka's tool refused the operation (as it refuses, mid-fault, an assignment
    naming a broker that is not registered then): Kafka's answer, kept in the
    record, not a failure of the harness. ``per_partition``: the controller refused
    some partitions, and the rest of the file may have moved."""

    def __init__(self, message: str, *, per_partition: bool = False) -> None:
        super().__init__(message)
        self.per_partition = per_partition
