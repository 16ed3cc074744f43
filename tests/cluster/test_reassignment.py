"""Reassignment across brokers, with real processes (KIP-455, seed 000), driven by
``minikafka reassign-partitions`` as an operator would drive kafka-reassign-partitions.sh.

- **Moving a partition loses nothing**: on four brokers, a partition on the first three
  moves to the last three while an idempotent ``acks=all`` producer writes to it. The
  fourth broker copies the log as a new follower, joins the ISR, the first leaves; every
  acknowledged record is read back once, in order; the first broker's copy is deleted
  (``log.segment.delete.delay.ms``).

The move holds in KRaft mode and in ZooKeeper mode, where the controller keeps
the reassignment's phases in the topic znode.
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
from minikafka.net.testing import FaultProxies, FaultProxy
from tests.cluster._cluster import (
    MODES,
    WAIT,
    MakeCluster,
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
            {
                "version": 1,
                "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}],
            }
        )
    )
    return path


@pytest.mark.parametrize("mode", MODES)
def test_moving_a_partition_to_another_broker_loses_nothing(
    make_cluster: MakeCluster, tmp_path: Path, mode: str
) -> None:
    # Removed logs go 100 ms after their rename, at the next retention check (500 ms).
    deletion = {
        "log.segment.delete.delay.ms": "100",
        "log.retention.check.interval.ms": "500",
    }
    cluster = make_cluster(4, mode=mode, **deletion)
    # Brokers 1-4 in KRaft mode, 0-3 in ZooKeeper mode: named by their place here.
    one, two, three, four = sorted(cluster.broker_ports)
    create_on(cluster, "moving", [one, two, three])
    acked: list[int] = []
    errors: list[KafkaError] = []
    stop = threading.Event()

    def write() -> None:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "enable.idempotence": True,
                "log_level": 0,
            }
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
        target = plan(tmp_path / "plan.json", "moving", [two, three, four])
        started = tool(cluster, "--execute", "--reassignment-json-file", str(target))
        assert "Successfully started partition reassignments for moving-0" in started
        rollback = json.loads(started.split("\n\n")[1])
        assert rollback["partitions"][0]["replicas"] == [one, two, three]
        wait_for(
            lambda: (
                "moving-0 is complete."
                in tool(cluster, "--verify", "--reassignment-json-file", str(target))
            ),
            "the reassignment to finish",
        )
        assert set(state(cluster, "moving").replicas) == {two, three, four}
        count = len(acked)
        wait_for(lambda: len(acked) > count + 300, "records after the move")
    finally:
        stop.set()
        writer.join(WAIT * 2)
    assert not errors, errors
    wait_for(in_sync(cluster, "moving", 0), "the new replica set in sync")
    wait_for(
        lambda: not list(cluster.node_dir(one).glob("moving-0*")),
        f"broker {one}'s copy deleted",
    )
    read = [int(v) for v in read_values(cluster, "moving")]
    assert read == sorted(set(read)), "duplicates or disorder"
    assert not set(acked) - set(read), "acknowledged records lost"


def test_cancelling_a_reassignment_restores_the_original_replicas(
    make_cluster: MakeCluster, tmp_path: Path
) -> None:
    # KRaft mode only: in ZooKeeper mode the controller's UpdateMetadata to the stalled
    # broker travels the same stalled links, so that broker's Metadata answers lag the
    # move, and the scenario is another one.
    links: list[FaultProxies] = []
    cluster = make_cluster(4, proxies=links)
    [proxies] = links
    one, two, three, four = sorted(cluster.broker_ports)
    create_on(cluster, "stuck", [one, two, three])
    proxies.call(one, FaultProxy.stall)  # the fourth broker cannot copy from the leader
    proxies.call(one, FaultProxy.cut)
    target = plan(tmp_path / "plan.json", "stuck", [two, three, four])
    tool(cluster, "--execute", "--reassignment-json-file", str(target))
    verified = tool(cluster, "--verify", "--reassignment-json-file", str(target))
    assert "Reassignment of partition stuck-0 is still in progress." in verified
    assert set(state(cluster, "stuck").replicas) == {
        one,
        two,
        three,
        four,
    }  # adding four
    cancelled = tool(cluster, "--cancel", "--reassignment-json-file", str(target))
    assert "Successfully cancelled partition reassignments for: stuck-0" in cancelled
    # Back on the original brokers, in the order of the replica set during the move
    # minus the one being added (Kafka's PartitionReassignmentRevert): two, three, one.
    wait_for(
        lambda: state(cluster, "stuck").replicas == (two, three, one),
        "the original replicas",
    )
    proxies.call(one, FaultProxy.heal)
    wait_for(in_sync(cluster, "stuck", 0), "back in sync")
    after = tool(cluster, "--verify", "--reassignment-json-file", str(target))
    assert "There is no active reassignment of partition stuck-0" in after
