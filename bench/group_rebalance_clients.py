"""Group rebalances with real clients: classic against KIP-848's consumer protocol.

One broker (``minikafka.broker.testing.BrokerProcess``) holds a topic of
``PARTITIONS`` partitions. A group of confluent-kafka consumers (librdkafka) reads it,
each polling in a thread of its own, with ``group.protocol=classic`` (librdkafka's
default eager ``range,roundrobin``) or ``group.protocol=consumer`` (the broker's
``uniform`` assignor); one member is a child process, so that it can be SIGKILLed.
Each member reports every rebalance callback with the monotonic clock. Once the group
of ``members`` is stable:

- **arrival**: one more member subscribes; the clock runs from its ``subscribe`` until
  every partition is owned by exactly one member and the newcomer owns some;
- **death**: the child is SIGKILLed (it tells nobody: the session timeout, 6 s under
  both protocols here, is most of the figure); the clock runs until its partitions are
  owned by the living members, once each.

For each, *partition-unavailability seconds*: the sum over partitions of the time no
living member owned it, from the event to stability (a killed member's partitions count
as unowned from the kill). Settings shared by both protocols, short so that a run takes
minutes: sessions of 6 s, heartbeats every second (``session.timeout.ms``,
``heartbeat.interval.ms`` on classic clients; ``group.consumer.session.timeout.ms``,
``group.consumer.heartbeat.interval.ms`` on the broker). Run once per case: figures from
one run on a shared machine, to compare the protocols' shapes, not to quote as latency.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ClientPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess

from ._common import (
    BenchError,
    Report,
    machine_facts,
    markdown_table,
    now_utc,
    report_header,
)

NAME = "group_rebalance_clients"
PARTITIONS = 30
SIZES = (3, 10)
QUICK_SIZES = (3,)
PROTOCOLS = ("classic", "consumer")
TOPIC = "bench-groups"
DEADLINE = 120.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
}
CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}

# The member to be killed: prints what it owns after every callback.
CHILD = r"""
import sys
from confluent_kafka import Consumer

bootstrap, group, topic, protocol = sys.argv[1:5]
config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": "doomed",
          "group.protocol": protocol, "log_level": 0}
if protocol == "classic":
    config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
consumer = Consumer(config)
owned = set()
def report():
    print(" ".join(map(str, sorted(owned))) or "-", flush=True)
def assign(_, partitions):
    owned.update(p.partition for p in partitions); report()
def revoke(_, partitions):
    owned.difference_update(p.partition for p in partitions); report()
consumer.subscribe([topic], on_assign=assign, on_revoke=revoke, on_lost=revoke)
while True:
    consumer.poll(0.05)
"""


@attrs.define(eq=False)
class Group:
    """Who owns which partition, over time, as the members' callbacks say."""

    owned: dict[str, set[int]] = attrs.field(factory=dict)
    unowned_since: dict[int, float] = attrs.field(factory=dict)
    unavailable: float = 0.0
    """Partition-seconds without a living owner, since :meth:`start_counting`."""
    counting: bool = False
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def report(self, member: str, partitions: set[int]) -> None:
        with self.lock:
            now = time.monotonic()
            self.owned[member] = set(partitions)
            held = set().union(*self.owned.values())
            for p in range(PARTITIONS):
                if p in held and p in self.unowned_since:
                    started = self.unowned_since.pop(p)
                    if self.counting:
                        self.unavailable += now - started
                elif p not in held and p not in self.unowned_since:
                    self.unowned_since[p] = now

    def start_counting(self) -> None:
        with self.lock:
            now = time.monotonic()
            self.counting, self.unavailable = True, 0.0
            for p in self.unowned_since:
                self.unowned_since[p] = now

    def stable(self, members: set[str]) -> bool:
        """Every partition owned once, by the given members only, each owning some."""
        with self.lock:
            alive = [self.owned.get(m, set()) for m in members]
            gone = [p for m, ps in self.owned.items() if m not in members for p in ps]
            flat = [p for ps in alive for p in ps]
            return sorted(flat) == list(range(PARTITIONS)) and all(alive) and not gone


@attrs.define(eq=False)
class Member:
    name: str
    thread: threading.Thread
    stop: threading.Event


