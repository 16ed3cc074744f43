"""confluent-kafka (librdkafka) with ``group.protocol=consumer`` (KIP-848) against the broker.

Real consumers, each polling in a thread of its own, join one group with
ConsumerGroupHeartbeat: the broker assigns (``uniform``), each member reconciles towards
its target, a partition moves only once its owner has revoked it. Every consumer commits
what it has handled, synchronously, before it polls again (OffsetCommit v9 with the
member epoch). The broker's heartbeat interval is short so that reassignments take
seconds; a session is a few seconds so that a closed consumer's partitions move soon.

The guarantees checked: every record is consumed once per group by members that share
the partitions; a member that leaves has its partitions taken over by the others, who
go on from its committed offsets (nothing read twice, nothing skipped); a member killed
without leaving is fenced when its session ends and its partitions move; the AdminClient
lists the group as a ``consumer`` group and describes its members and their assignment
(ListGroups v5, ConsumerGroupDescribe); and the group outlives a broker restart, read
back from ``__consumer_offsets``.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import WAIT
from tests.compat.conftest import GROUP_OVERRIDES
from tests.compat.test_groups_confluent import ConfluentGroups

OVERRIDES = {
    **GROUP_OVERRIDES,
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
}
PARTITIONS = 6

Record = tuple[int, int]  # partition, offset


@attrs.define(eq=False)
class Members:
    """The group's consumers and what they report, under one condition."""

    bootstrap: str
    group: str
    topic: str
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    consumed: list[tuple[str, Record]] = attrs.field(factory=list)
    owned: dict[str, set[int]] = attrs.field(factory=dict)
    errors: list[str] = attrs.field(factory=list)
    clients: dict[str, Callable[[dict[str, Any]], Any]] = attrs.field(factory=dict)
    _stops: dict[str, threading.Event] = attrs.field(factory=dict)
    _threads: dict[str, threading.Thread] = attrs.field(factory=dict)

    def start(self, name: str, **extra: Any) -> None:
        """Start member ``name`` polling in a thread of its own: confluent-kafka's
        Consumer, or the client :attr:`clients` names for it (one with its API)."""
        stop = threading.Event()
        client = self.clients.get(name, Consumer)
        thread = threading.Thread(
            target=self._run, args=(name, stop, client, extra), name=name
        )
        self._stops[name], self._threads[name] = stop, thread
        with self.changed:
            self.owned[name] = set()
        thread.start()

    def close(self, name: str) -> None:
        """Stop the consumer: it commits what it read and leaves (epoch -1)."""
        self._stops[name].set()
        self._threads.pop(name).join(WAIT)
        with self.changed:
            del self.owned[name]
            self.changed.notify_all()

    def close_all(self) -> None:
        for name in list(self._threads):
            self.close(name)

    def _report(self, change: Callable[[], None]) -> None:
        with self.changed:
            change()
            self.changed.notify_all()

    def _consumed(self, records: list[tuple[str, Record]]) -> None:
        self._report(lambda: self.consumed.extend(records))

    def _error(self, what: str) -> None:
        self._report(lambda: self.errors.append(what))

    def _run(
        self,
        name: str,
        stop: threading.Event,
        client: Callable[[dict[str, Any]], Any],
        extra: dict[str, Any],
    ) -> None:
        config = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "group.protocol": "consumer",
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **extra,
        }
        consumer = client(config)

        def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
            self._report(
                lambda: self.owned[name].update(p.partition for p in partitions)
            )

        def on_revoke(_: Consumer, partitions: list[TopicPartition]) -> None:
            gone = {p.partition for p in partitions}
            self._report(lambda: self.owned[name].difference_update(gone))

        consumer.subscribe(
            [self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke
        )
        try:
            while not stop.is_set():
                batch: list[Message] = []
                for message in consumer.consume(100, 0.1):
                    error = message.error()
                    if error is None:
                        batch.append(message)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        self._error(f"{name}: {error}")
                if not batch:
                    continue
                ends: dict[int, int] = {}
                records = []
                for m in batch:
                    partition, offset = m.partition(), m.offset()
                    assert partition is not None
                    assert offset is not None
                    ends[partition] = max(ends.get(partition, 0), offset + 1)
                    records.append((partition, offset))
                try:
                    consumer.commit(
                        offsets=[
                            TopicPartition(self.topic, p, o) for p, o in ends.items()
                        ],
                        asynchronous=False,
                    )
                except KafkaException as exc:
                    self._error(f"{name}: commit {exc}")
                self._consumed([(name, r) for r in records])
        finally:
            consumer.close()

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(condition, WAIT):
                raise AssertionError(
                    f"{what}: not within {WAIT}s; owned {self.owned}, "
                    f"{len(self.consumed)} consumed, errors {self.errors}"
                )

    def shared(self) -> bool:
        """Every partition owned by exactly one member, and every member owns some."""
        owned = [p for partitions in self.owned.values() for p in partitions]
        return sorted(owned) == list(range(PARTITIONS)) and all(self.owned.values())


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "kip848-")


