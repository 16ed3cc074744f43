"""aiokafka (0.14) consumer groups against the real broker.

Real ``AIOKafkaConsumer``s, each in an asyncio task of its own (or, to be killed, in a
child process), join groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat (aiokafka's heartbeat task), OffsetCommit, OffsetFetch and LeaveGroup
(``stop()``). Auto-commit is off; each consumer commits what it has handled before it
asks for more. The scenarios are those of ``_groups.py`` (the eager protocol here is
aiokafka's default round-robin assignor); this module is their adapter, and adds
``AIOKafkaAdminClient``'s ``list_consumer_groups``, ``describe_consumer_groups`` and
``list_consumer_group_offsets``, which must agree with what the consumers know. aiokafka
has no way to delete a group.

The repository runs pytest under trio, so aiokafka's coroutines run on an asyncio event
loop in a thread of its own (``_clients.AsyncioThread``), one per test; the scenarios, which
are plain functions, hand it their coroutines and wait for the answers.

One thing is read from aiokafka's internals, where it keeps no public view: a consumer's
member id (to compare with DescribeGroups).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import attrs
import pytest
from aiokafka import (  # type: ignore[import-untyped]
    AIOKafkaConsumer,
    AIOKafkaProducer,
    TopicPartition,
)
from aiokafka.abc import ConsumerRebalanceListener  # type: ignore[import-untyped]
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]
from aiokafka.coordinator.protocol import (  # type: ignore[import-untyped]
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.errors import KafkaError, NoError, for_code  # type: ignore[import-untyped]

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._clients import AsyncioThread
from tests.compat._groups import WAIT, ChildMember, Member, Record, python_config

# --- the adapter ---------------------------------------------------------------------------


def next_offsets(topic: str, records: Iterable[Record]) -> dict[Any, int]:
    """What to commit after ``records``: one past the last offset of each partition."""
    ends = scenarios.ends_of(topic, records)
    return {TopicPartition(t, p): o for (t, p), o in sorted(ends.items())}


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: Member) -> None:
        self.member = member

    async def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        self.member.on_event("revoke", (tp.partition for tp in revoked))

    async def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self.member.on_event("assign", (tp.partition for tp in assigned))


@attrs.define(eq=False)
class TaskMember(Member):
    """An AIOKafkaConsumer consuming in a task of its own until ``leave()`` (``stop()``)."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""
    task: Future[None] | None = None
    # Read by the task between its fetches (each waits at most 100 ms).
    stopping: threading.Event = attrs.field(factory=threading.Event)

    async def run(self) -> None:
        try:
            await self._consume()
        except Exception as exc:  # reported to the test, which fails on it
            self.on_crash(f"{type(exc).__name__}: {exc}")

    async def _consume(self) -> None:
        consumer = AIOKafkaConsumer(**self.config)
        consumer.subscribe([self.topic], listener=_Listener(self))
        await consumer.start()
        try:
            while not self.stopping.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                batch = [
                    (r.partition, r.offset, r.key, r.value)
                    for records in batches.values()
                    for r in records
                ]
                self.member_id = consumer._coordinator.member_id  # no public view
                if not batch:
                    continue
                try:
                    await consumer.commit(next_offsets(self.topic, batch))
                except KafkaError as exc:
                    self.on_error(f"commit: {type(exc).__name__}")
                self.on_records(batch)
        finally:
            await consumer.stop()  # LeaveGroup

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()

    def leave(self) -> None:
        self.stopping.set()
        assert self.task is not None
        self.task.result(WAIT)


# The consumer of a child process (after _groups.CHILD_PRELUDE): the same loop.
CHILD = r"""
import asyncio
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener


class Listener(ConsumerRebalanceListener):
    async def on_partitions_revoked(self, revoked):
        emit(kind="revoke", partitions=[tp.partition for tp in revoked])

    async def on_partitions_assigned(self, assigned):
        emit(kind="assign", partitions=[tp.partition for tp in assigned])


async def main():
    consumer = AIOKafkaConsumer(**config)
    consumer.subscribe([topic], listener=Listener())
    await consumer.start()
    while True:
        polled = (await consumer.getmany(timeout_ms=100)).values()
        batch = [(r.partition, r.offset, r.key, r.value) for records in polled for r in records]
        if batch:
            await consumer.commit({TopicPartition(topic, p): o for p, o in ends(batch).items()})
            report(batch)


asyncio.run(main())
"""


