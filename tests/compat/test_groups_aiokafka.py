"""aiokafka (0.14) consumer groups against the real broker.

Real ``AIOKafkaConsumer``s, each in an asyncio task of its own (or, to be killed, in a
child process), join groups with ``subscribe``: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat (aiokafka's heartbeat task), OffsetCommit, OffsetFetch and LeaveGroup
(``stop()``). Auto-commit is off; each consumer commits what it has handled before it
asks for more. As in test_aiokafka.py, each test is a plain function that runs its own
coroutine with ``asyncio.run`` (the repository runs pytest under trio). What the tests
check:

- three consumers share a six-partition topic and read each of 600 records exactly once;
- a fourth joins and the eager protocol (aiokafka's default round-robin assignor)
  rebalances everybody; one leaves and the others take over at once; one is SIGKILLed
  and the others take over when its session expires;
- committed offsets: a new consumer of the group resumes after them, also after the
  broker restarted;
- ``AIOKafkaAdminClient``'s ``list_consumer_groups``, ``describe_consumer_groups`` and
  ``list_consumer_group_offsets`` agree with what the consumers know. aiokafka has no
  way to delete a group.

Two things are read from aiokafka's internals, where it keeps no public view: a
consumer's member id (to compare with DescribeGroups) and its generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
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

WAIT = 60.0  # seconds a condition may take on a loaded machine before the test fails
SESSION_MS = 6000

# (partition, offset, key, value) of one record, as produced and as consumed.
Record = tuple[int, int, bytes | None, bytes | None]


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """The topic and group id of this test alone."""
    return "aiog-" + re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name).strip("-")


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


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(topic, partitions, 1)])
        assert [(t[0], for_code(t[1])) for t in response.topic_errors] == [(topic, NoError)]
        # Wait until every partition has its leader.
        deadline = time.monotonic() + WAIT
        while True:
            (described,) = await admin.describe_topics([topic])
            ready = [p for p in described["partitions"] if p["leader"] >= 0]
            if described["error_code"] == 0 and len(ready) == partitions:
                return
            assert time.monotonic() < deadline, f"{topic} not ready: {described}"
            await asyncio.sleep(0.05)
    finally:
        await admin.close()


async def produce(
    bootstrap: str, topic: str, count: int, seed: str, partition: int | None = None
) -> list[Record]:
    """``count`` keyed records with seeded values; where each landed, in order."""
    rng = random.Random(seed)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        sent = []
        for i in range(count):
            key = f"{seed}-key-{i}".encode()
            value = f"{seed}-{i}-{rng.getrandbits(64):016x}".encode()
            future = await producer.send(topic, value, key=key, partition=partition)
            sent.append((key, value, future))
        landed: list[Record] = []
        for key, value, future in sent:
            metadata = await asyncio.wait_for(future, WAIT)
            landed.append((metadata.partition, metadata.offset, key, value))
        return landed
    finally:
        await producer.stop()


def next_offsets(topic: str, records: Iterable[Record]) -> dict[Any, int]:
    """What to commit after ``records``: one past the last offset of each partition."""
    last: dict[int, int] = {}
    for partition, offset, _, _ in records:
        last[partition] = max(offset, last.get(partition, -1))
    return {TopicPartition(topic, p): o + 1 for p, o in sorted(last.items())}


class Changes:
    """Wakes whoever waits for a condition whenever a member reports (one event loop)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()

    async def wait_for(
        self,
        members: Sequence[Member],
        condition: Callable[[], bool],
        what: str,
        within: float = WAIT,
    ) -> None:
        deadline = time.monotonic() + within
        while not condition():
            crashed = [m.crashed for m in members if m.crashed]
            assert not crashed, f"{what}: a consumer failed: {crashed}"
            left = deadline - time.monotonic()
            if left <= 0:
                states = [
                    (m.name, sorted(m.assignment), len(m.records), m.errors, m.events[-4:])
                    for m in members
                ]
                raise AssertionError(f"{what}: not within {within}s; members: {states}")
            # Nothing runs between the check above and this wait: no report is missed.
            self._event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), left)


@attrs.define(eq=False)
class Member:
    """What one consumer of a group reports: its assignment, events and records."""

    name: str
    changes: Changes
    assignment: frozenset[int] = frozenset()
    member_id: str = ""
    # ("assign" | "revoke", partitions) in the order the callbacks ran.
    events: list[tuple[str, frozenset[int]]] = attrs.field(factory=list)
    records: list[Record] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    crashed: str | None = None  # why its consumer stopped working

    def _event(self, kind: str, partitions: Iterable[int]) -> None:
        self.events.append((kind, frozenset(partitions)))
        # The eager protocol: an assignment replaces the last, a revocation ends it.
        self.assignment = self.events[-1][1] if kind == "assign" else frozenset()
        self.changes.notify()

    def _handled(self, records: Sequence[Record]) -> None:
        self.records.extend(records)
        self.changes.notify()

    def _crashed(self, why: str) -> None:
        self.crashed = why
        self.changes.notify()


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: TaskMember) -> None:
        self.member = member

    async def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        self.member._event("revoke", (tp.partition for tp in revoked))

    async def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self.member._event("assign", (tp.partition for tp in assigned))


