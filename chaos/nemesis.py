"""The nemesis's schedule: which faults, on which nodes, from when until when, drawn
from a seed.

A schedule is a value: the same seed, topology and options give the same schedule, so
a run is replayed by its seed. Carrying it out (signals, namespaces, the admin client)
is the runner's job; this module only decides.

The faults, each as started and as healed:

- ``kill``: SIGKILL a node; restart it.
- ``pause``: SIGSTOP a node (a stall, like a long GC pause); SIGCONT.
- ``partition-<shape>``: drop the links of one of :mod:`chaos.partitions`' shapes;
  restore them.
- ``slow``: ``tc netem`` delay, jitter and loss on one node's links; remove the qdisc.
- ``disk-full``: fill the small tmpfs holding one broker's log directory; free it.
- ``kill-active-controller``: SIGKILL whichever controller is active then (known only
  then); restart it.
- ``reassign``: move a partition's replicas, mid-fault only; move them back.
- ``elect-leaders``: a preferred leader election, mid-fault only; another once whole.
- ``broker-add``: start a broker with an id never used before in the run, move
  replicas onto it; move them back and shut it down.
- ``broker-remove``: drain a broker (its replicas moved away) and shut it down; start
  it again and move them back.
- ``kill-zookeeper``, ``pause-zookeeper`` (ZooKeeper mode): SIGKILL or SIGSTOP
  ZooKeeper's server; start it again on its data, or SIGCONT.

The rules a schedule keeps, so each run tests safety under faults rather than an
unavailable cluster (an unavailable quorum is allowed with ``allow_quorum_loss``):

- at most ``concurrency`` faults at once;
- with three controllers (KRaft voters) or more, never a majority of them down at once:
  killed or paused (a single controller has no majority to
  keep: its faults are unavailability, which a run may include); and no partition
  cutting a link of a controller while a controller is down (each shape alone leaves
  the voters a majority that hears itself both ways, but beside a controller down it
  may not: a one-way cut of one voter and the leader killed leave two voters that
  cannot elect);
- never every broker down at once, and never fewer than ``min_brokers`` registered;
- one fault per node at a time (a paused process is not also killed), one network fault
  (a partition or a slow link) at a time, one membership change at a time;
- ``reassign`` and ``elect-leaders`` start only while another fault is active (an
  operation started mid-fault), and end before that fault heals;
- every fault heals ``quiet`` seconds before the end, so the run ends whole.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import cast

import attrs

from .partitions import SHAPES, Shape, cut

PARTITION_KINDS = tuple(f"partition-{shape}" for shape in SHAPES)
KINDS: tuple[str, ...] = (
    "kill",
    "pause",
    *PARTITION_KINDS,
    "slow",
    "disk-full",
    "kill-active-controller",
    "reassign",
    "elect-leaders",
    "broker-add",
    "broker-remove",
    "kill-zookeeper",
    "pause-zookeeper",
)
GROUPS: dict[str, tuple[str, ...]] = {
    "all": KINDS,
    "partition": PARTITION_KINDS,
    "process": ("kill", "pause", "kill-active-controller"),
    "membership": ("broker-add", "broker-remove"),
    "admin": ("reassign", "elect-leaders"),
    "zookeeper": ("kill-zookeeper", "pause-zookeeper"),
}
ZOOKEEPER_KINDS = GROUPS["zookeeper"]
MID_FAULT = frozenset({"reassign", "elect-leaders"})
NODE_FAULTS = frozenset({"kill", "pause", "disk-full", "broker-remove"})
ACTIVE_CONTROLLER = -1
"""The target of ``kill-active-controller``: resolved when the fault starts."""
ZOOKEEPER = -2
"""The target of the ZooKeeper kinds: ZooKeeper's server, not a node of the cluster
(one fault on it at a time, as on a node)."""


def parse_faults(text: str) -> tuple[str, ...]:
    """The fault kinds of ``--faults``: comma-separated kinds or groups
    (:data:`GROUPS`), in :data:`KINDS` order; ValueError naming the choices."""
    chosen: set[str] = set()
    for name in (part.strip() for part in text.split(",")):
        if name in GROUPS:
            chosen.update(GROUPS[name])
        elif name in KINDS:
            chosen.add(name)
        else:
            choices = ", ".join((*GROUPS, *KINDS))
            raise ValueError(f"unknown fault {name!r}; choose from {choices}")
    return tuple(kind for kind in KINDS if kind in chosen)


@attrs.frozen
class Topology:
    """The cluster the schedule is for. In combined mode a node id is in both lists;
    in ZooKeeper mode ``controllers`` is empty (the controller is one of the brokers,
    and ``kill-active-controller`` finds it)."""

    brokers: tuple[int, ...]
    controllers: tuple[int, ...] = ()
    min_brokers: int = 2

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(sorted({*self.brokers, *self.controllers}))


@attrs.frozen
class Fault:
    start: float
    heal: float
    kind: str
    targets: tuple[int, ...] = ()
    """The nodes it acts on (:data:`ACTIVE_CONTROLLER` for the active controller; the
    new broker's id for ``broker-add``)."""
    links: tuple[tuple[int, int], ...] = ()
    """A partition's dropped links, ``(source, destination)``."""
    params: tuple[tuple[str, float], ...] = ()
    """A slow link's ``delay_ms``, ``jitter_ms``, ``loss_percent``."""
    description: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "start": self.start,
            "heal": self.heal,
            "kind": self.kind,
            "targets": list(self.targets),
            "links": [list(link) for link in self.links],
            "params": dict(self.params),
            "description": self.description,
        }


