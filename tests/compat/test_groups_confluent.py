"""confluent-kafka (librdkafka) consumer groups against the real broker.

Real consumers, each in a thread of its own (or, to be killed, in a child process), join
groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit,
OffsetFetch and LeaveGroup as librdkafka sends them. Auto-commit is off; every consumer
commits what it has handled, synchronously, before it polls again. What the tests check:

- three consumers share a six-partition topic and read each of 600 records exactly once;
- a fourth joins and the eager protocol rebalances everybody; one leaves (``close()``,
  LeaveGroup) and the others take over its partitions at once, long before its session
  could expire; one is SIGKILLed and the others take over when its session expires;
- committed offsets: a new consumer of the group resumes after them, also after the
  broker restarted (and a group deleted before the restart stays deleted);
- ``cooperative-sticky`` rebalances incrementally (KIP-429): the first consumer gives
  up only the partitions that move and never stands without an assignment
  (confluent-kafka does not expose ``rd_kafka_rebalance_protocol()``; librdkafka's
  group log says COOPERATIVE instead);
- the AdminClient's group views agree with what the consumers themselves know, and
  ``minikafka groups`` (kafka-consumer-groups.sh) agrees with the AdminClient.

The broker runs with a short initial rebalance delay and a low minimum session timeout,
so a dead consumer is noticed within seconds. Every wait is a wait for a condition (the
consumers' threads report under one ``threading.Condition``) with a deadline.
"""

from __future__ import annotations

import json
import logging
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    NewTopic,
)

from minikafka.broker.testing import BrokerProcess

WAIT = 60.0  # seconds a condition may take on a loaded machine before the test fails
SESSION_MS = 6000

# (partition, offset, key, value) of one record, as produced and as consumed.
Record = tuple[int, int, bytes | None, bytes | None]


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """The topic and group id of this test alone."""
    return "cfg-" + re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name).strip("-")


@pytest.fixture
def changed() -> threading.Condition:
    """Notified whenever a consumer's assignment or records change."""
    return threading.Condition()


# --- helpers -------------------------------------------------------------------------------


def consumer_config(bootstrap: str, group: str, client_id: str, **extra: object) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": 30000,
        "fetch.wait.max.ms": 100,
        **extra,
    }


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=WAIT)
    futures[topic].result(timeout=WAIT)


def produce(
    bootstrap: str, topic: str, count: int, seed: str, partition: int | None = None
) -> list[Record]:
    """``count`` keyed records with seeded values; where each landed, in order."""
    rng = random.Random(seed)
    landed: list[Record] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(error)
            return
        partition, offset = message.partition(), message.offset()
        assert partition is not None
        assert offset is not None
        key, value = message.key(), message.value()
        assert not isinstance(key, str)
        assert not isinstance(value, str)
        landed.append((partition, offset, key, value))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        key = f"{seed}-key-{i}".encode()
        value = f"{seed}-{i}-{rng.getrandbits(64):016x}".encode()
        if partition is None:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
        else:
            producer.produce(
                topic, key=key, value=value, partition=partition, on_delivery=on_delivery
            )
    assert producer.flush(WAIT) == 0, "records still undelivered after the deadline"
    assert errors == []
    assert len(landed) == count
    return landed


def record_of(message: Message) -> Record:
    partition, offset = message.partition(), message.offset()
    assert partition is not None
    assert offset is not None
    key, value = message.key(), message.value()
    assert not isinstance(key, str)
    assert not isinstance(value, str)
    return partition, offset, key, value


def next_offsets(topic: str, records: Iterable[Record]) -> list[TopicPartition]:
    """What to commit after ``records``: one past the last offset of each partition."""
    last: dict[int, int] = {}
    for partition, offset, _, _ in records:
        last[partition] = max(offset, last.get(partition, -1))
    return [TopicPartition(topic, p, o + 1) for p, o in sorted(last.items())]


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
    # The size of the smallest assignment it held once it had one (cooperative
    # rebalancing never takes everything away).
    smallest: int | None = None
    crashed: str | None = None  # why its consumer stopped working

    def _event(self, kind: str, partitions: Iterable[int], cooperative: bool) -> None:
        parts = frozenset(partitions)
        with self.changed:
            self.events.append((kind, parts))
            if kind == "assign":
                self.assignment = self.assignment | parts if cooperative else parts
            elif cooperative:
                self.assignment = self.assignment - parts
            else:
                self.assignment = frozenset()
            if self.events[0][0] == "assign":
                size = len(self.assignment)
                self.smallest = size if self.smallest is None else min(self.smallest, size)
            self.changed.notify_all()

    def _handled(self, records: Sequence[Record]) -> None:
        with self.changed:
            self.records.extend(records)
            self.changed.notify_all()

    def _failed(self, what: str) -> None:
        with self.changed:
            self.errors.append(what)
            self.changed.notify_all()