@attrs.define(eq=False)
class TaskMember(Member):
    """An AIOKafkaConsumer consuming in a task of its own until ``close()`` (``stop()``)."""

    config: dict[str, Any] = attrs.field(factory=dict)
    topic: str = ""
    task: asyncio.Task[None] | None = None
    stopping: asyncio.Event = attrs.field(factory=asyncio.Event)

    @classmethod
    def start(
        cls, changes: Changes, bootstrap: str, group: str, topic: str, name: str, **extra: Any
    ) -> TaskMember:
        config = consumer_config(bootstrap, group, name, **extra)
        member = cls(name, changes, config=config, topic=topic)
        member.task = asyncio.create_task(member._run(), name=name)
        return member

    async def _run(self) -> None:
        try:
            await self._consume()
        except Exception as exc:  # reported to the test, which fails on it
            self._crashed(f"{type(exc).__name__}: {exc}")

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
                    self.errors.append(f"commit: {type(exc).__name__}")
                self._handled(batch)
        finally:
            await consumer.stop()  # LeaveGroup

    async def close(self) -> None:
        self.stopping.set()
        assert self.task is not None
        await asyncio.wait_for(asyncio.shield(self.task), WAIT)


# The consumer of a child process: the same loop, reporting as JSON lines on stdout.
CHILD = r"""
import asyncio, json, sys
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener

config, topic = json.loads(sys.argv[1]), sys.argv[2]


def emit(**event):
    print(json.dumps(event), flush=True)


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
        batches = await consumer.getmany(timeout_ms=100)
        batch = [r for records in batches.values() for r in records]
        if batch:
            last = {}
            for r in batch:
                last[r.partition] = r.offset + 1
            await consumer.commit({TopicPartition(topic, p): o for p, o in last.items()})
            records = [[r.partition, r.offset, r.key.hex(), r.value.hex()] for r in batch]
            emit(kind="records", records=records)


asyncio.run(main())
"""