@attrs.define
class AiokafkaGroups:
    """aiokafka, as the group scenarios use it: its coroutines run on ``loop``."""

    bootstrap: str
    loop: AsyncioThread
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    auto_commits: bool = False

    def create_topic(self, topic: str, partitions: int) -> None:
        response = self.loop.run(
            self.admin("create_topics", [NewTopic(topic, partitions, 1)])
        )
        assert [(t[0], for_code(t[1])) for t in response.topic_errors] == [
            (topic, NoError)
        ]
        # aiokafka's admin client does not wait for the partitions' leaders: ask for them.
        scenarios.poll_until(
            lambda: self._has_leaders(topic, partitions), f"{topic}'s leaders", WAIT
        )

    def _has_leaders(self, topic: str, partitions: int) -> bool:
        (described,) = self.loop.run(self.admin("describe_topics", [topic]))
        ready = [p for p in described["partitions"] if p["leader"] >= 0]
        return bool(described["error_code"] == 0 and len(ready) == partitions)

    async def admin(self, method: str, *args: Any) -> Any:
        """One call of AIOKafkaAdminClient's ``method``."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            return await getattr(admin, method)(*args)
        finally:
            await admin.close()

    def produce(
        self, topic: str, count: int, seed: str, partition: int | None = None
    ) -> list[Record]:
        return self.loop.run(self._produce(topic, count, seed, partition))

    async def _produce(
        self, topic: str, count: int, seed: str, partition: int | None
    ) -> list[Record]:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            sent = [
                (
                    key,
                    value,
                    await producer.send(topic, value, key=key, partition=partition),
                )
                for key, value in scenarios.seeded(seed, count)
            ]
            landed: list[Record] = []
            for key, value, future in sent:
                metadata = await asyncio.wait_for(future, WAIT)
                landed.append((metadata.partition, metadata.offset, key, value))
            return landed
        finally:
            await producer.stop()

    def join(
        self, group: str, topic: str, name: str, session_ms: int | None = None
    ) -> Member:
        config = python_config(self.bootstrap, group, name, session_ms=session_ms)
        member = TaskMember(name, self.changed, config=config, topic=topic)
        member.task = self.loop.start(member.run())
        return member

    def join_killable(self, group: str, topic: str, name: str) -> Member:
        config = python_config(self.bootstrap, group, name)
        return ChildMember.start(self.changed, CHILD, config, topic, name)

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        return self.loop.run(self._consume_and_commit(group, topic, partitions, limit))

    async def _consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        consumer = AIOKafkaConsumer(
            **python_config(self.bootstrap, group, f"{group}-single")
        )
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        got: list[Record] = []
        consumer.subscribe([topic])
        await consumer.start()
        try:
            ends = await consumer.end_offsets(tps)

            async def done() -> bool:
                if limit is not None:
                    return len(got) >= limit
                assigned = consumer.assignment()
                if len(assigned) != partitions:
                    return False
                positions = [await consumer.position(tp) for tp in assigned]
                return all(
                    p >= ends[tp] for p, tp in zip(positions, assigned, strict=True)
                )

            deadline = time.monotonic() + WAIT
            while not await done():
                assert time.monotonic() < deadline, f"{len(got)} records within {WAIT}s"
                for records in (await consumer.getmany(timeout_ms=100)).values():
                    for r in records:
                        if limit is None or len(got) < limit:
                            got.append((r.partition, r.offset, r.key, r.value))
            if got:
                await consumer.commit(next_offsets(topic, got))
            # OffsetFetch from the consumer: what it committed is there.
            for tp, offset in next_offsets(topic, got).items():
                assert await consumer.committed(tp) == offset
        finally:
            await consumer.stop()
        return got

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        return self.loop.run(self._end_offsets(topic, partitions))

    async def _end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            return {
                tp.partition: end
                for tp, end in (await consumer.end_offsets(tps)).items()
            }
        finally:
            await consumer.stop()

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        offsets = self.loop.run(self.admin("list_consumer_group_offsets", group))
        return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}

    def assert_exactly_once(
        self, got: Sequence[Record], sent: Sequence[Record]
    ) -> None:
        scenarios.assert_same_records(got, sent)


@pytest.fixture
def client(group_broker: BrokerProcess) -> Iterator[AiokafkaGroups]:
    with AsyncioThread() as loop:
        yield AiokafkaGroups(group_broker.bootstrap, loop)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "aiog-")


# --- the scenarios -------------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "aiokafka")
@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
@pytest.mark.compat("LeaveGroup", "aiokafka")
def test_three_consumers_read_every_record_once(
    client: AiokafkaGroups, name: str
) -> None:
    scenarios.three_consumers_read_every_record_once(client, name)


@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
@pytest.mark.compat("LeaveGroup", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
def test_a_fourth_joins_and_one_leaves(client: AiokafkaGroups, name: str) -> None:
    scenarios.a_fourth_joins_and_one_leaves(client, name)


@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
def test_a_killed_consumer_is_replaced_after_its_session(
    client: AiokafkaGroups, name: str
) -> None:
    scenarios.a_killed_consumer_is_replaced_after_its_session(client, name)


@pytest.mark.compat("FindCoordinator", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
@pytest.mark.compat("JoinGroup", "aiokafka")
def test_committed_offsets_resume_also_after_a_restart(
    own_group_broker: BrokerProcess,
) -> None:
    with AsyncioThread() as loop:
        client = AiokafkaGroups(own_group_broker.bootstrap, loop)
        scenarios.committed_offsets_resume_also_after_a_restart(
            client, own_group_broker, "aiog-resume"
        )


# --- the admin client's view ---------------------------------------------------------------


async def described_groups(bootstrap: str, groups: Sequence[str]) -> dict[str, Any]:
    """Each group as DescribeGroups tells it, one group per request: aiokafka decodes a
    DescribeGroups v3 response with the v2 schema (DescribeGroupsRequest_v3.RESPONSE_TYPE),
    which drops each group's authorized operations and misreads every group after the
    first."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = {}
        for group in groups:
            (response,) = await admin.describe_consumer_groups([group])
            (described[group],) = response.groups
        return described
    finally:
        await admin.close()


