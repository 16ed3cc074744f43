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

from minikafka.broker.testing import BrokerProcess
from tests.compat import _groups as scenarios
from tests.compat._groups import WAIT, ProcessMember, Record, content
from tests.compat._librdkafka import LibrdkafkaAdmin, librdkafka_config

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(
        shutil.which("kcat") is None, reason="kcat is installed by `make test`"
    ),
]

REBALANCED = re.compile(
    r"^% Group \S+ rebalanced \(memberid (\S*)\): (assigned|revoked): (.*)$"
)


# --- the adapter ---------------------------------------------------------------------------


def kcat_group(
    bootstrap: str, group: str, client_id: str, session_ms: int | None = None
) -> list[str]:
    """``kcat -b ... -G group`` with the group consumers' settings as ``-X`` options, but
    auto-commit on (every 100 ms): kcat cannot commit otherwise."""
    config = librdkafka_config(bootstrap, group, client_id, session_ms)
    config.update({"enable.auto.commit": "true", "auto.commit.interval.ms": 100})
    # -b and -G say these.
    options = {
        k: v for k, v in config.items() if k not in ("bootstrap.servers", "group.id")
    }
    xs = [arg for key, value in options.items() for arg in ("-X", f"{key}={value}")]
    return ["kcat", "-b", bootstrap, "-G", group, *xs]


@attrs.define(eq=False)
class KcatMember(ProcessMember):
    """One ``kcat -G``: its assignment, rebalance events and records, as it prints them."""

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
        session_ms: int | None,
    ) -> KcatMember:
        command = [*kcat_group(bootstrap, group, name, session_ms), "-J", "-u", topic]
        member = cls(name, changed)
        member.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        threading.Thread(target=member._read_records, daemon=True).start()
        threading.Thread(target=member._read_events, daemon=True).start()
        return member

    def _read_records(self) -> None:
        assert self.process is not None
        for line in self.lines(self.process.stdout):
            record = json.loads(line)
            self.on_records(
                [
                    (
                        record["partition"],
                        record["offset"],
                        record["key"],
                        record["payload"],
                    )
                ]
            )
        code = self.process.wait()
        with self.reporting():
            self.exited = code
        self.on_crash(f"kcat exited ({code}): " + "\n".join(self.stderr[-20:]))

    def _read_events(self) -> None:
        assert self.process is not None
        for line in self.lines(self.process.stderr):
            self.stderr.append(line)
            event = REBALANCED.match(line)
            if event is not None:
                member_id, kind, listed = event.groups()
                self.member_id = member_id
                parts = (int(p) for p in re.findall(r"\[(\d+)\]", listed))
                self.on_event("assign" if kind == "assigned" else "revoke", parts)

    def leave(self) -> None:
        """SIGTERM: kcat closes its consumer (commit, LeaveGroup) and exits."""
        self.on_stop()
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(WAIT) == 0, "\n".join(self.stderr[-20:])
        self.wait_exited()

    def kill(self) -> None:
        super().kill()
        self.wait_exited()

    def wait_exited(self) -> None:
        """Until its output is read to the end."""
        scenarios.wait_for(
            [self], lambda: self.exited is not None, f"{self.name}'s output"
        )


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
            (f"{seed}-key-{i}", f"{seed}-value-{i}-{(i * 7919) % 10007:05d}")
            for i in range(count)
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

    def join(
        self, group: str, topic: str, name: str, session_ms: int | None = None
    ) -> KcatMember:
        return KcatMember.start(
            self.changed, self.bootstrap, group, topic, name, session_ms
        )

    def join_killable(self, group: str, topic: str, name: str) -> KcatMember:
        return self.join(group, topic, name)

    def consume_and_commit(
        self, group: str, topic: str, partitions: int, limit: int | None
    ) -> list[Record]:
        """One ``kcat -G`` run to its end (``-c N`` records, or ``-e``: the end of every
        partition); it commits what it handed out when it closes."""
        until = ["-e"] if limit is None else ["-c", str(limit)]
        result = subprocess.run(
            [*kcat_group(self.bootstrap, group, group), "-J", "-q", *until, topic],
            capture_output=True,
            timeout=WAIT,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        records = [json.loads(line) for line in result.stdout.splitlines() if line]
        return [(r["partition"], r["offset"], r["key"], r["payload"]) for r in records]

    def assert_exactly_once(
        self, got: Sequence[Record], sent: Sequence[Record]
    ) -> None:
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
def test_a_killed_consumer_is_replaced_after_its_session(
    client: KcatGroups, name: str
) -> None:
    scenarios.a_killed_consumer_is_replaced_after_its_session(client, name)


@pytest.mark.compat("FindCoordinator", "kcat")
@pytest.mark.compat("OffsetCommit", "kcat")
@pytest.mark.compat("OffsetFetch", "kcat")
@pytest.mark.compat("JoinGroup", "kcat")
def test_committed_offsets_resume_also_after_a_restart(
    own_group_broker: BrokerProcess,
) -> None:
    client = KcatGroups(own_group_broker.bootstrap)
    scenarios.committed_offsets_resume_also_after_a_restart(
        client, own_group_broker, "kcatg-resume"
    )
