"""Kafka's Java consumer (kafka-clients 4.1.1) with ``group.protocol=consumer`` (KIP-848)
against the broker, each member a JVM of its own (``java/JavaGroupMember.java``).

Three Java consumers join one group with ConsumerGroupHeartbeat while a producer writes
numbered records to the topic's six partitions; each commits every batch it reads,
synchronously (OffsetCommit with its member epoch), before it polls again. One member's
JVM is SIGKILLed (no leave: the coordinator fences it when its session ends) and a new
one joins; the producer writes throughout. The broker's heartbeat interval is short so
that reassignments take a second, its session a few seconds.

The guarantees checked: **every record is consumed at least once, and the only records
consumed twice are those of a batch whose commit failed or never came** (the killed
member's last, or one refused for a stale member epoch: Kafka's at-least-once window);
the group's committed offsets end at the end of each partition (no record lost); **no
partition is read by two members at once**, as the members' own rebalance callbacks
saw it (their times on the one monotonic clock of this machine), as the records they
read show (each from a partition its reader owned then), and as the broker's
``group.member_assignment`` trace shows; and the Java Admin client describes the group
as a consumer group, with ConsumerGroupDescribe, of three members, then two after the
kill, then three again.

JVMs start slowly on a loaded two-core machine, and this test runs four of them at once:
``serial``, out of the crowd of the first run.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess
from minikafka.trace import read_trace
from reference.java import requests_sent
from tests.compat import _groups as scenarios
from tests.compat._java_consumer_group import (
    CONSUMER,
    PARTITIONS,
    Writer,
    assert_owned_once,
    assert_quiet,
    check,
    describe_until,
    described_owners,
    killed_and_added,
    shared,
)
from tests.compat._java_member import STARTED, JavaMember, wait
from tests.compat.test_consumer_protocol_confluent import OVERRIDES
from tests.compat.test_groups_confluent import ConfluentGroups

pytestmark = [pytest.mark.external, pytest.mark.serial, pytest.mark.timeout(300)]


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "java848-")


@pytest.fixture
def traced_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of this test alone, tracing its groups' assignments."""
    with BrokerProcess(
        tmp_path / "data",
        overrides=OVERRIDES,
        trace_dir=tmp_path / "traces",
        trace_events=["group.member_assignment"],
    ) as broker:
        yield broker


def assert_traced_owned_once(
    traces: Path, group: str, kinds: frozenset[str] | set[str] = frozenset({"consumer"})
) -> set[str]:
    """Replays the broker's ``group.member_assignment`` events of ``group`` (a group of
    one of ``kinds``): at no point does it count a partition as two members'. The
    client ids it saw."""
    owned: dict[str, set[str]] = {}
    clients: set[str] = set()
    for record in read_trace(traces):
        if record["event"] != "member_assignment" or record["group_id"] != group:
            continue
        assert record["group_type"] in kinds
        clients.add(str(record["client_id"]))
        assigned = record["assigned_partitions"]
        pending = record["partitions_pending_revocation"]
        assert isinstance(assigned, list)
        assert isinstance(pending, list)
        owned[str(record["member_id"])] = {*map(str, assigned), *map(str, pending)}
        held = [p for parts in owned.values() for p in parts]
        assert len(held) == len(set(held)), f"a partition owned twice: {owned}"
    return clients


@pytest.mark.compat("ConsumerGroupHeartbeat", "java")
@pytest.mark.compat("ConsumerGroupDescribe", "java")
@pytest.mark.compat("OffsetCommit", "java")
@pytest.mark.compat("OffsetFetch", "java")
@pytest.mark.compat("Fetch", "java")
def test_a_member_killed_and_one_added_lose_no_record_and_share_no_partition(
    traced_broker: BrokerProcess, name: str, tmp_path: Path
) -> None:
    """The scenario and checks of ``_java_consumer_group`` (the same pass against Kafka
    4.1.1), the broker's trace replayed, and the API versions the client speaks."""
    outcome = killed_and_added(traced_broker.bootstrap, name, tmp_path)
    traced_broker.stop()  # the trace is written out
    check(outcome)
    traces = traced_broker.trace_dir or tmp_path
    assert assert_traced_owned_once(traces, name) >= {"a", "b", "c", "d"}
    # the versions the Java consumer speaks with minikafka
    assert {
        ("CONSUMER_GROUP_HEARTBEAT", 1),
        ("CONSUMER_GROUP_DESCRIBE", 1),
        ("OFFSET_COMMIT", 9),
        ("OFFSET_FETCH", 9),
    } <= requests_sent(outcome.request_log)


