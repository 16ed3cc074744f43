"""kafka-python (3.x) consumer groups against the real broker.

Real ``KafkaConsumer``s, each polling in a thread of its own (or, to be killed, in a child
process), join groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup, Heartbeat
(kafka-python's heartbeat runs beside the poll loop), OffsetCommit, OffsetFetch and
LeaveGroup (``close()``). Auto-commit is off; each consumer commits what it has handled,
synchronously, before it polls again. The scenarios are those of ``_groups.py`` (the
eager protocol here is kafka-python's default range assignor); this module is their
adapter, and adds ``KafkaAdminClient``'s group views (``list_groups``,
``describe_groups``, ``list_group_offsets``, ``delete_groups``: kafka-python 3's names for
what 2.x called ``list_consumer_groups`` and so on), which must agree with what the
consumers know.

The broker runs with a short initial rebalance delay and a low minimum session timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs
import kafka.errors as errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

from minikafka.broker.testing import BrokerProcess
from minikafka.common.testing import GROUP_POLL_MS
from tests.compat import _groups as scenarios
from tests.compat._groups import (
    WAIT,
    ChildMember,
    Member,
    Record,
    ThreadMember,
    python_config,
)

# --- the adapter ---------------------------------------------------------------------------


def next_offsets(topic: str, records: Iterable[Record]) -> dict[TopicPartition, Any]:
    """What to commit after ``records``: one past the last offset of each partition."""
    return {
        TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
        for (t, p), o in sorted(scenarios.ends_of(topic, records).items())
    }


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: Member, consumer: Any = None) -> None:
        self.member = member
        self.consumer = consumer

    def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        self.member.on_event("revoke", (tp.partition for tp in revoked))

    def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        if self.consumer is not None:
            # Known before the assignment is: a test that waits for the assignment
            # then reads the member id, and a poll may not return for GROUP_POLL_MS.
            self.member.member_id = self.consumer.group_metadata().member_id
        self.member.on_event("assign", (tp.partition for tp in assigned))

    def on_partitions_lost(self, lost: Iterable[Any]) -> None:
        self.member.on_event("lost", (tp.partition for tp in lost))


@attrs.define(eq=False)
class KafkaPythonMember(ThreadMember):
    """A KafkaConsumer polling in a thread of its own until ``leave()``."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""

    def consume(self) -> None:
        consumer = KafkaConsumer(**self.config)
        consumer.subscribe([self.topic], listener=_Listener(self, consumer))
        try:
            while not self.stopping.is_set():
                batch = [
                    (r.partition, r.offset, r.key, r.value)
                    for records in consumer.poll(timeout_ms=GROUP_POLL_MS).values()
                    for r in records
                ]
                self.member_id = consumer.group_metadata().member_id
                if not batch:
                    continue
                try:
                    consumer.commit(next_offsets(self.topic, batch))
                except errors.KafkaError as exc:
                    self.on_error(f"commit: {type(exc).__name__}")
                self.on_records(batch)
        finally:
            consumer.close()  # LeaveGroup


# The consumer of a child process (after _groups.CHILD_PRELUDE): the same loop.
CHILD = r"""
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

from minikafka.common.testing import GROUP_POLL_MS


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        emit(kind="revoke", partitions=[tp.partition for tp in revoked])

    def on_partitions_assigned(self, assigned):
        emit(kind="assign", partitions=[tp.partition for tp in assigned])


consumer = KafkaConsumer(**config)
consumer.subscribe([topic], listener=Listener())
while True:
    polled = consumer.poll(timeout_ms=GROUP_POLL_MS).values()
    batch = [(r.partition, r.offset, r.key, r.value) for records in polled for r in records]
    if batch:
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                         for p, o in ends(batch).items()})
        report(batch)
"""


@attrs.define
class KafkaPythonGroups:
    """kafka-python, as the group scenarios use it."""

    bootstrap: str
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    auto_commits: bool = False

    def create_topic(self, topic: str, partitions: int) -> None:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics(
                [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                wait_for_metadata=True,
            )
        finally:
            admin.close()

    def produce(
        self, topic: str, count: int, seed: str, partition: int | None = None
    ) -> list[Record]:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        try:
            sent = [
                (
                    key,
                    value,
                    producer.send(topic, key=key, value=value, partition=partition),
                )
                for key, value in scenarios.seeded(seed, count)
            ]
            producer.flush(timeout=WAIT)
            landed: list[Record] = []
            for key, value, future in sent:
                metadata = future.get(timeout=WAIT)
                landed.append((metadata.partition, metadata.offset, key, value))
            return landed
        finally:
            producer.close()

    def join(
        self, group: str, topic: str, name: str, session_ms: int | None = None
    ) -> Member:
        config = python_config(self.bootstrap, group, name, session_ms=session_ms)
        member = KafkaPythonMember(name, self.changed, config=config, topic=topic)
        member.begin()
        return member

    def join_killable(self, group: str, topic: str, name: str) -> Member:
        config = python_config(self.bootstrap, group, name)
        return ChildMember.start(self.changed, CHILD, config, topic, name)

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        consumer = KafkaConsumer(
            **python_config(self.bootstrap, group, f"{group}-single")
        )
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
                for records in consumer.poll(timeout_ms=GROUP_POLL_MS).values():
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

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            return {tp.partition: end for tp, end in consumer.end_offsets(tps).items()}
        finally:
            consumer.close()

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            offsets = admin.list_group_offsets(group)[group]
        finally:
            admin.close()
        return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}

    def assert_exactly_once(
        self, got: Sequence[Record], sent: Sequence[Record]
    ) -> None:
        scenarios.assert_same_records(got, sent)