@attrs.define(eq=False)
class ThreadMember(Member):
    """A confluent-kafka Consumer polling in a thread of its own until ``close()``."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""
    cooperative: bool = False
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
        **extra: object,
    ) -> ThreadMember:
        config = consumer_config(bootstrap, group, name, **extra)
        cooperative = config.get("partition.assignment.strategy") == "cooperative-sticky"
        member = cls(name, changed, config=config, topic=topic, cooperative=cooperative)
        member.thread = threading.Thread(target=member._run, name=name, daemon=True)
        member.thread.start()
        return member

    def _run(self) -> None:
        try:
            self._consume()
        except Exception as exc:  # reported to the test, which fails on it
            with self.changed:
                self.crashed = f"{type(exc).__name__}: {exc}"
                self.changed.notify_all()

    def _consume(self) -> None:
        consumer = Consumer(self.config)

        def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
            if self.cooperative:
                c.incremental_assign(partitions)  # KIP-429: add to what it holds
            self.member_id = c.memberid()
            self._event("assign", (tp.partition for tp in partitions), self.cooperative)

        def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
            if self.cooperative:
                c.incremental_unassign(partitions)  # only these go
            self._event("revoke", (tp.partition for tp in partitions), self.cooperative)

        def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
            self._event("lost", (tp.partition for tp in partitions), self.cooperative)

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        try:
            while not self.stopping.is_set():
                batch = []
                for message in consumer.consume(100, 0.1):
                    error = message.error()
                    if error is None:
                        batch.append(record_of(message))
                    elif error.code() != KafkaError._PARTITION_EOF:
                        self._failed(f"consume: {error.name()}")
                if not batch:
                    continue
                try:
                    consumer.commit(offsets=next_offsets(self.topic, batch), asynchronous=False)
                except KafkaException as exc:
                    self._failed(f"commit: {exc.args[0].name()}")
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
from confluent_kafka import Consumer, TopicPartition

config, topic = json.loads(sys.argv[1]), sys.argv[2]


def emit(**event):
    print(json.dumps(event), flush=True)


def on_assign(consumer, partitions):
    emit(kind="assign", partitions=[p.partition for p in partitions], member=consumer.memberid())


def on_revoke(consumer, partitions):
    emit(kind="revoke", partitions=[p.partition for p in partitions])


consumer = Consumer(config)
consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
while True:
    batch = [m for m in consumer.consume(100, 0.1) if m.error() is None]
    if batch:
        last = {}
        for m in batch:
            last[m.partition()] = m.offset() + 1
        offsets = [TopicPartition(topic, p, o) for p, o in last.items()]
        consumer.commit(offsets=offsets, asynchronous=False)
        records = [[m.partition(), m.offset(), m.key().hex(), m.value().hex()] for m in batch]
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
            self.output.append(line)  # librdkafka's log lines too
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if event["kind"] == "records":
                self._handled(
                    [(p, o, bytes.fromhex(k), bytes.fromhex(v)) for p, o, k, v in event["records"]]
                )
            else:
                self.member_id = event.get("member", self.member_id)
                self._event(event["kind"], event["partitions"], cooperative=False)
        with self.changed:
            if not self.killed:
                tail = "\n".join(self.output[-20:])
                self.crashed = f"the child exited ({self.process.wait()}): {tail}"
                self.changed.notify_all()

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, the session simply stops."""
        with self.changed:
            self.killed = True
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)