def assert_once(consumed: list[tuple[str, Record]], produced: int) -> None:
    counts = Counter(record for _, record in consumed)
    twice = [r for r, n in counts.items() if n > 1]
    assert twice == [], f"consumed more than once: {twice[:10]}"
    assert len(counts) == produced


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
@pytest.mark.compat("OffsetCommit", "confluent-kafka")
@pytest.mark.compat("ListGroups", "confluent-kafka")
@pytest.mark.compat("ConsumerGroupDescribe", "confluent-kafka")
def test_three_members_share_the_partitions_and_read_every_record_once(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    members = Members(broker.bootstrap, name, name)
    try:
        for member in ("a", "b", "c"):
            members.start(member)
        # Each member reconciles on its own: a newcomer may own one partition while
        # another still holds the one it is yet to revoke, every partition owned once.
        # The target the uniform assignor computed is two each.
        members.wait(
            lambda: (
                members.shared()
                and sorted(len(p) for p in members.owned.values()) == [2, 2, 2]
            ),
            "three members own two partitions each",
        )
        client.produce(name, 300, name)
        members.wait(lambda: len(members.consumed) >= 300, "all 300 records consumed")
        assert_once(members.consumed, 300)
        # the readers of each partition are who owned it
        for member, (partition, _) in members.consumed:
            assert partition in members.owned[member]

        admin = client.admin()
        listed = admin.list_consumer_groups(request_timeout=WAIT).result(WAIT)
        (ours,) = [g for g in listed.valid if g.group_id == name]
        assert ours.type == ConsumerGroupType.CONSUMER
        described = admin.describe_consumer_groups([name], request_timeout=WAIT)[
            name
        ].result(WAIT)
        assigned = {
            m.client_id: {tp.partition for tp in m.assignment.topic_partitions}
            for m in described.members
        }
        assert assigned == members.owned
        assert members.errors == []
    finally:
        members.close_all()


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
def test_a_member_that_leaves_hands_its_partitions_over_without_rereads(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    members = Members(broker.bootstrap, name, name)
    try:
        members.start("a")
        members.start("b")
        members.wait(members.shared, "two members share the partitions")
        client.produce(name, 120, name + "-1")
        members.wait(lambda: len(members.consumed) >= 120, "the first 120 consumed")
        leaving = set(members.owned["b"])
        members.close("b")
        members.wait(
            lambda: members.owned.get("a") == set(range(PARTITIONS)),
            "a takes b's partitions",
        )
        client.produce(name, 120, name + "-2")
        members.wait(lambda: len(members.consumed) >= 240, "all 240 consumed")
        assert_once(members.consumed, 240)
        second = [r for m, r in members.consumed[120:]]
        assert {p for p, _ in second} & leaving, "a read b's old partitions"
        assert all(m == "a" for m, _ in members.consumed[120:])
        assert members.errors == []
    finally:
        members.close_all()


# A consumer in a child process, to be killed: it reports each assignment on stdout.
CHILD = r"""
import sys
from confluent_kafka import Consumer

bootstrap, group, topic = sys.argv[1:4]
consumer = Consumer({
    "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
    "client.id": "child", "enable.auto.commit": False,
})
def on_assign(_, partitions):
    print("assigned", " ".join(str(p.partition) for p in partitions), flush=True)
consumer.subscribe([topic], on_assign=on_assign)
while True:
    consumer.poll(0.1)
"""


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
def test_a_killed_member_is_fenced_after_its_session_and_its_partitions_move(
    broker: BrokerProcess, name: str
) -> None:
    client = ConfluentGroups(broker.bootstrap)
    client.create_topic(name, PARTITIONS)
    members = Members(broker.bootstrap, name, name)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, broker.bootstrap, name, name],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in child.stdout or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert lines.get(timeout=WAIT).split()[0] == "assigned"
        members.start("a")
        members.wait(
            lambda: 0 < len(members.owned["a"]) < PARTITIONS,
            "a shares the partitions with the child",
        )
        child.kill()  # no leave: only the session timeout removes it
        child.wait(WAIT)
        members.wait(
            lambda: members.owned.get("a") == set(range(PARTITIONS)),
            "a takes the killed member's partitions",
        )
        assert members.errors == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(WAIT)
        members.close_all()


@pytest.mark.compat("ConsumerGroupHeartbeat", "confluent-kafka")
@pytest.mark.compat("ConsumerGroupDescribe", "confluent-kafka")
def test_the_group_and_its_offsets_outlive_a_broker_restart(
    tmp_path: Path, name: str
) -> None:
    with BrokerProcess(tmp_path / "data", overrides=OVERRIDES) as own:
        client = ConfluentGroups(own.bootstrap)
        client.create_topic(name, PARTITIONS)
        members = Members(own.bootstrap, name, name)
        try:
            members.start("a", **{"group.instance.id": "static-a"})
            members.wait(members.shared, "a owns every partition")
            client.produce(name, 60, name + "-1")
            members.wait(lambda: len(members.consumed) >= 60, "60 consumed")
        finally:
            members.close_all()
        first = {record for _, record in members.consumed}
        own.stop()
        own.start()
        admin = client.admin()  # kept until its future is answered
        described = admin.describe_consumer_groups([name])[name].result(WAIT)
        assert described.type == ConsumerGroupType.CONSUMER
        client.produce(name, 60, name + "-2")
        members = Members(own.bootstrap, name, name)
        try:
            members.start("a2")
            members.wait(lambda: len(members.consumed) >= 60, "the next 60 consumed")
            # it went on from the committed offsets: none of the first 60 again
            again = {record for _, record in members.consumed}
            assert again.isdisjoint(first)
            assert_once(members.consumed, 60)
            assert members.errors == []
        finally:
            members.close_all()
