"""confluent-kafka (librdkafka) consumer groups against the real broker.

Real consumers, each in a thread of its own (or, to be killed, in a child process), join
groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit,
OffsetFetch and LeaveGroup as librdkafka sends them. Auto-commit is off; every consumer
commits what it has handled, synchronously, before it polls again. The scenarios are
those of ``_groups.py``; this module is their adapter, and adds what only this client
shows:

- committed offsets survive a restart, and a group deleted before the restart stays
  deleted;
- ``cooperative-sticky`` rebalances incrementally (KIP-429): the first consumer gives
  up only the partitions that move and never stands without an assignment
  (confluent-kafka does not expose ``rd_kafka_rebalance_protocol()``; librdkafka's
  group log says COOPERATIVE instead);
- the AdminClient's group views agree with what the consumers themselves know, and
  ``minikafka groups`` (kafka-consumer-groups.sh) agrees with the AdminClient.

The broker runs with a short initial rebalance delay and a low minimum session timeout,
so a dead consumer is noticed within seconds.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
)

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import (
    WAIT,
    ChildMember,
    Member,
    Record,
    ThreadMember,
    ends_of,
)
from tests.compat._librdkafka import LibrdkafkaAdmin, librdkafka_config

# --- the adapter ---------------------------------------------------------------------------


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
    return [
        TopicPartition(t, p, o) for (t, p), o in sorted(ends_of(topic, records).items())
    ]


@attrs.define(eq=False)
class ConfluentMember(ThreadMember):
    """A confluent-kafka Consumer polling in a thread of its own until ``leave()``."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""

    def consume(self) -> None:
        consumer = Consumer(self.config)

        def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
            if self.cooperative:
                c.incremental_assign(partitions)  # KIP-429: add to what it holds
            self.member_id = c.memberid()
            self.on_event("assign", (tp.partition for tp in partitions))

        def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
            if self.cooperative:
                c.incremental_unassign(partitions)  # only these go
            self.on_event("revoke", (tp.partition for tp in partitions))

        def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
            self.on_event("lost", (tp.partition for tp in partitions))

        consumer.subscribe(
            [self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost
        )
        try:
            while not self.stopping.is_set():
                batch = []
                for message in consumer.consume(100, 0.1):
                    error = message.error()
                    if error is None:
                        batch.append(record_of(message))
                    elif error.code() != KafkaError._PARTITION_EOF:
                        self.on_error(f"consume: {error.name()}")
                if not batch:
                    continue
                try:
                    consumer.commit(
                        offsets=next_offsets(self.topic, batch), asynchronous=False
                    )
                except KafkaException as exc:
                    self.on_error(f"commit: {exc.args[0].name()}")
                self.on_records(batch)
        finally:
            consumer.close()  # LeaveGroup


# The consumer of a child process (after _groups.CHILD_PRELUDE): the same loop.
CHILD = r"""
from confluent_kafka import Consumer, TopicPartition


def on_assign(consumer, partitions):
    emit(kind="assign", partitions=[p.partition for p in partitions], member=consumer.memberid())


def on_revoke(consumer, partitions):
    emit(kind="revoke", partitions=[p.partition for p in partitions])


consumer = Consumer(config)
consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
while True:
    polled = [m for m in consumer.consume(100, 0.1) if m.error() is None]
    batch = [(m.partition(), m.offset(), m.key(), m.value()) for m in polled]
    if batch:
        offsets = [TopicPartition(topic, p, o) for p, o in ends(batch).items()]
        consumer.commit(offsets=offsets, asynchronous=False)
        report(batch)
"""


@attrs.define
class ConfluentGroups(LibrdkafkaAdmin):
    """confluent-kafka, as the group scenarios use it."""

    bootstrap: str
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    auto_commits: bool = False

    def produce(
        self, topic: str, count: int, seed: str, partition: int | None = None
    ) -> list[Record]:
        landed: list[Record] = []
        errors: list[KafkaError] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                errors.append(error)
                return
            landed.append(record_of(message))

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for key, value in scenarios.seeded(seed, count):
            if partition is None:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
            else:
                producer.produce(
                    topic,
                    key=key,
                    value=value,
                    partition=partition,
                    on_delivery=on_delivery,
                )
        assert producer.flush(WAIT) == 0, "records still undelivered after the deadline"
        assert errors == []
        assert len(landed) == count
        return landed

    def join(
        self, group: str, topic: str, name: str, session_ms: int | None = None
    ) -> Member:
        return self.join_with(group, topic, name, {"session_ms": session_ms})

    def join_with(
        self, group: str, topic: str, name: str, extra: Mapping[str, Any]
    ) -> ConfluentMember:
        """A member whose consumer has ``extra`` in its config (and ``session_ms``, a
        session of its own)."""
        config = librdkafka_config(self.bootstrap, group, name, **extra)
        cooperative = (
            config.get("partition.assignment.strategy") == "cooperative-sticky"
        )
        member = ConfluentMember(
            name, self.changed, cooperative=cooperative, config=config, topic=topic
        )
        member.begin()
        return member

    def join_killable(self, group: str, topic: str, name: str) -> Member:
        config = librdkafka_config(self.bootstrap, group, name)
        return ChildMember.start(self.changed, CHILD, config, topic, name)

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        config = librdkafka_config(
            self.bootstrap, group, f"{group}-single", **{"enable.partition.eof": True}
        )
        consumer = Consumer(config)
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
            committed = {
                tp.partition: tp.offset for tp in consumer.committed(wanted, WAIT)
            }
            for tp in next_offsets(topic, got):
                assert committed[tp.partition] == tp.offset
        finally:
            consumer.close()
        return got

    def assert_exactly_once(
        self, got: Sequence[Record], sent: Sequence[Record]
    ) -> None:
        scenarios.assert_same_records(got, sent)


@pytest.fixture
def client(group_broker: BrokerProcess) -> ConfluentGroups:
    return ConfluentGroups(group_broker.bootstrap)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "cfg-")