class LogLines(logging.Handler):
    """The messages of a logger (librdkafka's, with ``logger`` in its config)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


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
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cfg-watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), WAIT, cached=False)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, as the AdminClient reads them (OffsetFetch)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(timeout=WAIT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


# --- sharing a topic -----------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "confluent-kafka")
@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
@pytest.mark.compat("LeaveGroup", "confluent-kafka")
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


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("LeaveGroup", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
def test_a_fourth_joins_and_one_leaves(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    # The one that leaves later has a long session: only its LeaveGroup can end it quickly.
    leaver = ThreadMember.start(
        changed,
        bootstrap,
        name,
        name,
        f"{name}-0",
        **{"session.timeout.ms": 45000, "max.poll.interval.ms": 45000},
    )
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
        assert {n: after[n] for n in before} != before  # three held six; now they hold four or five

        sent = produce(bootstrap, name, 120, name + "-four")
        wait_for(members, lambda: len(handled(members)) >= 120, "120 records among four")
        got = handled(members)
        assert sorted(got) == sorted(sent)
        assert all(m.records for m in members)

        # close(): LeaveGroup, and the others take its partitions over within one
        # rebalance, long before its 45 s session could have expired.
        its_partitions = leaver.assignment
        started = time.monotonic()
        leaver.close()
        rest = members[1:]
        wait_for(rest, lambda: shares(rest, 6), "three take over", timeout=30)
        assert time.monotonic() - started < 30
        taken = frozenset().union(*(m.assignment for m in rest))
        assert its_partitions <= taken

        more = produce(bootstrap, name, 120, name + "-three")
        wait_for(members, lambda: len(handled(members)) >= 240, "120 more among three")
        assert sorted(handled(members)) == sorted(sent + more)
        assert not set(leaver.records) & set(more)
    finally:
        stop_all(m for m in members if m.thread is not None and m.thread.is_alive())
    assert [m.errors for m in members] == [[]] * 4


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
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
    consumer = Consumer(
        consumer_config(bootstrap, group, f"{group}-single", **{"enable.partition.eof": True})
    )
    got: list[Record] = []
    at_end: set[int] = set()

    def done() -> bool:
        return len(got) >= limit if limit is not None else len(at_end) == partitions

    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT
        while not done():
            assert time.monotonic() < deadline, f"{len(got)} records within {WAIT}s"
            message = consumer.poll(0.1)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(message.partition() or 0)
                continue
            record = record_of(message)
            at_end.discard(record[0])
            got.append(record)
        if got:
            consumer.commit(offsets=next_offsets(topic, got), asynchronous=False)
        # OffsetFetch from the consumer: what it committed is there.
        wanted = [TopicPartition(topic, p) for p in range(partitions)]
        committed = {tp.partition: tp.offset for tp in consumer.committed(wanted, WAIT)}
        for tp in next_offsets(topic, got):
            assert committed[tp.partition] == tp.offset
    finally:
        consumer.close()
    return got


@pytest.mark.compat("FindCoordinator", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
@pytest.mark.compat("JoinGroup", "confluent-kafka")
def test_committed_offsets_resume_also_after_a_restart(own_group_broker: BrokerProcess) -> None:
    bootstrap = own_group_broker.bootstrap
    topic = group = "cfg-resume"
    create_topic(bootstrap, topic, 3)
    sent = [r for p in range(3) for r in produce(bootstrap, topic, 30, f"{topic}-{p}", p)]

    first = consume_and_commit(bootstrap, group, topic, 3, limit=40)
    committed = committed_offsets(bootstrap, group)
    assert committed == {(topic, tp.partition): tp.offset for tp in next_offsets(topic, first)}
    # The next consumer of the group starts at the committed offsets: no record the
    # first one committed comes again, and nothing it read but did not commit is lost.
    second = consume_and_commit(bootstrap, group, topic, 3, limit=30)
    assert not set(first) & set(second)
    for partition in range(3):
        offsets = [r[1] for r in second if r[0] == partition]
        start = committed.get((topic, partition), 0)
        assert offsets == list(range(start, start + len(offsets)))
    committed = committed_offsets(bootstrap, group)
    # A group deleted before the restart (its tombstones) must stay deleted.
    deleted = group + "-deleted"
    consume_and_commit(bootstrap, deleted, topic, 3, limit=10)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_consumer_groups([deleted], request_timeout=WAIT)[deleted].result(timeout=WAIT)

    own_group_broker.restart()
    # The coordinator reloads the groups from __consumer_offsets.
    assert committed_offsets(bootstrap, group) == committed
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
    assert sorted(g.group_id for g in listed) == [group]
    described = admin.describe_consumer_groups([group])[group].result(timeout=WAIT)
    assert (described.state, described.members) == (ConsumerGroupState.EMPTY, [])
    assert committed_offsets(bootstrap, deleted) == {}
    # ... and asking for its offsets did not bring it back (OffsetFetch creates nothing).
    listed = admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
    assert sorted(g.group_id for g in listed) == [group]
    third = consume_and_commit(bootstrap, group, topic, 3, limit=None)
    assert sorted(first + second + third) == sorted(sent)
    assert len(first) + len(second) + len(third) == len(sent)


# --- cooperative rebalancing ---------------------------------------------------------------


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("DescribeGroups", "confluent-kafka")
def test_cooperative_sticky_rebalances_incrementally(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    cooperative = {"partition.assignment.strategy": "cooperative-sticky"}
    # confluent-kafka does not expose rd_kafka_rebalance_protocol(); librdkafka's group
    # log names the protocol it runs instead.
    log = LogLines()
    logger = logging.getLogger(f"librdkafka.{name}")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    first = ThreadMember.start(
        changed, bootstrap, name, name, f"{name}-0", **cooperative, debug="cgrp", logger=logger
    )
    members = [first]
    try:
        wait_for(members, lambda: shares(members, 6), "the first consumer holds all six")
        assert first.events == [("assign", frozenset(range(6)))]
        seen = len(first.events)

        second = ThreadMember.start(changed, bootstrap, name, name, f"{name}-1", **cooperative)
        members.append(second)
        wait_for(members, lambda: shares(members, 6), "two consumers share six partitions")
        # KIP-429: the first gives up only what moves, and keeps the rest throughout.
        revoked = [parts for kind, parts in first.events[seen:] if kind == "revoke"]
        assert revoked == [second.assignment]
        assert first.smallest == 3
        assert first.assignment == frozenset(range(6)) - second.assignment
        # Each round of the two-round flow may report an empty incremental assignment.
        assert all(not parts for kind, parts in first.events[seen:] if kind == "assign")
        assert [p for kind, p in second.events if kind == "assign" and p] == [second.assignment]
        assert all(kind == "assign" for kind, _ in second.events)

        assert any("COOPERATIVE protocol" in line for line in log.lines)
        assert any("delegating incremental revoke of 3 partition(s)" in line for line in log.lines)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        description = admin.describe_consumer_groups([name])[name].result(timeout=WAIT)
        assert description.partition_assignor == "cooperative-sticky"

        sent = produce(bootstrap, name, 120, name)
        wait_for(members, lambda: len(handled(members)) >= 120, "120 records between two")
        assert sorted(handled(members)) == sorted(sent)
    finally:
        stop_all(members)
    assert [m.errors for m in members] == [[], []]


# --- the admin client's view ---------------------------------------------------------------


@pytest.mark.compat("ListGroups", "confluent-kafka")
@pytest.mark.compat("DescribeGroups", "confluent-kafka")
@pytest.mark.compat("DeleteGroups", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
def test_admin_sees_the_groups_as_the_consumers_do(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topic(bootstrap, name, 4)
    empty = name + "-empty"
    produce(bootstrap, name, 40, name)
    done = consume_and_commit(bootstrap, empty, name, 4, limit=None)
    assert len(done) == 40

    members = [ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(2)]
    try:
        wait_for(members, lambda: shares(members, 4), "two consumers share four partitions")
        listed = admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT)
        assert listed.errors == []
        ours = {g.group_id: g for g in listed.valid if g.group_id in (name, empty)}
        assert set(ours) == {name, empty}
        assert not any(g.is_simple_consumer_group for g in ours.values())

        futures = admin.describe_consumer_groups(
            [name, empty], include_authorized_operations=True, request_timeout=WAIT
        )
        stable, idle = (futures[g].result(timeout=WAIT) for g in (name, empty))
        assert stable.state == ConsumerGroupState.STABLE
        assert stable.partition_assignor == "range"  # librdkafka's first choice
        assert stable.coordinator.id == 1
        assert not stable.is_simple_consumer_group
        assert set(stable.authorized_operations) == {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
        }
        described = {
            (
                m.member_id,
                m.client_id,
                m.host,
                frozenset(tp.partition for tp in m.assignment.topic_partitions),
            )
            for m in stable.members
        }
        assert described == {(m.member_id, m.name, "/127.0.0.1", m.assignment) for m in members}
        assert idle.state == ConsumerGroupState.EMPTY
        assert idle.members == []
        assert committed_offsets(bootstrap, empty) == {
            (name, tp.partition): tp.offset for tp in next_offsets(name, done)
        }

        # A group with members cannot be deleted; an empty one can.
        futures = admin.delete_consumer_groups([name, empty], request_timeout=WAIT)
        errors: dict[str, str | None] = {}
        for group, future in futures.items():
            try:
                future.result(timeout=WAIT)
                errors[group] = None
            except KafkaException as exc:
                errors[group] = exc.args[0].name()
        assert errors == {name: "NON_EMPTY_GROUP", empty: None}
        listed = admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT)
        assert {g.group_id for g in listed.valid} & {name, empty} == {name}
    finally:
        stop_all(members)
    idle = admin.describe_consumer_groups([name])[name].result(timeout=WAIT)
    assert (idle.state, idle.members) == (ConsumerGroupState.EMPTY, [])


# --- minikafka's own tool ------------------------------------------------------------------


def groups_tool(bootstrap: str, *args: str) -> tuple[list[str], str]:
    """``minikafka groups`` (kafka-consumer-groups.sh): its stdout lines and stderr."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikafka.broker",
            "groups",
            "--bootstrap-server",
            bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line], result.stderr


