"""Reassignment across brokers, with real processes (KIP-455, seed 000), driven by
``minikafka reassign-partitions`` as an operator would drive kafka-reassign-partitions.sh.

- **Moving a partition loses nothing**: on four brokers, a partition on {1, 2, 3} moves
  to {2, 3, 4} while an idempotent ``acks=all`` producer writes to it. Broker 4 copies
  the log as a new follower, joins the ISR, broker 1 leaves; every acknowledged record
  is read back once, in order; broker 1's copy is deleted (``log.segment.delete.delay.ms``).
- **Cancelling restores the original replicas**: a move whose new replica cannot catch
  up (the links into the leader are stalled by a fault proxy) is still in progress, as
  ``--verify`` says; ``--cancel`` ends it with the partition back on its old brokers
  (in the order Kafka reverts to: the moving replica set without the added replica).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from minikafka.broker.testing import ProcessCluster
from minikafka.net.testing import FaultProxy
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    Proxies,
    create_on,
    in_sync,
    read_values,
    state,
    wait_for,
)

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = pytest.mark.timeout(300)


def tool(cluster: ProcessCluster, *args: str) -> str:
    """``minikafka reassign-partitions`` against the cluster; its output."""
    command = [sys.executable, "-m", "minikafka.broker", "reassign-partitions"]
    result = subprocess.run(
        [*command, "--bootstrap-server", cluster.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def plan(path: Path, topic: str, replicas: list[int]) -> Path:
    path.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
        )
    )
    return path


def test_moving_a_partition_to_another_broker_loses_nothing(
    make_cluster: MakeCluster, tmp_path: Path
) -> None:
    # Removed logs go 100 ms after their rename, at the next retention check (500 ms).
    deletion = {"log.segment.delete.delay.ms": "100", "log.retention.check.interval.ms": "500"}
    cluster = make_cluster(4, **deletion)
    create_on(cluster, "moving", [1, 2, 3])
    acked: list[int] = []
    errors: list[KafkaError] = []
    stop = threading.Event()

    def write() -> None:
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "log_level": 0}
        )

        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                errors.append(error)
            else:
                value = message.value()
                assert value is not None
                acked.append(int(value))

        number = 0
        while not stop.is_set():
            producer.produce("moving", b"%d" % number, partition=0, on_delivery=report)
            number += 1
            producer.poll(0.001)
        producer.flush(WAIT)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        wait_for(lambda: len(acked) > 300, "records flowing")
        target = plan(tmp_path / "plan.json", "moving", [2, 3, 4])
        started = tool(cluster, "--execute", "--reassignment-json-file", str(target))
        assert "Successfully started partition reassignments for moving-0" in started
        rollback = json.loads(started.split("\n\n")[1])
        assert rollback["partitions"][0]["replicas"] == [1, 2, 3]
        wait_for(
            lambda: (
                "moving-0 is complete."
                in tool(cluster, "--verify", "--reassignment-json-file", str(target))
            ),
            "the reassignment to finish",
        )
        assert set(state(cluster, "moving").replicas) == {2, 3, 4}
        count = len(acked)
        wait_for(lambda: len(acked) > count + 300, "records after the move")
    finally:
        stop.set()
        writer.join(WAIT * 2)
    assert not errors, errors
    wait_for(in_sync(cluster, "moving", 0), "the new replica set in sync")
    wait_for(lambda: not list(cluster.node_dir(1).glob("moving-0*")), "broker 1's copy deleted")
    read = [int(v) for v in read_values(cluster, "moving")]
    assert read == sorted(set(read)), "duplicates or disorder"
    assert not set(acked) - set(read), "acknowledged records lost"


def test_cancelling_a_reassignment_restores_the_original_replicas(
    make_cluster: MakeCluster, tmp_path: Path
) -> None:
    links: list[Proxies] = []
    cluster = make_cluster(4, proxies=links)
    [proxies] = links
    create_on(cluster, "stuck", [1, 2, 3])
    proxies.call(1, FaultProxy.stall)  # broker 4 cannot copy from the leader
    proxies.call(1, FaultProxy.cut)
    target = plan(tmp_path / "plan.json", "stuck", [2, 3, 4])
    tool(cluster, "--execute", "--reassignment-json-file", str(target))
    verified = tool(cluster, "--verify", "--reassignment-json-file", str(target))
    assert "Reassignment of partition stuck-0 is still in progress." in verified
    assert set(state(cluster, "stuck").replicas) == {1, 2, 3, 4}  # adding broker 4
    cancelled = tool(cluster, "--cancel", "--reassignment-json-file", str(target))
    assert "Successfully cancelled partition reassignments for: stuck-0" in cancelled
    # Back on the original brokers, in the order of the replica set during the move
    # minus the one being added (Kafka's PartitionReassignmentRevert): 2, 3, 1.
    wait_for(lambda: state(cluster, "stuck").replicas == (2, 3, 1), "the original replicas")
    proxies.call(1, FaultProxy.heal)
    wait_for(in_sync(cluster, "stuck", 0), "back in sync")
    after = tool(cluster, "--verify", "--reassignment-json-file", str(target))
    assert "There is no active reassignment of partition stuck-0" in after
