"""The consumer-group scenarios, written once and run against every client.

Each ``test_groups_<client>.py`` supplies a small adapter, a :class:`GroupClient`: how its
client creates a topic, produces, joins a group as a consumer (in a thread, an asyncio
task or a process of its own), consumes and commits, and reads offsets. The scenarios
below drive any of them; the test modules keep their ``compat`` marks (the README's
matrix names them) and each client's quirks, with the reasons, in its adapter.

A member reports what its consumer sees (rebalance callbacks, records handled, errors)
under one ``threading.Condition``; every wait is a wait for a condition on those reports
with a deadline, and a member whose consumer dies fails the wait at once.

What the scenarios check:

- three consumers share a six-partition topic and read each of 600 records exactly once;
- a fourth joins and the eager protocol rebalances everybody; one leaves (LeaveGroup) and
  the others take its partitions over at once, long before its session could expire; one
  is SIGKILLed and the others take over when its session expires;
- committed offsets: a new consumer of the group resumes after them, also after the
  broker restarted.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, Protocol

import attrs
import pytest

from minikafka.broker.testing import BrokerProcess

WAIT = 60.0  # seconds a condition may take on a loaded machine before the test fails
SESSION_MS = 6000  # the consumers' session timeout; the group broker's minimum is 1 s

# (partition, offset, key, value) of one record, as produced and as consumed (bytes from
# the Kafka clients, text from kcat).
Record = tuple[int, int, Any, Any]


def unique_name(request: pytest.FixtureRequest, prefix: str) -> str:
    """The topic and group id of this test alone."""
    return prefix + re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name).strip("-")


def consumer_config(
    bootstrap: str, group: str, client_id: str, session_ms: int | None = None
) -> dict[str, Any]:
    """A group consumer's settings, in the Java client's names: a short session and
    heartbeat, so that a dead member is noticed within seconds, and short fetch waits, so
    that a member asked to stop notices soon. ``session_ms``: a longer session (and as long
    a poll interval), for a member only its LeaveGroup should end. Auto-commit is off:
    the consumers commit what they handled."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": session_ms or SESSION_MS,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": session_ms or 30000,
        "fetch.max.wait.ms": 100,
    }


def python_config(
    bootstrap: str, group: str, client_id: str, **options: Any
) -> dict[str, Any]:
    """:func:`consumer_config` for kafka-python and aiokafka, which spell the Java
    client's names with underscores."""
    config = consumer_config(bootstrap, group, client_id, **options)
    return {key.replace(".", "_"): value for key, value in config.items()}


def seeded(seed: str, count: int) -> list[tuple[bytes, bytes]]:
    """``count`` (key, value) pairs: keys that spread over the partitions, values that
    differ from one ``seed`` to the next."""
    rng = random.Random(seed)
    return [
        (f"{seed}-key-{i}".encode(), f"{seed}-{i}-{rng.getrandbits(64):016x}".encode())
        for i in range(count)
    ]


# --- members -------------------------------------------------------------------------------


@attrs.define(eq=False)
class Member:
    """What one consumer of a group reports: its assignment, events and records."""

    name: str
    changed: threading.Condition
    # KIP-429: an assignment adds to what it holds, a revocation takes only those.
    cooperative: bool = False
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
    stopped: bool = False  # by the test: its consumer's end is no crash

    @contextlib.contextmanager
    def reporting(self) -> Iterator[None]:
        """Change what the member reports, then wake whoever waits for a condition on it."""
        with self.changed:
            yield
            self.changed.notify_all()

    def on_event(self, kind: str, partitions: Iterable[int]) -> None:
        parts = frozenset(partitions)
        with self.reporting():
            self.events.append((kind, parts))
            if kind == "assign":
                self.assignment = self.assignment | parts if self.cooperative else parts
            elif self.cooperative:
                self.assignment = self.assignment - parts
            else:
                # The eager protocol: a revocation ends the assignment.
                self.assignment = frozenset()
            if self.events[0][0] == "assign":
                size = len(self.assignment)
                self.smallest = (
                    size if self.smallest is None else min(self.smallest, size)
                )

    def on_records(self, records: Sequence[Record]) -> None:
        with self.reporting():
            self.records.extend(records)

    def on_error(self, what: str) -> None:
        with self.reporting():
            self.errors.append(what)

    def on_crash(self, why: str) -> None:
        with self.reporting():
            if not self.stopped:
                self.crashed = why

    def on_stop(self) -> None:
        """The test ends the consumer: what follows is no crash."""
        with self.reporting():
            self.stopped = True

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    def leave(self) -> None:
        """Close the consumer: LeaveGroup."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, the session simply stops."""
        raise NotImplementedError

    def stop(self) -> None:
        """End the consumer the way the test ends it (a child process is killed)."""
        self.leave()


