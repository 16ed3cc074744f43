"""Lab 18's data: one membership change, under the classic protocol and under KIP-848,
on a cluster of real processes, as its group coordinator traced it (ARCHITECTURE.md,
"Traces and labs").

``run(out)`` (or ``python scenario.py OUT``) starts a KRaft cluster (a controller and
brokers 1, 2, 3, every node tracing into ``out/traces``), creates ``orders``, six
partitions of one replica each, two on every broker (the lab is about who reads them,
not about their copies, which would only fill the trace), and has a confluent-kafka
producer write one timestamped record to every partition every :data:`PRODUCE_EVERY`
seconds throughout. Two groups read it, side by side, each member a process of its own
(``member.py``):

- ``classic-group``: the classic protocol (JoinGroup, SyncGroup, Heartbeat) with the
  eager ``range`` assignor;
- ``consumer-group``: KIP-848's ConsumerGroupHeartbeat (``group.protocol=consumer``)
  with the broker's ``uniform`` assignor.

Both go through the same membership change at the same moments: ``m1`` starts alone,
``m2`` joins, then ``m3``, then ``m2`` crashes (SIGKILL: no goodbye, the coordinator
removes it when its session ends). Both protocols run with a 500 ms heartbeat and a 3 s
session. After each change the scenario waits, with a deadline, for both groups to
settle as their members' rebalance callbacks tell it: every live member holds
partitions, none twice, all six together.

It writes ``out/traces`` (the brokers' traces: ``group.member_assignment`` and every
other event), ``out/produced.jsonl`` (every record the producer wrote: ``partition``,
``offset``, ``ts``, its timestamp in seconds) and ``out/truth.json``: the lab's
reference answers, computed here in plain Python from the same trace and records, the
scenario's log of what it did when, and each member's callbacks.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import KafkaError, Message, Producer

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.trace import read_trace

TOPIC, PARTITIONS = "orders", 6
GROUPS = {"classic": "classic-group", "consumer": "consumer-group"}
"""Each protocol's group."""
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 500
"""Both protocols' session and heartbeat interval: the classic members' own settings,
the broker's ``group.consumer.*`` for the consumer group."""
OVERRIDES = {
    # A rebalance of an empty classic group starts at once (Kafka waits 3 s for more).
    "group.initial.rebalance.delay.ms": "0",
    # Allow the classic members' short session, so a crash is noticed within seconds.
    "group.min.session.timeout.ms": "1000",
    # The consumer group's session and heartbeat: the broker's, KIP-848.
    "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
    # The groups' coordinators come up at once: a few partitions, not Kafka's 50.
    "offsets.topic.num.partitions": "3",
}
PRODUCE_EVERY = 0.005
"""Seconds between two rounds of the producer, one record to every partition each. A
classic group's rebalance among members that all rejoin at once can leave a partition
unowned for only a few milliseconds; at 20 ms between rounds, now and then no record of
the run fell in any of its gaps, and there was nothing delayed to tell apart."""
STEPS = (("start", "m1"), ("join", "m2"), ("join", "m3"), ("crash", "m2"))
PAUSE = 0.5
"""Seconds the groups run as they are once settled, before the next step (and after
the last: the records then are read by the last owners)."""
WAIT = 60.0  # seconds a condition may take on a loaded machine before the run fails

MEMBER_SCRIPT = Path(__file__).with_name("member.py")

log = logging.getLogger("minikafka.labs.lab18")


@attrs.define(eq=False)
class Member:
    """The scenario's handle on one member process and what it has reported."""

    client_id: str
    protocol: str
    changed: threading.Condition
    process: subprocess.Popen[bytes]
    events: list[dict[str, Any]] = attrs.field(factory=list)
    holds: frozenset[int] = frozenset()
    gone: bool = False  # killed: no longer expected to hold anything
    exited: int | None = None

    @classmethod
    def start(
        cls,
        client_id: str,
        protocol: str,
        bootstrap: str,
        changed: threading.Condition,
        logs: Path,
    ) -> Member:
        group = GROUPS[protocol]
        timings = [str(SESSION_TIMEOUT_MS), str(HEARTBEAT_INTERVAL_MS)]
        argv = [bootstrap, group, client_id, protocol, TOPIC, *timings]
        with (logs / f"{client_id}.log").open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, str(MEMBER_SCRIPT), *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        member = cls(client_id, protocol, changed, process)
        threading.Thread(target=member._read, name=client_id, daemon=True).start()
        return member

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for raw in iter(stdout.readline, b""):
            event: dict[str, Any] = json.loads(raw)
            partitions = frozenset(event.get("partitions", ()))
            with self.changed:
                self.events.append(event)
                if event["kind"] == "assign":
                    # KIP-848 adds to what it holds; an eager assign is the whole set
                    eager = self.protocol == "classic"
                    self.holds = partitions if eager else self.holds | partitions
                elif event["kind"] in ("revoke", "lost"):
                    self.holds = self.holds - partitions
                self.changed.notify_all()
        status = self.process.wait()
        with self.changed:
            self.exited = status
            self.changed.notify_all()

    def kill(self) -> None:
        """SIGKILL: no revocation, no leaving; its heartbeats simply stop."""
        with self.changed:
            self.gone = True
        self.process.kill()
        self.process.wait(WAIT)


