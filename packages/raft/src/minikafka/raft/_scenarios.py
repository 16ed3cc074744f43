"""What a simulation runs: the quorum's size, the network's misbehaviour and a schedule of
faults (crashes, restarts, partitions, heals, crash points), drawn from a seed or written
by hand, and printed as a schedule a reader can follow.

``random_scenario`` draws a few faults of the kinds asked for; ``storm_scenario`` draws
crash storms aimed at the leader with every voter armed with crash points, the faults
that catch durability rules (see ``Fault``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

import attrs

FaultKind = Literal["crash", "restart", "partition", "heal", "crash-after"]
Trigger = Literal["vote", "append", "commit"]
TRIGGERS: tuple[Trigger, ...] = ("vote", "append", "commit")
FAULT_KINDS: tuple[str, ...] = ("crash", "partition", "drop", "duplicate", "delay")
"""What ``--faults`` may name: node crashes, partitions, and three network misbehaviours."""


@attrs.frozen
class Fault:
    """At virtual time ``at``: crash or restart ``nodes[0]`` (restart with no ``nodes``:
    every crashed node); cut ``nodes`` off from the rest; heal every partition; or
    (``crash-after``) arm ``nodes[0]`` to crash right after its next ``trigger`` (it grants
    a vote, appends as leader, or commits as leader) and restart ``down`` seconds later.
    With no ``nodes``, a crash, a partition or a crash point is aimed at whoever leads.

    Crashes at random times rarely land in the instant after a vote or a write, which is
    where durability rules matter; crash points are how FoundationDB's simulation and
    Jepsen-style tests reach them."""

    at: float
    kind: FaultKind
    nodes: tuple[int, ...] = ()
    trigger: Trigger | None = None
    down: float = 0.0

    def __str__(self) -> str:
        default = {"restart": "every crashed node", "heal": ""}.get(
            self.kind, "the leader"
        )
        nodes = " ".join(map(str, self.nodes)) or default
        if self.kind == "crash-after":
            return (
                f"t={self.at:7.3f}s crash {nodes} right after its next {self.trigger}, "
                f"restart {self.down * 1000:.0f} ms later"
            )
        what = {
            "crash": "crash",
            "restart": "restart",
            "partition": "isolate",
            "heal": "heal",
        }
        return f"t={self.at:7.3f}s {what[self.kind]} {nodes}".rstrip()


@attrs.frozen
class Scenario:
    voters: int = 3
    observers: int = 0
    faults: tuple[Fault, ...] = ()
    duration: float = 10.0  # the faulty phase, in virtual seconds
    settle: float = 30.0  # the liveness bound after it
    append_interval: float = 0.1
    snapshot_every: int = 50  # a node snapshots after applying this many entries
    drop: float = 0.0
    duplicate: float = 0.0
    max_delay: float = 0.005
    # False: crashed nodes stay down and partitions stay (liveness fails)
    heals: bool = True

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.voters + 1))

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.voters + self.observers + 1))


def random_scenario(
    seed: int, voters: int = 3, observers: int = 0, kinds: Sequence[str] = FAULT_KINDS
) -> Scenario:
    """A scenario drawn from ``seed``: a few crashes, restarts and partitions among the
    enabled ``kinds``, and the network's misbehaviour."""
    rng = random.Random(f"scenario-{seed}")
    nodes = list(range(1, voters + observers + 1))
    duration = 10.0
    faults: list[Fault] = []
    for _ in range(rng.randint(0, 12)):
        at = round(rng.uniform(0.5, duration), 3)
        options: list[FaultKind] = []
        if "crash" in kinds:
            options += ["crash", "restart"]
        if "partition" in kinds:
            options += ["partition", "heal"]
        if not options:
            break
        kind = rng.choice(options)
        if kind == "crash" and rng.random() < 0.5:
            trigger = rng.choice(TRIGGERS)
            down = round(rng.uniform(0.001, 0.5), 3)
            faults.append(Fault(at, "crash-after", (rng.choice(nodes),), trigger, down))
        elif kind == "crash":
            node = rng.choice(nodes)
            faults.append(Fault(at, kind, (node,)))
            if rng.random() < 0.7:
                # Most crashed nodes come back soon, in the middle of what they left.
                back = round(at + rng.uniform(0.01, 2.0), 3)
                faults.append(Fault(back, "restart", (node,)))
        elif kind == "restart":
            faults.append(Fault(at, kind, (rng.choice(nodes),)))
        elif kind == "partition":
            size = rng.randint(1, max(1, len(nodes) // 2))
            faults.append(Fault(at, kind, tuple(sorted(rng.sample(nodes, size)))))
        else:
            faults.append(Fault(at, kind))
    return Scenario(
        voters=voters,
        observers=observers,
        faults=tuple(sorted(faults, key=lambda f: f.at)),
        duration=duration,
        drop=rng.choice([0.0, 0.01, 0.05, 0.2]) if "drop" in kinds else 0.0,
        duplicate=rng.choice([0.0, 0.01, 0.05]) if "duplicate" in kinds else 0.0,
        max_delay=rng.choice([0.001, 0.01, 0.1]) if "delay" in kinds else 0.001,
    )


def storm_scenario(seed: int, voters: int = 3, observers: int = 0) -> Scenario:
    """A crash storm drawn from ``seed``: whoever leads is crashed every 0.5 to 2.5 s and
    everything crashed comes back soon after, while every voter is armed with a crash
    point (right after its next vote, append or commit, back within 50 ms). Durability
    rules fail in these instants; random scenarios reach them rarely."""
    rng = random.Random(f"storm-{seed}")
    faults: list[Fault] = []
    at = 1.5
    while at < 9.0:
        faults.append(Fault(round(at, 3), "crash"))
        faults.append(Fault(round(at + rng.uniform(0.05, 1.5), 3), "restart"))
        for voter in range(1, voters + 1):
            point = round(at + rng.uniform(0, 2), 3)
            trigger = rng.choice(TRIGGERS)
            down = round(rng.uniform(0.001, 0.05), 3)
            faults.append(Fault(point, "crash-after", (voter,), trigger, down))
        at += rng.uniform(0.5, 2.5)
    return Scenario(
        voters=voters,
        observers=observers,
        faults=tuple(sorted(faults, key=lambda f: f.at)),
        duration=10.0,
        settle=20.0,
        max_delay=rng.choice([0.001, 0.01, 0.05]),
    )


def describe(scenario: Scenario) -> str:
    """The schedule, one fault per line, with the network's misbehaviour first."""
    lines = [
        f"{scenario.voters} voters, {scenario.observers} observers; network: drop "
        f"{scenario.drop:g}, duplicate {scenario.duplicate:g}, delay up to "
        f"{scenario.max_delay * 1000:g} ms; faults until t={scenario.duration:g}s"
    ]
    lines += [f"  {fault}" for fault in scenario.faults] or ["  (no faults)"]
    return "\n".join(lines)
