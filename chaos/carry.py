"""Carrying the nemesis's schedule out on time, and measuring how late it was.

Most steps take a moment: a signal, a blackhole rule, a qdisc. Some wait on the
cluster: an admin operation (``reassign``, ``elect-leaders``: Kafka's tool or the admin
client, with 30-60 s timeouts, retried), a membership change (``broker-add``,
``broker-remove``: a broker started, replicas moved, a wait for it to be ready), a
ZooKeeper restart (a wait until the server answers ``ruok``). Carried out one after the
other, one such step held up every step behind it: chaos seed 142's 26 s one-way cut
lasted 307 s behind two reassignments to an unreachable broker, seed 141's 20 s bridge
121 s behind a broker-remove's waits.

A ZooKeeper fault's heal queued behind such steps was late the same way, and worse:
the steps ahead of it waited on a cluster that could not answer until it was done.
Chaos seed 159's elect-leaders, drawn inside a 30 s ZooKeeper pause, waited 60 s at its
start and 60 s at its heal for a controller that could not write to ZooKeeper, and the
pause's heal behind them: paused 120 s; seed 303's pause, 14 s drawn, lasted 143 s
behind a broker-remove's drain.

:func:`carry_out` runs those :data:`LONG_KINDS` on two lanes of their own, each one
worker thread carrying its steps out in the order they were put on it: the cluster's
lane (the admin and membership kinds) and ZooKeeper's (:data:`ZOOKEEPER_KINDS`), while
the schedule's other steps happen at their time. What the serial order guaranteed and
the nemesis's rules assume is kept:

- a fault's heal follows its start. A long kind's heal goes on the lane its start went
  on, behind every step put there before it: the lane is what keeps the admin and
  membership steps from running beside one another. Any other fault's heal waits for
  its own start and for nothing else: it happens at its time, or, if its start (held
  on a lane) is not done by then, right after that start, before the lane's next step;
- a start happens only once every heal the schedule put before it is done, on either
  lane (the rules -- at most ``concurrency`` at once, one fault per node, never every
  broker down -- are about the faults active at each instant, so a heal running late
  on a lane holds the starts after it: those go on a lane, behind it, the cluster's if
  it is healing, else ZooKeeper's; a start on one lane waits for the heals put before
  it on the other, :class:`Heals`); a node is thus never killed, paused or filled
  while a membership heal is working on it;
- ``kill-active-controller`` goes on the cluster's lane whenever that lane is busy:
  which node it kills is known only then, and may be one a membership step is working
  on;
- the admin and membership steps are never carried out beside one another (a
  reassignment beside a drain would be a different test, and they share the
  injector's assignments), nor ZooKeeper's beside one another.

Why a short fault's heal does not follow its start onto the lane: the steps put on the
lane after that start would come first, and they may wait on a cluster that this very
fault keeps from answering. In chaos seed 174 a one-way cut drawn for 27 s, its start
held on the cluster's lane behind a membership heal, lasted 149 s: its heal queued
behind an ``elect-leaders`` put on the lane after the start, whose start and heal each
waited 60 s for an answer the cut withheld. Seed 184's cut, drawn for 24 s, lasted 130 s
the same way, and its 300 s schedule took 600 s.

A start held so long that it could be carried out only after its fault's drawn heal is
skipped, and its heal with it (:meth:`Lane.start_or_skip`): a fault started and healed
in one instant is not the fault the schedule drew, and carrying out its two steps would
make every step behind them later still. The carrier records it as skipped, saying how
late it would have started (:data:`AFTER_ITS_HEAL`); the summary's lateness line counts
those, and the timeline draws no bar for them.

What changes with the second lane: a ZooKeeper fault's start and heal are carried out
beside an admin or membership step under way, not after it. That is the schedule as
drawn (the steps overlap in it), and nothing is shared: a ZooKeeper fault stops or
continues ZooKeeper's server, not a broker, and the admin and membership steps only
wait longer, or fail, while it is down, as a client would. The one broker a ZooKeeper
heal touches is one whose start-up gave up for want of ZooKeeper, which it starts
again; a broker a membership step is working on it leaves to that step
(:class:`~chaos.faults.Injector`), so one broker is never started from both lanes.

No heal but a long kind's waits behind a long step: a ``reassign`` or
``elect-leaders`` running late may end after the fault it was drawn inside has healed,
ZooKeeper's included. The run's summary says how late the schedule was, and how many
faults were skipped for it (:func:`lateness_line`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from .faults import ADMIN_KINDS, MEMBERSHIP_KINDS, Injected
from .nemesis import ZOOKEEPER_KINDS, Fault

LONG_KINDS: frozenset[str] = frozenset(
    (*ADMIN_KINDS, *MEMBERSHIP_KINDS, *ZOOKEEPER_KINDS)
)
"""The kinds whose start or heal may wait on the cluster for a minute or more."""

AFTER_ITS_HEAL = "after its drawn heal"
"""What the reason of a start skipped for lateness says (:meth:`Lane.start_or_skip`)."""


class Carrier(Protocol):
    """What carries a step out (:class:`~chaos.faults.Injector`); ``skip`` notes a
    fault neither started nor healed, and why."""

    def start(self, fault: Fault, now: float) -> None: ...

    def heal(self, fault: Fault, now: float) -> None: ...

    def skip(self, fault: Fault, why: str) -> None: ...


@attrs.frozen
class Late:
    """The latest step of one sort: how many seconds after its time it happened."""

    seconds: float
    fault: Fault


def lateness(
    records: Sequence[Injected], origin: float
) -> tuple[Late | None, Late | None]:
    """The latest start and the latest heal of ``records`` against the schedule whose
    instant 0 was ``origin`` (epoch seconds, the records' clock); None where no record
    has that step (a skipped fault did not start; one that failed has no time)."""
    starts = [
        Late(r.started - origin - r.fault.start, r.fault)
        for r in records
        if r.started is not None
    ]
    heals = [
        Late(r.healed - origin - r.fault.heal, r.fault)
        for r in records
        if r.healed is not None
    ]
    return (
        max(starts, key=lambda late: late.seconds, default=None),
        max(heals, key=lambda late: late.seconds, default=None),
    )


def lateness_line(records: Sequence[Injected], origin: float) -> str:
    """The summary's line: the schedule's latest start and latest heal, and whose, and
    how many faults were skipped because their start came after their drawn heal."""
    start, heal = lateness(records, origin)

    def said(late: Late | None, step: str) -> str:
        if late is None:
            return f"no {step}"
        at = late.fault.start if step == "start" else late.fault.heal
        return f"{step} {late.seconds:+.1f}s ({late.fault.kind} due at {at}s)"

    skipped = sum(1 for r in records if AFTER_ITS_HEAL in r.skipped)
    return (
        f"schedule lateness: {said(start, 'start')}, {said(heal, 'heal')}; "
        f"skipped, held past their drawn heal: {skipped}"
    )


class Heals:
    """The heals put on the lanes and not yet done, numbered in the order they were
    put: a start put after them waits for them, whichever lane they are on."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._put = 0
        self._pending: set[int] = set()

    def number(self, what: str) -> int:
        """The next step's number; noted as pending if it is a heal."""
        with self._changed:
            self._put += 1
            if what == "heal":
                self._pending.add(self._put)
            return self._put

    def wait_before(self, number: int) -> None:
        """Return once every heal numbered below ``number`` is done (or dropped)."""
        with self._changed:
            self._changed.wait_for(lambda: all(n > number for n in self._pending))

    def done(self, number: int) -> None:
        with self._changed:
            self._pending.discard(number)
            self._changed.notify_all()


class Lane:
    """One worker thread carrying steps out in the order given; a start waits for the
    heals put before it on every lane sharing ``heals``, and is skipped if it could
    be carried out only after its fault's drawn heal (``elapsed``: the seconds into
    the schedule now)."""

    def __init__(
        self,
        carrier: Carrier,
        wall: Callable[[], float],
        name: str,
        heals: Heals,
        elapsed: Callable[[], float],
    ) -> None:
        self._carrier, self._wall, self._heals = carrier, wall, heals
        self._elapsed = elapsed
        self._steps: queue.Queue[tuple[int, str, Fault] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._pending: list[tuple[int, str, Fault]] = []
        self.faults: set[int] = set()
        """id() of each fault started on the lane."""
        self._started: dict[int, bool] = {}  # id(fault) -> carried out, once done
        # id(fault) -> the number of its heal, due while its start was not done: the
        # lane carries it out right after the start.
        self._after: dict[int, int] = {}
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, what: str, fault: Fault) -> None:
        if what == "start":
            self.faults.add(id(fault))
        step = (self._heals.number(what), what, fault)
        with self._lock:
            self._pending.append(step)
        self._steps.put(step)

    def heal_now(self, fault: Fault) -> bool:
        """Whether the heal of ``fault`` (not a long kind), started on the lane and
        due now, is to be carried out at once: its start is done and was carried out.
        If the start is not done yet, the lane carries the heal out right after it
        (before any later step), or skips it with it."""
        with self._lock:
            if id(fault) in self._started:
                return self._started.pop(id(fault))
            self._after[id(fault)] = self._heals.number("heal")
            return False

    def busy(self) -> bool:
        with self._lock:
            return bool(self._pending or self._after)

    def healing(self) -> bool:
        """Whether a heal is waiting or under way on the lane."""
        with self._lock:
            return bool(self._after) or any(w == "heal" for _, w, _ in self._pending)

    def _run(self) -> None:
        while (step := self._steps.get()) is not None:
            number, what, fault = step
            started = False
            try:
                if self.failed is None:
                    if what == "start":
                        self._heals.wait_before(number)
                        started = self.start_or_skip(fault)
                    elif self._was_started(fault):  # a long kind's heal
                        self._carrier.heal(fault, self._wall())
            except BaseException as exc:  # given to the runner's thread: it raises
                self.failed = exc
            finally:
                self._heals.done(number)
                with self._lock:
                    self._pending.remove(step)
                    if what == "start":
                        self._started[id(fault)] = started
                    after = self._after.get(id(fault)) if what == "start" else None
            if after is not None:
                self._heal_after(after, fault)

    def start_or_skip(self, fault: Fault) -> bool:
        """Whether ``fault``'s start, runnable now, was carried out: not if its drawn
        heal is past, and then the carrier is told why (its heal is skipped too)."""
        now = self._elapsed()
        if now < fault.heal:
            self._carrier.start(fault, self._wall())
            return True
        late = now - fault.start
        why = f"could start only {late:.1f}s late, {AFTER_ITS_HEAL} at {fault.heal}s"
        self._carrier.skip(fault, why)
        return False

    def _was_started(self, fault: Fault) -> bool:
        """Whether the start of ``fault``, done, was carried out (asked once)."""
        with self._lock:
            return self._started.pop(id(fault), False)

    def _heal_after(self, number: int, fault: Fault) -> None:
        """The heal that came due while its start was not done, right after it."""
        try:
            if self._was_started(fault) and self.failed is None:
                self._carrier.heal(fault, self._wall())
        except BaseException as exc:
            self.failed = exc
        finally:
            self._heals.done(number)
            with self._lock:
                del self._after[id(fault)]

    def drop(self) -> None:
        """The steps not yet begun dropped (a failed run stops)."""
        with self._lock:
            while True:
                try:
                    dropped = self._steps.get_nowait()
                except queue.Empty:
                    break
                if dropped is None:
                    continue
                number, what, fault = dropped
                self._heals.done(number)
                self._pending.remove(dropped)
                after = self._after.pop(id(fault), None) if what == "start" else None
                if after is not None:
                    self._heals.done(after)

    def close(self) -> None:
        """Wait for the lane's steps."""
        self._steps.put(None)
        self._thread.join()


class Lanes:
    """The cluster's lane (admin and membership steps, and the steps held behind
    them) and ZooKeeper's (its server's faults, and the starts held behind them)."""

    def __init__(
        self, carrier: Carrier, wall: Callable[[], float], elapsed: Callable[[], float]
    ) -> None:
        heals = Heals()
        self.cluster = Lane(carrier, wall, "chaos-lane", heals, elapsed)
        self.zookeeper = Lane(carrier, wall, "chaos-zookeeper-lane", heals, elapsed)

    def failed(self) -> BaseException | None:
        return self.cluster.failed or self.zookeeper.failed

    def heal_now(self, fault: Fault) -> bool:
        """Whether the heal of ``fault``, not a long kind, due now, is carried out now
        (:meth:`Lane.heal_now` if it was started on a lane)."""
        for lane in (self.cluster, self.zookeeper):
            if id(fault) in lane.faults:
                return lane.heal_now(fault)
        return True

    def close(self, drain: bool = True) -> None:
        """Wait for the lanes' steps (only those under way unless ``drain``)."""
        if not drain:
            self.cluster.drop()
            self.zookeeper.drop()
        self.cluster.close()
        self.zookeeper.close()


def carry_out(
    steps: Sequence[tuple[float, str, Fault]],
    carrier: Carrier,
    began: float,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
) -> None:
    """Each of ``steps`` (:meth:`~chaos.nemesis.Schedule.steps`) carried out by
    ``carrier`` at ``began + at`` on ``clock``, or as soon after as the rules of the
    module allow, or skipped; returns once every step is done. The time handed to the
    carrier is ``wall``'s when the step is carried out."""
    lanes = Lanes(carrier, wall, lambda: clock() - began)
    drain = False
    try:
        for at, what, fault in steps:
            wait = began + at - clock()
            if wait > 0:
                time.sleep(wait)  # the schedule's next step is due then
            if lanes.failed() is not None:
                break
            lane = _on_lane(lanes, what, fault)
            if lane is not None:
                lane.put(what, fault)
            elif what == "start":
                carrier.start(fault, wall())
            elif lanes.heal_now(fault):
                carrier.heal(fault, wall())
        drain = True
    finally:
        lanes.close(drain)
    if (failed := lanes.failed()) is not None:
        raise failed


def _on_lane(lanes: Lanes, what: str, fault: Fault) -> Lane | None:
    cluster, zookeeper = lanes.cluster, lanes.zookeeper
    if fault.kind in ZOOKEEPER_KINDS:
        return zookeeper
    if fault.kind in LONG_KINDS:
        return cluster
    if what == "heal":
        return None  # after its own start only: Lanes.heal_now
    if fault.kind == "kill-active-controller" and cluster.busy():
        return cluster
    if cluster.healing():
        return cluster
    if zookeeper.healing():
        return zookeeper
    return None
