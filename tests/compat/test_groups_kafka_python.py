"""kafka-python (3.x) consumer groups against the real broker.

Real ``KafkaConsumer``s, each polling in a thread of its own (or, to be killed, in a child
process), join groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup, Heartbeat
(kafka-python's heartbeat runs beside the poll loop), OffsetCommit, OffsetFetch and
LeaveGroup (``close()``). Auto-commit is off; each consumer commits what it has handled,
synchronously, before it polls again. What the tests check:

- three consumers share a six-partition topic and read each of 600 records exactly once;
- a fourth joins and the eager protocol (kafka-python's default range assignor)
  rebalances everybody; one leaves and the others take over at once; one is SIGKILLed
  and the others take over when its session expires;
- committed offsets: a new consumer of the group resumes after them, also after the
  broker restarted;
- ``KafkaAdminClient``'s group views (``list_groups``, ``describe_groups``,
  ``list_group_offsets``, ``delete_groups``: kafka-python 3's names for what 2.x called
  ``list_consumer_groups`` and so on) agree with what the consumers know.

The broker runs with a short initial rebalance delay and a low minimum session timeout.
Every wait is a wait for a condition (the consumers report under one
``threading.Condition``) with a deadline.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs
import kafka.errors as errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

from minikafka.broker.testing import BrokerProcess

WAIT = 60.0  # seconds a condition may take on a loaded machine before the test fails
SESSION_MS = 6000

# (partition, offset, key, value) of one record, as produced and as consumed.
Record = tuple[int, int, bytes | None, bytes | None]


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """The topic and group id of this test alone."""
    return "kpg-" + re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name).strip("-")


@pytest.fixture
def changed() -> threading.Condition:
    """Notified whenever a consumer's assignment or records change."""
    return threading.Condition()


@pytest.fixture
def admin(group_broker: BrokerProcess) -> Iterator[Any]:
    client = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap, client_id="kpg-admin")
    try:
        yield client
    finally:
        client.close()


# --- helpers -------------------------------------------------------------------------------


def consumer_config(bootstrap: str, group: str, client_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "client_id": client_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": SESSION_MS,
        "heartbeat_interval_ms": 500,
        "max_poll_interval_ms": 30000,
        "fetch_max_wait_ms": 100,
        **extra,
    }


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
            wait_for_metadata=True,
        )
    finally:
        admin.close()


def produce(
    bootstrap: str, topic: str, count: int, seed: str, partition: int | None = None
) -> list[Record]:
    """``count`` keyed records with seeded values; where each landed, in order."""
    rng = random.Random(seed)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        sent = []
        for i in range(count):
            key = f"{seed}-key-{i}".encode()
            value = f"{seed}-{i}-{rng.getrandbits(64):016x}".encode()
            sent.append(
                (key, value, producer.send(topic, key=key, value=value, partition=partition))
            )
        producer.flush(timeout=WAIT)
        landed: list[Record] = []
        for key, value, future in sent:
            metadata = future.get(timeout=WAIT)
            landed.append((metadata.partition, metadata.offset, key, value))
        return landed
    finally:
        producer.close()


def next_offsets(topic: str, records: Iterable[Record]) -> dict[TopicPartition, Any]:
    """What to commit after ``records``: one past the last offset of each partition."""
    last: dict[int, int] = {}
    for partition, offset, _, _ in records:
        last[partition] = max(offset, last.get(partition, -1))
    return {
        TopicPartition(topic, p): OffsetAndMetadata(o + 1, "", -1) for p, o in sorted(last.items())
    }


