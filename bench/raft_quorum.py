"""What committing through KRaft's Raft core costs, in one process (the
part that needs no network shell yet).

A quorum of ``RaftNode`` cores (``minikafka.raft``) whose messages are handed from node to
node at once, in this process, on the real clock. A client appends one 100-byte entry,
waits until the leader reports it committed, and appends the next:

- ``1 voter, disk``: the leader appends to its ``FileRaftLog`` (``__cluster_metadata-0``
  segments) and fsyncs: committed;
- ``3 voters, disk``: the leader appends and fsyncs; the followers' held fetches are
  answered, each follower appends and fsyncs, fetches again, and the leader moves its high
  watermark once a majority has the entry;
- ``3 voters, memory``: the same on ``MemoryLog``: the cores' own CPU, no disk.

Ceilings, in the same run: ``os.write`` + ``os.fsync`` of the same bytes, once (what one
durable voter needs at least) and twice in a row (a leader and the one follower that makes
a majority of three: Raft's minimum when the fsyncs are not overlapped, as here, where
one process does all three nodes' work one after the other).

Then failover in the simulator (virtual time, a network delaying each message up to 5 ms):
the time from a leader's crash to the first entry the next leader commits, over 20 crashes
of 20 seeds, with Kafka's default timeouts. It is set by the fetch timeout (2 s) and the
randomized election timeout, which is the point of measuring it.

Quoted: commits/s and commit latency percentiles (median of ``REPEATS`` runs).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import attrs

from minikafka.raft import (
    Committed,
    Envelope,
    MemoryLog,
    MemoryStateStore,
    RaftNode,
    RaftResult,
    State,
)
from minikafka.raft._file_log import FileRaftLog
from minikafka.raft._scenarios import Fault, Scenario
from minikafka.raft._simulator import Simulation

from ._common import (
    Report,
    bar_chart_svg,
    command_line,
    latency_summary,
    machine_facts,
    markdown_table,
    now_utc,
)

NAME = "raft_quorum"
VALUE = b"x" * 100
REPEATS = 3


@attrs.frozen
class Settings:
    entries: int
    repeats: int
    failovers: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        return cls(50, 1, 3) if quick else cls(1000, REPEATS, 20)


@attrs.frozen
class Outcome:
    case: str
    commits_per_second: float
    latency_ms: dict[str, float]


class InProcessQuorum:
    """Voters 1..n whose messages are delivered at once; ``now`` is the real clock."""

    def __init__(self, voters: int, directory: Path | None) -> None:
        ids = list(range(1, voters + 1))
        self.logs = {
            n: FileRaftLog(directory / f"node{n}" / "__cluster_metadata-0")
            if directory
            else MemoryLog()
            for n in ids
        }
        now = time.monotonic()
        self.nodes = {
            n: RaftNode(n, ids, self.logs[n], MemoryStateStore(), now) for n in ids
        }
        self.queue: deque[Envelope] = deque()
        self.committed = 0
        while not any(n.state is State.LEADER for n in self.nodes.values()):
            self.tick()

    def take(self, node: RaftNode, result: RaftResult) -> None:
        self.queue.extend(result.messages)
        if node.state is State.LEADER:
            self.committed += sum(
                len(r.entries) for r in result.replies if isinstance(r, Committed)
            )

    def deliver(self) -> None:
        while self.queue:
            envelope = self.queue.popleft()
            node = self.nodes[envelope.destination]
            self.take(node, node.receive(envelope, time.monotonic()))

    def tick(self) -> None:
        now = time.monotonic()
        for node in self.nodes.values():
            deadline = node.next_deadline()
            if deadline is not None and deadline <= now:
                self.take(node, node.on_timer(now))
        self.deliver()
        time.sleep(0.001)  # the election timers run on the real clock

    def commit_one(self) -> float:
        """Append one entry and deliver until it is committed; its latency in seconds."""
        (leader,) = [n for n in self.nodes.values() if n.state is State.LEADER]
        target = self.committed + 1
        started = time.perf_counter()
        self.take(leader, leader.append([VALUE], time.monotonic()))
        self.deliver()
        if self.committed < target:
            raise RuntimeError(
                "the entry was not committed once every message was delivered"
            )
        return time.perf_counter() - started

    def close(self) -> None:
        for log in self.logs.values():
            if isinstance(log, FileRaftLog):
                log.close()


def _quorum_case(voters: int, on_disk: bool, entries: int) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory(prefix="raft-bench-") as tmp:
        quorum = InProcessQuorum(voters, Path(tmp) if on_disk else None)
        try:
            latencies = [quorum.commit_one() for _ in range(entries)]
        finally:
            quorum.close()
    return entries / sum(latencies), latencies


def _fsync_case(fsyncs: int, entries: int) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory(prefix="raft-bench-") as tmp:
        fds = [
            os.open(Path(tmp) / f"f{i}", os.O_WRONLY | os.O_CREAT)
            for i in range(fsyncs)
        ]
        latencies = []
        try:
            for _ in range(entries):
                started = time.perf_counter()
                for fd in fds:
                    os.write(fd, VALUE)
                    os.fsync(fd)
                latencies.append(time.perf_counter() - started)
        finally:
            for fd in fds:
                os.close(fd)
    return entries / sum(latencies), latencies


def failover_times(count: int) -> list[float]:
    """Virtual seconds from a leader's crash to the next leader's first commit."""
    times = []
    for seed in range(count):
        scenario = Scenario(
            voters=3, faults=(Fault(5.0, "crash"),), duration=6.0, settle=10.0
        )
        simulation = Simulation(scenario, seed)
        result = simulation.run()
        if not result.ok:
            raise RuntimeError(f"seed {seed}: {result.violation}")
        times.append(simulation.first_commit_after(5.0) - 5.0)
    return times


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    cases: dict[str, Callable[[], tuple[float, list[float]]]] = {
        "1 voter, disk": lambda: _quorum_case(1, True, settings.entries),
        "3 voters, disk": lambda: _quorum_case(3, True, settings.entries),
        "3 voters, memory": lambda: _quorum_case(3, False, settings.entries),
        "ceiling: 1 fsync": lambda: _fsync_case(1, settings.entries),
        "ceiling: 2 fsyncs": lambda: _fsync_case(2, settings.entries),
    }
    outcomes = []
    for case, measure in cases.items():
        runs = [measure() for _ in range(settings.repeats)]
        rate, latencies = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        outcomes.append(Outcome(case, rate, latency_summary(latencies)))
    failovers = failover_times(settings.failovers)
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "started": started,
        "seconds": time.perf_counter() - clock,
        "command": command_line(),
        "machine": machine_facts(),
        "settings": attrs.asdict(settings),
        "outcomes": [attrs.asdict(o) for o in outcomes],
        "failover_virtual_seconds": {
            "runs": failovers,
            "median": statistics.median(failovers),
            "max": max(failovers),
        },
    }
    rows = [
        [
            o.case,
            f"{o.commits_per_second:,.0f}",
            f"{o.latency_ms['p50_ms']:.3f}",
            f"{o.latency_ms['p99_ms']:.3f}",
        ]
        for o in outcomes
    ]
    table = markdown_table(["case", "commits/s", "p50 ms", "p99 ms"], rows)
    table += (
        f"\nfailover (virtual time, {len(failovers)} leader crashes): median "
        f"{statistics.median(failovers):.2f} s, max {max(failovers):.2f} s"
    )
    chart = bar_chart_svg(
        "Commits through the Raft core, one process",
        "commits/s",
        [("commits/s", [(o.case, o.commits_per_second) for o in outcomes])],
    )
    return Report(NAME, document, table, chart)
