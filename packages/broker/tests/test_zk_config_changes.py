"""Dynamic topic configs in ZooKeeper mode: three ZkBrokerServers on a real ZooKeeper.

Guarantees checked:

- IncrementalAlterConfigs sent to a broker that is not the controller is written by
  that broker to ``/config/topics/<topic>`` with one ``/config/changes`` notification
  naming the topic (Kafka's JSON), and answered once written;
- every broker then applies it without a restart: DescribeConfigs, asked of each
  broker, shows the overrides as DYNAMIC_TOPIC_CONFIG, each replica's log has the new
  LogConfig (retention, max.message.bytes, cleanup.policy APPENDed to its default) and
  min.insync.replicas, and the controller's copy of the topic's configs follows;
- the legacy AlterConfigs replaces the whole set: a key it leaves out is gone;
- ``validate_only``, an unknown key, a bad value, an unknown topic, a static broker key
  and a bad broker value write nothing (no config, no notification) and are answered
  with Kafka's errors; a dynamic broker key is written to ``/config/brokers/<id>``;
- a broker's dynamic configs (KIP-226), cluster-wide (``""``, written to
  ``/config/brokers/<default>``) or its own (``/config/brokers/<id>``), sent to a
  broker that is not the controller, reach every broker without a restart: each
  replica of a topic without an override takes the new ``log.retention.ms`` and
  ``message.max.bytes`` (a topic's override wins), DescribeConfigs names
  DYNAMIC_DEFAULT_BROKER_CONFIG or DYNAMIC_BROKER_CONFIG, a broker's own beats the
  cluster-wide value on that broker alone (the others ignore it), DELETE brings the
  static value back, and the controller's copy follows;
- a broker that was down while changes were made starts from the newest notification,
  reads the topic's current config when it hosts the topic again, and the cluster-wide
  dynamic defaults before it hosts anything, and follows the next change;
- the listener hands each notification over once, oldest first, and again after a
  ZooKeeper failure (not after any other).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
import trio
from kazoo.exceptions import ConnectionLoss
from kio.schema.alter_configs.v1.response import AlterConfigsResponse
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1.response import (
    IncrementalAlterConfigsResponse,
)

from minikafka.broker import ZkBrokerServer
from minikafka.broker._local_replicas import LoggingFaultHandler
from minikafka.broker.testing import free_ports
from minikafka.broker.zk._config_changes import DynamicConfigManager
from minikafka.client import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    KafkaError,
)
from minikafka.client._admin_configs import (
    alter_request,
    describe_request,
    described,
    incremental_request,
)
from minikafka.client._admin_types import ConfigSource
from minikafka.client._async_admin import AsyncAdminClient
from minikafka.common import TopicPartition
from minikafka.controller import ConfigResourceType
from minikafka.net import Node
from minikafka.tools._connection import connect
from minikafka.tools._topics import create_topic
from minikafka.zk import (
    CONFIG_CHANGES,
    NoNodeError,
    TopicAssignment,
    ZkClient,
    ZooKeeperServer,
    alter_topic_config,
    decode_config_change,
    decode_topic_config,
    topic_config_path,
    topic_path,
)
from minikafka.zk.testing import needs_zookeeper

from .test_zk_mode import (
    DEADLINE,
    bootstrap,
    broker_config,
    eventually,
    the_controller,
    zk_cluster,
)

pytestmark = [pytest.mark.external, needs_zookeeper]

TOPIC = ConfigResource(2, "t")
CLUSTER_WIDE = ConfigResource(4, "")
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND = AlterConfigOpType.APPEND


def node(broker: ZkBrokerServer) -> Node:
    host, port = broker.bound_address()
    return Node(broker.config.node_id, host, port)


async def incremental(
    admin: AsyncAdminClient,
    broker: ZkBrokerServer,
    *ops: AlterConfigOp,
    resource: ConfigResource = TOPIC,
    validate_only: bool = False,
) -> tuple[ErrorCode, str | None]:
    """IncrementalAlterConfigs sent to ``broker`` itself: its one resource's answer."""
    body = incremental_request({resource: ops}, [resource], validate_only=validate_only)
    response = await admin.request(node(broker), body, IncrementalAlterConfigsResponse)
    (result,) = response.responses
    return result.error_code, result.error_message


