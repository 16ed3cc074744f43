"""Changing a topic's configuration in ZooKeeper mode, from real clients, on three
``minikafka broker`` processes and Debian's ZooKeeper (IncrementalAlterConfigs,
KIP-339, and the legacy AlterConfigs, KIP-133, as Kafka 2.8's brokers serve them).

What each test proves:

- a change from confluent-kafka is written to ``/config/topics/<topic>`` with one
  ``/config/changes`` notification, and every broker, asked on its own, then describes
  the topic with the new overrides as DYNAMIC_TOPIC_CONFIG (``cleanup.policy`` APPENDed
  to its default); the new ``max.message.bytes`` refuses a larger record at once
  (MESSAGE_TOO_LARGE) and lets a smaller one through; the legacy AlterConfigs then
  replaces the whole set on every broker;
- kafka-python changes a topic both ways (IncrementalAlterConfigs and AlterConfigs);
- ``validate_only`` and bad input (an unknown key, a bad value, APPEND to a non-list
  key, an unknown topic) get Kafka's errors and change nothing, in ZooKeeper or on any
  broker;
- a broker's dynamic configs (KIP-226): the cluster-wide ``log.retention.ms`` and
  ``message.max.bytes`` set through one broker (minikafka's admin client names the
  resource ``""``) reach every broker's DescribeConfigs of a topic without overrides
  as DYNAMIC_DEFAULT_BROKER_CONFIG, and a 5000-byte record is refused there at once;
  a broker's own value beats it on that broker (DYNAMIC_BROKER_CONFIG), a restarted
  broker keeps both layers, and DELETE brings the static values back everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import trio
from confluent_kafka import KafkaError, KafkaException, Producer

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpResourceType
from kafka.admin import KafkaAdminClient
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse

from minikafka.broker.testing import ProcessCluster
from minikafka.client import AdminClient as MkAdminClient
from minikafka.client import AlterConfigOp as MkAlterConfigOp
from minikafka.client import AlterConfigOpType as MkOpType
from minikafka.client import ConfigResource as MkConfigResource
from minikafka.client import KafkaError as MkKafkaError
from minikafka.client._admin_configs import describe_request, described
from minikafka.net import NetworkClient, Node
from minikafka.zk import (
    CONFIG_CHANGES,
    ZkClient,
    decode_config_change,
    decode_topic_config,
    topic_config_path,
)
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import (
    WAIT,
    admin,
    create_topic,
    in_sync,
    shared_cluster,
    wait_for,
)

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.external,
    pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(),
        reason="Debian's zookeeper is installed by `make test`",
    ),
]

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND = AlterConfigOpType.APPEND
DYNAMIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value
BROKERS = (0, 1, 2)  # ZooKeeper mode numbers its brokers from 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One ZooKeeper-mode cluster for the module: each test has topics of its own."""
    with shared_cluster(tmp_path_factory.mktemp("cluster"), mode="zookeeper") as made:
        yield made


def result_of(futures: Mapping[Any, Any]) -> dict[Any, object]:
    """Each future's result, or the name of the Kafka error it failed with."""
    out: dict[Any, object] = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout=WAIT)
        except KafkaException as exc:
            out[key] = exc.args[0].name()
    return out


def incremental(
    client: AdminClient,
    topic: str,
    *entries: tuple[str, str | None, AlterConfigOpType],
    validate_only: bool = False,
    kind: ResourceType = ResourceType.TOPIC,
) -> object:
    """IncrementalAlterConfigs of one topic (or another ``kind`` of resource): None, or
    the error's name."""
    resource = ConfigResource(
        kind,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)
            for name, value, op in entries
        ],
    )
    futures = client.incremental_alter_configs([resource], validate_only=validate_only)
    [(_, outcome)] = result_of(futures).items()
    return outcome


