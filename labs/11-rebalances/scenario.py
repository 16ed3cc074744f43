"""Lab 11 scenario: the same membership changes under eager and cooperative rebalancing.

``run(out)`` (or ``python scenario.py OUT``) starts a broker with tracing on (data in
``OUT/data``, traces in ``OUT/traces``), creates a six-partition topic with a steady
trickle of records, and then plays one seeded sequence of member events twice, each time
in a group of its own:

- ``lab11-eager``, whose consumers use ``range`` (eager: every rebalance revokes
  everything);
- ``lab11-cooperative``, whose consumers use ``cooperative-sticky`` (KIP-429: only the
  partitions that move are revoked, in a second rebalance).

The sequence: three members join one by one, a fourth joins, one leaves cleanly
(``close()``, a LeaveGroup) and one crashes (SIGKILL: no LeaveGroup, the coordinator
notices only when its session times out). Each member is a process (``member.py``) named
by its client id (``lab11-eager-m3``) that reports its rebalance callbacks with wall-clock
times. After each event the scenario waits, with a deadline, for the group to settle:
every live member holds partitions, none twice, and together all six.

The ground truth, ``OUT/truth.json``, is what the clients saw, recorded apart from the
broker: per protocol, the scenario's action log (what it did to which member, when, and
when the group had settled) and every member's callback log. The lab's tests compare the
exercises' answers, computed from the broker's traces, with it.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import attrs
from confluent_kafka import KafkaError, Message, Producer

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess

TOPIC = "lab11-events"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 3000  # the members' session.timeout.ms
HEARTBEAT_INTERVAL_MS = 300  # the members' heartbeat.interval.ms
STRATEGIES = {"eager": "range", "cooperative": "cooperative-sticky"}
WAIT = 60.0  # seconds a condition may take on a loaded machine before the run fails

BROKER_OVERRIDES = {
    # A rebalance of an empty group starts at once (Kafka waits 3 s for more members).
    "group.initial.rebalance.delay.ms": "0",
    # Allow the members' short session, so a crash is noticed within seconds.
    "group.min.session.timeout.ms": "1000",
}

MEMBER_SCRIPT = Path(__file__).with_name("member.py")

log = logging.getLogger("minikafka.labs.lab11")


@attrs.frozen
class Step:
    """One membership change: ``join``, ``leave`` (close) or ``crash`` (SIGKILL) of a
    member, then a pause of ``pause`` seconds once the group has settled."""

    action: str
    member: str
    pause: float


def plan(seed: int, scale: float) -> list[Step]:
    """The seeded sequence both groups go through."""
    rng = random.Random(seed)
    names = ["m1", "m2", "m3", "m4"]
    leaver = rng.choice(names)
    crasher = rng.choice([name for name in names if name != leaver])
    moves = [("join", name) for name in names] + [("leave", leaver), ("crash", crasher)]
    return [
        Step(action, name, round(rng.uniform(0.6, 1.2) * scale, 3))
        for action, name in moves
    ]


@attrs.define(eq=False)
class Member:
    """The scenario's handle on one member process and what it has reported."""

    name: str
    client_id: str
    cooperative: bool
    changed: threading.Condition
    process: subprocess.Popen[bytes]
    events: list[dict[str, object]] = attrs.field(factory=list)
    assignment: frozenset[int] = frozenset()
    gone: bool = False  # it left or was killed: no longer expected to hold anything
    exited: int | None = None

    @classmethod
    def start(
        cls,
        name: str,
        group: str,
        strategy: str,
        bootstrap: str,
        changed: threading.Condition,
        logs: Path,
    ) -> Member:
        client_id = f"{group}-{name}"
        with (logs / f"{client_id}.log").open("wb") as stderr:
            process = subprocess.Popen(
                [
                    sys.executable,
                    str(MEMBER_SCRIPT),
                    bootstrap,
                    group,
                    client_id,
                    strategy,
                    TOPIC,
                    str(SESSION_TIMEOUT_MS),
                    str(HEARTBEAT_INTERVAL_MS),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        member = cls(
            name, client_id, strategy == "cooperative-sticky", changed, process
        )
        threading.Thread(target=member._read, name=client_id, daemon=True).start()
        return member

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for raw in iter(stdout.readline, b""):
            event: dict[str, object] = json.loads(raw)
            kind, parts = event["kind"], event.get("partitions")
            partitions = frozenset(parts) if isinstance(parts, list) else frozenset()
            with self.changed:
                self.events.append(event)
                if kind == "assign":
                    self.assignment = (
                        self.assignment | partitions if self.cooperative else partitions
                    )
                elif kind in ("revoke", "lost"):
                    self.assignment = (
                        self.assignment - partitions
                        if self.cooperative
                        else frozenset()
                    )
                self.changed.notify_all()
        status = self.process.wait()
        with self.changed:
            self.exited = status
            self.changed.notify_all()

    def close(self) -> None:
        """Ask it to ``close()``: it revokes and sends LeaveGroup, then exits."""
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        with self.changed:
            self.gone = True
        stdin.write(b"close\n")
        stdin.flush()

    def kill(self) -> None:
        """SIGKILL: no revoke, no LeaveGroup; its heartbeats simply stop."""
        with self.changed:
            self.gone = True
        self.process.kill()
        self.process.wait(WAIT)


@attrs.define(eq=False)
class Trickle:
    """A producer sending one record every ``interval`` seconds until stopped."""

    bootstrap: str
    interval: float = 0.02
    sent: int = 0
    failed: list[str] = attrs.field(factory=list)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="trickle", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "client.id": "lab11-producer"}
        )

        def delivered(error: KafkaError | None, _: Message) -> None:
            if error is not None:
                self.failed.append(error.name())

        # Event.wait paces the records; nothing waits for a condition here.
        while not self._stop.wait(self.interval):
            producer.produce(
                TOPIC, f"record-{self.sent}".encode(), on_delivery=delivered
            )
            self.sent += 1
            producer.poll(0)
        producer.flush(WAIT)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