@attrs.define(eq=False)
class ThreadMember(Member):
    """A consumer polling in a thread of its own until ``leave()``; ``consume`` is the
    client's loop, which runs while ``stopping`` is not set and closes the consumer."""

    thread: threading.Thread | None = None
    stopping: threading.Event = attrs.field(factory=threading.Event)

    def begin(self) -> None:
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.consume()
        except Exception as exc:  # reported to the test, which fails on it
            self.on_crash(f"{type(exc).__name__}: {exc}")

    def consume(self) -> None:
        raise NotImplementedError

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def leave(self) -> None:
        """``close()`` in the consumer's thread; wait for it."""
        self.stopping.set()
        assert self.thread is not None
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), f"{self.name} did not close within {WAIT}s"


@attrs.define(eq=False)
class ProcessMember(Member):
    """A consumer in a process of its own, which the test can SIGKILL."""

    process: subprocess.Popen[bytes] | None = None

    def lines(self, stream: IO[bytes] | None) -> Iterator[str]:
        """The lines of one of its output streams as they come, until it closes."""
        assert stream is not None
        for raw in iter(stream.readline, b""):
            yield raw.decode(errors="replace").rstrip("\n")

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, the session simply stops."""
        self.on_stop()
        assert self.process is not None
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(WAIT)


# What every child's script starts with: its arguments, how it reports, what it commits.
CHILD_PRELUDE = r"""
import json, sys

config, topic = json.loads(sys.argv[1]), sys.argv[2]


def emit(**event):
    print(json.dumps(event), flush=True)


def ends(batch):  # what to commit after (partition, offset, key, value) records
    return {partition: offset + 1 for partition, offset, _, _ in batch}


def report(batch):
    emit(kind="records", records=[[p, o, k.hex(), v.hex()] for p, o, k, v in batch])
"""


@attrs.define(eq=False)
class ChildMember(ProcessMember):
    """A consumer in a child process, so that it can be SIGKILLed.

    The child runs :data:`CHILD_PRELUDE` and then the client's script, with its config
    (JSON) and topic as arguments, and reports JSON lines on stdout: ``{"kind": "assign" |
    "revoke", "partitions": [...]}`` (with ``"member"``, its member id, if the client tells
    it) and ``{"kind": "records", "records": [[partition, offset, key hex, value hex],
    ...]}``.
    """

    output: list[str] = attrs.field(factory=list)

    @classmethod
    def start(
        cls,
        changed: threading.Condition,
        script: str,
        config: dict[str, Any],
        topic: str,
        name: str,
    ) -> ChildMember:
        member = cls(name, changed)
        member.process = subprocess.Popen(
            [sys.executable, "-c", CHILD_PRELUDE + script, json.dumps(config), topic],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        threading.Thread(target=member._read, name=name, daemon=True).start()
        return member

    def _read(self) -> None:
        assert self.process is not None
        for line in self.lines(self.process.stdout):
            self.output.append(line)  # the client's log lines too
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if event["kind"] == "records":
                self.on_records(
                    [
                        (p, o, bytes.fromhex(k), bytes.fromhex(v))
                        for p, o, k, v in event["records"]
                    ]
                )
            else:
                self.member_id = event.get("member", self.member_id)
                self.on_event(event["kind"], event["partitions"])
        tail = "\n".join(self.output[-20:])
        self.on_crash(f"the child exited ({self.process.wait()}): {tail}")

    def stop(self) -> None:
        self.kill()


# --- the adapter ---------------------------------------------------------------------------


class GroupClient(Protocol):
    """One client, as the scenarios use it."""

    changed: threading.Condition  # what its members report under
    # Whether its consumers commit on their own, later (kcat's auto-commit), rather
    # than synchronously before they hand out more records.
    auto_commits: bool

    def create_topic(self, topic: str, partitions: int) -> None: ...

    def produce(
        self, topic: str, count: int, seed: str, partition: int | None = None
    ) -> list[Record]:
        """``count`` keyed records with seeded values; where each landed, in order."""
        ...

    def join(
        self, group: str, topic: str, name: str, session_ms: int | None = None
    ) -> Member:
        """A consumer of ``group`` subscribed to ``topic``, running until it leaves."""
        ...

    def join_killable(self, group: str, topic: str, name: str) -> Member:
        """A consumer that the test can SIGKILL (``kill()``)."""
        ...

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        """One consumer of ``group``: handle ``limit`` records (or all, to the end of every
        partition), commit exactly those, close. The handled records, in order."""
        ...

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]: ...

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets, as an admin client reads them (OffsetFetch)."""
        ...

    def assert_exactly_once(
        self, got: Sequence[Record], sent: Sequence[Record]
    ) -> None:
        """``got`` holds every record of ``sent`` once: no duplicates, no gaps."""
        ...


