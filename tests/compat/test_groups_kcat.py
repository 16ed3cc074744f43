"""kcat's balanced consumer (``-G``) against the real broker, as subprocesses.

``kcat -G GROUP TOPIC`` is librdkafka's KafkaConsumer: FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, OffsetFetch, OffsetCommit and, when it exits on SIGTERM (or after
``-c N`` records, or at the end with ``-e``), LeaveGroup. Its records come as JSON lines
on stdout (``-J``), its rebalances as ``% Group G rebalanced (memberid M): assigned: ...``
on stderr; both are read as they come. The scenarios are those of ``_groups.py``; this
module is their adapter.

What kcat cannot do, and so what these tests do not ask of it: commit explicitly (it
stores the offset of each record it hands out and auto-commits, every
``auto.commit.interval.ms``, at each revocation and when it closes), create topics,
describe or list groups, or read committed offsets other than by consuming. Where a
test needs those, confluent-kafka's AdminClient does them. kcat's producer does not say
where each record landed either, so its records are compared by key and value. Note
that ``-o`` in ``-G`` mode overrides the committed offsets at every assignment, so the
starting point of a new group is set with ``auto.offset.reset`` instead.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence

import attrs
import pytest

# confluent_kafka.admin re-exports these without listing them in __all__.
from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import SESSION_MS, WAIT, Member, Record, content, wait_for
from tests.compat._librdkafka import LibrdkafkaAdmin

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by `make test`"),
]

REBALANCED = re.compile(r"^% Group \S+ rebalanced \(memberid (\S*)\): (assigned|revoked): (.*)$")


# --- the adapter ---------------------------------------------------------------------------


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


@attrs.define(eq=False)
class KcatMember(Member):
    """One ``kcat -G``: its assignment, rebalance events and records, as it prints them."""

    process: subprocess.Popen[bytes] | None = None
    stderr: list[str] = attrs.field(factory=list)
    exited: int | None = None

    @classmethod
    def start(
        cls,
        changed: threading.Condition,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        **extra: object,
    ) -> KcatMember:
        command = ["kcat", "-b", bootstrap, "-G", group, "-J", "-u"]
        command += [*group_options(name, **extra), topic]
        member = cls(name, changed)
        member.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=member._read_records, daemon=True).start()
        threading.Thread(target=member._read_events, daemon=True).start()
        return member

    def _read_records(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            record = json.loads(raw)
            self.on_records(
                [(record["partition"], record["offset"], record["key"], record["payload"])]
            )
        code = self.process.wait()
        with self.changed:
            self.exited = code
        self.on_crash(f"kcat exited ({code}): " + "\n".join(self.stderr[-20:]))

    def _read_events(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        for raw in iter(self.process.stderr.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self.stderr.append(line)
            event = REBALANCED.match(line)
            if event is not None:
                member_id, kind, listed = event.groups()
                self.member_id = member_id
                parts = (int(p) for p in re.findall(r"\[(\d+)\]", listed))
                self.on_event("assign" if kind == "assigned" else "revoke", parts)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def leave(self) -> None:
        """SIGTERM: kcat closes its consumer (commit, LeaveGroup) and exits."""
        with self.changed:
            self.stopped = True
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(WAIT) == 0, "\n".join(self.stderr[-20:])
        self.wait_exited()

    def kill(self) -> None:
        """SIGKILL: no commit, no LeaveGroup, the session simply stops."""
        with self.changed:
            self.stopped = True
        assert self.process is not None
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(WAIT)
        self.wait_exited()

    def wait_exited(self) -> None:
        """Until its output is read to the end."""
        wait_for([self], lambda: self.exited is not None, f"{self.name}'s output")


@attrs.define
class KcatGroups(LibrdkafkaAdmin):
    """kcat, as the group scenarios use it (confluent-kafka's admin client beside it)."""

    bootstrap: str
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    auto_commits: bool = True

    def produce(
        self, topic: str, count: int, seed: str, partition: int | None = None
    ) -> list[Record]:
        """``kcat -P`` with ``key:value`` lines; keyed records spread over the partitions.
        kcat does not say where they landed: partition and offset are -1."""
        pairs = [
            (f"{seed}-key-{i}", f"{seed}-value-{i}-{(i * 7919) % 10007:05d}") for i in range(count)
        ]
        stdin = "".join(f"{key}:{value}\n" for key, value in pairs).encode()
        where = [] if partition is None else ["-p", str(partition)]
        result = subprocess.run(
            ["kcat", "-b", self.bootstrap, "-P", "-t", topic, "-K", ":", *where],
            input=stdin,
            capture_output=True,
            timeout=WAIT,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        return [(-1, -1, key, value) for key, value in pairs]

    def join(self, group: str, topic: str, name: str, session_ms: int | None = None) -> Member:
        extra = {}
        if session_ms is not None:
            extra = {"session.timeout.ms": session_ms, "max.poll.interval.ms": session_ms}
        return KcatMember.start(self.changed, self.bootstrap, group, topic, name, **extra)

    def join_killable(self, group: str, topic: str, name: str) -> Member:
        return self.join(group, topic, name)

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        """One ``kcat -G`` run to its end (``-c N`` records, or ``-e``: the end of every
        partition); it commits what it handed out when it closes."""
        until = ["-e"] if limit is None else ["-c", str(limit)]
        command = ["kcat", "-b", self.bootstrap, "-G", group, "-J", "-q", *group_options(group)]
        result = subprocess.run(
            [*command, *until, topic],
            capture_output=True,
            timeout=WAIT,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        records = [json.loads(line) for line in result.stdout.splitlines() if line]
        return [(r["partition"], r["offset"], r["key"], r["payload"]) for r in records]

    def assert_exactly_once(self, got: Sequence[Record], sent: Sequence[Record]) -> None:
        """By key and value, and no (partition, offset) twice; per partition, the offsets
        run from 0 without a gap (every record of the topic was consumed)."""
        assert content(got) == content(sent)
        assert len({(p, o) for p, o, _, _ in got}) == len(got)
        for partition in {r[0] for r in got}:
            offsets = sorted(r[1] for r in got if r[0] == partition)
            assert offsets == list(range(len(offsets)))


@pytest.fixture
def client(group_broker: BrokerProcess) -> KcatGroups:
    return KcatGroups(group_broker.bootstrap)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return scenarios.unique_name(request, "kcatg-")


# --- the scenarios -------------------------------------------------------------------------


@pytest.mark.compat("FindCoordinator", "kcat")
@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
@pytest.mark.compat("OffsetCommit", "kcat")
@pytest.mark.compat("OffsetFetch", "kcat")
@pytest.mark.compat("LeaveGroup", "kcat")
def test_three_consumers_read_every_record_once(client: KcatGroups, name: str) -> None:
    scenarios.three_consumers_read_every_record_once(client, name)


@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
@pytest.mark.compat("LeaveGroup", "kcat")
def test_a_fourth_joins_and_one_leaves(client: KcatGroups, name: str) -> None:
    scenarios.a_fourth_joins_and_one_leaves(client, name)


@pytest.mark.compat("JoinGroup", "kcat")
@pytest.mark.compat("SyncGroup", "kcat")
@pytest.mark.compat("Heartbeat", "kcat")
def test_a_killed_consumer_is_replaced_after_its_session(client: KcatGroups, name: str) -> None:
    scenarios.a_killed_consumer_is_replaced_after_its_session(client, name)


@pytest.mark.compat("FindCoordinator", "kcat")
@pytest.mark.compat("OffsetCommit", "kcat")
@pytest.mark.compat("OffsetFetch", "kcat")
@pytest.mark.compat("JoinGroup", "kcat")
def test_committed_offsets_resume_also_after_a_restart(own_group_broker: BrokerProcess) -> None:
    client = KcatGroups(own_group_broker.bootstrap)
    scenarios.committed_offsets_resume_also_after_a_restart(
        client, own_group_broker, "kcatg-resume"
    )
