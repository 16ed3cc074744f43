"""Kafka's Java consumer (kafka-clients 4.1.1) with ``group.protocol=consumer`` (KIP-848):
a group of three members, each a JVM of its own (:mod:`tests.compat._java_member`),
loses one to SIGKILL and gains another while a producer writes.

:func:`killed_and_added` runs the scenario against a bootstrap and returns what every
member and the producer reported; :func:`check` asserts what must hold of it against any
broker that speaks the protocol as Kafka 4.1 does. ``tests/compat/test_java_consumer_protocol.py``
runs it against minikafka (and checks the coordinator's trace besides), and
``tests/reference/test_java_consumer_protocol.py`` against Kafka 4.1.1 itself: that it
passes there shows the checks are what Kafka does, the commits refused for a stale
member epoch included.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from reference.java import refused, requests_sent
from tests.compat import _groups as scenarios
from tests.compat._java_member import STARTED, JavaMember, Span, wait

PARTITIONS = 6
CONSUMER = {
    "group.protocol": "consumer",
    "enable.auto.commit": "false",
    "auto.offset.reset": "earliest",
}
"""A consumer-protocol member's settings (the group id aside)."""

STALE_COMMIT = "with stale member epoch error"
"""What the Java consumer logs, as an error, when a commit is refused STALE_MEMBER_EPOCH."""

Record = tuple[int, int]  # partition, offset


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


@attrs.frozen
class Outcome:
    """What the scenario's members (a, b killed, c, d added) and producer reported."""

    members: tuple[JavaMember, ...]
    writer: Writer
    described: tuple[dict[str, Any], ...]
    """The group as a's Admin client described it: three, two, then three members."""
    request_log: Path
    """Every request a's consumer and Admin client sent."""


def killed_and_added(bootstrap: str, topic: str, log_dir: Path) -> Outcome:
    """The scenario: ``topic`` (six partitions) created, a producer writing to it; Java
    members a, b and c share it (group ``topic``); b is SIGKILLed once it has read,
    a and c take its share when its session ends; d joins and gets a share; the
    producer stops and everything is read and committed; the members close at once."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    created = admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    created[topic].result(scenarios.WAIT)
    changed = threading.Condition()
    config = {**CONSUMER, "group.id": topic}
    log = log_dir / "requests-a.log"

    def member(client: str, request_log: Path | None = None) -> JavaMember:
        return JavaMember(
            bootstrap, topic, client, config, changed, log_dir, request_log
        )

    writer = Writer(bootstrap, topic)
    everyone: list[JavaMember] = []
    described: list[dict[str, Any]] = []
    try:
        everyone += [member("a", log), member("b"), member("c")]
        a, b, c = everyone
        wait(everyone, lambda: shared(everyone), "three members share", STARTED)
        described.append(describe_until(a, [a, b, c], "three members described"))
        wait(everyone, lambda: len(b.read) >= 30, "the doomed member reads")

        b.kill()  # no leave: only its session's end removes it
        wait(everyone, lambda: shared([a, c]), "a and c take the killed member's share")
        described.append(describe_until(a, [a, c], "two members described"))

        everyone.append(member("d"))
        d = everyone[-1]
        wait(everyone, lambda: shared([a, c, d]), "d gets a share", STARTED)
        described.append(describe_until(a, [a, c, d], "three members again"))

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
    return Outcome(tuple(everyone), writer, tuple(described), log)


def check(outcome: Outcome) -> None:
    """Every record read at least once, twice only after a failed or missing commit;
    no record read from a partition its reader did not own, no partition owned by two
    members at once (their callbacks, on one clock); the member epochs of KIP-848; the
    group described as a consumer group of a, b, c, then a, c, then a, c, d, through
    ConsumerGroupDescribe; and no complaint from the clients but the stale-epoch
    commits (:func:`assert_quiet`)."""
    members, writer = outcome.members, outcome.writer
    assert [m.name for m in members] == ["a", "b", "c", "d"]
    assert writer.errors == []
    assert [e for m in members for e in m.errors] == []
    assert [r for m in members for r in m.outside] == []
    assert_quiet(list(members))
    assert members[1].read, "the killed member read before it died"
    read = Counter(r for m in members for r in m.read)
    assert set(read) == writer.acked  # every record, at least once
    twice = {r for r, n in read.items() if n > 1}
    uncommitted = set().union(*(m.uncommitted for m in members))
    assert twice <= uncommitted, f"read twice, committed: {sorted(twice)[:10]}"
    assert_owned_once([s for m in members for s in m.member_spans()])
    # the member epochs of KIP-848, as the consumers' group metadata reported them
    assert all(e > 0 for m in members for e in m.epochs)

    three, two, again = outcome.described
    assert [sorted(described_owners(g)) for g in outcome.described] == [
        ["a", "b", "c"],
        ["a", "c"],
        ["a", "c", "d"],
    ]
    assert {g["type"] for g in outcome.described} == {"Consumer"}
    assert three["assignor"] == "uniform"
    assert sorted(len(m["partitions"]) for m in three["members"]) == [2, 2, 2]
    assert all(m["epoch"] == three["group_epoch"] for m in three["members"])
    assert all(m["upgraded"] is True for m in three["members"])
    assert three["group_epoch"] < two["group_epoch"] < again["group_epoch"]

    sent = {api for api, _ in requests_sent(outcome.request_log)}
    kip848 = {"CONSUMER_GROUP_HEARTBEAT", "CONSUMER_GROUP_DESCRIBE"}
    assert kip848 | {"OFFSET_COMMIT", "OFFSET_FETCH"} <= sent
    assert "JOIN_GROUP" not in sent
    assert not kip848 & refused(outcome.request_log)