@attrs.define(eq=False)
class Producing:
    """A producer writing one record to every partition every :data:`PRODUCE_EVERY`
    seconds until stopped; what the brokers acknowledged, with each record's
    timestamp (its CreateTime, set by the producer)."""

    bootstrap: str
    records: list[dict[str, Any]] = attrs.field(factory=list)
    failed: list[str] = attrs.field(factory=list)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": "lab18-producer",
                # A record's timestamp is set when it is produced; batching them keeps
                # the brokers' work (and their trace) small.
                "linger.ms": 50,
                "log_level": 0,
            }
        )

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.failed.append(error.name())
                return
            _, ms = message.timestamp()
            line = {"partition": message.partition(), "offset": message.offset()}
            self.records.append({**line, "ts": ms / 1000})

        n = 0
        # Event.wait paces the records; nothing waits for a condition here.
        while not self._stop.wait(PRODUCE_EVERY):
            for partition in range(PARTITIONS):
                producer.produce(
                    TOPIC, b"order-%d" % n, partition=partition, on_delivery=delivered
                )
            n += 1
            producer.poll(0)
        producer.flush(WAIT)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


def settled(members: Sequence[Member]) -> bool:
    """Every live member holds partitions, none twice, and together all of them."""
    held = [m.holds for m in members if not m.gone]
    return (
        all(held)
        and sum(len(h) for h in held) == PARTITIONS
        and frozenset().union(*held) == frozenset(range(PARTITIONS))
    )


def wait_until_settled(
    groups: dict[str, list[Member]], changed: threading.Condition, what: str
) -> None:
    """Both groups settled, within :data:`WAIT`; a member that died on its own fails
    the run at once."""

    def died() -> list[str]:
        members = [m for ms in groups.values() for m in ms]
        return [m.client_id for m in members if not m.gone and m.exited is not None]

    with changed:
        done = changed.wait_for(
            lambda: all(settled(ms) for ms in groups.values()) or bool(died()), WAIT
        )
        if died():
            raise RuntimeError(f"{what}: member processes exited: {died()}")
        if not done:
            views = {
                m.client_id: sorted(m.holds)
                for ms in groups.values()
                for m in ms
                if not m.gone
            }
            raise RuntimeError(f"{what}: not settled within {WAIT}s: {views}")


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "lab18-admin"})
    topic = NewTopic(TOPIC, PARTITIONS, 1)
    admin.create_topics([topic], operation_timeout=WAIT)[TOPIC].result(timeout=WAIT)


def play(bootstrap: str, logs: Path) -> tuple[list[dict[str, Any]], list[Member]]:
    """Every step, in both groups at once; the scenario's log and the members."""
    changed = threading.Condition()
    groups: dict[str, list[Member]] = {protocol: [] for protocol in GROUPS}
    named: dict[str, Member] = {}
    actions: list[dict[str, Any]] = []
    for action, name in STEPS:
        ts = time.time()
        for protocol, members in groups.items():
            client_id = f"{protocol}-{name}"
            if action == "crash":
                named[client_id].kill()
            else:
                named[client_id] = Member.start(
                    client_id, protocol, bootstrap, changed, logs
                )
                members.append(named[client_id])
        what = f"{action} {name}"
        wait_until_settled(groups, changed, what)
        settled_ts = time.time()
        actions.append(
            {"action": action, "member": name, "ts": ts, "settled_ts": settled_ts}
        )
        log.info("%s: both groups settled after %.2fs", what, settled_ts - ts)
        # Event.wait: the groups run as they are this long, whatever happens.
        threading.Event().wait(PAUSE)
    return actions, list(named.values())