@attrs.define(eq=False)
class ProcessMember(Member):
    """A consumer in a child process, so that it can be SIGKILLed."""

    process: asyncio.subprocess.Process | None = None
    reader: asyncio.Task[None] | None = None
    output: list[str] = attrs.field(factory=list)
    killed: bool = False

    @classmethod
    async def start(
        cls, changes: Changes, bootstrap: str, group: str, topic: str, name: str
    ) -> ProcessMember:
        config = consumer_config(bootstrap, group, name)
        member = cls(name, changes)
        member.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            json.dumps(config),
            topic,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        member.reader = asyncio.create_task(member._read())
        return member

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
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
        if not self.killed:
            tail = "\n".join(self.output[-20:])
            self._crashed(f"the child exited ({await self.process.wait()}): {tail}")

    async def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, the session simply stops."""
        self.killed = True
        assert self.process is not None
        if self.process.returncode is None:
            self.process.kill()
        await asyncio.wait_for(self.process.wait(), WAIT)
        if self.reader is not None:
            await asyncio.wait_for(self.reader, WAIT)


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


async def stop_all(members: Iterable[Member]) -> None:
    for member in members:
        if isinstance(member, TaskMember):
            await member.close()
        elif isinstance(member, ProcessMember):
            await member.kill()


async def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: end for tp, end in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


async def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, as the AIOKafkaAdminClient reads them (OffsetFetch)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


def run(test: Callable[[Changes], Awaitable[None]]) -> None:
    async def main() -> None:
        await test(Changes())

    asyncio.run(main())


# --- sharing a topic -----------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "aiokafka")
@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
@pytest.mark.compat("LeaveGroup", "aiokafka")
def test_three_consumers_read_every_record_once(group_broker: BrokerProcess, name: str) -> None:
    bootstrap = group_broker.bootstrap

    async def test(changes: Changes) -> None:
        await create_topic(bootstrap, name, 6)
        members = [
            TaskMember.start(changes, bootstrap, name, name, f"{name}-{i}") for i in range(3)
        ]
        try:
            await changes.wait_for(members, lambda: shares(members, 6), "three share six")
            stable = {m.name: (m.assignment, len(m.events)) for m in members}
            sent = await produce(bootstrap, name, 600, name)
            assert {r[0] for r in sent} == set(range(6))  # the keys spread over all six
            await changes.wait_for(members, lambda: len(handled(members)) >= 600, "600 consumed")
            after = {m.name: len(m.events) for m in members}
        finally:
            await stop_all(members)
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
        ends = await end_offsets(bootstrap, name, 6)
        committed = await committed_offsets(bootstrap, name)
        assert committed == {(name, p): end for p, end in ends.items()}

    run(test)


@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
@pytest.mark.compat("LeaveGroup", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
def test_a_fourth_joins_and_one_leaves(group_broker: BrokerProcess, name: str) -> None:
    bootstrap = group_broker.bootstrap

    async def test(changes: Changes) -> None:
        await create_topic(bootstrap, name, 6)
        # The one that leaves later has a long session: only its LeaveGroup ends it quickly.
        long_session = {"session_timeout_ms": 45000, "max_poll_interval_ms": 45000}
        leaver = TaskMember.start(changes, bootstrap, name, name, f"{name}-0", **long_session)
        members = [leaver]
        members += [TaskMember.start(changes, bootstrap, name, name, f"{name}-{i}") for i in (1, 2)]
        try:
            await changes.wait_for(members, lambda: shares(members, 6), "three share six")
            before = assignments(members)
            seen = {m.name: len(m.events) for m in members}

            members.append(TaskMember.start(changes, bootstrap, name, name, f"{name}-3"))
            await changes.wait_for(members, lambda: shares(members, 6), "four share six")
            after = assignments(members)
            assert sorted(len(a) for a in after.values()) == [1, 1, 2, 2]
            for member in members[:3]:
                # The eager protocol: each gave up everything and was assigned anew.
                kinds = [kind for kind, _ in member.events[seen[member.name] :]]
                assert kinds[:1] == ["revoke"], member.events
                assert "assign" in kinds, member.events
            assert {n: after[n] for n in before} != before  # three held six; now four or five

            sent = await produce(bootstrap, name, 120, name + "-four")
            await changes.wait_for(members, lambda: len(handled(members)) >= 120, "120 among four")
            assert sorted(handled(members)) == sorted(sent)
            assert all(m.records for m in members)

            # stop(): LeaveGroup, and the others take its partitions over within one
            # rebalance, long before its 45 s session could have expired.
            its_partitions = leaver.assignment
            started = time.monotonic()
            await leaver.close()
            rest = members[1:]
            await changes.wait_for(rest, lambda: shares(rest, 6), "three take over", within=30)
            assert time.monotonic() - started < 30
            assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

            more = await produce(bootstrap, name, 120, name + "-three")
            await changes.wait_for(members, lambda: len(handled(members)) >= 240, "120 more")
            assert sorted(handled(members)) == sorted(sent + more)
            assert not set(leaver.records) & set(more)
        finally:
            await stop_all(m for m in members if m.task is not None and not m.task.done())
        assert [m.errors for m in members] == [[]] * 4

    run(test)


@pytest.mark.compat("JoinGroup", "aiokafka")
@pytest.mark.compat("SyncGroup", "aiokafka")
@pytest.mark.compat("Heartbeat", "aiokafka")
def test_a_killed_consumer_is_replaced_after_its_session(
    group_broker: BrokerProcess, name: str
) -> None:
    bootstrap = group_broker.bootstrap

    async def test(changes: Changes) -> None:
        await create_topic(bootstrap, name, 6)
        child = await ProcessMember.start(changes, bootstrap, name, name, f"{name}-child")
        members: list[Member] = [child]
        try:
            members += [
                TaskMember.start(changes, bootstrap, name, name, f"{name}-{i}") for i in (1, 2)
            ]
            await changes.wait_for(members, lambda: shares(members, 6), "three share six")
            its_partitions = child.assignment
            await child.kill()
            killed = time.monotonic()
            rest = members[1:]
            await changes.wait_for(rest, lambda: shares(rest, 6), "the others take over")
            # Kafka's coordinator notices a dead member by its missing heartbeats, at the
            # session timeout (6 s; its last heartbeat came up to 0.5 s before the kill).
            assert time.monotonic() - killed > (SESSION_MS - 1500) / 1000
            assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

            sent = await produce(bootstrap, name, 120, name)
            await changes.wait_for(rest, lambda: len(handled(rest)) >= 120, "120 after the kill")
            assert sorted(handled(rest)) == sorted(sent)
            assert {r[0] for r in handled(rest)} >= its_partitions
        finally:
            await stop_all(members)
        assert [m.errors for m in rest] == [[], []]

    run(test)


# --- committed offsets ---------------------------------------------------------------------


async def consume_and_commit(
    bootstrap: str, group: str, topic: str, partitions: int, limit: int | None
) -> list[Record]:
    """One consumer of ``group``: handle ``limit`` records (or all, to the end of every
    partition), commit exactly those, stop. The handled records, in order."""
    consumer = AIOKafkaConsumer(**consumer_config(bootstrap, group, f"{group}-single"))
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
            return all(p >= ends[tp] for p, tp in zip(positions, assigned, strict=True))

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


@pytest.mark.compat("FindCoordinator", "aiokafka")
@pytest.mark.compat("OffsetCommit", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
@pytest.mark.compat("JoinGroup", "aiokafka")
def test_committed_offsets_resume_also_after_a_restart(own_group_broker: BrokerProcess) -> None:
    bootstrap = own_group_broker.bootstrap
    topic = group = "aiog-resume"

    async def before_restart(_: Changes) -> None:
        await create_topic(bootstrap, topic, 3)
        for p in range(3):
            sent.extend(await produce(bootstrap, topic, 30, f"{topic}-{p}", p))
        first.extend(await consume_and_commit(bootstrap, group, topic, 3, limit=40))
        committed = await committed_offsets(bootstrap, group)
        assert committed == {
            (topic, tp.partition): offset for tp, offset in next_offsets(topic, first).items()
        }
        # The next consumer of the group starts at the committed offsets: no record the
        # first one committed comes again, and nothing it read but did not commit is lost.
        second.extend(await consume_and_commit(bootstrap, group, topic, 3, limit=30))
        assert not set(first) & set(second)
        for partition in range(3):
            offsets = [r[1] for r in second if r[0] == partition]
            start = committed.get((topic, partition), 0)
            assert offsets == list(range(start, start + len(offsets)))
        saved.update(await committed_offsets(bootstrap, group))

    async def after_restart(_: Changes) -> None:
        # The coordinator reloads the group from __consumer_offsets.
        assert await committed_offsets(bootstrap, group) == saved
        third = await consume_and_commit(bootstrap, group, topic, 3, limit=None)
        assert sorted(first + second + third) == sorted(sent)
        assert len(first) + len(second) + len(third) == len(sent)

    sent: list[Record] = []
    first: list[Record] = []
    second: list[Record] = []
    saved: dict[tuple[str, int], int] = {}
    run(before_restart)
    own_group_broker.restart()
    run(after_restart)


# --- the admin client's view ---------------------------------------------------------------


@pytest.mark.compat("ListGroups", "aiokafka")
@pytest.mark.compat("DescribeGroups", "aiokafka")
@pytest.mark.compat("OffsetFetch", "aiokafka")
def test_admin_sees_the_groups_as_the_consumers_do(group_broker: BrokerProcess, name: str) -> None:
    bootstrap = group_broker.bootstrap
    empty = name + "-empty"

    async def test(changes: Changes) -> None:
        await create_topic(bootstrap, name, 4)
        await produce(bootstrap, name, 40, name)
        done = await consume_and_commit(bootstrap, empty, name, 4, limit=None)
        assert len(done) == 40

        members = [
            TaskMember.start(changes, bootstrap, name, name, f"{name}-{i}") for i in range(2)
        ]
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await changes.wait_for(members, lambda: shares(members, 4), "two share four")
            # ListGroups v0-2: id and protocol type; the state comes with v4 (KIP-518).
            listed = await admin.list_consumer_groups()
            assert {(name, "consumer"), (empty, "consumer")} <= set(listed)

            # One group per request: aiokafka decodes a DescribeGroups v3 response with
            # the v2 schema (DescribeGroupsRequest_v3.RESPONSE_TYPE), which drops each
            # group's authorized operations and misreads every group after the first.
            unknown = name + "-unknown"
            groups = {}
            for group in (name, empty, unknown):
                (response,) = await admin.describe_consumer_groups([group])
                (groups[group],) = response.groups
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
                partitions = ConsumerProtocolMemberAssignment.decode(assignment).partitions()
                assert {tp.topic for tp in partitions} == {name}
                held = frozenset(tp.partition for tp in partitions)
                seen.add(
                    (member_id, client_id, client_host, held, tuple(subscription.subscription))
                )
            expected = {(m.member_id, m.name, "/127.0.0.1", m.assignment, (name,)) for m in members}
            assert seen == expected
            assert groups[empty] == (0, empty, "Empty", "consumer", "", [])
            # A group the coordinator does not know is Dead, without an error (Kafka's answer).
            assert groups[unknown] == (0, unknown, "Dead", "", "", [])

            assert await committed_offsets(bootstrap, empty) == {
                (name, tp.partition): offset for tp, offset in next_offsets(name, done).items()
            }
        finally:
            await stop_all(members)
            await admin.close()

    run(test)