@pytest.mark.compat("ListGroups", "aiokafka")
@pytest.mark.compat("DescribeGroups", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
def test_admin_sees_the_groups_as_the_consumers_do(
    client: AiokafkaGroups, name: str
) -> None:
    with scenarios.two_members_and_an_empty_group(client, name) as (members, empty, _):
        # ListGroups v0-2: id and protocol type; the state comes with v4 (KIP-518).
        listed = client.loop.run(client.admin("list_consumer_groups"))
        assert {(name, "consumer"), (empty, "consumer")} <= set(listed)

        unknown = name + "-unknown"
        groups = client.loop.run(
            described_groups(client.bootstrap, [name, empty, unknown])
        )
        # (error, group, state, protocol type, protocol, members)
        error, _, state, protocol_type, protocol, described = groups[name]
        assert (error, state, protocol_type, protocol) == (
            0,
            "Stable",
            "consumer",
            "roundrobin",
        )
        seen = set()
        for member_id, client_id, client_host, metadata, assignment in described:
            subscription = ConsumerProtocolMemberMetadata.decode(metadata)
            assert tuple(subscription.subscription) == (name,)
            partitions = ConsumerProtocolMemberAssignment.decode(
                assignment
            ).partitions()
            assert {tp.topic for tp in partitions} == {name}
            seen.add(
                (
                    member_id,
                    client_id,
                    client_host,
                    frozenset(tp.partition for tp in partitions),
                )
            )
        assert seen == scenarios.as_described(members)
        assert groups[empty] == (0, empty, "Empty", "consumer", "", [])
        # A group the coordinator does not know is Dead, without an error (Kafka's answer).
        assert groups[unknown] == (0, unknown, "Dead", "", "", [])
