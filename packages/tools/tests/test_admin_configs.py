"""The admin clients' config calls against a real broker: ``describe_configs`` with
synonyms, ``incremental_alter_configs`` (KIP-339) and the legacy ``alter_configs``.

They are the client package's calls, tested here because they need a broker, which sits
above the client (the client's own tests run without one). Each test runs a single
KRaft node in this trio loop (``tool_cluster``); the synchronous ``AdminClient`` runs
trio in a thread of its own, so it is called from a worker thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from minikafka.broker.testing import bootstrap, single_node_config, tool_cluster
from minikafka.client import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    AdminClient,
    AlterConfigOp,
    AlterConfigOpType,
    AsyncAdminClient,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConfigSynonym,
    KafkaError,
    KafkaException,
    NewTopic,
)

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND, SUBTRACT = AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT
TOPIC = ConfigResource(RESOURCE_TOPIC, "orders")
INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC = 40, 42, 3


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(single_node_config(tmp_path / "data")) as cluster:
        with trio.fail_after(DEADLINE):
            created = await cluster.create_topics([NewTopic("orders", 1, 1)])
        assert created == {"orders": None}
        yield cluster


async def entries(
    cluster: AsyncAdminClient, resource: ConfigResource = TOPIC
) -> dict[str, ConfigEntry]:
    answer = (await cluster.describe_configs([resource], include_synonyms=True))[
        resource
    ]
    assert not isinstance(answer, KafkaError), answer
    return answer


async def test_a_set_is_described_as_the_topics_own_and_a_delete_restores_the_default(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: after SET, describe_configs gives the new value with source
    # DYNAMIC_TOPIC_CONFIG and its synonyms (the override first, then the default the
    # broker would use); after DELETE the key is back to the value and source it had.
    with trio.fail_after(DEADLINE):
        before = await entries(cluster)
        ops = [AlterConfigOp("retention.ms", "60000", SET)]
        ops.append(AlterConfigOp("cleanup.policy", "compact", SET))
        assert await cluster.incremental_alter_configs({TOPIC: ops}) == {TOPIC: None}
        after = await entries(cluster)
        retention = after["retention.ms"]
        assert (retention.value, retention.source) == (
            "60000",
            ConfigSource.DYNAMIC_TOPIC_CONFIG,
        )
        assert not retention.is_default
        assert retention.synonyms[0] == ConfigSynonym(
            "retention.ms", "60000", ConfigSource.DYNAMIC_TOPIC_CONFIG
        )
        assert retention.synonyms[-1].source == ConfigSource.DEFAULT_CONFIG
        assert after["cleanup.policy"].value == "compact"
        changed = {k for k in after if after[k] != before[k]}
        assert changed == {"retention.ms", "cleanup.policy"}

        delete = [AlterConfigOp("retention.ms", None, DELETE)]
        assert await cluster.incremental_alter_configs({TOPIC: delete}) == {TOPIC: None}
        restored = await entries(cluster)
        assert restored["retention.ms"] == before["retention.ms"]
        assert restored["cleanup.policy"].value == "compact"


async def test_append_and_subtract_edit_a_list_config_from_its_default(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: APPEND adds to a LIST config's values starting from the one in force
    # (cleanup.policy's default "delete"), SUBTRACT removes from them.
    with trio.fail_after(DEADLINE):
        append = [AlterConfigOp("cleanup.policy", "compact", APPEND)]
        assert await cluster.incremental_alter_configs({TOPIC: append}) == {TOPIC: None}
        assert (await entries(cluster))["cleanup.policy"].value == "delete,compact"
        subtract = [AlterConfigOp("cleanup.policy", "delete", SUBTRACT)]
        assert await cluster.incremental_alter_configs({TOPIC: subtract}) == {
            TOPIC: None
        }
        assert (await entries(cluster))["cleanup.policy"].value == "compact"


async def test_validate_only_checks_and_changes_nothing(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: validate_only answers as the change would be answered (None for a good
    # one, the error for a bad one) and leaves every config as it was, for both APIs.
    with trio.fail_after(DEADLINE):
        before = await entries(cluster)
        good = {TOPIC: [AlterConfigOp("retention.ms", "1000", SET)]}
        bad = {TOPIC: [AlterConfigOp("retention.ms", "soon", SET)]}
        assert await cluster.incremental_alter_configs(good, validate_only=True) == {
            TOPIC: None
        }
        refused = await cluster.incremental_alter_configs(bad, validate_only=True)
        error = refused[TOPIC]
        assert error is not None
        assert error.code() == INVALID_CONFIG
        legacy = {TOPIC: {"segment.ms": "1000"}}
        assert await cluster.alter_configs(legacy, validate_only=True) == {TOPIC: None}
        assert await entries(cluster) == before


async def test_the_legacy_alter_configs_replaces_the_whole_set(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: alter_configs makes the given set the topic's only overrides: a key
    # it leaves out goes back to its default.
    with trio.fail_after(DEADLINE):
        before = await entries(cluster)
        first = {TOPIC: {"retention.ms": "1000", "segment.ms": "2000"}}
        assert await cluster.alter_configs(first) == {TOPIC: None}
        assert await cluster.alter_configs({TOPIC: {"segment.ms": "3000"}}) == {
            TOPIC: None
        }
        after = await entries(cluster)
        assert after["retention.ms"] == before["retention.ms"]
        assert (after["segment.ms"].value, after["segment.ms"].source) == (
            "3000",
            ConfigSource.DYNAMIC_TOPIC_CONFIG,
        )


async def test_each_resource_gets_its_own_answer_and_a_refused_one_changes_nothing(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: one call over several resources answers each with its own error; a
    # resource with one bad entry is refused whole (its good entry is not applied), an
    # unknown topic is UNKNOWN_TOPIC_OR_PARTITION, and a broker key that cannot change
    # at run time (node.id) is INVALID_REQUEST naming the key.
    missing = ConfigResource(RESOURCE_TOPIC, "missing")
    broker = ConfigResource(RESOURCE_BROKER, "1")
    with trio.fail_after(DEADLINE):
        before = await entries(cluster)
        answers = await cluster.incremental_alter_configs(
            {
                TOPIC: [
                    AlterConfigOp("retention.ms", "1000", SET),
                    AlterConfigOp("no.such.key", "1", SET),
                ],
                missing: [AlterConfigOp("retention.ms", "1000", SET)],
                broker: [AlterConfigOp("node.id", "7", SET)],
            }
        )
        codes = {r: None if e is None else e.code() for r, e in answers.items()}
        assert codes == {
            TOPIC: INVALID_CONFIG,
            missing: UNKNOWN_TOPIC,
            broker: INVALID_REQUEST,
        }
        broker_error = answers[broker]
        assert broker_error is not None
        assert "node.id" in broker_error.str()
        assert await entries(cluster) == before


async def test_a_broker_resource_goes_to_that_broker_and_an_absent_one_fails_alone(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: a broker's own resource is answered by that broker (its configs), and
    # a broker the metadata does not list fails alone, the other resources answered.
    absent = ConfigResource(RESOURCE_BROKER, "7")
    me = ConfigResource(RESOURCE_BROKER, "1")
    with trio.fail_after(DEADLINE):
        answers = await cluster.describe_configs([me, absent, TOPIC])
    assert isinstance(answers[absent], KafkaError)
    mine = answers[me]
    assert not isinstance(mine, KafkaError)
    assert mine["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert not isinstance(answers[TOPIC], KafkaError)


async def test_the_synchronous_client_answers_with_a_future_per_resource(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: AdminClient's calls return a future per resource: None when done, the
    # broker's error as KafkaException otherwise (confluent-kafka's shape).
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    missing = ConfigResource(RESOURCE_TOPIC, "missing")

    def run() -> tuple[object, KafkaError]:
        changes = {
            TOPIC: [AlterConfigOp("retention.ms", "5000")],
            missing: [AlterConfigOp("retention.ms", "5000")],
        }
        futures = admin.incremental_alter_configs(changes)
        done = futures[TOPIC].result(DEADLINE)
        with pytest.raises(KafkaException) as refused:
            futures[missing].result(DEADLINE)
        described = admin.describe_configs([TOPIC])[TOPIC].result(DEADLINE)
        assert described["retention.ms"].value == "5000"
        legacy = admin.alter_configs({TOPIC: {}})[TOPIC].result(DEADLINE)
        assert legacy is None
        error = refused.value.args[0]
        assert isinstance(error, KafkaError)
        return done, error

    with trio.fail_after(DEADLINE):
        done, error = await trio.to_thread.run_sync(run)
    assert done is None
    assert error.code() == UNKNOWN_TOPIC
    assert (await entries(cluster))["retention.ms"].source != (
        ConfigSource.DYNAMIC_TOPIC_CONFIG
    )