@attrs.define(eq=False)
class Member:
    """What one consumer of a group reports: its assignment, events and records."""

    name: str
    changed: threading.Condition
    assignment: frozenset[int] = frozenset()
    member_id: str = ""
    # ("assign" | "revoke" | "lost", partitions) in the order the callbacks ran.
    events: list[tuple[str, frozenset[int]]] = attrs.field(factory=list)
    records: list[Record] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    crashed: str | None = None  # why its consumer stopped working

    def _event(self, kind: str, partitions: Iterable[int]) -> None:
        with self.changed:
            self.events.append((kind, frozenset(partitions)))
            # The eager protocol: an assignment replaces the last, a revocation ends it.
            self.assignment = self.events[-1][1] if kind == "assign" else frozenset()
            self.changed.notify_all()

    def _handled(self, records: Sequence[Record]) -> None:
        with self.changed:
            self.records.extend(records)
            self.changed.notify_all()

    def _failed(self, what: str) -> None:
        with self.changed:
            self.errors.append(what)
            self.changed.notify_all()

    def _crashed(self, why: str) -> None:
        with self.changed:
            self.crashed = why
            self.changed.notify_all()


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: ThreadMember) -> None:
        self.member = member

    def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        self.member._event("revoke", (tp.partition for tp in revoked))

    def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self.member._event("assign", (tp.partition for tp in assigned))

    def on_partitions_lost(self, lost: Iterable[Any]) -> None:
        self.member._event("lost", (tp.partition for tp in lost))


@attrs.define(eq=False)
class ThreadMember(Member):
    """A KafkaConsumer polling in a thread of its own until ``close()``."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""
    thread: threading.Thread | None = None
    stopping: threading.Event = attrs.field(factory=threading.Event)

    @classmethod
    def start(
        cls,
        changed: threading.Condition,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        **extra: Any,
    ) -> ThreadMember:
        config = consumer_config(bootstrap, group, name, **extra)
        member = cls(name, changed, config=config, topic=topic)
        member.thread = threading.Thread(target=member._run, name=name, daemon=True)
        member.thread.start()
        return member

    def _run(self) -> None:
        try:
            self._consume()
        except Exception as exc:  # reported to the test, which fails on it
            self._crashed(f"{type(exc).__name__}: {exc}")

    def _consume(self) -> None:
        consumer = KafkaConsumer(**self.config)
        consumer.subscribe([self.topic], listener=_Listener(self))
        try:
            while not self.stopping.is_set():
                batch = [
                    (r.partition, r.offset, r.key, r.value)
                    for records in consumer.poll(timeout_ms=100).values()
                    for r in records
                ]
                self.member_id = consumer.group_metadata().member_id
                if not batch:
                    continue
                try:
                    consumer.commit(next_offsets(self.topic, batch))
                except errors.KafkaError as exc:
                    self._failed(f"commit: {type(exc).__name__}")
                self._handled(batch)
        finally:
            consumer.close()  # LeaveGroup

    def close(self) -> None:
        """``close()`` in the consumer's thread; wait for it."""
        self.stopping.set()
        assert self.thread is not None
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), f"{self.name} did not close within {WAIT}s"


# The consumer of a child process: the same loop, reporting as JSON lines on stdout.
CHILD = r"""
import json, sys
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

config, topic = json.loads(sys.argv[1]), sys.argv[2]


def emit(**event):
    print(json.dumps(event), flush=True)


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        emit(kind="revoke", partitions=[tp.partition for tp in revoked])

    def on_partitions_assigned(self, assigned):
        emit(kind="assign", partitions=[tp.partition for tp in assigned])


consumer = KafkaConsumer(**config)
consumer.subscribe([topic], listener=Listener())
while True:
    batch = [r for records in consumer.poll(timeout_ms=100).values() for r in records]
    if batch:
        last = {}
        for r in batch:
            last[r.partition] = r.offset + 1
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                         for p, o in last.items()})
        records = [[r.partition, r.offset, r.key.hex(), r.value.hex()] for r in batch]
        emit(kind="records", records=records)
"""