def assert_same_records(got: Sequence[Record], sent: Sequence[Record]) -> None:
    """Exactly once for a client that says where each record landed."""
    assert len(got) == len(sent)  # no duplicates ...
    assert sorted(got) == sorted(sent)  # ... and no gaps


def content(records: Iterable[Record]) -> Counter[tuple[Any, Any]]:
    return Counter((key, value) for _, _, key, value in records)


# --- waiting -------------------------------------------------------------------------------


def wait_for(
    members: Sequence[Member],
    condition: Callable[[], bool],
    what: str,
    timeout: float = WAIT,
) -> None:
    """Wait until ``condition``, which the members' reports change; fail at the deadline."""
    changed = members[0].changed
    with changed:
        if not changed.wait_for(
            lambda: condition() or any(m.crashed for m in members), timeout
        ):
            states = [
                (m.name, sorted(m.assignment), len(m.records), m.errors, m.events[-4:])
                for m in members
            ]
            raise AssertionError(f"{what}: not within {timeout}s; members: {states}")
        crashed = [m.crashed for m in members if m.crashed]
        assert not crashed, f"{what}: a consumer failed: {crashed}"


def poll_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Ask the broker until ``condition`` holds: for what only the broker knows (an
    auto-commit's arrival), no member reports, so there is nothing to wait on."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)


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
        if member.alive:
            member.stop()


def ends_of(topic: str, records: Iterable[Record]) -> dict[tuple[str, int], int]:
    """What to commit after ``records``: one past the last offset of each partition."""
    ends: dict[tuple[str, int], int] = {}
    for partition, offset, _, _ in records:
        ends[(topic, partition)] = max(offset + 1, ends.get((topic, partition), 0))
    return ends


# --- sharing a topic -----------------------------------------------------------------------


def three_consumers_read_every_record_once(client: GroupClient, name: str) -> None:
    client.create_topic(name, 6)
    members = [client.join(name, name, f"{name}-{i}") for i in range(3)]
    try:
        wait_for(
            members, lambda: shares(members, 6), "three consumers share six partitions"
        )
        stable = {m.name: (m.assignment, len(m.events)) for m in members}
        sent = client.produce(name, 600, name)
        wait_for(
            members, lambda: len(handled(members)) >= len(sent), "600 records consumed"
        )
        after = {m.name: len(m.events) for m in members}
        ends = {(name, p): end for p, end in client.end_offsets(name, 6).items()}
        if client.auto_commits:
            poll_until(
                lambda: client.committed_offsets(name) == ends, "auto-commit catches up"
            )
    finally:
        stop_all(members)
    got = handled(members)
    client.assert_exactly_once(got, sent)
    assert {r[0] for r in got} == set(range(6))  # the keys spread over all six
    for member in members:
        assignment, events = stable[member.name]
        # No rebalance while they consumed; each read its own partitions, and some.
        assert member.events[events : after[member.name]] == [], member.events
        assert member.records
        assert {r[0] for r in member.records} <= assignment
        assert member.errors == []
    # Everything handled is committed: a consumer of the group would start at the end.
    assert client.committed_offsets(name) == ends


def a_fourth_joins_and_one_leaves(client: GroupClient, name: str) -> None:
    client.create_topic(name, 6)
    # The one that leaves later has a long session: only its LeaveGroup can end it quickly.
    leaver = client.join(name, name, f"{name}-0", session_ms=45000)
    members = [leaver]
    members += [client.join(name, name, f"{name}-{i}") for i in (1, 2)]
    try:
        wait_for(
            members, lambda: shares(members, 6), "three consumers share six partitions"
        )
        before = assignments(members)
        seen = {m.name: len(m.events) for m in members}

        members.append(client.join(name, name, f"{name}-3"))
        wait_for(
            members, lambda: shares(members, 6), "four consumers share six partitions"
        )
        after = assignments(members)
        assert sorted(len(a) for a in after.values()) == [1, 1, 2, 2]
        for member in members[:3]:
            # The eager protocol: each gave up everything and was assigned anew.
            kinds = [kind for kind, _ in member.events[seen[member.name] :]]
            assert kinds[:1] == ["revoke"], member.events
            assert "assign" in kinds, member.events
        assert {
            n: after[n] for n in before
        } != before  # three held six; now four or five

        sent = client.produce(name, 120, name + "-four")
        wait_for(
            members, lambda: len(handled(members)) >= 120, "120 records among four"
        )
        client.assert_exactly_once(handled(members), sent)
        assert all(m.records for m in members)

        # LeaveGroup, and the others take its partitions over within one rebalance, long
        # before its 45 s session could have expired.
        its_partitions = leaver.assignment
        started = time.monotonic()
        leaver.leave()
        rest = members[1:]
        wait_for(rest, lambda: shares(rest, 6), "three take over", timeout=30)
        assert time.monotonic() - started < 30
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        more = client.produce(name, 120, name + "-three")
        wait_for(members, lambda: len(handled(members)) >= 240, "120 more among three")
        client.assert_exactly_once(handled(members), sent + more)
        assert not content(leaver.records) & content(more)
    finally:
        stop_all(members)
    assert [m.errors for m in members] == [[]] * 4


def a_killed_consumer_is_replaced_after_its_session(
    client: GroupClient, name: str
) -> None:
    client.create_topic(name, 6)
    child = client.join_killable(name, name, f"{name}-child")
    members = [child]
    try:
        members += [client.join(name, name, f"{name}-{i}") for i in (1, 2)]
        wait_for(
            members, lambda: shares(members, 6), "three consumers share six partitions"
        )
        its_partitions = child.assignment
        child.kill()
        killed = time.monotonic()
        rest = members[1:]
        wait_for(
            rest, lambda: shares(rest, 6), "the others take over after the session"
        )
        # Kafka's coordinator notices a dead member by its missing heartbeats, at the
        # session timeout (6 s; its last heartbeat came up to 0.5 s before the kill).
        assert time.monotonic() - killed > (SESSION_MS - 1500) / 1000
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        sent = client.produce(name, 120, name)
        wait_for(rest, lambda: len(handled(rest)) >= 120, "120 records after the kill")
        client.assert_exactly_once(handled(rest), sent)
        assert {r[0] for r in handled(rest)} >= its_partitions
    finally:
        stop_all(members)
    assert [m.errors for m in rest] == [[], []]


# --- committed offsets ---------------------------------------------------------------------


def committed_offsets_resume_also_after_a_restart(
    client: GroupClient,
    broker: BrokerProcess,
    topic: str,
    before_restart: Callable[[], object] = lambda: None,
    after_restart: Callable[[], object] = lambda: None,
) -> None:
    group = topic
    client.create_topic(topic, 3)
    sent = [r for p in range(3) for r in client.produce(topic, 30, f"{topic}-{p}", p)]

    first = client.consume_and_commit(group, topic, 3, limit=40)
    assert len(first) == 40
    committed = client.committed_offsets(group)
    assert committed == ends_of(topic, first)
    # The next consumer of the group starts at the committed offsets: no record the
    # first one committed comes again, and nothing it read but did not commit is lost.
    second = client.consume_and_commit(group, topic, 3, limit=30)
    assert len(second) == 30
    assert not set(first) & set(second)
    for partition in range(3):
        offsets = [r[1] for r in second if r[0] == partition]
        start = committed.get((topic, partition), 0)
        assert offsets == list(range(start, start + len(offsets)))
    committed = client.committed_offsets(group)
    before_restart()

    broker.restart()
    # The coordinator reloads the group from __consumer_offsets.
    assert client.committed_offsets(group) == committed
    after_restart()
    third = client.consume_and_commit(group, topic, 3, limit=None)
    client.assert_exactly_once(first + second + third, sent)


# --- the admin client's view ---------------------------------------------------------------


@contextlib.contextmanager
def two_members_and_an_empty_group(
    client: GroupClient, name: str, limit: int | None = None
) -> Iterator[tuple[list[Member], str, list[Record]]]:
    """Two consumers of group ``name`` sharing its four partitions, and the group
    ``name-empty`` that consumed (all, or ``limit``) of its 40 records and committed them
    (the admin client reads those offsets back): the members, the empty group's id and
    what it consumed. The members stop at the end."""
    client.create_topic(name, 4)
    empty = name + "-empty"
    client.produce(name, 40, name)
    done = client.consume_and_commit(empty, name, 4, limit=limit)
    assert len(done) == (40 if limit is None else limit)
    assert client.committed_offsets(empty) == ends_of(name, done)
    members = [client.join(name, name, f"{name}-{i}") for i in range(2)]
    try:
        wait_for(
            members, lambda: shares(members, 4), "two consumers share four partitions"
        )
        yield members, empty, done
    finally:
        stop_all(members)


def as_described(
    members: Iterable[Member],
) -> set[tuple[str, str, str, frozenset[int]]]:
    """What DescribeGroups must say of ``members``: (member id, client id, client host,
    assigned partitions) each, as the consumers themselves know them."""
    return {(m.member_id, m.name, "/127.0.0.1", m.assignment) for m in members}