def _member(
    bootstrap: str, group_id: str, protocol: str, name: str, group: Group
) -> Member:
    stop = threading.Event()
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "client.id": name,
        "group.protocol": protocol,
        "log_level": 0,
        **(CLASSIC if protocol == "classic" else {}),
    }

    def run() -> None:
        consumer = Consumer(config)
        mine: set[int] = set()

        def assign(_: Consumer, partitions: list[ClientPartition]) -> None:
            mine.update(p.partition for p in partitions)
            group.report(name, mine)

        def revoke(_: Consumer, partitions: list[ClientPartition]) -> None:
            mine.difference_update(p.partition for p in partitions)
            group.report(name, mine)

        consumer.subscribe([TOPIC], on_assign=assign, on_revoke=revoke, on_lost=revoke)
        while not stop.is_set():
            consumer.poll(0.05)
        consumer.close()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return Member(name, thread, stop)


def _wait(condition: Callable[[], bool], what: str) -> float:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError(f"not within {DEADLINE:.0f} s: {what}")
        time.sleep(0.01)
    return time.monotonic()


def _case(bootstrap: str, protocol: str, size: int) -> dict[str, object]:
    group_id = f"bench-{protocol}-{size}-{time.monotonic_ns()}"
    group = Group()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, group_id, TOPIC, protocol],
        stdout=subprocess.PIPE,
        text=True,
    )

    def follow() -> None:
        for line in child.stdout or ():
            parts = line.split()
            group.report("doomed", {int(p) for p in parts if p != "-"})

    threading.Thread(target=follow, daemon=True).start()
    names = [f"member-{i}" for i in range(1, size)]
    members = [_member(bootstrap, group_id, protocol, n, group) for n in names]
    try:
        everyone = {*names, "doomed"}
        _wait(lambda: group.stable(everyone), f"{size} members stable")
        group.start_counting()
        arrived = time.monotonic()
        members.append(_member(bootstrap, group_id, protocol, "newcomer", group))
        everyone.add("newcomer")
        settled = _wait(lambda: group.stable(everyone), "the newcomer settled")
        arrival = (settled - arrived, group.unavailable)
        _wait(lambda: group.stable(everyone), "stable before the kill")
        child.kill()
        child.wait(DEADLINE)
        group.start_counting()
        killed = time.monotonic()
        with group.lock:  # its partitions are nobody's from now on
            for p in group.owned.get("doomed", set()):
                group.unowned_since[p] = killed
            group.owned.pop("doomed", None)
        everyone.discard("doomed")
        settled = _wait(
            lambda: group.stable(everyone), "the dead member's partitions moved"
        )
        death = (settled - killed, group.unavailable)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(DEADLINE)
        for m in members:
            m.stop.set()
        for m in members:
            m.thread.join(DEADLINE)
    return {
        "protocol": protocol,
        "members": size,
        "arrival_to_stable_s": arrival[0],
        "arrival_unavailable_partition_s": arrival[1],
        "death_to_stable_s": death[0],
        "death_unavailable_partition_s": death[1],
    }


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    sizes = QUICK_SIZES if quick else SIZES
    cases: list[dict[str, object]] = []
    scratch = tempfile.TemporaryDirectory(prefix="minikafka-bench-groups-")
    with (
        scratch,
        BrokerProcess(Path(scratch.name) / "data", overrides=OVERRIDES) as broker,
    ):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        created = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        for future in created.values():
            future.result(DEADLINE)
        for size in sizes:
            for protocol in PROTOCOLS:
                case = _case(broker.bootstrap, protocol, size)
                cases.append(case)
                print(
                    f"  {protocol:<8} {size:>2} members: arrival "
                    f"{case['arrival_to_stable_s']:.2f} s, death "
                    f"{case['death_to_stable_s']:.2f} s",
                    flush=True,
                )
    rows = [
        [
            str(c["protocol"]),
            str(c["members"]),
            f"{c['arrival_to_stable_s']:.2f}",
            f"{c['arrival_unavailable_partition_s']:.1f}",
            f"{c['death_to_stable_s']:.2f}",
            f"{c['death_unavailable_partition_s']:.1f}",
        ]
        for c in cases
    ]
    table = markdown_table(
        [
            "protocol",
            "members",
            "arrival to stable, s",
            "arrival: partitions unowned, partition-s",
            "death to stable, s",
            "death: partitions unowned, partition-s",
        ],
        rows,
    )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, 1, started, clock),
        "partitions": PARTITIONS,
        "overrides": OVERRIDES,
        "classic_client": CLASSIC,
        "machine": machine_facts(),
        "cases": cases,
    }
    return Report(NAME, document, table)