@attrs.frozen
class Options:
    duration: float = 300.0
    faults: tuple[str, ...] = KINDS
    interval: float = 10.0
    """The mean time between two faults' starts."""
    min_length: float = 2.0
    max_length: float = 30.0
    concurrency: int = 2
    quiet: float = 10.0
    allow_quorum_loss: bool = False


@attrs.frozen
class Schedule:
    seed: int
    topology: Topology
    options: Options
    faults: tuple[Fault, ...]

    def lines(self) -> list[str]:
        """The schedule as JSON lines: a header, then one fault per line by start."""
        header = {
            "seed": self.seed,
            "brokers": list(self.topology.brokers),
            "controllers": list(self.topology.controllers),
            "duration": self.options.duration,
            "faults": list(self.options.faults),
        }
        return [json.dumps(header)] + [json.dumps(f.to_json()) for f in self.faults]

    def steps(self) -> list[tuple[float, str, Fault]]:
        """What the runner does, in time order: ``(at, "start" | "heal", fault)``;
        at one instant heals go first."""
        steps = [(f.start, "start", f) for f in self.faults]
        steps += [(f.heal, "heal", f) for f in self.faults]
        return sorted(steps, key=lambda s: (s[0], s[1] != "heal"))


def _overlapping(faults: Sequence[Fault], start: float, heal: float) -> list[Fault]:
    return [f for f in faults if f.start < heal and start < f.heal]


def _down(faults: Sequence[Fault], topology: Topology) -> tuple[set[int], set[int]]:
    """The controllers and the brokers that faults take down. A killed active
    controller counts as one more controller down (which one is not known in advance),
    and as a broker down too where controllers are brokers (combined or ZooKeeper
    mode): the worst case of each."""
    down = {t for f in faults if f.kind in NODE_FAULTS for t in f.targets}
    controllers = down & set(topology.controllers)
    brokers = down & set(topology.brokers)
    if any(f.kind == "kill-active-controller" for f in faults):
        spare = sorted(set(topology.controllers) - controllers)
        controllers |= set(spare[:1]) if spare else {ACTIVE_CONTROLLER}
        if not topology.controllers or set(topology.controllers) & set(
            topology.brokers
        ):
            spare = sorted(set(topology.brokers) - brokers)
            brokers |= set(spare[:1]) if spare else {ACTIVE_CONTROLLER}
    return controllers, brokers