async def describe(
    admin: AsyncAdminClient, broker: ZkBrokerServer, resource: ConfigResource = TOPIC
) -> dict[str, ConfigEntry]:
    """DescribeConfigs of t (or ``resource``), answered by ``broker``."""
    body = describe_request([resource], include_synonyms=False)
    response = await admin.request(node(broker), body, DescribeConfigsResponse)
    (result,) = response.results
    entries = described(result)
    assert not isinstance(entries, KafkaError), entries
    return entries


async def in_zookeeper(
    zookeeper: ZooKeeperServer,
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """t's overrides and every notification there, in order."""
    client = ZkClient(zookeeper.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=DEADLINE)
    try:
        data, _ = await client.get(topic_config_path("t"))
        children = sorted(await client.get_children(CONFIG_CHANGES))
        notes = []
        for child in children:
            path = f"{CONFIG_CHANGES}/{child}"
            note, _ = await client.get(path)
            notes.append(decode_config_change(path, note))
        return decode_topic_config("t", data), notes
    finally:
        await client.close()


async def znode(zookeeper: ZooKeeperServer, path: str) -> object:
    """The JSON in ``path`` (None: no such znode)."""
    client = ZkClient(zookeeper.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=DEADLINE)
    try:
        data, _ = await client.get(path)
    except NoNodeError:
        return None
    finally:
        await client.close()
    return json.loads(data)


async def notifications(zookeeper: ZooKeeperServer) -> list[tuple[str, str]]:
    """Every notification there, in order."""
    client = ZkClient(zookeeper.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=DEADLINE)
    try:
        notes = []
        for child in sorted(await client.get_children(CONFIG_CHANGES)):
            path = f"{CONFIG_CHANGES}/{child}"
            note, _ = await client.get(path)
            notes.append(decode_config_change(path, note))
        return notes
    finally:
        await client.close()


async def every(
    brokers: dict[int, ZkBrokerServer],
    admin: AsyncAdminClient,
    check: Callable[[dict[str, ConfigEntry]], bool],
    what: str,
) -> None:
    """Within the deadline, DescribeConfigs of every broker passes ``check``."""
    with trio.move_on_after(DEADLINE):
        while True:
            answers = [await describe(admin, b) for b in brokers.values()]
            if all(check(a) for a in answers):
                return
            await trio.sleep(0.05)
    raise AssertionError(f"not within {DEADLINE} s on every broker: {what}")


def dynamic(entries: dict[str, ConfigEntry], key: str) -> str | None:
    entry = entries.get(key)
    if entry is None or entry.source != ConfigSource.DYNAMIC_TOPIC_CONFIG:
        return None
    return entry.value


async def test_a_change_through_any_broker_reaches_every_broker_and_replica(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    async with zk_cluster(zookeeper, tmp_path) as brokers:
        controller = await the_controller(brokers)
        other = next(b for b in brokers.values() if b is not controller)
        async with connect(bootstrap(other), client_id="test") as admin:
            assert await create_topic(
                admin,
                "t",
                partitions=1,
                replication_factor=3,
                configs={"segment.ms": "3600000"},
            )
            tp = TopicPartition("t", 0)
            await eventually(
                lambda: all(
                    (p := b.replica_manager.get_partition(tp)) is not None
                    and len(p.isr) == 3
                    for b in brokers.values()
                ),
                "t-0 in sync on every broker",
            )

            # Sent to a broker that is not the controller: it writes ZooKeeper itself.
            answer = await incremental(
                admin,
                other,
                AlterConfigOp("retention.ms", "60000", SET),
                AlterConfigOp("max.message.bytes", "2000", SET),
                AlterConfigOp("cleanup.policy", "compact", APPEND),
                AlterConfigOp("min.insync.replicas", "2", SET),
            )
            assert answer == (ErrorCode.none, None)
            overrides, notes = await in_zookeeper(zookeeper)
            assert overrides == {
                "segment.ms": "3600000",
                "retention.ms": "60000",
                "max.message.bytes": "2000",
                "cleanup.policy": "delete,compact",
                "min.insync.replicas": "2",
            }
            assert notes == [("topics", "t")]

            await every(
                brokers,
                admin,
                lambda e: (
                    dynamic(e, "retention.ms") == "60000"
                    and dynamic(e, "max.message.bytes") == "2000"
                    and dynamic(e, "cleanup.policy") == "delete,compact"
                ),
                "DescribeConfigs shows the overrides",
            )

            def applied() -> bool:
                for b in brokers.values():
                    p = b.replica_manager.get_partition(tp)
                    if p is None:
                        return False
                    config = p.log.config
                    if (
                        config.retention_ms,
                        config.max_message_bytes,
                        config.cleanup_policy,
                        config.segment_ms,
                        p.min_insync_replicas,
                    ) != (60000, 2000, frozenset({"delete", "compact"}), 3600000, 2):
                        return False
                return True

            await eventually(applied, "every replica's log has the new settings")
            await eventually(
                lambda: (
                    controller.shell.core is not None
                    and controller.shell.core.context.configs.get("t", {}).get(
                        "max.message.bytes"
                    )
                    == "2000"
                ),
                "the controller's copy follows",
            )

            # The legacy AlterConfigs: the request's set becomes the whole set.
            resource = TOPIC
            body = alter_request(
                {resource: {"retention.ms": "120000"}}, [resource], validate_only=False
            )
            replaced = await admin.request(node(other), body, AlterConfigsResponse)
            assert [r.error_code for r in replaced.responses] == [ErrorCode.none]
            await every(
                brokers,
                admin,
                lambda e: (
                    dynamic(e, "retention.ms") == "120000"
                    and dynamic(e, "max.message.bytes") is None
                    and dynamic(e, "segment.ms") is None
                ),
                "the legacy AlterConfigs' whole set",
            )
            await eventually(
                lambda: all(
                    (p := b.replica_manager.get_partition(tp)) is not None
                    and p.log.config.max_message_bytes == 1024 * 1024 + 12
                    and p.min_insync_replicas == 1
                    for b in brokers.values()
                ),
                "the deleted overrides are the defaults again on every replica",
            )


async def test_validate_only_and_bad_changes_write_nothing_and_get_kafkas_errors(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    async with zk_cluster(zookeeper, tmp_path, count=1) as brokers:
        (broker,) = brokers.values()
        async with connect(bootstrap(broker), client_id="test") as admin:
            assert await create_topic(
                admin,
                "t",
                partitions=1,
                replication_factor=1,
                configs={"retention.ms": "3600000"},
            )
            before = await in_zookeeper(zookeeper)
            assert before == ({"retention.ms": "3600000"}, [])
            refused = {
                "validate only": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("retention.ms", "1", SET),
                    validate_only=True,
                ),
                "unknown key": await incremental(
                    admin, broker, AlterConfigOp("no.such.key", "1", SET)
                ),
                "bad value": await incremental(
                    admin, broker, AlterConfigOp("retention.ms", "soon", SET)
                ),
                "append to a non-list": await incremental(
                    admin, broker, AlterConfigOp("retention.ms", "5", APPEND)
                ),
                "one bad of two": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("retention.ms", "5", SET),
                    AlterConfigOp("max.message.bytes", "big", SET),
                ),
                "unknown topic": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("retention.ms", "5", SET),
                    resource=ConfigResource(2, "missing"),
                ),
                "a static broker key": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("log.dirs", "/elsewhere", SET),
                    resource=ConfigResource(4, "1"),
                ),
                "a bad broker value": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("log.retention.ms", "soon", SET),
                    resource=CLUSTER_WIDE,
                ),
                "validate only, broker": await incremental(
                    admin,
                    broker,
                    AlterConfigOp("log.retention.ms", "5", SET),
                    resource=ConfigResource(4, "1"),
                    validate_only=True,
                ),
            }
            codes = {k: v[0] for k, v in refused.items()}
            assert codes == {
                "validate only": ErrorCode.none,
                "unknown key": ErrorCode.invalid_config,
                "bad value": ErrorCode.invalid_config,
                "append to a non-list": ErrorCode.invalid_config,
                "one bad of two": ErrorCode.invalid_config,
                "unknown topic": ErrorCode.unknown_topic_or_partition,
                "a static broker key": ErrorCode.invalid_request,
                "a bad broker value": ErrorCode.invalid_request,
                "validate only, broker": ErrorCode.none,
            }
            assert refused["unknown topic"][1] == "Topic 'missing' does not exist."
            assert refused["a static broker key"][1] == (
                "Cannot update these configs dynamically: Set(log.dirs)"
            )
            assert await in_zookeeper(zookeeper) == before
            for layer in ("/config/brokers/1", "/config/brokers/<default>"):
                assert await znode(zookeeper, layer) is None
            entries = await describe(admin, broker)
            assert dynamic(entries, "retention.ms") == "3600000"

            # A dynamic broker key is written, with its notification.
            answer = await incremental(
                admin,
                broker,
                AlterConfigOp("log.retention.ms", "86400000", SET),
                resource=ConfigResource(4, "1"),
            )
            assert answer == (ErrorCode.none, None)
            assert await znode(zookeeper, "/config/brokers/1") == {
                "version": 1,
                "config": {"log.retention.ms": "86400000"},
            }
            assert await notifications(zookeeper) == [("brokers", "1")]