@pytest.fixture
def client(group_broker: BrokerProcess) -> KafkaPythonGroups:
    return KafkaPythonGroups(group_broker.bootstrap)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "kpg-")


@pytest.fixture
def admin(group_broker: BrokerProcess) -> Iterator[Any]:
    client = KafkaAdminClient(
        bootstrap_servers=group_broker.bootstrap, client_id="kpg-admin"
    )
    try:
        yield client
    finally:
        client.close()


# --- the scenarios -------------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "kafka-python")
@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
@pytest.mark.compat("LeaveGroup", "kafka-python")
def test_three_consumers_read_every_record_once(
    client: KafkaPythonGroups, name: str
) -> None:
    scenarios.three_consumers_read_every_record_once(client, name)


@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
@pytest.mark.compat("LeaveGroup", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
def test_a_fourth_joins_and_one_leaves(client: KafkaPythonGroups, name: str) -> None:
    scenarios.a_fourth_joins_and_one_leaves(client, name)


@pytest.mark.compat("JoinGroup", "kafka-python")
@pytest.mark.compat("SyncGroup", "kafka-python")
@pytest.mark.compat("Heartbeat", "kafka-python")
def test_a_killed_consumer_is_replaced_after_its_session(
    client: KafkaPythonGroups, name: str
) -> None:
    scenarios.a_killed_consumer_is_replaced_after_its_session(client, name)


@pytest.mark.compat("FindCoordinator", "kafka-python")
@pytest.mark.compat("OffsetCommit", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
@pytest.mark.compat("JoinGroup", "kafka-python")
def test_committed_offsets_resume_also_after_a_restart(
    own_group_broker: BrokerProcess,
) -> None:
    client = KafkaPythonGroups(own_group_broker.bootstrap)
    scenarios.committed_offsets_resume_also_after_a_restart(
        client, own_group_broker, "kpg-resume"
    )


# --- the admin client's view ---------------------------------------------------------------


@pytest.mark.compat("ListGroups", "kafka-python")
@pytest.mark.compat("DescribeGroups", "kafka-python")
@pytest.mark.compat("DeleteGroups", "kafka-python")
@pytest.mark.compat("OffsetFetch", "kafka-python")
def test_admin_sees_the_groups_as_the_consumers_do(
    client: KafkaPythonGroups, admin: Any, name: str
) -> None:
    with scenarios.two_members_and_an_empty_group(client, name) as (members, empty, _):
        listed = {g["group_id"]: g for g in admin.list_groups()}
        # ListGroups v5: the state (v4, KIP-518) and the type (v5, KIP-848) too.
        assert listed[name] == {
            "group_id": name,
            "protocol_type": "consumer",
            "group_state": "Stable",
            "group_type": "classic",
        }
        assert listed[empty] == {
            "group_id": empty,
            "protocol_type": "consumer",
            "group_state": "Empty",
            "group_type": "classic",
        }
        # KIP-518's filter: the Empty group, not the Stable one.
        emptied = {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}
        assert empty in emptied
        assert name not in emptied

        described = admin.describe_groups([name, empty, name + "-unknown"])
        stable, idle, unknown = (described[g] for g in (name, empty, name + "-unknown"))
        assert (stable["error"], stable["group_state"]) == (None, "Stable")
        assert (stable["protocol_type"], stable["protocol_data"]) == (
            "consumer",
            "range",
        )
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
            )
            for m in stable["members"]
        }
        assert seen == scenarios.as_described(members)
        assert {tuple(m["member_metadata"]["topics"]) for m in stable["members"]} == {
            (name,)
        }
        assert (idle["group_state"], idle["members"], idle["protocol_type"]) == (
            "Empty",
            [],
            "consumer",
        )
        # A group the coordinator does not know is Dead; kafka-python asks with
        # DescribeGroups v6, where it is also not found (KIP-1043, Kafka's answer).
        assert (unknown["group_state"], unknown["members"]) == ("Dead", [])
        assert unknown["error"] == (
            f"[Error 69] GroupIdNotFoundError: Group {name}-unknown not found."
        )

        # A group with members cannot be deleted; an empty one can, once.
        assert admin.delete_groups([name, empty]) == {
            name: "NonEmptyGroupError",
            empty: "OK",
        }
        assert admin.delete_groups([empty]) == {empty: "GroupIdNotFoundError"}
        assert {g["group_id"] for g in admin.list_groups()} & {name, empty} == {name}
    idle = admin.describe_groups([name])[name]
    assert (idle["group_state"], idle["members"]) == ("Empty", [])
