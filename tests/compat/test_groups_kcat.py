"""kcat's balanced consumer (``-G``) against the real broker, as subprocesses.

``kcat -G GROUP TOPIC`` is librdkafka's KafkaConsumer: FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, OffsetFetch, OffsetCommit and, when it exits on SIGTERM (or after
``-c N`` records, or at the end with ``-e``), LeaveGroup. Its records come as JSON lines
on stdout (``-J``), its rebalances as ``% Group G rebalanced (memberid M): assigned: ...``
on stderr; both are read as they come.

What kcat cannot do, and so what these tests do not ask of it: commit explicitly (it
stores the offset of each record it hands out and auto-commits, every
``auto.commit.interval.ms``, at each revocation and when it closes), describe or list
groups, or read committed offsets other than by consuming. Where a test needs the
group's committed offsets it reads them with confluent-kafka's AdminClient. Note that
``-o`` in ``-G`` mode overrides the committed offsets at every assignment, so the
starting point of a new group is set with ``auto.offset.reset`` instead.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import attrs
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by `make test`"),
]

WAIT = 60.0  # seconds a condition may take on a loaded machine before the test fails
SESSION_MS = 6000
REBALANCED = re.compile(r"^% Group \S+ rebalanced \(memberid (\S*)\): (assigned|revoked): (.*)$")

# (partition, offset, key, value) of one record as kcat printed it.
Record = tuple[int, int, str, str]


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """The topic and group id of this test alone."""
    return "kcatg-" + re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name).strip("-")


@pytest.fixture
def changed() -> threading.Condition:
    """Notified whenever a kcat's assignment or records change."""
    return threading.Condition()


# --- helpers -------------------------------------------------------------------------------


def group_options(client_id: str, **extra: object) -> list[str]:
    config: dict[str, object] = {
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": 30000,
        "auto.commit.interval.ms": 100,
        "fetch.wait.max.ms": 100,
        **extra,
    }
    return [arg for key, value in config.items() for arg in ("-X", f"{key}={value}")]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    # kcat cannot create topics; confluent-kafka's admin client does it for it.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=WAIT)
    futures[topic].result(timeout=WAIT)


def lines_of(count: int, seed: str) -> list[tuple[str, str]]:
    """``count`` (key, value) pairs, deterministic."""
    return [(f"{seed}-key-{i}", f"{seed}-value-{i}-{(i * 7919) % 10007:05d}") for i in range(count)]


def produce(bootstrap: str, topic: str, pairs: Sequence[tuple[str, str]], *args: str) -> None:
    """``kcat -P`` with ``key:value`` lines; keyed records spread over the partitions."""
    stdin = "".join(f"{key}:{value}\n" for key, value in pairs).encode()
    result = subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", topic, "-K", ":", *args],
        input=stdin,
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()


def assert_exactly_once(got: Sequence[Record], sent: Sequence[tuple[str, str]]) -> None:
    """``got`` holds every pair of ``sent`` once: no duplicates, no gaps."""
    assert Counter((key, value) for _, _, key, value in got) == Counter(sent)
    assert len({(p, o) for p, o, _, _ in got}) == len(got)