CLASSIC = {
    "group.protocol": "classic",
    "enable.auto.commit": "false",
    "auto.offset.reset": "earliest",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
}


@pytest.mark.compat("ConsumerGroupHeartbeat", "java")
@pytest.mark.compat("ConsumerGroupDescribe", "java")
@pytest.mark.compat("JoinGroup", "java")
@pytest.mark.compat("SyncGroup", "java")
def test_a_classic_java_group_upgrades_and_downgrades_online_reading_every_record(
    traced_broker: BrokerProcess, name: str, tmp_path: Path
) -> None:
    """The online upgrade (KIP-848's "Upgrade/Downgrade"): a Java consumer with
    ``group.protocol=consumer`` joins a live classic group of one Java member; the group
    becomes a consumer group in which the classic member rejoins and is given its share
    by the broker's assignor; when the consumer-protocol member leaves, the group is
    classic again. Checked: every record read at least once (twice only after a failed
    commit), no partition owned by two members at once (callbacks and the broker's
    trace), and the Java Admin's description of the group at each stage."""
    ConfluentGroups(traced_broker.bootstrap).create_topic(name, PARTITIONS)
    changed = threading.Condition()

    def member(client: str, config: dict[str, str]) -> JavaMember:
        config = {**config, "group.id": name}
        return JavaMember(
            traced_broker.bootstrap, name, client, config, changed, tmp_path
        )

    writer = Writer(traced_broker.bootstrap, name)
    everyone: list[JavaMember] = []
    try:
        everyone.append(member("old", CLASSIC))
        old = everyone[0]
        wait(everyone, lambda: shared([old]), "the classic member owns it", STARTED)
        classic = old.describe()
        assert (classic["type"], described_owners(classic)) == (
            "Classic",
            {"old": list(range(PARTITIONS))},
        )

        everyone.append(member("new", CONSUMER))
        new = everyone[1]
        wait(everyone, lambda: shared([old, new]), "both members share", STARTED)
        mixed = describe_until(old, [old, new], "the upgraded group, both members")
        assert mixed["type"] == "Consumer"
        assert {m["client_id"]: m["upgraded"] for m in mixed["members"]} == {
            "old": False,
            "new": True,
        }

        wait(everyone, lambda: len(new.read) >= 30, "the new member reads")
        new.stop()  # the last consumer-protocol member leaves: classic again
        new.join()
        wait(everyone, lambda: shared([old]), "the classic member owns it all again")
        scenarios.poll_until(
            lambda: old.describe()["type"] == "Classic", "the group classic again"
        )
        writer.finish()
        wait(
            everyone,
            lambda: writer.acked <= {r for m in everyone for r in m.read},
            "every acknowledged record read",
        )
    finally:
        writer.stop.set()
        for m in everyone:
            m.stop()
        for m in everyone:
            m.join()
    traced_broker.stop()

    assert writer.errors == []
    assert [e for m in everyone for e in m.errors] == []
    assert [r for m in everyone for r in m.outside] == []
    assert_quiet(everyone)
    assert old.read
    assert new.read
    read = Counter(r for m in everyone for r in m.read)
    assert set(read) == writer.acked
    uncommitted = set().union(*(m.uncommitted for m in everyone))
    twice = {r for r, n in read.items() if n > 1}
    assert twice <= uncommitted, f"read twice, committed: {sorted(twice)[:10]}"
    assert_owned_once([s for m in everyone for s in m.member_spans()])
    assert {"old", "new"} <= assert_traced_owned_once(
        traced_broker.trace_dir or tmp_path, name, kinds={"classic", "consumer"}
    )