def _allowed(
    fault: Fault, placed: Sequence[Fault], topo: Topology, opts: Options
) -> bool:
    during = _overlapping(placed, fault.start, fault.heal)
    if len(during) >= opts.concurrency:
        return False
    if fault.kind in MID_FAULT:
        hosts = [f for f in during if f.kind not in MID_FAULT]
        if not any(f.start <= fault.start and fault.heal <= f.heal for f in hosts):
            return False
    busy = {t for f in during for t in f.targets}
    if set(fault.targets) & busy:
        return False
    network = ("slow", *PARTITION_KINDS)
    if fault.kind in network and any(f.kind in network for f in during):
        return False
    membership = ("broker-add", "broker-remove")
    if fault.kind in membership and any(f.kind in membership for f in during):
        return False
    if fault.kind == "kill-active-controller" and any(
        f.kind == fault.kind for f in during
    ):
        return False
    controllers, brokers = _down([*during, fault], topo)
    majority_kept = len(controllers) <= (len(topo.controllers) - 1) // 2
    voters = set(topo.controllers)
    if len(voters) >= 3 and not opts.allow_quorum_loss:
        if not majority_kept:
            return False
        cut_off = {n for f in [*during, fault] for link in f.links for n in link}
        if controllers and cut_off & voters:
            return False
    if len(brokers) >= len(topo.brokers):
        return False
    removed = sum(1 for f in [*during, fault] if f.kind == "broker-remove")
    return not (removed and len(topo.brokers) - removed < topo.min_brokers)


def _draw(
    kind: str,
    start: float,
    heal: float,
    topo: Topology,
    rng: random.Random,
    added: int = 0,
) -> Fault:
    nodes = list(topo.nodes)
    if kind.startswith("partition-"):
        shape = cast(Shape, kind.removeprefix("partition-"))
        links, description = cut(shape, nodes, rng)
        return Fault(start, heal, kind, (), links, (), description)
    if kind == "slow":
        node = rng.choice(nodes)
        params = (
            ("delay_ms", float(rng.choice((20, 50, 100, 250)))),
            ("jitter_ms", float(rng.choice((0, 10, 50)))),
            ("loss_percent", float(rng.choice((0, 0, 1, 5)))),
        )
        return Fault(start, heal, kind, (node,), (), params)
    if kind == "kill-active-controller":
        return Fault(start, heal, kind, (ACTIVE_CONTROLLER,))
    if kind in ZOOKEEPER_KINDS:
        return Fault(start, heal, kind, (ZOOKEEPER,))
    if kind == "broker-add":
        # ``added`` brokers were added before: each new one gets an id of its own.
        return Fault(start, heal, kind, (max(nodes) + 1 + added,))
    if kind in ("reassign", "elect-leaders"):
        return Fault(start, heal, kind)
    pool = list(topo.brokers) if kind in ("broker-remove", "disk-full") else nodes
    return Fault(start, heal, kind, (rng.choice(pool),))


def schedule(seed: int, topology: Topology, options: Options | None = None) -> Schedule:
    """The faults drawn from ``seed`` for ``topology``: starts about ``interval`` apart,
    each lasting ``min_length`` to ``max_length`` seconds (a mid-fault operation fits
    inside its host), every rule of the module kept. A draw that breaks a rule is
    drawn again a few times, then that start is skipped."""
    opts = options or Options()
    if not opts.faults:
        raise ValueError("no fault kinds to draw from")
    rng = random.Random(f"nemesis-{seed}")
    placed: list[Fault] = []
    end = opts.duration - opts.quiet
    at = rng.uniform(0.5, 1.5) * opts.interval
    while at < end:
        for _ in range(8):
            kind = rng.choice(opts.faults)
            length = rng.uniform(opts.min_length, opts.max_length)
            if kind in MID_FAULT:
                length = rng.uniform(opts.min_length, opts.max_length) / 4
            heal = min(at + length, end)
            added = sum(1 for f in placed if f.kind == "broker-add")
            fault = _draw(kind, round(at, 3), round(heal, 3), topology, rng, added)
            if fault.heal > fault.start and _allowed(fault, placed, topology, opts):
                placed.append(fault)
                break
        at += rng.uniform(0.5, 1.5) * opts.interval
    return Schedule(seed, topology, opts, tuple(placed))
