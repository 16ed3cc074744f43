"""A topic's config change in ZooKeeper mode: the notification's JSON, the order brokers
handle notifications in, and the write itself on a real ZooKeeper.

Guarantees checked:

- a notification is Kafka's version 2 JSON (``entity_path``); Kafka's older version 1
  decodes too; bytes that are not a notification say which path;
- notifications are handled once each, in sequence-number order, and a broker that
  starts skips those already there; only notifications older than the expiration go;
- the write puts the new overrides in ``/config/topics/<topic>`` and one notification
  naming the topic, in the same transaction; a change computed over a config that
  someone else changed meanwhile is computed again over the new one (nothing lost);
- ``validate_only``, a refused change and an unknown topic write nothing;
- a broker resource's dynamic configs (KIP-226) go to ``/config/brokers/<default>``
  (the resource ``""``) or ``/config/brokers/<id>`` in Kafka's JSON, each with a
  notification naming ``brokers/<default>`` or ``brokers/<id>``; ``validate_only``
  writes nothing; a new controller reads every one of them with the cluster.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import pytest

from minikafka.zk import (
    CONFIG_CHANGES,
    ConfigChangeCursor,
    Op,
    TopicAssignment,
    ZkClient,
    ZnodeError,
    ZooKeeperServer,
    alter_broker_config,
    alter_topic_config,
    broker_config_path,
    config_change_number,
    decode_config_change,
    decode_topic_config,
    encode_config_change,
    encode_topic_config,
    purge_expired_config_changes,
    read_broker_config,
    read_cluster,
    read_config_changes,
    topic_config_path,
    topic_path,
)
from minikafka.zk._config_changes import expired
from minikafka.zk.testing import needs_zookeeper

DEADLINE = 30.0

# --- the notification's bytes and the cursor (no ZooKeeper) -----------------------------


def test_a_notification_is_kafkas_version_2_json() -> None:
    encoded = encode_config_change("topics", "orders")
    assert json.loads(encoded) == {"version": 2, "entity_path": "topics/orders"}
    assert decode_config_change("/config/changes/x", encoded) == ("topics", "orders")


def test_kafkas_version_1_notification_decodes() -> None:
    old = b'{"version":1,"entity_type":"topics","entity_name":"orders"}'
    assert decode_config_change("/p", old) == ("topics", "orders")


@pytest.mark.parametrize(
    "data",
    [b"not json", b'{"version":2}', b'{"version":2,"entity_path":"x"}', b'{"v":3}'],
)
def test_a_notification_that_is_not_kafkas_names_its_path(data: bytes) -> None:
    with pytest.raises(ZnodeError, match="/config/changes/config_change_0000000007"):
        decode_config_change("/config/changes/config_change_0000000007", data)


def test_a_notifications_number_is_its_sequence_suffix() -> None:
    assert config_change_number("config_change_0000000042") == 42
    assert config_change_number("config_change_") is None
    assert config_change_number("something_else_01") is None


def test_notifications_are_handled_once_each_in_number_order() -> None:
    cursor = ConfigChangeCursor()
    listed = ["config_change_0000000010", "config_change_0000000002", "stray"]
    assert cursor.new(listed) == [
        (2, "config_change_0000000002"),
        (10, "config_change_0000000010"),
    ]
    cursor.handled(2)
    cursor.handled(10)
    assert cursor.new([*listed, "config_change_0000000011"]) == [
        (11, "config_change_0000000011")
    ]


def test_a_starting_broker_skips_the_notifications_already_there() -> None:
    cursor = ConfigChangeCursor()
    cursor.skip_existing(["config_change_0000000003", "config_change_0000000001"])
    assert cursor.new(["config_change_0000000003"]) == []
    assert cursor.new(["config_change_0000000004"]) == [(4, "config_change_0000000004")]


def test_only_notifications_older_than_the_expiration_are_purged() -> None:
    created = {"config_change_0000000001": 1_000, "config_change_0000000002": 9_000}
    assert expired(created, now_ms=11_000, expiration_ms=5_000) == [
        "config_change_0000000001"
    ]
    assert expired(created, now_ms=6_000, expiration_ms=5_000) == []


# --- the write, on a real ZooKeeper --------------------------------------------------------


class Interfering(ZkClient):
    """A client that, before a transaction, writes ``/config/topics/orders`` itself when
    ``before_write`` says so: another writer's change between a read and a write."""

    before_write: Callable[[], bool] = staticmethod(lambda: False)

    async def transaction(self, ops: Sequence[Op]) -> None:
        if self.before_write():
            changed = {"retention.ms": "1000", "cleanup.policy": "compact"}
            await self.set(topic_config_path("orders"), encode_topic_config(changed))
        await super().transaction(ops)


@asynccontextmanager
async def connected(
    server: ZooKeeperServer, kind: type[ZkClient] = ZkClient
) -> AsyncIterator[ZkClient]:
    client = kind(server.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=DEADLINE)
    try:
        yield client
    finally:
        await client.close()


async def make_topic(zk: ZkClient, topic: str, config: dict[str, str]) -> None:
    await zk.create(
        topic_path(topic), TopicAssignment({0: (1,)}).encode(), makepath=True
    )
    await zk.create(
        topic_config_path(topic), encode_topic_config(config), makepath=True
    )


async def notifications(zk: ZkClient) -> list[tuple[str, str]]:
    cursor = ConfigChangeCursor()
    changes, _ = await read_config_changes(zk, cursor)
    return [(kind, name) for _, kind, name in changes]