@attrs.define(eq=False)
class ProcessMember(Member):
    """A consumer in a child process, so that it can be SIGKILLed."""

    process: subprocess.Popen[bytes] | None = None
    output: list[str] = attrs.field(factory=list)
    killed: bool = False

    @classmethod
    def start(
        cls, changed: threading.Condition, bootstrap: str, group: str, topic: str, name: str
    ) -> ProcessMember:
        config = consumer_config(bootstrap, group, name)
        member = cls(name, changed)
        member.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(config), topic],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        threading.Thread(target=member._read, name=name, daemon=True).start()
        return member

    def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self.output.append(line)  # the client's log lines too
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if event["kind"] == "records":
                self._handled(
                    [(p, o, bytes.fromhex(k), bytes.fromhex(v)) for p, o, k, v in event["records"]]
                )
            else:
                self._event(event["kind"], event["partitions"])
        with self.changed:
            if not self.killed:
                tail = "\n".join(self.output[-20:])
                self._crashed(f"the child exited ({self.process.wait()}): {tail}")

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, the session simply stops."""
        with self.changed:
            self.killed = True
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)


def wait_for(
    members: Sequence[Member], condition: Callable[[], bool], what: str, timeout: float = WAIT
) -> None:
    """Wait until ``condition``, which the members' reports change; fail at the deadline."""
    changed = members[0].changed
    with changed:
        if not changed.wait_for(lambda: condition() or any(m.crashed for m in members), timeout):
            states = [
                (m.name, sorted(m.assignment), len(m.records), m.errors, m.events[-4:])
                for m in members
            ]
            raise AssertionError(f"{what}: not within {timeout}s; members: {states}")
        crashed = [m.crashed for m in members if m.crashed]
        assert not crashed, f"{what}: a consumer failed: {crashed}"


def shares(members: Sequence[Member], partitions: int) -> bool:
    """Every member holds partitions, none twice, and together all of them."""
    held = [m.assignment for m in members]
    return (
        all(held)
        and sum(len(h) for h in held) == partitions
        and frozenset().union(*held) == frozenset(range(partitions))
    )


def assignments(members: Iterable[Member]) -> dict[str, frozenset[int]]:
    return {m.name: m.assignment for m in members}


def handled(members: Iterable[Member]) -> list[Record]:
    return [record for m in members for record in m.records]


def stop_all(members: Iterable[Member]) -> None:
    for member in members:
        if isinstance(member, ThreadMember):
            member.close()
        elif isinstance(member, ProcessMember):
            member.kill()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: end for tp, end in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, as the KafkaAdminClient reads them (OffsetFetch)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