@pytest.mark.compat("ListGroups", "confluent-kafka")
@pytest.mark.compat("DescribeGroups", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
def test_groups_tool_agrees_with_the_admin_client(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topic(bootstrap, name, 4)
    empty = name + "-empty"
    produce(bootstrap, name, 40, name)
    consume_and_commit(bootstrap, empty, name, 4, limit=25)

    members = [ThreadMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(2)]
    try:
        wait_for(members, lambda: shares(members, 4), "two consumers share four partitions")

        # --list: the ids of every group the admin client lists.
        listed, _ = groups_tool(bootstrap, "--list")
        valid = admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
        assert {name, empty} <= set(listed)
        assert sorted(listed) == sorted(g.group_id for g in valid)

        description = admin.describe_consumer_groups([name])[name].result(timeout=WAIT)
        # --describe --state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
        lines, _ = groups_tool(bootstrap, "--describe", "--group", name, "--state")
        header = ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert lines[0].split() == header
        node = description.coordinator
        assert lines[1].split() == [
            name,
            f"{node.host}:{node.port}",
            f"({node.id})",
            description.partition_assignor,
            "Stable",  # ConsumerGroupState.STABLE
            str(len(description.members)),
        ]
        assert description.state == ConsumerGroupState.STABLE

        # --describe --members --verbose: one row per member, as the admin client sees it.
        lines, _ = groups_tool(bootstrap, "--describe", "--group", name, "--members", "--verbose")
        assert lines[0].split() == [
            "GROUP",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "ASSIGNMENT",
        ]
        rows = {tuple(line.split()) for line in lines[1:]}
        expected = set()
        for m in description.members:
            partitions = sorted(tp.partition for tp in m.assignment.topic_partitions)
            assignment = f"{name}({','.join(map(str, partitions))})"
            row = (name, m.member_id, m.host, m.client_id, str(len(partitions)), assignment)
            expected.add(row)
        assert rows == expected
        assert {row[1] for row in rows} == {m.member_id for m in members}

        # --describe (offsets) of the Empty group: its committed offsets, and a notice.
        lines, err = groups_tool(bootstrap, "--describe", "--group", empty)
        assert f"Consumer group '{empty}' has no active members." in err
        header = lines[0].split()
        assert header[:6] == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
        ]
        ends = end_offsets(bootstrap, name, 4)
        committed = committed_offsets(bootstrap, empty)
        cells = [line.split() for line in lines[1:]]
        # Partitions without a committed offset show "-"; the others, the offset and lag.
        shown = {
            int(c[2]): (c[0], c[1], int(c[3]), int(c[4]), int(c[5])) for c in cells if c[3] != "-"
        }
        assert shown == {
            p: (empty, name, offset, ends[p], ends[p] - offset)
            for (_, p), offset in committed.items()
        }
    finally:
        stop_all(members)