@attrs.define(eq=False)
class KcatMember:
    """One ``kcat -G``: its assignment, rebalance events and records, as it prints them."""

    name: str
    changed: threading.Condition
    process: subprocess.Popen[bytes]
    assignment: frozenset[int] = frozenset()
    member_id: str = ""
    events: list[tuple[str, frozenset[int]]] = attrs.field(factory=list)
    records: list[Record] = attrs.field(factory=list)
    stderr: list[str] = attrs.field(factory=list)
    stopped: bool = False  # by the test: SIGTERM or SIGKILL
    exited: int | None = None

    @classmethod
    def start(
        cls,
        changed: threading.Condition,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        *args: str,
        **extra: object,
    ) -> KcatMember:
        command = ["kcat", "-b", bootstrap, "-G", group, "-J", "-u"]
        command += [*group_options(name, **extra), *args, topic]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        member = cls(name, changed, process)
        threading.Thread(target=member._read_records, daemon=True).start()
        threading.Thread(target=member._read_events, daemon=True).start()
        return member

    def _read_records(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            record = json.loads(raw)
            with self.changed:
                self.records.append(
                    (record["partition"], record["offset"], record["key"], record["payload"])
                )
                self.changed.notify_all()
        code = self.process.wait()
        with self.changed:
            self.exited = code
            self.changed.notify_all()

    def _read_events(self) -> None:
        assert self.process.stderr is not None
        for raw in iter(self.process.stderr.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self.changed:
                self.stderr.append(line)
                event = REBALANCED.match(line)
                if event is not None:
                    member_id, kind, listed = event.groups()
                    parts = frozenset(int(p) for p in re.findall(r"\[(\d+)\]", listed))
                    self.member_id = member_id
                    self.events.append(("assign" if kind == "assigned" else "revoke", parts))
                    self.assignment = parts if kind == "assigned" else frozenset()
                self.changed.notify_all()

    @property
    def crashed(self) -> str | None:
        if self.exited is None or self.stopped:
            return None
        return f"kcat exited ({self.exited}): " + "\n".join(self.stderr[-20:])

    def close(self) -> None:
        """SIGTERM: kcat closes its consumer (commit, LeaveGroup) and exits."""
        with self.changed:
            self.stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(WAIT) == 0, "\n".join(self.stderr[-20:])
        self.wait_exited()

    def kill(self) -> None:
        """SIGKILL: no commit, no LeaveGroup, the session simply stops."""
        with self.changed:
            self.stopped = True
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(WAIT)
        self.wait_exited()

    def wait_exited(self) -> None:
        """Until its output is read to the end."""
        wait_for([self], lambda: self.exited is not None, f"{self.name}'s output", stopping=True)


def wait_for(
    members: Sequence[KcatMember],
    condition: Callable[[], bool],
    what: str,
    timeout: float = WAIT,
    stopping: bool = False,
) -> None:
    """Wait until ``condition``, which the kcats' output changes; fail at the deadline or
    when a kcat exits unasked (unless ``stopping``)."""
    changed = members[0].changed

    def crashed() -> list[str]:
        return [] if stopping else [m.crashed for m in members if m.crashed]

    with changed:
        if not changed.wait_for(lambda: condition() or bool(crashed()), timeout):
            states = [
                (m.name, sorted(m.assignment), len(m.records), m.events[-4:]) for m in members
            ]
            raise AssertionError(f"{what}: not within {timeout}s; kcats: {states}")
        assert not crashed(), f"{what}: {crashed()}"


def shares(members: Sequence[KcatMember], partitions: int) -> bool:
    """Every member holds partitions, none twice, and together all of them."""
    held = [m.assignment for m in members]
    return (
        all(held)
        and sum(len(h) for h in held) == partitions
        and frozenset().union(*held) == frozenset(range(partitions))
    )


def handled(members: Iterable[KcatMember]) -> list[Record]:
    return [record for m in members for record in m.records]


def stop_all(members: Iterable[KcatMember]) -> None:
    for member in members:
        if member.process.poll() is None:
            member.close()


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, read with confluent-kafka's AdminClient."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(timeout=WAIT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def ends_of(records: Iterable[Record], topic: str) -> dict[tuple[str, int], int]:
    """One past the last offset of each partition in ``records``."""
    ends: dict[tuple[str, int], int] = {}
    for partition, offset, _, _ in records:
        ends[(topic, partition)] = max(offset + 1, ends.get((topic, partition), 0))
    return ends


# --- sharing a topic -----------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "kcat")
@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
@pytest.mark.compat("OffsetCommit", "kcat")
@pytest.mark.compat("OffsetFetch", "kcat")
@pytest.mark.compat("LeaveGroup", "kcat")
def test_three_consumers_read_every_record_once(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    members = [KcatMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(3)]
    try:
        wait_for(members, lambda: shares(members, 6), "three kcats share six partitions")
        stable = {m.name: (m.assignment, len(m.events)) for m in members}
        sent = lines_of(600, name)
        produce(bootstrap, name, sent)
        wait_for(members, lambda: len(handled(members)) >= len(sent), "600 records consumed")
        after = {m.name: len(m.events) for m in members}
        # Auto-commit (every 100 ms) catches up with what kcat handed out.
        ends = ends_of(handled(members), name)
        deadline = time.monotonic() + WAIT
        while committed_offsets(bootstrap, name) != ends:
            assert time.monotonic() < deadline, "auto-commit did not catch up"
            time.sleep(0.1)
    finally:
        stop_all(members)
    got = handled(members)
    assert_exactly_once(got, sent)
    assert {r[0] for r in got} == set(range(6))
    for member in members:
        assignment, events = stable[member.name]
        # No rebalance while they consumed; each read its own partitions, and some.
        assert member.events[events : after[member.name]] == [], member.events
        assert member.records
        assert {r[0] for r in member.records} <= assignment
    # Per partition the offsets run from 0 without a gap.
    for partition in range(6):
        offsets = sorted(r[1] for r in got if r[0] == partition)
        assert offsets == list(range(len(offsets)))
    assert committed_offsets(bootstrap, name) == ends_of(got, name)


@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
@pytest.mark.compat("LeaveGroup", "kcat")
def test_a_fourth_joins_and_one_leaves(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    # The one that leaves later has a long session: only its LeaveGroup can end it quickly.
    long_session = {"session.timeout.ms": 45000, "max.poll.interval.ms": 45000}
    leaver = KcatMember.start(changed, bootstrap, name, name, f"{name}-0", **long_session)
    members = [leaver]
    members += [KcatMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in (1, 2)]
    try:
        wait_for(members, lambda: shares(members, 6), "three kcats share six partitions")
        before = {m.name: m.assignment for m in members}
        seen = {m.name: len(m.events) for m in members}

        members.append(KcatMember.start(changed, bootstrap, name, name, f"{name}-3"))
        wait_for(members, lambda: shares(members, 6), "four kcats share six partitions")
        after = {m.name: m.assignment for m in members}
        assert sorted(len(a) for a in after.values()) == [1, 1, 2, 2]
        for member in members[:3]:
            # The eager protocol: each gave up everything and was assigned anew.
            kinds = [kind for kind, _ in member.events[seen[member.name] :]]
            assert kinds[:1] == ["revoke"], member.events
            assert "assign" in kinds, member.events
        assert {n: after[n] for n in before} != before  # three held six; now four or five

        sent = lines_of(120, name + "-four")
        produce(bootstrap, name, sent)
        wait_for(members, lambda: len(handled(members)) >= 120, "120 records among four")
        assert_exactly_once(handled(members), sent)
        assert all(m.records for m in members)

        # SIGTERM: kcat closes its consumer, LeaveGroup, and the others take its
        # partitions over within one rebalance, long before its 45 s session expires.
        its_partitions = leaver.assignment
        started = time.monotonic()
        leaver.close()
        rest = members[1:]
        wait_for(rest, lambda: shares(rest, 6), "three take over", timeout=30)
        assert time.monotonic() - started < 30
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        more = lines_of(120, name + "-three")
        produce(bootstrap, name, more)
        wait_for(members, lambda: len(handled(members)) >= 240, "120 more among three")
        assert_exactly_once(handled(members), sent + more)
    finally:
        stop_all(members)


@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
def test_a_killed_consumer_is_replaced_after_its_session(
    group_broker: BrokerProcess, name: str, changed: threading.Condition
) -> None:
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, name, 6)
    members = [KcatMember.start(changed, bootstrap, name, name, f"{name}-{i}") for i in range(3)]
    try:
        wait_for(members, lambda: shares(members, 6), "three kcats share six partitions")
        victim, rest = members[0], members[1:]
        its_partitions = victim.assignment
        victim.kill()
        killed = time.monotonic()
        wait_for(rest, lambda: shares(rest, 6), "the others take over after the session")
        # Kafka's coordinator notices a dead member by its missing heartbeats, at the
        # session timeout (6 s; its last heartbeat came up to 0.5 s before the kill).
        assert time.monotonic() - killed > (SESSION_MS - 1500) / 1000
        assert its_partitions <= frozenset().union(*(m.assignment for m in rest))

        sent = lines_of(120, name)
        produce(bootstrap, name, sent)
        wait_for(rest, lambda: len(handled(rest)) >= 120, "120 records after the kill")
        assert_exactly_once(handled(rest), sent)
        assert {r[0] for r in handled(rest)} >= its_partitions
    finally:
        stop_all(members)


# --- committed offsets ---------------------------------------------------------------------


def consume(bootstrap: str, group: str, topic: str, *args: str) -> list[Record]:
    """One ``kcat -G`` run to its end (``-c N`` records, or ``-e``: the end of every
    partition); it commits what it handed out when it closes. Its records, in order."""
    result = subprocess.run(
        ["kcat", "-b", bootstrap, "-G", group, "-J", "-q", *group_options(group), *args, topic],
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    records = [json.loads(line) for line in result.stdout.splitlines() if line]
    return [(r["partition"], r["offset"], r["key"], r["payload"]) for r in records]


@pytest.mark.compat("FindCoordinator", "kcat")
@pytest.mark.compat("OffsetCommit", "kcat")
@pytest.mark.compat("OffsetFetch", "kcat")
@pytest.mark.compat("JoinGroup", "kcat")
def test_committed_offsets_resume_also_after_a_restart(own_group_broker: BrokerProcess) -> None:
    bootstrap = own_group_broker.bootstrap
    topic = group = "kcatg-resume"
    create_topic(bootstrap, topic, 3)
    sent = []
    for partition in range(3):
        pairs = lines_of(30, f"{topic}-{partition}")
        produce(bootstrap, topic, pairs, "-p", str(partition))
        sent += pairs

    first = consume(bootstrap, group, topic, "-c", "40")
    assert len(first) == 40
    committed = committed_offsets(bootstrap, group)
    assert committed == ends_of(first, topic)
    # The next kcat of the group starts at the committed offsets: no record the first
    # one committed comes again, and nothing it fetched but did not hand out is lost.
    second = consume(bootstrap, group, topic, "-c", "30")
    assert len(second) == 30
    assert not set(first) & set(second)
    for partition in range(3):
        offsets = [r[1] for r in second if r[0] == partition]
        start = committed.get((topic, partition), 0)
        assert offsets == list(range(start, start + len(offsets)))
    committed = committed_offsets(bootstrap, group)

    own_group_broker.restart()
    # The coordinator reloads the group from __consumer_offsets.
    assert committed_offsets(bootstrap, group) == committed
    third = consume(bootstrap, group, topic, "-e")
    assert_exactly_once(first + second + third, sent)