class LogLines(logging.Handler):
    """The messages of a logger (librdkafka's, with ``logger`` in its config)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


# --- the scenarios -------------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "confluent-kafka")
@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
@pytest.mark.compat("LeaveGroup", "confluent-kafka")
def test_three_consumers_read_every_record_once(
    client: ConfluentGroups, name: str
) -> None:
    scenarios.three_consumers_read_every_record_once(client, name)


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("LeaveGroup", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
def test_a_fourth_joins_and_one_leaves(client: ConfluentGroups, name: str) -> None:
    scenarios.a_fourth_joins_and_one_leaves(client, name)


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
def test_a_killed_consumer_is_replaced_after_its_session(
    client: ConfluentGroups, name: str
) -> None:
    scenarios.a_killed_consumer_is_replaced_after_its_session(client, name)


@pytest.mark.compat("FindCoordinator", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
@pytest.mark.compat("JoinGroup", "confluent-kafka")
def test_committed_offsets_resume_also_after_a_restart(
    own_group_broker: BrokerProcess,
) -> None:
    client = ConfluentGroups(own_group_broker.bootstrap)
    group = "cfg-resume"
    # A group deleted before the restart (its tombstones) must stay deleted.
    deleted = group + "-deleted"

    def delete_a_group() -> None:
        client.consume_and_commit(deleted, group, 3, limit=10)
        admin = client.admin()
        admin.delete_consumer_groups([deleted], request_timeout=WAIT)[deleted].result(
            timeout=WAIT
        )

    def only_the_group_came_back() -> None:
        admin = client.admin()
        listed = (
            admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
        )
        assert sorted(g.group_id for g in listed) == [group]
        described = admin.describe_consumer_groups([group])[group].result(timeout=WAIT)
        assert (described.state, described.members) == (ConsumerGroupState.EMPTY, [])
        assert client.committed_offsets(deleted) == {}
        # ... and asking for its offsets did not bring it back (OffsetFetch creates nothing).
        listed = (
            admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
        )
        assert sorted(g.group_id for g in listed) == [group]

    scenarios.committed_offsets_resume_also_after_a_restart(
        client, own_group_broker, group, delete_a_group, only_the_group_came_back
    )


# --- cooperative rebalancing ---------------------------------------------------------------


@pytest.mark.compat("JoinGroup", "confluent-kafka")
@pytest.mark.compat("SyncGroup", "confluent-kafka")
@pytest.mark.compat("Heartbeat", "confluent-kafka")
@pytest.mark.compat("DescribeGroups", "confluent-kafka")
def test_cooperative_sticky_rebalances_incrementally(
    client: ConfluentGroups, name: str
) -> None:
    client.create_topic(name, 6)
    cooperative: dict[str, object] = {
        "partition.assignment.strategy": "cooperative-sticky"
    }
    # confluent-kafka does not expose rd_kafka_rebalance_protocol(); librdkafka's group
    # log names the protocol it runs instead.
    log = LogLines()
    logger = logging.getLogger(f"librdkafka.{name}")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    traced = {**cooperative, "debug": "cgrp", "logger": logger}
    first = client.join_with(name, name, f"{name}-0", traced)
    members = [first]
    try:
        scenarios.wait_for(
            members,
            lambda: scenarios.shares(members, 6),
            "the first consumer holds all six",
        )
        assert first.events == [("assign", frozenset(range(6)))]
        seen = len(first.events)

        second = client.join_with(name, name, f"{name}-1", cooperative)
        members.append(second)
        scenarios.wait_for(
            members,
            lambda: scenarios.shares(members, 6),
            "two consumers share six partitions",
        )
        # KIP-429: the first gives up only what moves, and keeps the rest throughout.
        revoked = [parts for kind, parts in first.events[seen:] if kind == "revoke"]
        assert revoked == [second.assignment]
        assert first.smallest == 3
        assert first.assignment == frozenset(range(6)) - second.assignment
        # Each round of the two-round flow may report an empty incremental assignment.
        assert all(not parts for kind, parts in first.events[seen:] if kind == "assign")
        assert [p for kind, p in second.events if kind == "assign" and p] == [
            second.assignment
        ]
        assert all(kind == "assign" for kind, _ in second.events)

        assert any("COOPERATIVE protocol" in line for line in log.lines)
        assert any(
            "delegating incremental revoke of 3 partition(s)" in line
            for line in log.lines
        )
        admin = client.admin()
        description = admin.describe_consumer_groups([name])[name].result(timeout=WAIT)
        assert description.partition_assignor == "cooperative-sticky"

        sent = client.produce(name, 120, name)
        scenarios.wait_for(
            members,
            lambda: len(scenarios.handled(members)) >= 120,
            "120 records between two",
        )
        assert sorted(scenarios.handled(members)) == sorted(sent)
    finally:
        scenarios.stop_all(members)
    assert [m.errors for m in members] == [[], []]


# --- the admin client's view ---------------------------------------------------------------


@pytest.mark.compat("ListGroups", "confluent-kafka")
@pytest.mark.compat("DescribeGroups", "confluent-kafka")
@pytest.mark.compat("DeleteGroups", "confluent-kafka")
@pytest.mark.compat("OffsetFetch", "confluent-kafka")
def test_admin_sees_the_groups_as_the_consumers_do(
    client: ConfluentGroups, name: str
) -> None:
    admin = client.admin()
    with scenarios.two_members_and_an_empty_group(client, name) as (members, empty, _):
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
        assert described == scenarios.as_described(members)
        assert idle.state == ConsumerGroupState.EMPTY
        assert idle.members == []

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
    client: ConfluentGroups, name: str
) -> None:
    bootstrap = client.bootstrap
    admin = client.admin()
    with scenarios.two_members_and_an_empty_group(client, name, limit=25) as (
        members,
        empty,
        _,
    ):
        # --list: the ids of every group the admin client lists.
        listed, _ = groups_tool(bootstrap, "--list")
        valid = (
            admin.list_consumer_groups(request_timeout=WAIT).result(timeout=WAIT).valid
        )
        assert {name, empty} <= set(listed)
        assert sorted(listed) == sorted(g.group_id for g in valid)

        description = admin.describe_consumer_groups([name])[name].result(timeout=WAIT)
        # --describe --state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
        lines, _ = groups_tool(bootstrap, "--describe", "--group", name, "--state")
        header = [
            "GROUP",
            "COORDINATOR",
            "(ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "#MEMBERS",
        ]
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
        lines, _ = groups_tool(
            bootstrap, "--describe", "--group", name, "--members", "--verbose"
        )
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
            row = (
                name,
                m.member_id,
                m.host,
                m.client_id,
                str(len(partitions)),
                assignment,
            )
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
        ends = client.end_offsets(name, 4)
        committed = client.committed_offsets(empty)
        cells = [line.split() for line in lines[1:]]
        # Partitions without a committed offset show "-"; the others, the offset and lag.
        shown = {
            int(c[2]): (c[0], c[1], int(c[3]), int(c[4]), int(c[5]))
            for c in cells
            if c[3] != "-"
        }
        assert shown == {
            p: (empty, name, offset, ends[p], ends[p] - offset)
            for (_, p), offset in committed.items()
        }
