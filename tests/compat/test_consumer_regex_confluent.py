"""confluent-kafka (librdkafka) subscribing by regular expression with
``group.protocol=consumer`` (KIP-848): librdkafka sends the pattern to the broker as
ConsumerGroupHeartbeat v1's ``SubscribedTopicRegex`` and never lists the topics itself;
the coordinator resolves it against the cluster's topics.

The guarantees checked: a member subscribed to ``^prefix-.*`` is assigned every
partition of the matching topics and none of the others, reads their records once, and
is assigned a matching topic created later (after the coordinator's batch interval for
re-resolving expressions) without rejoining; the AdminClient's ConsumerGroupDescribe
shows the member assigned both topics. (librdkafka 2.16 sends ``(^prefix-.*)``: its
pattern, parenthesized, with no topic names.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import WAIT
from tests.compat.conftest import GROUP_OVERRIDES
from tests.compat.test_groups_confluent import ConfluentGroups

OVERRIDES = {**GROUP_OVERRIDES, "group.consumer.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "kip848re-")


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
@pytest.mark.compat("ConsumerGroupDescribe", "confluent-kafka")
def test_a_regex_subscription_reads_the_matching_topics_and_picks_up_new_ones(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(f"{name}-a", 2)
    client.create_topic(f"other-{name}", 1)  # does not match
    owned: set[tuple[str, int]] = set()
    seen: list[tuple[str, int, int]] = []
    errors: list[str] = []
    changed = threading.Condition()
    stop = threading.Event()

    def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
        with changed:
            owned.update((p.topic, p.partition) for p in partitions)
            changed.notify_all()

    def run() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": name,
                "group.protocol": "consumer",
                "client.id": "regex",
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        consumer.subscribe([f"^{name}-.*"], on_assign=on_assign)
        try:
            while not stop.is_set():
                for m in consumer.consume(100, 0.1):
                    error = m.error()
                    with changed:
                        if error is None:
                            seen.append(
                                (m.topic() or "", m.partition() or 0, m.offset() or 0)
                            )
                        elif error.code() != KafkaError._PARTITION_EOF:
                            errors.append(str(error))
                        changed.notify_all()
        finally:
            consumer.close()

    def wait(condition: object, what: str) -> None:
        with changed:
            assert changed.wait_for(condition, WAIT), (  # type: ignore[arg-type]
                f"{what}: not within {WAIT}s; owned {owned}, errors {errors}"
            )

    thread = threading.Thread(target=run, name="regex-member")
    thread.start()
    try:
        wait(lambda: owned == {(f"{name}-a", 0), (f"{name}-a", 1)}, "a's partitions")
        client.produce(f"{name}-a", 20, name)
        wait(lambda: len(seen) >= 20, "a's 20 records")
        client.create_topic(f"{name}-b", 1)
        wait(lambda: (f"{name}-b", 0) in owned, "the new matching topic assigned")
        client.produce(f"{name}-b", 10, name)
        wait(lambda: len(seen) >= 30, "b's 10 records too")
        assert {t for t, _, _ in seen} == {f"{name}-a", f"{name}-b"}
        assert len(set(seen)) == len(seen) == 30  # each record once
        admin = client.admin()
        described = admin.describe_consumer_groups([name], request_timeout=WAIT)[
            name
        ].result(WAIT)
        (member,) = described.members
        assert {tp.topic for tp in member.assignment.topic_partitions} == {
            f"{name}-a",
            f"{name}-b",
        }
        assert errors == []
    finally:
        stop.set()
        thread.join(WAIT)