def described_by(
    cluster: ProcessCluster, broker: int, topic: str, kind: int = 2
) -> dict[str, tuple[str | None, int]]:
    """Each key's value and source, as DescribeConfigs sent to ``broker`` itself tells
    them (a client's admin would pick any broker); none before the broker knows the
    topic. ``kind`` 4: the broker resource named ``topic``."""

    async def ask() -> dict[str, tuple[str | None, int]]:
        async with NetworkClient.open(client_id="test") as client:
            node = Node(broker, cluster.host, cluster.port(broker))
            body = describe_request(
                [MkConfigResource(kind, topic)], include_synonyms=False
            )
            response = await client.send(node, body)
        assert isinstance(response, DescribeConfigsResponse)
        (result,) = response.results
        entries = described(result)
        if isinstance(entries, MkKafkaError):
            return {}  # the broker has not heard of the topic yet
        return {k: (e.value, int(e.source)) for k, e in entries.items()}

    return trio.run(ask)


def in_zookeeper(cluster: ProcessCluster, topic: str) -> tuple[dict[str, str], int]:
    """The topic's overrides in ZooKeeper, and how many notifications name it."""

    async def read() -> tuple[dict[str, str], int]:
        client = ZkClient(cluster.zookeeper.connect_string, session_timeout=6.0)
        await client.connect(connect_timeout=WAIT)
        try:
            data, _ = await client.get(topic_config_path(topic))
            named = 0
            for child in await client.get_children(CONFIG_CHANGES):
                path = f"{CONFIG_CHANGES}/{child}"
                note, _ = await client.get(path)
                named += decode_config_change(path, note) == ("topics", topic)
            return decode_topic_config(topic, data), named
        finally:
            await client.close()

    return trio.run(read)


def on_every_broker(
    cluster: ProcessCluster, topic: str, expected: Mapping[str, tuple[str, int]]
) -> None:
    """Wait until every broker describes ``topic`` with ``expected`` (key -> value,
    source)."""

    def agree() -> bool:
        for broker in BROKERS:
            found = described_by(cluster, broker, topic)
            if any(found.get(k) != v for k, v in expected.items()):
                return False
        return True

    wait_for(agree, f"every broker describes {topic} with {dict(expected)}")


def produce_one(cluster: ProcessCluster, topic: str, size: int) -> KafkaError | None:
    """One record of a ``size``-byte value: the error it was refused with, or None."""
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "log_level": 0}
    )
    outcome: list[KafkaError | None] = []
    # With a key: a compacted topic refuses a record without one.
    producer.produce(
        topic, key=b"k", value=b"x" * size, on_delivery=lambda e, _: outcome.append(e)
    )
    assert producer.flush(WAIT) == 0, "no answer to the produce"
    (error,) = outcome
    return error


def test_confluent_changes_reach_every_broker_and_the_produce_limit(
    cluster: ProcessCluster,
) -> None:
    topic = "zk-cfg"
    create_topic(cluster, topic, 1, {"retention.ms": "3600000"})
    client = admin(cluster)
    changed = incremental(
        client,
        topic,
        ("retention.ms", "60000", SET),
        ("max.message.bytes", "2000", SET),
        ("cleanup.policy", "compact", APPEND),
    )
    assert changed is None
    assert in_zookeeper(cluster, topic) == (
        {
            "retention.ms": "60000",
            "max.message.bytes": "2000",
            "cleanup.policy": "delete,compact",
        },
        1,
    )
    on_every_broker(
        cluster,
        topic,
        {
            "retention.ms": ("60000", DYNAMIC),
            "max.message.bytes": ("2000", DYNAMIC),
            "cleanup.policy": ("delete,compact", DYNAMIC),
        },
    )
    # In force at once on the leader: above the limit refused, below it taken.
    refused = produce_one(cluster, topic, 5000)
    assert refused is not None
    assert refused.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert produce_one(cluster, topic, 500) is None

    # The legacy AlterConfigs: the request's set is the whole set.
    resource = ConfigResource(
        ResourceType.TOPIC, topic, set_config={"max.message.bytes": "200000"}
    )
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):
        assert result_of(client.alter_configs([resource])) == {resource: None}
    on_every_broker(
        cluster,
        topic,
        {
            "max.message.bytes": ("200000", DYNAMIC),
            "retention.ms": ("604800000", DEFAULT),
            "cleanup.policy": ("delete", DEFAULT),
        },
    )
    assert produce_one(cluster, topic, 5000) is None


