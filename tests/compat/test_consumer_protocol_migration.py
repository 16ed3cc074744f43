"""The online migration of a live group between the protocols (KIP-848), with
confluent-kafka (librdkafka) on both sides.

Two classic consumers (``group.protocol=classic``, the range assignor) share a topic;
a third joins with ``group.protocol=consumer``: the group becomes a consumer group, the
classic members are told to rejoin and get their partitions from the broker's assignor.
When the consumer-protocol member leaves, the group is classic again and its members
rebalance among themselves.

The guarantees checked: every record is consumed once per group across the three
phases; no partition is held by two members at once (checked at every assignment and
revocation the clients report, which are ordered by the requests between them); the
AdminClient lists the group as classic, consumer, then classic; and a broker with
``group.consumer.migration.policy=disabled`` refuses the consumer-protocol member with
GROUP_ID_NOT_FOUND and leaves the classic group alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaError

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import WAIT
from tests.compat.test_consumer_protocol_confluent import (
    OVERRIDES,
    PARTITIONS,
    Members,
    assert_once,
)
from tests.compat.test_groups_confluent import ConfluentGroups

CLASSIC = {"group.protocol": "classic", "partition.assignment.strategy": "range"}


class CheckedMembers(Members):
    """Members whose every reported change is checked: no partition held twice."""

    overlaps: list[str]

    def _report(self, change: Callable[[], None]) -> None:
        def checked() -> None:
            change()
            held = [p for owned in self.owned.values() for p in owned]
            if len(held) != len(set(held)):
                self.overlaps.append(repr(self.owned))

        super()._report(checked)


def members(bootstrap: str, name: str) -> CheckedMembers:
    group = CheckedMembers(bootstrap, name, name)
    group.overlaps = []
    return group


def group_type(client: ConfluentGroups, name: str) -> ConsumerGroupType:
    admin = client.admin()
    listed = admin.list_consumer_groups(request_timeout=WAIT).result(WAIT)
    (ours,) = [g for g in listed.valid if g.group_id == name]
    kind: ConsumerGroupType = ours.type
    return kind


def wait_type(client: ConfluentGroups, name: str, wanted: ConsumerGroupType) -> None:
    scenarios.poll_until(
        lambda: group_type(client, name) == wanted, f"{name} is a {wanted} group"
    )


def _group_id_not_found(error: KafkaError) -> bool:
    """librdkafka reports the heartbeat's GROUP_ID_NOT_FOUND as a fatal error."""
    return bool(
        error.code() == KafkaError.GROUP_ID_NOT_FOUND
        or (
            error.code() == KafkaError._FATAL
            and "group id does not exist" in error.str()
        )
    )


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "migrate-")


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
def test_a_live_classic_group_upgrades_and_downgrades_reading_every_record_once(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    group = members(broker.bootstrap, name)
    try:
        group.start("c1", **CLASSIC)
        group.start("c2", **CLASSIC)
        group.wait(group.shared, "two classic members share the partitions")
        assert group_type(client, name) == ConsumerGroupType.CLASSIC
        client.produce(name, 120, name + "-1")
        group.wait(lambda: len(group.consumed) >= 120, "the first 120 consumed")

        group.start("n")  # group.protocol=consumer
        group.wait(
            lambda: group.shared() and len(group.owned) == 3,
            "the consumer member and the classic ones share the partitions",
        )
        assert group_type(client, name) == ConsumerGroupType.CONSUMER
        client.produce(name, 120, name + "-2")
        group.wait(lambda: len(group.consumed) >= 240, "240 consumed")

        group.close("n")
        wait_type(client, name, ConsumerGroupType.CLASSIC)
        group.wait(
            lambda: group.shared() and len(group.owned) == 2,
            "the classic members share the partitions again",
        )
        client.produce(name, 120, name + "-3")
        group.wait(lambda: len(group.consumed) >= 360, "all 360 consumed")
        assert_once(group.consumed, 360)
        assert group.overlaps == []
        assert group.errors == []
    finally:
        group.close_all()


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
def test_the_disabled_policy_refuses_a_consumer_member_of_a_live_classic_group(
    tmp_path: Path, name: str
) -> None:
    overrides = {**OVERRIDES, "group.consumer.migration.policy": "disabled"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as own:
        client = ConfluentGroups(own.bootstrap)
        client.create_topic(name, PARTITIONS)
        group = members(own.bootstrap, name)
        refused = threading.Event()
        try:
            group.start("c1", **CLASSIC)
            group.wait(group.shared, "the classic member owns every partition")
            consumer = Consumer(
                {
                    "bootstrap.servers": own.bootstrap,
                    "group.id": name,
                    "group.protocol": "consumer",
                    "error_cb": lambda e: (
                        refused.set() if _group_id_not_found(e) else None
                    ),
                }
            )
            try:
                consumer.subscribe([name])
                deadline = time.monotonic() + WAIT
                while not refused.is_set() and time.monotonic() < deadline:
                    message = consumer.poll(0.2)
                    error = None if message is None else message.error()
                    if error is not None and _group_id_not_found(error):
                        refused.set()
                assert refused.is_set(), "GROUP_ID_NOT_FOUND not reported"
            finally:
                consumer.close()
            assert group_type(client, name) == ConsumerGroupType.CLASSIC
            assert group.owned["c1"] == set(range(PARTITIONS))
        finally:
            group.close_all()
