"""Rack-aware placement on a real cluster (seed 001, manual and rack-aware strategies).

Brokers 1 and 2 stand in rack ``a``, broker 3 alone in rack ``b`` (``broker.rack``). A
topic of six partitions with two replicas each is created through confluent-kafka's
AdminClient, in KRaft mode (the QuorumController places it) and in ZooKeeper mode (the
ZooKeeper-era controller does). Guarantee tested: every partition has a replica in each
rack, so losing a whole rack leaves every partition a copy; the rack-unaware layout of
the same brokers puts two of the six partitions' replicas in rack ``a`` alone, so the
test fails if the brokers' racks do not reach the placement. Also: the brokers'
Metadata tells a client each broker's rack (kafka-python's ``BrokerMetadata.rack``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from kafka import KafkaAdminClient

from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import WAIT, admin, shared_cluster, wait_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.external]

RACKS = {1: "a", 2: "a", 3: "b"}


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_every_partition_has_a_replica_in_each_rack(tmp_path: Path, mode: str) -> None:
    if mode == "zookeeper" and not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    # ZooKeeper mode numbers its brokers from 0: the same racks, one lower.
    racks = RACKS if mode == "kraft" else {b - 1: r for b, r in RACKS.items()}
    with shared_cluster(tmp_path, mode=mode, racks=racks) as cluster:
        client = admin(cluster)
        topic = NewTopic("spread", num_partitions=6, replication_factor=2)
        client.create_topics([topic])["spread"].result(timeout=WAIT)

        def placed() -> dict[int, list[int]]:
            found = client.list_topics("spread", timeout=5).topics["spread"]
            return {p: list(m.replicas) for p, m in found.partitions.items()}

        wait_for(lambda: len(placed()) == 6, "six partitions in the metadata")
        for partition, replicas in placed().items():
            assert {racks[b] for b in replicas} == {"a", "b"}, (partition, replicas)

        told = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            # kafka-python's DescribeCluster (v2) gives each broker's rack.
            brokers = told.describe_cluster()["brokers"]
        finally:
            told.close()
        assert {b["broker_id"]: b["rack"] for b in brokers} == racks