def test_kafka_python_alters_a_topics_configs_both_ways(
    cluster: ProcessCluster,
) -> None:
    topic = "zk-cfg-kafka-python"
    create_topic(cluster, topic, 1)
    # kafka-python describes the topic first, on any broker, and refuses keys the
    # answer lacks ("Unrecognized configs"): a broker that has not had the topic's
    # UpdateMetadata yet answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does.
    on_every_broker(cluster, topic, {"retention.ms": ("604800000", DEFAULT)})
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        resource = KpConfigResource(
            KpResourceType.TOPIC, topic, configs={"retention.ms": "120000"}
        )
        answer: Any = client.alter_configs([resource], incremental=True)
        assert answer == {"topic": {topic: "OK"}}
        on_every_broker(cluster, topic, {"retention.ms": ("120000", DYNAMIC)})
        # AlterConfigs, which kafka-python fills with the other overrides first.
        resource = KpConfigResource(
            KpResourceType.TOPIC, topic, configs={"segment.ms": "86400000"}
        )
        answer = client.alter_configs([resource], incremental=False)
        assert answer == {"topic": {topic: "OK"}}
    finally:
        client.close()
    on_every_broker(
        cluster,
        topic,
        {"segment.ms": ("86400000", DYNAMIC), "retention.ms": ("120000", DYNAMIC)},
    )


def test_validate_only_and_bad_input_get_kafkas_errors_and_change_nothing(
    cluster: ProcessCluster,
) -> None:
    topic = "zk-cfg-refused"
    create_topic(cluster, topic, 1, {"retention.ms": "3600000"})
    client = admin(cluster)
    before = in_zookeeper(cluster, topic)
    assert before == ({"retention.ms": "3600000"}, 0)
    on_every_broker(cluster, topic, {"retention.ms": ("3600000", DYNAMIC)})
    described_before = {b: described_by(cluster, b, topic) for b in BROKERS}
    outcomes = {
        "validate only": incremental(
            client, topic, ("retention.ms", "1", SET), validate_only=True
        ),
        "validate only, bad": incremental(
            client, topic, ("retention.ms", "soon", SET), validate_only=True
        ),
        "unknown key": incremental(client, topic, ("no.such.key", "1", SET)),
        "bad value": incremental(client, topic, ("retention.ms", "soon", SET)),
        "append to a non-list": incremental(
            client, topic, ("retention.ms", "5", APPEND)
        ),
        "one bad of two": incremental(
            client,
            topic,
            ("retention.ms", "5", SET),
            ("max.message.bytes", "big", SET),
        ),
        "unknown topic": incremental(
            client, topic + "-missing", ("retention.ms", "5", SET)
        ),
    }
    assert outcomes == {
        "validate only": None,
        "validate only, bad": "INVALID_CONFIG",
        "unknown key": "INVALID_CONFIG",
        "bad value": "INVALID_CONFIG",
        "append to a non-list": "INVALID_CONFIG",
        "one bad of two": "INVALID_CONFIG",
        "unknown topic": "UNKNOWN_TOPIC_OR_PART",
    }
    assert in_zookeeper(cluster, topic) == before
    assert {b: described_by(cluster, b, topic) for b in BROKERS} == described_before


# --- a broker's dynamic configs (KIP-226) ------------------------------------------------------

CLUSTER_WIDE = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
OWN = ConfigSource.DYNAMIC_BROKER_CONFIG.value


