"""Kafka's Java client (kafka-clients 4.1.1) on three brokers of real processes, in both
controller modes (KRaft, and ZooKeeper mode where a broker elected through ZooKeeper is the
controller).

One JVM runs the Admin client's view of the cluster (describeCluster, describeMetadataQuorum,
createTopics with RF 3), an ``acks=all`` idempotent producer, and a consumer group of two
range members that read everything back; a second moves a partition
(alterPartitionReassignments, listPartitionReassignments) and a third elects its preferred
leader (electLeaders). The guarantees checked:

- the client sees the cluster the brokers describe: three nodes, a controller among them,
  and in KRaft mode the quorum of controllers;
- every record acknowledged under ``acks=all`` (``min.insync.replicas=2``) is read by the
  group exactly once, in order per partition, and the group's committed offsets are the
  partitions' ends;
- a reassignment asked through any broker is carried out by the controller, and the
  preferred leader elected afterwards leads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minikafka.broker.testing import ProcessCluster
from tests.cluster._cluster import (
    MODES,
    create_on,
    in_sync,
    shared_cluster,
    state,
    wait_for,
)
from tests.compat import _java

pytestmark = [pytest.mark.external, pytest.mark.timeout(300)]

RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"


@pytest.fixture(scope="module", params=MODES)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    with shared_cluster(tmp_path_factory.mktemp("cluster"), mode=request.param) as made:
        yield made


def member(name: str, group: str, topic: str) -> dict[str, Any]:
    return {
        "op": "join",
        "name": name,
        "subscribe": [topic],
        "commit": True,
        "config": {
            "group.id": group,
            "client.id": name,
            "partition.assignment.strategy": RANGE,
            "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "500",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
        },
    }


def test_java_producer_group_and_admin_on_a_cluster(cluster: ProcessCluster) -> None:
    brokers = sorted(cluster.broker_ports)
    topic, group, count = "java-numbers", "java-group", 300
    sent = _java.records(topic, count)
    run = _java.scenario(
        cluster.bootstrap,
        [
            {"op": "admin", "action": "describe_cluster"},
            {"op": "admin", "action": "describe_quorum"},
            {
                "op": "admin",
                "action": "create_topics",
                "topics": [
                    {
                        "name": topic,
                        "partitions": 3,
                        "replication": 3,
                        "configs": {"min.insync.replicas": "2"},
                    }
                ],
            },
            {
                "op": "produce",
                "topic": topic,
                "records": sent,
                "config": {"acks": "all", "enable.idempotence": "true"},
            },
            member("a", group, topic),
            member("b", group, topic),  # 5
            {"op": "await_group", "names": ["a", "b"], "partitions": 3},
            {"op": "await_records", "names": ["a", "b"], "count": count},  # 7
            {"op": "leave", "names": ["a", "b"]},
            {"op": "admin", "action": "list_group_offsets", "group": group},  # 9
            {"op": "admin", "action": "describe_topics", "names": [topic]},
        ],
    )
    described = run.result(0)
    assert sorted(node["id"] for node in described["nodes"]) == brokers
    assert described["controller"] in brokers
    controllers = sorted(set(cluster.node_ids) - set(brokers))
    if controllers:  # KRaft: the quorum of controllers, as its leader describes it
        quorum = run.result(1)
        assert quorum["leader_id"] in controllers
        assert sorted(voter for voter, _end in quorum["voters"]) == controllers
        assert quorum["high_watermark"] > 0
    else:  # ZooKeeper mode has no metadata quorum: the brokers do not offer the API
        error = run.error(1)
        assert error["type"] == "UnsupportedVersionException"
        assert error["message"] == "The node does not support DESCRIBE_QUORUM"
    acks = run.result(3)["acks"]
    read = run.result(7)
    got = read["a"] + read["b"]
    assert sorted(r["value"] for r in got) == sorted(r["value"] for r in sent)
    for partition in range(3):
        for name in ("a", "b"):  # each member read each partition in order
            mine = [r["offset"] for r in read[name] if r["partition"] == partition]
            assert mine == sorted(mine)
        offsets = sorted(r["offset"] for r in got if r["partition"] == partition)
        acked = sorted(o for p, o in acks if p == partition)
        assert offsets == acked == list(range(len(acked)))  # each exactly once
    ends = {f"{topic}-{p}": sum(1 for q, _ in acks if q == p) for p in range(3)}
    assert run.result(9) == {tp: [end, ""] for tp, end in ends.items() if end}
    for partition in run.result(10)[topic]["partitions"]:
        assert sorted(partition["replicas"]) == brokers

    # A partition moves from the first two brokers to the last two, then its preferred
    # replica, the first of the new list, is elected.
    first, second, third = brokers
    create_on(cluster, "java-moving", [first, second])
    run = _java.scenario(
        cluster.bootstrap,
        [
            {
                "op": "admin",
                "action": "alter_reassignments",
                "moves": [["java-moving", 0, [third, second]]],
            },
            {"op": "admin", "action": "list_reassignments"},
        ],
    )
    assert run.result(0) == {"moving": 1}
    assert set(run.result(1)) <= {"java-moving-0"}  # the copy may be over already
    wait_for(
        lambda: state(cluster, "java-moving").replicas == (third, second),
        f"replicas {third}, {second}",
    )
    wait_for(in_sync(cluster, "java-moving", 0, 2), "both in sync")
    elect = {
        "op": "admin",
        "action": "elect_leaders",
        "partitions": [["java-moving", 0]],
    }
    run = _java.scenario(cluster.bootstrap, [elect])
    assert run.result(0)["java-moving-0"] in (None, "ElectionNotNeededException")
    wait_for(lambda: state(cluster, "java-moving").leader == third, f"{third} leading")