async def overrides(zk: ZkClient, topic: str) -> dict[str, str]:
    data, _ = await zk.get(topic_config_path(topic))
    return decode_topic_config(topic, data)


@pytest.mark.external
@needs_zookeeper
async def test_a_change_writes_the_overrides_and_one_notification_together(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as zk:
        await make_topic(zk, "orders", {"retention.ms": "1000"})
        result = await alter_topic_config(
            zk, "orders", lambda c: {**c, "segment.ms": "5000"}
        )
        assert result == {"retention.ms": "1000", "segment.ms": "5000"}
        assert await overrides(zk, "orders") == result
        assert await notifications(zk) == [("topics", "orders")]
        # A topic created without overrides has no config znode: it is created.
        await zk.create(topic_path("bare"), TopicAssignment({0: (1,)}).encode())
        assert await alter_topic_config(zk, "bare", lambda c: {"a": "b"}) == {"a": "b"}
        assert await overrides(zk, "bare") == {"a": "b"}
        assert await notifications(zk) == [("topics", "orders"), ("topics", "bare")]


@pytest.mark.external
@needs_zookeeper
async def test_a_change_over_a_config_changed_meanwhile_is_computed_again(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper, Interfering) as zk:
        assert isinstance(zk, Interfering)
        await make_topic(zk, "orders", {"retention.ms": "1000"})
        seen: list[dict[str, str]] = []

        def alter(current: dict[str, str]) -> dict[str, str]:
            seen.append(dict(current))
            return {**current, "segment.ms": "5000"}

        zk.before_write = lambda: len(seen) == 1  # between the first read and write
        result = await alter_topic_config(zk, "orders", alter)
        assert seen == [
            {"retention.ms": "1000"},
            {"retention.ms": "1000", "cleanup.policy": "compact"},
        ]
        assert result == await overrides(zk, "orders")
        assert result == {
            "retention.ms": "1000",
            "cleanup.policy": "compact",
            "segment.ms": "5000",
        }
        assert await notifications(zk) == [("topics", "orders")]


class Refused(Exception):
    pass


@pytest.mark.external
@needs_zookeeper
async def test_validate_only_a_refusal_and_an_unknown_topic_write_nothing(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as zk:
        await make_topic(zk, "orders", {"retention.ms": "1000"})
        checked = await alter_topic_config(
            zk, "orders", lambda c: {"x": "y"}, validate_only=True
        )
        assert checked == {"x": "y"}

        def refuse(current: dict[str, str]) -> dict[str, str]:
            raise Refused

        with pytest.raises(Refused):
            await alter_topic_config(zk, "orders", refuse)
        assert await alter_topic_config(zk, "missing", lambda c: {"x": "y"}) is None
        assert await zk.exists(topic_config_path("missing")) is None
        assert await overrides(zk, "orders") == {"retention.ms": "1000"}
        assert await notifications(zk) == []


@pytest.mark.external
@needs_zookeeper
async def test_expired_notifications_are_deleted_and_the_others_kept(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as zk:
        await make_topic(zk, "orders", {})
        for _ in range(2):
            await alter_topic_config(zk, "orders", lambda c: c)
        _, created = await read_config_changes(zk, ConfigChangeCursor())
        first, second = sorted(created)
        # "Now" is just past the first's expiration, and not the second's.
        now = created[first] + 1_000
        gone = await purge_expired_config_changes(
            zk, {first: created[first] - 1, second: created[second]}, now, 1_000
        )
        assert gone == [first]
        assert await zk.get_children(CONFIG_CHANGES) == [second]


@pytest.mark.external
@needs_zookeeper
async def test_a_broker_config_is_written_under_config_brokers_with_its_notification(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as zk:
        assert broker_config_path("") == "/config/brokers/<default>"
        assert broker_config_path("1") == "/config/brokers/1"
        checked = await alter_broker_config(
            zk, "", lambda c: {"log.retention.ms": "1"}, validate_only=True
        )
        assert checked == {"log.retention.ms": "1"}
        assert await zk.exists("/config/brokers/<default>") is None
        assert await notifications(zk) == []

        cluster_wide = await alter_broker_config(
            zk, "", lambda c: {**c, "log.retention.ms": "5000"}
        )
        assert cluster_wide == {"log.retention.ms": "5000"}
        own = await alter_broker_config(
            zk, "1", lambda c: {**c, "message.max.bytes": "2000"}
        )
        assert own == {"message.max.bytes": "2000"}
        # Incremental over what is there: the second change keeps the first's key.
        again = await alter_broker_config(
            zk, "", lambda c: {**c, "log.segment.bytes": "1048576"}
        )
        assert again == {"log.retention.ms": "5000", "log.segment.bytes": "1048576"}

        # Kafka's JSON: the keys and version its AdminZkClient writes.
        data, _ = await zk.get("/config/brokers/<default>")
        assert json.loads(data) == {"version": 1, "config": again}
        data, _ = await zk.get("/config/brokers/1")
        assert json.loads(data) == {"version": 1, "config": own}
        children = sorted(await zk.get_children(CONFIG_CHANGES))
        raw, _ = await zk.get(f"{CONFIG_CHANGES}/{children[0]}")
        assert json.loads(raw) == {"version": 2, "entity_path": "brokers/<default>"}
        assert await notifications(zk) == [
            ("brokers", "<default>"),
            ("brokers", "1"),
            ("brokers", "<default>"),
        ]
        assert await read_broker_config(zk, "") == again
        assert await read_broker_config(zk, "2") == {}
        cluster = await read_cluster(zk, watch=False)
        assert cluster.broker_configs == {"": again, "1": own}