def cluster_default(cluster: ProcessCluster, changes: Mapping[str, str | None]) -> None:
    """Change the cluster-wide dynamic broker default, the resource ``""``, through
    broker 0 (none of the Python clients here can name it: minikafka's own admin client
    does, as Java's Admin and kafka-configs --entity-default do): a value SETs the key,
    None DELETEs it."""
    client = MkAdminClient({"bootstrap.servers": f"{cluster.host}:{cluster.port(0)}"})
    ops = [
        MkAlterConfigOp(k, v)
        if v is not None
        else MkAlterConfigOp(k, None, MkOpType.DELETE)
        for k, v in changes.items()
    ]
    resource = MkConfigResource(ResourceType.BROKER.value, "")
    [future] = client.incremental_alter_configs({resource: ops}).values()
    assert future.result(timeout=WAIT) is None


def test_broker_defaults_reach_every_broker_and_a_restarted_one_keeps_them(
    cluster: ProcessCluster,
) -> None:
    topic = "zk-cfg-broker-defaults"
    create_topic(cluster, topic, 1)
    client = admin(cluster)
    try:
        cluster_default(
            cluster, {"log.retention.ms": "60000", "message.max.bytes": "2000"}
        )
        on_every_broker(
            cluster,
            topic,
            {
                "retention.ms": ("60000", CLUSTER_WIDE),
                "max.message.bytes": ("2000", CLUSTER_WIDE),
            },
        )
        # In force at once on a topic without overrides.
        refused = produce_one(cluster, topic, 5000)
        assert refused is not None
        assert refused.code() == KafkaError.MSG_SIZE_TOO_LARGE
        assert produce_one(cluster, topic, 500) is None

        # Broker 1's own value beats the cluster-wide one, on broker 1 alone.
        own = incremental(
            client, "1", ("log.retention.ms", "7000", SET), kind=ResourceType.BROKER
        )
        assert own is None
        wait_for(
            lambda: (
                described_by(cluster, 1, topic).get("retention.ms") == ("7000", OWN)
            ),
            "broker 1 describes its own value",
        )
        assert described_by(cluster, 0, topic)["retention.ms"] == (
            "60000",
            CLUSTER_WIDE,
        )

        # A restarted broker reads both layers again.
        for broker in (1, 2):
            cluster.stop(broker)
            cluster.start(broker)
        wait_for(in_sync(cluster, topic, 0), f"{topic}-0 in sync again")
        assert described_by(cluster, 1, topic)["retention.ms"] == ("7000", OWN)
        assert described_by(cluster, 1, "1", kind=4)["log.retention.ms"] == (
            "7000",
            OWN,
        )
        on_every_broker(cluster, topic, {"max.message.bytes": ("2000", CLUSTER_WIDE)})
        assert described_by(cluster, 2, "", kind=4) == {
            "log.retention.ms": ("60000", CLUSTER_WIDE),
            "message.max.bytes": ("2000", CLUSTER_WIDE),
        }

        # DELETE: the static values everywhere. (A client of its own: the first one's
        # connections to brokers 1 and 2 died with them, and librdkafka backs off before
        # it connects again.)
        client = admin(cluster)
        deleted = incremental(
            client, "1", ("log.retention.ms", None, DELETE), kind=ResourceType.BROKER
        )
        assert deleted is None
        cluster_default(cluster, {"log.retention.ms": None, "message.max.bytes": None})
        on_every_broker(
            cluster,
            topic,
            {
                "retention.ms": ("604800000", DEFAULT),
                "max.message.bytes": ("1048588", DEFAULT),
            },
        )
        assert produce_one(cluster, topic, 5000) is None
    finally:
        # The module's other topics are not this test's: no default left behind.
        incremental(
            client, "1", ("log.retention.ms", None, DELETE), kind=ResourceType.BROKER
        )
        cluster_default(cluster, {"log.retention.ms": None, "message.max.bytes": None})
