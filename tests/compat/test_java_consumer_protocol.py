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
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, Producer

from minikafka.broker.testing import BrokerProcess
from minikafka.trace import read_trace
from reference.java import refused, requests_sent
from tests.compat import _groups as scenarios
from tests.compat._java_member import JavaMember, Span, wait
from tests.compat.test_consumer_protocol_confluent import OVERRIDES
from tests.compat.test_groups_confluent import ConfluentGroups

pytestmark = [pytest.mark.external, pytest.mark.serial, pytest.mark.timeout(300)]

PARTITIONS = 6
CONSUMER = {
    "group.protocol": "consumer",
    "enable.auto.commit": "false",
    "auto.offset.reset": "earliest",
}

Record = tuple[int, int]  # partition, offset

STALE_COMMIT = "with stale member epoch error"


class Writer:
    """confluent-kafka's idempotent producer writing a record to each partition every
    few milliseconds until :meth:`finish`; keeps where each acknowledged record landed."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.acked: set[Record] = set()
        self.errors: list[KafkaError] = []
        self.stop = threading.Event()
        self._topic = topic
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "log_level": 0,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True, name="writer")
        self._thread.start()

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(error)
            return
        partition, offset = message.partition(), message.offset()
        assert partition is not None
        assert offset is not None
        self.acked.add((partition, offset))

    def _run(self) -> None:
        n = 0
        while not self.stop.wait(0.02):  # some 300 records a second
            for partition in range(PARTITIONS):
                self._producer.produce(
                    self._topic,
                    b"%d" % n,
                    partition=partition,
                    on_delivery=self._delivered,
                )
            n += 1
            self._producer.poll(0)

    def finish(self) -> None:
        self.stop.set()
        self._thread.join(scenarios.WAIT)
        assert self._producer.flush(scenarios.WAIT) == 0, "records left undelivered"

    def ends(self) -> dict[str, int]:
        """Each partition's end offset, as the group's committed offsets should be."""
        ends: dict[str, int] = {}
        for partition, offset in self.acked:
            ends[str(partition)] = max(ends.get(str(partition), 0), offset + 1)
        return ends


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


def shared(members: list[JavaMember]) -> bool:
    """Every partition owned by exactly one of ``members``, and each owns some."""
    owned = [p for m in members for p in m.owned]
    return sorted(owned) == list(range(PARTITIONS)) and all(m.owned for m in members)


def described_owners(group: Any) -> dict[str, list[int]]:
    return {m["client_id"]: m["partitions"] for m in group["members"]}


def describe_until(
    asker: JavaMember, members: list[JavaMember], what: str
) -> dict[str, Any]:
    """The group as the Java Admin client describes it, once it shows ``members`` with
    the partitions their callbacks say they own (the broker's answer may trail the
    members' callbacks by a heartbeat)."""
    last: dict[str, Any] = {}

    def matches() -> bool:
        nonlocal last
        last = dict(asker.describe())
        with asker.changed:
            owned = {m.name: sorted(m.owned) for m in members}
        return described_owners(last) == owned and last["state"] == "Stable"

    try:
        scenarios.poll_until(matches, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last described {last}") from None
    return last


def assert_quiet(members: list[JavaMember]) -> None:
    """Nothing the broker answered made the clients complain, but for the race of
    Kafka 4.1's OffsetCommit: a commit sent with the member epoch that a heartbeat
    answer in flight has just replaced is refused (STALE_MEMBER_EPOCH); the client logs
    it as an error and commitSync throws, and the next batch's commit covers it. Kafka
    4.1.1's broker refuses the same commits in the same scenario."""
    for m in members:
        stale = [w for w in m.warnings() if STALE_COMMIT in w]
        assert [w for w in m.warnings() if STALE_COMMIT not in w] == [], m.name
        assert len(stale) == len([e for e in m.failed_commits if "stale" in e])


def assert_owned_once(spans: list[Span]) -> None:
    """No two members' stretches of ownership of one partition overlap."""
    by_partition: dict[int, list[tuple[float, float, str]]] = {}
    for member, partition, start, end in spans:
        by_partition.setdefault(partition, []).append((start, end, member))
    for partition, stretches in by_partition.items():
        stretches.sort()
        held_until, holder = 0.0, ""
        for start, end, member in stretches:
            assert member == holder or held_until <= start, (
                f"partition {partition}: {holder} (until {held_until}) and {member} "
                f"(from {start}) overlap"
            )
            if end > held_until:
                held_until, holder = end, member


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
    ConfluentGroups(traced_broker.bootstrap).create_topic(name, PARTITIONS)
    changed = threading.Condition()
    config = {**CONSUMER, "group.id": name}
    log = tmp_path / "requests-a.log"

    def member(client: str, request_log: Path | None = None) -> JavaMember:
        return JavaMember(
            traced_broker.bootstrap,
            name,
            client,
            config,
            changed,
            tmp_path,
            request_log,
        )

    writer = Writer(traced_broker.bootstrap, name)
    everyone: list[JavaMember] = []
    try:
        everyone += [member("a", log), member("b"), member("c")]
        a, b, c = everyone
        wait(everyone, lambda: shared(everyone), "three members own the partitions")
        three = describe_until(a, [a, b, c], "the group described with three members")
        assert three["type"] == "Consumer"
        assert three["assignor"] == "uniform"
        assert sorted(len(m["partitions"]) for m in three["members"]) == [2, 2, 2]
        assert all(m["epoch"] == three["group_epoch"] for m in three["members"])
        wait(everyone, lambda: len(b.read) >= 30, "the doomed member reads")

        b.kill()  # no leave: only its session's end removes it
        wait(everyone, lambda: shared([a, c]), "a and c take the killed member's share")
        two = describe_until(a, [a, c], "the group described with two members")
        assert sorted(described_owners(two)) == ["a", "c"]

        everyone.append(member("d"))
        d = everyone[-1]
        wait(everyone, lambda: shared([a, c, d]), "the new member gets a share")
        again = describe_until(a, [a, c, d], "the group described with three again")
        assert again["group_epoch"] > three["group_epoch"]

        writer.finish()
        ends = writer.ends()
        wait(
            everyone,
            lambda: writer.acked <= {r for m in everyone for r in m.read},
            "every acknowledged record read",
        )
        scenarios.poll_until(
            lambda: a.describe()["committed"] == ends,
            "the committed offsets at the end of every partition",
        )
    finally:
        writer.stop.set()
        for m in everyone:
            m.stop()  # all at once: the last to leave is not handed the others' share
        for m in everyone:
            m.join()
    traced_broker.stop()  # the trace is written out

    assert writer.errors == []
    assert [e for m in everyone for e in m.errors] == []
    assert [r for m in everyone for r in m.outside] == []
    # nothing the broker answered made the client complain
    assert_quiet(everyone)
    assert b.read, "the killed member read before it died"
    read = Counter(r for m in everyone for r in m.read)
    assert set(read) == writer.acked  # every record, at least once
    twice = {r for r, n in read.items() if n > 1}
    uncommitted = set().union(*(m.uncommitted for m in everyone))
    assert twice <= uncommitted, f"read twice, committed: {sorted(twice)[:10]}"
    assert_owned_once([s for m in everyone for s in m.member_spans()])
    assert assert_traced_owned_once(traced_broker.trace_dir or tmp_path, name) >= {
        "a",
        "b",
        "c",
        "d",
    }
    # the member epochs of KIP-848, as the consumers' group metadata reported them
    assert all(e > 0 for m in everyone for e in m.epochs)
    sent = requests_sent(log)
    assert {
        ("CONSUMER_GROUP_HEARTBEAT", 1),
        ("CONSUMER_GROUP_DESCRIBE", 1),
        ("OFFSET_COMMIT", 9),
        ("OFFSET_FETCH", 9),
    } <= sent
    assert "JOIN_GROUP" not in {api for api, _ in sent}
    assert not {"CONSUMER_GROUP_HEARTBEAT", "CONSUMER_GROUP_DESCRIBE"} & refused(log)


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
        wait(everyone, lambda: shared([old]), "the classic member owns the topic")
        classic = old.describe()
        assert (classic["type"], described_owners(classic)) == (
            "Classic",
            {"old": list(range(PARTITIONS))},
        )

        everyone.append(member("new", CONSUMER))
        new = everyone[1]
        wait(everyone, lambda: shared([old, new]), "both members share the topic")
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