def run(out: Path) -> Path:
    """Run the scenario into ``out`` (the cluster, its traces, the records, the member
    logs, truth.json); ``out``."""
    out = Path(out).resolve()
    logs = out / "members"
    logs.mkdir(parents=True, exist_ok=True)
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        out, 3, controller_port=ports[0], broker_ports=ports[1:], overrides=OVERRIDES
    )
    producing = Producing(cluster.bootstrap)
    members: list[Member] = []
    started = time.time()
    try:
        cluster.up()
        create_topic(cluster.bootstrap)
        producing.start()
        actions, members = play(cluster.bootstrap, logs)
        producing.stop()
    finally:
        # The members first, killed: no goodbye, and their sessions outlast the
        # cluster's clean stop, which writes every node's last trace events out.
        for member in members:
            if member.process.poll() is None:
                member.kill()
        try:
            cluster.down()
        finally:
            cluster.kill_all()
    if producing.failed:
        raise RuntimeError(f"records not written: {sorted(set(producing.failed))}")
    produced = sorted(producing.records, key=lambda r: (r["partition"], r["offset"]))
    with (out / "produced.jsonl").open("w") as file:
        file.writelines(json.dumps(record) + "\n" for record in produced)
    events = [
        r for r in read_trace(out / "traces") if r["event"] == "member_assignment"
    ]
    gaps = unowned(events)
    document = {
        "topic": TOPIC,
        "partitions": PARTITIONS,
        "groups": GROUPS,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "started": started,
        "actions": actions,
        "members": {m.client_id: m.events for m in members},
        "gaps": gaps,
        "delayed": delayed(gaps, produced),
    }
    (out / "truth.json").write_text(json.dumps(document, indent=1) + "\n")
    return out


# --- the reference, in plain Python ---------------------------------------------------------


def unowned(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stretch a partition had no owner, after its first owner: rows of the first
    exercise's columns, in its order."""
    gaps = []
    groups = sorted({str(e["group_type"]) for e in events})
    for group_type in groups:
        mine = sorted(
            (e for e in events if e["group_type"] == group_type),
            key=lambda e: float(e["ts"]),
        )
        owned: dict[str, set[str]] = {}
        since: dict[str, float | None] = {}  # partition -> unowned since (None: owned)
        for event in mine:
            owned[event["member_id"]] = {
                *event["assigned_partitions"],
                *event["partitions_pending_revocation"],
            }
            now = float(event["ts"])
            held = set().union(*owned.values())
            for partition in sorted(held | set(since)):
                was = since.get(partition)
                if partition in held and was is not None:
                    if now > was:  # let go and taken at the same moment: no gap
                        gaps.append(_gap(group_type, partition, was, now))
                    since[partition] = None
                elif partition not in held and partition in since and was is None:
                    since[partition] = now
                elif partition in held:
                    since[partition] = None
    return sorted(gaps, key=lambda g: (g["group_type"], g["partition"], g["start_ts"]))


def _gap(group_type: str, name: str, start: float, end: float) -> dict[str, Any]:
    partition = int(name.rpartition("-")[2])
    return {
        "group_type": group_type,
        "partition": partition,
        "start_ts": start,
        "end_ts": end,
    }


def delayed(
    gaps: list[dict[str, Any]], produced: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per group type and partition: the milliseconds unowned and the records produced
    meanwhile (rows of the second exercise's columns, in its order)."""
    rows = []
    for group_type in sorted({g["group_type"] for g in gaps}):
        for partition in range(PARTITIONS):
            mine = [
                g
                for g in gaps
                if g["group_type"] == group_type and g["partition"] == partition
            ]
            waiting = [
                r
                for r in produced
                if r["partition"] == partition
                and any(g["start_ts"] <= r["ts"] < g["end_ts"] for g in mine)
            ]
            unowned_ms = sum((g["end_ts"] - g["start_ts"]) * 1000 for g in mine)
            rows.append(
                {
                    "group_type": group_type,
                    "partition": partition,
                    "gaps": len(mine),
                    "unowned_ms": round(unowned_ms, 3),
                    "delayed_records": len(waiting),
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run's directory (created)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    begun = time.monotonic()
    out = run(args.out)
    print(f"lab 18 scenario: {out} in {time.monotonic() - begun:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
