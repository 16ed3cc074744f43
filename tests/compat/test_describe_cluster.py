"""The cluster, described, from real clients: DescribeCluster (KIP-700, KIP-919's endpoint
types, KIP-1073's fenced brokers) and DescribeLogDirs (KIP-113, KIP-827).

What each test proves:

- kafka-python's ``describe_cluster`` asks v2 with the fenced brokers, which only
  DescribeCluster answers (each broker's ``is_fenced``), and gets the node, the node as
  controller (a KRaft broker names a live broker) and every operation on the cluster
  (no authorizer); its ``describe_log_dirs`` gives
  the broker's log dir with the partitions asked: their sizes as on disk, lag 0, the
  volume's bytes, a topic this broker does not hold absent;
- an endpoint asked for the other kind of endpoint (a broker for controllers, the
  controllers' listener for brokers) answers MISMATCHED_ENDPOINT_TYPE, and the
  controllers' listener lists the quorum's voters with its leader as controller;
- on three brokers with racks, in both controller modes, every broker lists every broker
  with its rack, and names the same controller as Metadata (ZooKeeper mode: the
  controller broker); DescribeLogDirs through kafka-python reaches each broker and each
  lists its replica.

confluent-kafka's and aiokafka's ``describe_cluster`` send Metadata, not DescribeCluster
(librdkafka's protocol log shows a MetadataRequest), and neither has a
``describe_log_dirs``: they have no cell here. The Java client's are in test_java.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from confluent_kafka import Producer
from confluent_kafka.admin import AclOperation, AdminClient  # type: ignore[attr-defined]
from kafka.admin import KafkaAdminClient, NewTopic
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_cluster.v1.response import DescribeClusterResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from minikafka.broker.testing import BrokerProcess, ProcessCluster
from minikafka.net.testing import RawConnection, request_frame
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import WAIT, create_on, shared_cluster, wait_for

CLUSTER_OPERATIONS = {
    AclOperation.CREATE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
}
BROKERS_TYPE, CONTROLLERS_TYPE = 1, 2


def describe_cluster_raw(host: str, port: int, endpoint_type: int) -> Any:
    """One DescribeCluster v1 of ``endpoint_type`` on a bare connection, its answer."""

    async def ask() -> Any:
        connection = RawConnection(await trio.open_tcp_stream(host, port))
        try:
            body = DescribeClusterRequest(
                include_cluster_authorized_operations=False,
                endpoint_type=i8(endpoint_type),
            )
            await connection.send(request_frame(body, 7))
            with trio.fail_after(WAIT):
                answer = await connection.receive_response(60, 1)
        finally:
            await connection.aclose()
        assert answer is not None
        correlation_id, response = answer
        assert correlation_id == 7
        return response

    return trio.run(ask)


# --- one broker --------------------------------------------------------------------------


@pytest.mark.compat("DescribeCluster", "kafka-python")
def test_kafka_python_describes_the_cluster_and_its_fenced_brokers_field(
    broker: BrokerProcess,
) -> None:
    # Guarantee: kafka-python's DescribeCluster v2 (it falls back to Metadata only on
    # an old broker) is answered: the node with is_fenced false, the controller, every
    # cluster operation.
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = client.describe_cluster()
    finally:
        client.close()
    # v2 (KIP-1073): each broker's is_fenced, which Metadata has not.
    assert described["brokers"] == [
        {
            "broker_id": 1,
            "host": broker.host,
            "port": broker.port,
            "rack": None,
            "is_fenced": False,
        }
    ]
    assert described["controller_id"] == 1
    assert described["cluster_id"]
    assert set(described["authorized_operations"]) == {
        op.name for op in CLUSTER_OPERATIONS
    }


@pytest.mark.compat("DescribeLogDirs", "kafka-python")
def test_kafka_python_describes_the_log_dir_and_the_partitions_asked(
    broker: BrokerProcess,
) -> None:
    # Guarantee: DescribeLogDirs gives the broker's log dir, the volume's bytes, and
    # each partition asked that it holds with its size as on disk (nothing produced:
    # 0), lag 0, no future log; an unknown topic is absent; topics null asks for all.
    topic = "describe-log-dirs"
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        client.create_topics([NewTopic(topic, 3, 1)])  # answered once created
        producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        for i in range(30):
            producer.produce(topic, b"v" * (i + 1), partition=i % 2)  # none to 2
        assert producer.flush(WAIT) == 0
        [asked] = client.describe_log_dirs({topic: [0, 2], "no-such-topic": [0]})
        [everything] = client.describe_log_dirs()
    finally:
        client.close()
    assert asked["broker"] == 1
    [log_dir] = asked["log_dirs"]
    assert Path(log_dir["log_dir"]) == broker.data_dir
    assert log_dir["error_code"] == 0
    assert log_dir["total_bytes"] == shutil.disk_usage(broker.data_dir).total
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    [described] = log_dir["topics"]  # the unknown topic is absent, not an error
    assert described["name"] == topic
    on_disk = {
        p: sum(
            f.stat().st_size for f in (broker.data_dir / f"{topic}-{p}").glob("*.log")
        )
        for p in (0, 2)
    }
    assert {
        p["partition_index"]: p["partition_size"] for p in described["partitions"]
    } == on_disk
    assert on_disk[0] > 0 == on_disk[2]
    assert {(p["offset_lag"], p["is_future_key"]) for p in described["partitions"]} == {
        (0, False)
    }
    # Asked for everything (topics null): every partition of the topic, 1 among them.
    [whole] = everything["log_dirs"]
    partitions = [
        p["partition_index"]
        for t in whole["topics"]
        if t["name"] == topic
        for p in t["partitions"]
    ]
    assert sorted(partitions) == [0, 1, 2]


def test_a_broker_asked_for_controllers_answers_mismatched_endpoint_type(
    broker: BrokerProcess,
) -> None:
    # Guarantee (KIP-919): a broker describes brokers only; asked for controllers it
    # answers MISMATCHED_ENDPOINT_TYPE and lists nothing.
    answer = describe_cluster_raw(broker.host, broker.port, CONTROLLERS_TYPE)
    assert isinstance(answer, DescribeClusterResponse)
    assert answer.error_code is ErrorCode.mismatched_endpoint_type
    assert answer.brokers == ()
    unknown = describe_cluster_raw(broker.host, broker.port, 3)
    assert unknown.error_code is ErrorCode.unsupported_endpoint_type
    fine = describe_cluster_raw(broker.host, broker.port, BROKERS_TYPE)
    assert fine.error_code is ErrorCode.none
    assert [int(b.broker_id) for b in fine.brokers] == [1]
    assert fine.endpoint_type == BROKERS_TYPE


# --- three brokers, both modes -------------------------------------------------------------

RACKS = {1: "a", 2: "a", 3: "b"}


def _cluster_params() -> list[Any]:
    zookeeper = pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(),
        reason="Debian's zookeeper is installed by `make test`",
    )
    return ["kraft", pytest.param("zookeeper", marks=zookeeper)]


@pytest.fixture(scope="module", params=_cluster_params())
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    mode: str = request.param
    # ZooKeeper mode numbers its brokers from 0: the same racks, one lower.
    racks = RACKS if mode == "kraft" else {b - 1: r for b, r in RACKS.items()}
    with shared_cluster(
        tmp_path_factory.mktemp(f"cluster-{mode}"), mode=mode, racks=racks
    ) as made:
        yield made


def racks_of(cluster: ProcessCluster) -> dict[int, str]:
    first = min(cluster.broker_ports)
    return {b: RACKS[b - first + 1] for b in cluster.broker_ports}


@pytest.mark.external
@pytest.mark.compat("DescribeCluster", "kafka-python")
@pytest.mark.compat("DescribeLogDirs", "kafka-python")
def test_every_broker_lists_every_broker_with_its_rack(cluster: ProcessCluster) -> None:
    # Guarantee: through each broker, DescribeCluster lists the three brokers at their
    # addresses with their racks, and names as controller a node it lists: in ZooKeeper
    # mode the controller broker, which Metadata names too; in KRaft mode a live
    # broker. DescribeLogDirs, sent to every broker, finds the topic's replica on each.
    racks = racks_of(cluster)
    expected = {b: (p, racks[b]) for b, p in cluster.broker_ports.items()}

    def listed(port: int) -> dict[int, tuple[int, str | None]]:
        answer = describe_cluster_raw(cluster.host, port, BROKERS_TYPE)
        assert answer.error_code is ErrorCode.none
        return {int(b.broker_id): (int(b.port), b.rack) for b in answer.brokers}

    for broker, port in sorted(cluster.broker_ports.items()):
        wait_for(lambda p=port: listed(p) == expected, f"broker {broker} lists all")  # type: ignore[misc]
        answer = describe_cluster_raw(cluster.host, port, BROKERS_TYPE)
        assert int(answer.controller_id) in cluster.broker_ports
        if cluster.zookeeper_mode:
            client = AdminClient(
                {"bootstrap.servers": f"{cluster.host}:{port}", "log_level": 0}
            )
            metadata = client.list_topics(timeout=WAIT)
            assert int(answer.controller_id) == metadata.controller_id

    topic = "described-everywhere"
    create_on(cluster, topic, sorted(cluster.broker_ports))
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)

    def holders() -> dict[int, list[int]]:
        """Broker -> the partitions of ``topic`` its one log dir lists."""
        return {
            a["broker"]: [
                p["partition_index"]
                for d in a["log_dirs"]
                for t in d["topics"]
                if t["name"] == topic
                for p in t["partitions"]
            ]
            for a in kp.describe_log_dirs({topic: [0]})
        }

    try:
        told = kp.describe_cluster()
        # Each replica's log is made when its broker hears it is one (a follower may
        # be counted in sync before that): every broker lists it soon after.
        wait_for(
            lambda: holders() == {b: [0] for b in cluster.broker_ports},
            "every broker lists its replica",
        )
    finally:
        kp.close()
    assert {b["broker_id"]: b["rack"] for b in told["brokers"]} == racks
    assert {b["is_fenced"] for b in told["brokers"]} == {False}


@pytest.mark.external
def test_the_controllers_listener_lists_the_voters(cluster: ProcessCluster) -> None:
    # Guarantee (KIP-919): in KRaft mode the controllers' listener, asked for
    # controllers, lists the quorum's voters at their addresses with the quorum's
    # leader as controller, and asked for brokers answers MISMATCHED_ENDPOINT_TYPE.
    if cluster.zookeeper_mode:
        pytest.skip("ZooKeeper mode has no controllers' listener")
    controllers = cluster.controller_ids
    for node in controllers:
        port = cluster.listen_port(node)
        answer = describe_cluster_raw(cluster.host, port, CONTROLLERS_TYPE)
        assert answer.error_code is ErrorCode.none
        assert answer.endpoint_type == CONTROLLERS_TYPE
        assert [(int(b.broker_id), int(b.port)) for b in answer.brokers] == [
            (c, cluster.listen_port(c)) for c in controllers
        ]
        assert int(answer.controller_id) in controllers
        wrong = describe_cluster_raw(cluster.host, port, BROKERS_TYPE)
        assert wrong.error_code is ErrorCode.mismatched_endpoint_type