# --- sharing a topic -----------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "kafka-python")
@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
@pytest.mark.compat("LeaveGroup", "kafka-python")
def test_three_consumers_read_every_record_once(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    members = [ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(3)]
    try:
        wait_for(members, lambda: shares(members, 6), "three consumers share six partitions")
        stable = {m.name: (m.assignment, len(m.events)) for m in members}
        sent = produce(bootstrap, name, 600, name)
        assert {r[0] for r in sent} == set(range(6))  # the keys spread over all six
        wait_for(members, lambda: len(handled(members)) >= len(sent), "600 records consumed")
        after = {m.name: len(m.events) for m in members}
    finally:
        stop_all(members)
    got = handled(members)
    assert len(got) == len(sent)  # no duplicates ...
    assert sorted(got) == sorted(sent)  # ... and no gaps
    for member in members:
        assignment, events = stable[member.name]
        # No rebalance while they consumed; each read its own partitions, and some.
        assert member.events[events : after[member.name]] == [], member.events
        assert member.records
        assert {r[0] for r in member.records} <= assignment
        assert member.errors == []
    # Everything handled is committed: a consumer of the group would start at the end.
    ends = end_offsets(bootstrap, name, 6)
    assert committed_offsets(bootstrap, name) == {(name, p): end for p, end in ends.items()}


@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
@pytest.mark.compat("LeaveGroup", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
def test_a_fourth_joins_and_one_leaves(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    # The one that leaves later has a long session: only its LeaveGroup can end it quickly.
    long_session = {"session_timeout_ms": 45000, "max_poll_interval_ms": 45000}
    leaver = ThreadMember.start(changed, bootstrap, name, name, f"{name}-0", **long_session)
    members: list[ThreadMember] = [leaver]
    members += [ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in (1, 2)]
    try:
        wait_for(members, lambda: shares(members, 6), "three consumers share six partitions")
        before = assignments(members)
        seen = {m.name: len(m.events) for m in members}

        fourth = ThreadMember.start(changed, bootstrap, name, name, f"{name}-3")
        members.append(fourth)
        wait_for(members, lambda: shares(members, 6), "four consumers share six partitions")
        after = assignments(members)
        assert sorted(len(a) for a in after.values()) == [1, 1, 2, 2]
        for member in members[:3]:
            # The eager protocol: each gave up everything and was assigned anew.
            kinds = [kind for kind, _ in member.events[seen[member.name] :]]
            assert kinds[:1] == ["revoke"], member.events
            assert "assign" in kinds, member.events
        assert {n: after[n] for n in before} != before  # three held six; now four or five

        sent = produce(bootstrap, name, 120, name + "-four")
        wait_for(members, lambda: len(handled(members)) >= 120, "120 records among four")
        assert sorted(handled(members)) == sorted(sent)
        assert all(m.records for m in members)

        # close(): LeaveGroup, and the others take its partitions over within one
        # rebalance, long before its 45 s session could have expired.
        its_partitions = leaver.assignment
        started = time.monotonic()
        leaver.close()
        rest = members[1:]
        wait_for(rest, lambda: shares(rest, 6), "three take over", timeout=30)
        assert time.monotonic() - started < 30
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        more = produce(bootstrap, name, 120, name + "-three")
        wait_for(members, lambda: len(handled(members)) >= 240, "120 more among three")
        assert sorted(handled(members)) == sorted(sent + more)
        assert not set(leaver.records) & set(more)
    finally:
        stop_all(m for m in members if m.thread is not None and m.thread.is_alive())
    assert [m.errors for m in members] == [[]] * 4


@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
def test_a_killed_consumer_is_replaced_after_its_session(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    child = ProcessMember.start(changed, bootstrap, name, name, f"{name}-child")
    members: list[Member] = [child]
    try:
        members += [
            ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in (1, 2)
        ]
        wait_for(members, lambda: shares(members, 6), "three consumers share six partitions")
        its_partitions = child.assignment
        child.kill()
        killed = time.monotonic()
        rest = members[1:]
        wait_for(rest, lambda: shares(rest, 6), "the others take over after the session")
        # Kafka's coordinator notices a dead member by its missing heartbeats, at the
        # session timeout (6 s; its last heartbeat came up to 0.5 s before the kill).
        assert time.monotonic() - killed > (SESSION_MS - 1500) / 1000
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        sent = produce(bootstrap, name, 120, name)
        wait_for(rest, lambda: len(handled(rest)) >= 120, "120 records after the kill")
        assert sorted(handled(rest)) == sorted(sent)
        assert {r[0] for r in handled(rest)} >= its_partitions
    finally:
        stop_all(members)
    assert [m.errors for m in rest] == [[], []]


# --- committed offsets ---------------------------------------------------------------------


def consume_and_commit(
    bootstrap: str, group: str, topic: str, partitions: int, limit: int | None
) -> list[Record]:
    """One consumer of ``group``: handle ``limit`` records (or all, to the end of every
    partition), commit exactly those, close. The handled records, in order."""
    consumer = KafkaConsumer(**consumer_config(bootstrap, group, f"{group}-single"))
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    got: list[Record] = []
    try:
        consumer.subscribe([topic])
        ends = consumer.end_offsets(tps)

        def done() -> bool:
            if limit is not None:
                return len(got) >= limit
            assigned = consumer.assignment()
            return len(assigned) == partitions and all(
                consumer.position(tp) >= ends[tp] for tp in assigned
            )

        deadline = time.monotonic() + WAIT
        while not done():
            assert time.monotonic() < deadline, f"{len(got)} records within {WAIT}s"
            for records in consumer.poll(timeout_ms=100).values():
                for r in records:
                    if limit is None or len(got) < limit:
                        got.append((r.partition, r.offset, r.key, r.value))
        if got:
            consumer.commit(next_offsets(topic, got))
        # OffsetFetch from the consumer: what it committed is there.
        for tp, meta in next_offsets(topic, got).items():
            assert consumer.committed(tp) == meta.offset
    finally:
        consumer.close()
    return got


@pytest.mark.compat("FindCoordinator", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
@pytest.mark.compat("JoinGroup", "kafka-python")
def test_committed_offsets_resume_also_after_a_restart(own_group_broker: BrokerProcess) -> None:
    bootstrap = own_group_broker.bootstrap
    topic = group = "kpg-resume"
    create_topic(bootstrap, topic, 3)
    sent = [r for p in range(3) for r in produce(bootstrap, topic, 30, f"{topic}-{p}", p)]

    first = consume_and_commit(bootstrap, group, topic, 3, limit=40)
    committed = committed_offsets(bootstrap, group)
    assert committed == {
        (topic, tp.partition): m.offset for tp, m in next_offsets(topic, first).items()
    }
    # The next consumer of the group starts at the committed offsets: no record the
    # first one committed comes again, and nothing it read but did not commit is lost.
    second = consume_and_commit(bootstrap, group, topic, 3, limit=30)
    assert not set(first) & set(second)
    for partition in range(3):
        offsets = [r[1] for r in second if r[0] == partition]
        start = committed.get((topic, partition), 0)
        assert offsets == list(range(start, start + len(offsets)))
    committed = committed_offsets(bootstrap, group)

    own_group_broker.restart()
    # The coordinator reloads the group from __consumer_offsets.
    assert committed_offsets(bootstrap, group) == committed
    third = consume_and_commit(bootstrap, group, topic, 3, limit=None)
    assert sorted(first + second + third) == sorted(sent)
    assert len(first) + len(second) + len(third) == len(sent)


# --- the admin client's view ---------------------------------------------------------------


@pytest.mark.compat("ListGroups", "kafka-python")
@pytest.mark.compat("DescribeGroups", "kafka-python")
@pytest.mark.compat("DeleteGroups", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
def test_admin_sees_the_groups_as_the_consumers_do(
    group_broker: BrokerProcess, admin: Any, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 4)
    empty = name + "-empty"
    produce(bootstrap, name, 40, name)
    done = consume_and_commit(bootstrap, empty, name, 4, limit=None)
    assert len(done) == 40

    members = [ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(2)]
    try:
        wait_for(members, lambda: shares(members, 4), "two consumers share four partitions")
        listed = {g["group_id"]: g for g in admin.list_groups()}
        # ListGroups v0-2: id and protocol type; the state comes with v4 (KIP-518).
        assert listed[name] == {"group_id": name, "protocol_type": "consumer"}
        assert listed[empty] == {"group_id": empty, "protocol_type": "consumer"}

        described = admin.describe_groups([name, empty, name + "-unknown"])
        stable, idle, unknown = (described[g] for g in (name, empty, name + "-unknown"))
        assert (stable["error"], stable["group_state"]) == (None, "Stable")
        assert (stable["protocol_type"], stable["protocol_data"]) == ("consumer", "range")
        assert set(stable["authorized_operations"]) == {"READ", "DESCRIBE", "DELETE"}
        seen = {
            (
                m["member_id"],
                m["client_id"],
                m["client_host"],
                frozenset(
                    p
                    for a in m["member_assignment"]["assigned_partitions"]
                    if a["topic"] == name
                    for p in a["partitions"]
                ),
                tuple(m["member_metadata"]["topics"]),
            )
            for m in stable["members"]
        }
        expected = {(m.member_id, m.name, "/127.0.0.1", m.assignment, (name,)) for m in members}
        assert seen == expected
        assert (idle["group_state"], idle["members"], idle["protocol_type"]) == (
            "Empty",
            [],
            "consumer",
        )
        # A group the coordinator does not know is Dead, without an error (Kafka's answer).
        assert (unknown["error"], unknown["group_state"], unknown["members"]) == (None, "Dead", [])

        assert committed_offsets(bootstrap, empty) == {
            (name, tp.partition): meta.offset for tp, meta in next_offsets(name, done).items()
        }

        # A group with members cannot be deleted; an empty one can, once.
        assert admin.delete_groups([name, empty]) == {name: "NonEmptyGroupError", empty: "OK"}
        assert admin.delete_groups([empty]) == {empty: "GroupIdNotFoundError"}
        assert {g["group_id"] for g in admin.list_groups()} & {name, empty} == {name}
    finally:
        stop_all(members)
    idle = admin.describe_groups([name])[name]
    assert (idle["group_state"], idle["members"]) == ("Empty", [])