# --- a broker's dynamic configs (KIP-226) ------------------------------------------------------

DEFAULT_BROKER = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
OWN_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG
STATIC_RETENTION_MS = 7 * 24 * 3600 * 1000  # log.retention.hours' default, 168
STATIC_MAX_BYTES = 1024 * 1024 + 12


def log_settings(broker: ZkBrokerServer, topic: str) -> tuple[int, int] | None:
    """The retention.ms and max.message.bytes of ``topic``-0's replica on ``broker``."""
    p = broker.replica_manager.get_partition(TopicPartition(topic, 0))
    if p is None:
        return None
    return p.log.config.retention_ms, p.log.config.max_message_bytes


def value_and_source(
    entries: dict[str, ConfigEntry], key: str
) -> tuple[str | None, ConfigSource] | None:
    entry = entries.get(key)
    return None if entry is None else (entry.value, entry.source)


async def replicas_have(
    brokers: Iterable[ZkBrokerServer], topic: str, expected: tuple[int, int], what: str
) -> None:
    chosen = list(brokers)
    await eventually(
        lambda: all(log_settings(b, topic) == expected for b in chosen), what
    )


async def test_broker_defaults_reach_every_broker_and_every_topic_without_an_override(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    async with zk_cluster(zookeeper, tmp_path) as brokers:
        controller = await the_controller(brokers)
        other = next(b for b in brokers.values() if b is not controller)
        async with connect(bootstrap(other), client_id="test") as admin:
            assert await create_topic(admin, "t", partitions=1, replication_factor=3)
            assert await create_topic(
                admin,
                "u",
                partitions=1,
                replication_factor=3,
                configs={"retention.ms": "3600000"},
            )
            await replicas_have(
                brokers.values(),
                "t",
                (STATIC_RETENTION_MS, STATIC_MAX_BYTES),
                "t-0 on every broker, with the static defaults",
            )

            # Cluster-wide, sent to a broker that is not the controller.
            answer = await incremental(
                admin,
                other,
                AlterConfigOp("log.retention.ms", "60000", SET),
                AlterConfigOp("message.max.bytes", "2000", SET),
                resource=CLUSTER_WIDE,
            )
            assert answer == (ErrorCode.none, None)
            cluster_wide = {"log.retention.ms": "60000", "message.max.bytes": "2000"}
            assert await znode(zookeeper, "/config/brokers/<default>") == {
                "version": 1,
                "config": cluster_wide,
            }
            assert await notifications(zookeeper) == [("brokers", "<default>")]
            await replicas_have(
                brokers.values(), "t", (60000, 2000), "every t replica takes them"
            )
            # u's own retention.ms wins; its max.message.bytes is the new default.
            await replicas_have(
                brokers.values(), "u", (3600000, 2000), "u keeps its override"
            )
            await every(
                brokers,
                admin,
                lambda e: (
                    value_and_source(e, "retention.ms") == ("60000", DEFAULT_BROKER)
                    and value_and_source(e, "max.message.bytes")
                    == ("2000", DEFAULT_BROKER)
                ),
                "DescribeConfigs names the cluster-wide default",
            )
            for broker in brokers.values():
                listed = await describe(admin, broker, CLUSTER_WIDE)
                assert {k: (e.value, e.source) for k, e in listed.items()} == {
                    k: (v, DEFAULT_BROKER) for k, v in cluster_wide.items()
                }
            await eventually(
                lambda: (
                    controller.shell.core is not None
                    and controller.shell.core.context.broker_configs.get("")
                    == cluster_wide
                ),
                "the controller's copy follows",
            )

            # Broker 2's own value beats the cluster-wide one, on broker 2 alone.
            second = brokers[2]
            answer = await incremental(
                admin,
                second,
                AlterConfigOp("log.retention.ms", "7000", SET),
                resource=ConfigResource(4, "2"),
            )
            assert answer == (ErrorCode.none, None)
            assert await znode(zookeeper, "/config/brokers/2") == {
                "version": 1,
                "config": {"log.retention.ms": "7000"},
            }
            await replicas_have([second], "t", (7000, 2000), "broker 2's own value")
            entries = await describe(admin, second)
            assert value_and_source(entries, "retention.ms") == ("7000", OWN_BROKER)
            # A later change, which the other brokers handle after broker 2's: by then
            # they have ignored broker 2's.
            answer = await incremental(
                admin,
                other,
                AlterConfigOp("message.max.bytes", None, DELETE),
                resource=CLUSTER_WIDE,
            )
            assert answer == (ErrorCode.none, None)
            rest = [b for i, b in brokers.items() if i != 2]
            await replicas_have(
                rest, "t", (60000, STATIC_MAX_BYTES), "the others keep 60000"
            )
            for broker in rest:
                key = (ConfigResourceType.BROKER, "2")
                assert key not in broker.metadata.image.configs
            await replicas_have(
                [second], "t", (7000, STATIC_MAX_BYTES), "broker 2 keeps its own"
            )

            # DELETE: broker 2's own, then the cluster-wide one: the static value.
            answer = await incremental(
                admin,
                second,
                AlterConfigOp("log.retention.ms", None, DELETE),
                resource=ConfigResource(4, "2"),
            )
            assert answer == (ErrorCode.none, None)
            await replicas_have(
                [second], "t", (60000, STATIC_MAX_BYTES), "the cluster-wide value"
            )
            entries = await describe(admin, second)
            assert value_and_source(entries, "retention.ms") == (
                "60000",
                DEFAULT_BROKER,
            )
            answer = await incremental(
                admin,
                other,
                AlterConfigOp("log.retention.ms", None, DELETE),
                resource=CLUSTER_WIDE,
            )
            assert answer == (ErrorCode.none, None)
            await replicas_have(
                brokers.values(),
                "t",
                (STATIC_RETENTION_MS, STATIC_MAX_BYTES),
                "the static values again",
            )
            await every(
                brokers,
                admin,
                lambda e: (
                    value_and_source(e, "retention.ms")
                    == (str(STATIC_RETENTION_MS), ConfigSource.DEFAULT_CONFIG)
                ),
                "DescribeConfigs names the static default again",
            )
            assert await notifications(zookeeper) == [
                ("brokers", "<default>"),
                ("brokers", "2"),
                ("brokers", "<default>"),
                ("brokers", "2"),
                ("brokers", "<default>"),
            ]


async def test_a_broker_down_during_changes_reads_the_current_config_when_back(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    async with zk_cluster(zookeeper, tmp_path, count=2) as brokers:
        first, second = brokers[1], brokers[2]
        tp = TopicPartition("t", 0)
        async with connect(bootstrap(first), client_id="test") as admin:
            assert await create_topic(admin, "t", replica_assignment=[[1, 2]])
            await eventually(
                lambda: second.replica_manager.get_partition(tp) is not None,
                "broker 2 hosts t-0",
            )
            await second.shutdown()
            for value in ("1000", "2000"):
                answer = await incremental(
                    admin, first, AlterConfigOp("max.message.bytes", value, SET)
                )
                assert answer == (ErrorCode.none, None)
            answer = await incremental(
                admin,
                first,
                AlterConfigOp("log.retention.ms", "60000", SET),
                resource=CLUSTER_WIDE,
            )
            assert answer == (ErrorCode.none, None)
            # Broker 2 again, on the same log directory.
            back = ZkBrokerServer.open(
                broker_config(zookeeper, 2, free_ports(1)[0], tmp_path)
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(back.run)
                try:
                    # It started after the three notifications: it skipped them...
                    assert back.config_changes.cursor.last >= 2
                    # ...read the cluster-wide default before it hosted anything...
                    layer = (ConfigResourceType.BROKER, "")
                    assert back.metadata.image.configs[layer] == {
                        "log.retention.ms": "60000"
                    }
                    # ...and the topic's config when it hosted t-0 again.
                    await eventually(
                        lambda: log_settings(back, "t") == (60000, 2000),
                        "the returning broker's replica has the current config",
                    )
                    # And it follows the next change like the others.
                    answer = await incremental(
                        admin, first, AlterConfigOp("max.message.bytes", "3000", SET)
                    )
                    assert answer == (ErrorCode.none, None)
                    await eventually(
                        lambda: (
                            (p := back.replica_manager.get_partition(tp)) is not None
                            and p.log.config.max_message_bytes == 3000
                        ),
                        "the returning broker follows the next notification",
                    )
                finally:
                    await back.shutdown()


# --- the notification listener alone ---------------------------------------------------------


async def test_the_listener_handles_notifications_in_order_and_retries_a_zookeeper_failure(
    zookeeper: ZooKeeperServer,
) -> None:
    """Each notification is handed over once, oldest first; one whose handling failed
    because ZooKeeper did is handed over again at the next call; one that failed for
    another reason is logged, counted and not handed over again."""
    zk = ZkClient(zookeeper.connect_string, session_timeout=6.0)
    await zk.connect(connect_timeout=DEADLINE)
    try:
        for topic in ("a", "b", "c"):
            await zk.create(
                topic_path(topic), TopicAssignment({0: (1,)}).encode(), makepath=True
            )
        await alter_topic_config(zk, "a", lambda c: {"x": "0"})  # before the start
        handed: list[str] = []
        failures = {"b": [ConnectionLoss()], "c": [ValueError("bad")]}

        async def on_topic_config(topic: str) -> None:
            handed.append(topic)
            if failures.get(topic):
                raise failures[topic].pop()

        faults = LoggingFaultHandler("test")
        manager = DynamicConfigManager(zk, on_topic_config, faults)
        await manager.start()
        for topic in ("a", "c", "b", "a"):
            await alter_topic_config(zk, topic, lambda c: {**c, "x": "1"})
        with pytest.raises(ConnectionLoss):
            await manager.process()
        assert handed == ["a", "c", "b"]  # b failed: ZooKeeper's fault
        assert faults.count == 1  # c's
        await manager.process()
        assert handed == ["a", "c", "b", "b", "a"]  # b again, then the rest
        await manager.process()
        assert handed == ["a", "c", "b", "b", "a"]  # nothing twice
    finally:
        await zk.close()