def settled(members: Sequence[Member]) -> bool:
    """Every live member holds partitions, none twice, and together all of them."""
    held = [m.assignment for m in members if not m.gone]
    return (
        all(held)
        and sum(len(h) for h in held) == PARTITIONS
        and frozenset().union(*held) == frozenset(range(PARTITIONS))
    )


def wait_until_settled(
    members: Sequence[Member], changed: threading.Condition, what: str
) -> None:
    def died() -> list[str]:
        return [m.client_id for m in members if not m.gone and m.exited is not None]

    with changed:
        if not changed.wait_for(lambda: settled(members) or bool(died()), WAIT):
            views = {m.client_id: sorted(m.assignment) for m in members if not m.gone}
            raise RuntimeError(
                f"{what}: the group did not settle within {WAIT}s: {views}"
            )
        if died():
            raise RuntimeError(f"{what}: member processes exited: {died()}")


def wait_quietly(
    members: Sequence[Member], changed: threading.Condition, seconds: float
) -> None:
    """Let the group run for ``seconds``; fail at once if a live member dies meanwhile."""
    with changed:
        if changed.wait_for(
            lambda: any(not m.gone and m.exited is not None for m in members), seconds
        ):
            raise RuntimeError("a member process exited on its own")


def play(
    protocol: str, steps: Sequence[Step], bootstrap: str, logs: Path
) -> tuple[dict[str, object], list[Member]]:
    """Play ``steps`` in the group of ``protocol``; its part of the truth and its members."""
    group = f"lab11-{protocol}"
    strategy = STRATEGIES[protocol]
    changed = threading.Condition()
    members: dict[str, Member] = {}
    actions: list[dict[str, object]] = []
    for step in steps:
        ts = time.time()
        if step.action == "join":
            members[step.member] = Member.start(
                step.member, group, strategy, bootstrap, changed, logs
            )
        elif step.action == "leave":
            members[step.member].close()
        else:
            members[step.member].kill()
        what = f"{group}: {step.action} {step.member}"
        wait_until_settled(list(members.values()), changed, what)
        settled_ts = time.time()
        with changed:
            live = sorted(m.client_id for m in members.values() if not m.gone)
        actions.append(
            {
                "action": step.action,
                "member": step.member,
                "client_id": members[step.member].client_id,
                "ts": ts,
                "settled_ts": settled_ts,
                "live": live,
            }
        )
        log.info(
            "%s: settled after %.2fs, live: %s", what, settled_ts - ts, ", ".join(live)
        )
        wait_quietly(list(members.values()), changed, step.pause)
    truth: dict[str, object] = {
        "group_id": group,
        "strategy": strategy,
        "actions": actions,
    }
    return truth, list(members.values())


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "lab11-admin"})
    futures = admin.create_topics(
        [NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=WAIT
    )
    futures[TOPIC].result(timeout=WAIT)


def run(out: Path, seed: int = 2, scale: float = 1.0) -> Path:
    """Run the scenario into ``out`` (traces, data, member logs, truth.json); ``out``."""
    out = Path(out)
    logs = out / "members"
    logs.mkdir(parents=True, exist_ok=True)
    steps = plan(seed, scale)
    broker = BrokerProcess(
        out / "data", overrides=BROKER_OVERRIDES, trace_dir=out / "traces"
    )
    started = time.time()
    broker.start()
    groups: dict[str, dict[str, object]] = {}
    everyone: list[Member] = []
    trickle = Trickle(broker.bootstrap)
    try:
        create_topic(broker.bootstrap)
        trickle.start()
        for protocol in STRATEGIES:
            truth, members = play(protocol, steps, broker.bootstrap, logs)
            groups[protocol] = truth
            everyone += members
        trickle.stop()
    finally:
        # The broker first, so that the members' end leaves no trace: no LeaveGroup, no
        # session expiring. stop() writes out the last buffered trace events.
        broker.stop()
        teardown = time.time()
        for member in everyone:
            if member.process.poll() is None:
                member.process.kill()
                member.process.wait(WAIT)
    for truth in groups.values():
        truth["teardown_ts"] = teardown
        prefix = f"{truth['group_id']}-"
        truth["members"] = {
            m.client_id: m.events for m in everyone if m.client_id.startswith(prefix)
        }
    document = {
        "seed": seed,
        "scale": scale,
        "topic": TOPIC,
        "partitions": PARTITIONS,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "started": started,
        "finished": teardown,
        "records_sent": trickle.sent,
        "steps": [attrs.asdict(step) for step in steps],
        "groups": groups,
    }
    (out / "truth.json").write_text(json.dumps(document, indent=1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run's directory (created)")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0, help="stretches the pauses")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    begun = time.monotonic()
    out = run(args.out, args.seed, args.scale)
    print(f"lab 11 scenario: {out} in {time.monotonic() - begun:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
