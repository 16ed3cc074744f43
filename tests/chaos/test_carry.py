"""Carrying the schedule out: long steps on a lane of their own, and the lateness."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import cast

import pytest

from chaos.carry import AFTER_ITS_HEAL, carry_out, lateness, lateness_line
from chaos.faults import Injected, Injector
from chaos.nemesis import Fault
from minikafka.broker.testing import ProcessCluster

WAIT = 20.0
"""Seconds a test waits for a step on a loaded machine before failing."""
LATER = 2.0
"""When a fault whose start is held until a test lets it go is drawn to heal: well
after that start on a loaded machine (a start carried out only after its drawn heal is
skipped)."""


class FakeInjector:
    """Records each step, and each fault skipped and why; a step on a fault in
    ``holds`` waits for its event."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: list[tuple[str, str]] = []
        self.skipped: dict[str, str] = {}
        self.holds: dict[tuple[str, str], threading.Event] = {}
        self.under_way: set[tuple[str, str]] = set()
        self.fail: tuple[str, str] | None = None

    def _step(self, what: str, fault: Fault) -> None:
        step = (what, fault.description)
        hold = self.holds.get(step)
        if hold is not None:
            with self.lock:
                self.under_way.add(step)
            assert hold.wait(WAIT), f"{step} never released"
        if step == self.fail:
            raise RuntimeError("the lane's step failed")
        with self.lock:
            self.steps.append(step)

    def start(self, fault: Fault, now: float) -> None:
        self._step("start", fault)

    def heal(self, fault: Fault, now: float) -> None:
        self._step("heal", fault)

    def skip(self, fault: Fault, why: str) -> None:
        with self.lock:
            self.skipped[fault.description] = why

    def done(self, step: tuple[str, str]) -> bool:
        with self.lock:
            return step in self.steps


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)  # polling the fake's record, inside the deadline


def fault(start: float, heal: float, kind: str, name: str, *targets: int) -> Fault:
    return Fault(start, heal, kind, targets, description=name)


def in_order(injector: FakeInjector, *steps: tuple[str, str]) -> None:
    """Each of ``steps`` was carried out, each after the one before it."""
    at = [injector.steps.index(step) for step in steps]
    assert at == sorted(at), (steps, injector.steps)


def carried(injector: FakeInjector, *faults: Fault) -> threading.Thread:
    steps = [(f.start, "start", f) for f in faults]
    steps += [(f.heal, "heal", f) for f in faults]
    steps.sort(key=lambda s: (s[0], s[1] != "heal"))
    thread = threading.Thread(
        target=carry_out, args=(steps, injector, time.monotonic()), daemon=True
    )
    thread.start()
    return thread


def test_a_long_step_holds_up_no_other_faults_heal() -> None:
    """Chaos seed 142: a one-way cut's heal sat 280 s behind reassignments."""
    injector = FakeInjector()
    release = threading.Event()
    injector.holds[("start", "reassign")] = release
    cut = fault(0.0, 0.3, "partition-one-way", "cut")
    reassign = fault(0.05, 0.1, "reassign", "reassign")
    thread = carried(injector, cut, reassign)
    until(lambda: injector.done(("heal", "cut")))
    assert ("start", "reassign") in injector.under_way
    assert not injector.done(("heal", "reassign"))  # its heal follows its start
    release.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert injector.steps == [
        ("start", "cut"),
        ("heal", "cut"),
        ("start", "reassign"),
        ("heal", "reassign"),
    ]


def test_a_start_waits_for_the_heals_before_it() -> None:
    """A broker-remove healed late: the kill drawn after its heal, on the same node,
    waits for it (and its heal for it), while a cut's heal is on time."""
    injector = FakeInjector()
    release = threading.Event()
    injector.holds[("heal", "remove")] = release
    remove = fault(0.0, 0.05, "broker-remove", "remove", 3)
    kill = fault(0.1, LATER, "kill", "kill", 3)
    cut = fault(0.0, 0.3, "partition-halves", "cut")
    thread = carried(injector, remove, kill, cut)
    until(lambda: injector.done(("heal", "cut")))
    assert ("heal", "remove") in injector.under_way
    assert not injector.done(("start", "kill"))
    release.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    in_order(injector, ("heal", "remove"), ("start", "kill"), ("heal", "kill"))


def test_the_active_controller_is_not_killed_beside_a_long_step() -> None:
    injector = FakeInjector()
    release = threading.Event()
    injector.holds[("start", "add")] = release
    add = fault(0.0, 0.5, "broker-add", "add", 4)
    kac = fault(0.05, LATER, "kill-active-controller", "kac", -1)
    cut = fault(0.0, 0.2, "partition-ring", "cut")
    thread = carried(injector, add, kac, cut)
    until(lambda: injector.done(("heal", "cut")))
    assert not injector.done(("start", "kac"))
    release.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    in_order(injector, ("start", "add"), ("start", "kac"))


def test_short_steps_are_carried_out_at_their_time_beside_a_long_start() -> None:
    """A kill drawn while a broker-remove is starting (both active in the schedule)
    is not held: only heals before a start hold it."""
    injector = FakeInjector()
    release = threading.Event()
    injector.holds[("start", "remove")] = release
    remove = fault(0.0, 0.5, "broker-remove", "remove", 3)
    kill = fault(0.05, 0.1, "kill", "kill", 1)
    thread = carried(injector, remove, kill)
    until(lambda: injector.done(("heal", "kill")))
    assert not injector.done(("start", "remove"))
    release.set()
    thread.join(WAIT)
    assert not thread.is_alive()


def test_a_lane_that_failed_fails_the_run() -> None:
    injector = FakeInjector()
    injector.fail = ("start", "elect")
    elect = fault(0.0, 0.05, "elect-leaders", "elect")
    steps = [(0.0, "start", elect), (0.05, "heal", elect)]
    with pytest.raises(RuntimeError, match="lane's step failed"):
        carry_out(steps, injector, time.monotonic())
    assert not injector.done(("heal", "elect"))


def test_lateness_is_the_latest_start_and_the_latest_heal() -> None:
    origin = 1_000.0
    cut = Injected(
        fault(91.3, 117.4, "partition-one-way", "cut"), started=1091.4, healed=1398.4
    )
    reassign = Injected(
        fault(95.0, 101.0, "reassign", "reassign"), started=1125.0, healed=1250.0
    )
    skipped = Injected(fault(10.0, 20.0, "kill", "kill"), skipped="node 1 down")
    start, heal = lateness([cut, reassign, skipped], origin)
    assert start is not None
    assert heal is not None
    assert start.fault is reassign.fault
    assert start.seconds == pytest.approx(30.0)
    assert heal.fault is cut.fault
    assert heal.seconds == pytest.approx(281.0)
    assert lateness_line([cut, reassign, skipped], origin) == (
        "schedule lateness: start +30.0s (reassign due at 95.0s), "
        "heal +281.0s (partition-one-way due at 117.4s); "
        "skipped, held past their drawn heal: 0"
    )


def test_lateness_of_nothing_carried_out() -> None:
    assert lateness([], 0.0) == (None, None)
    assert lateness_line([], 0.0) == (
        "schedule lateness: no start, no heal; skipped, held past their drawn heal: 0"
    )


class WaitsOnZooKeeper(FakeInjector):
    """A stand-in whose admin and membership steps wait on the cluster, which cannot
    answer until ZooKeeper's fault is healed (for :data:`ZK_WAIT` at most, as the
    admin client's ``default.api.timeout.ms``)."""

    def __init__(self) -> None:
        super().__init__()
        self.zookeeper_up = threading.Event()
        self.answered: dict[tuple[str, str], bool] = {}

    def _step(self, what: str, fault: Fault) -> None:
        if fault.kind in ("elect-leaders", "reassign", "broker-add", "broker-remove"):
            answered = self.zookeeper_up.wait(ZK_WAIT)
            with self.lock:
                self.answered[(what, fault.description)] = answered
        super()._step(what, fault)
        if what == "heal" and fault.kind.endswith("-zookeeper"):
            self.zookeeper_up.set()


ZK_WAIT = 8.0
"""Seconds a stand-in admin step waits for ZooKeeper; well past the pause's heal."""


def test_a_zookeeper_heal_is_not_held_behind_steps_waiting_on_zookeeper() -> None:
    """Chaos seed 159: an elect-leaders drawn inside a ZooKeeper pause waited 60 s at
    its start and 60 s at its heal for a controller that could not write to
    ZooKeeper, and the pause's heal queued behind both: paused 120 s, not 30."""
    injector = WaitsOnZooKeeper()
    pause = fault(0.0, 0.3, "pause-zookeeper", "pause")
    elect = fault(0.05, 0.1, "elect-leaders", "elect")
    thread = carried(injector, pause, elect)
    thread.join(2 * ZK_WAIT + WAIT)
    assert not thread.is_alive()
    # The pause's heal was carried out while the election still waited on it.
    assert injector.answered == {("start", "elect"): True, ("heal", "elect"): True}
    in_order(
        injector,
        ("start", "pause"),
        ("heal", "pause"),
        ("start", "elect"),
        ("heal", "elect"),
    )


def test_a_drain_waiting_on_zookeeper_does_not_hold_its_heal() -> None:
    """Chaos seed 303: a broker-remove's drain waited on a paused ZooKeeper and the
    pause's heal waited behind it: paused 143 s, not 14. A kill drawn after the
    pause's heal waits for it, and for the remove's heal drawn before it."""
    injector = WaitsOnZooKeeper()
    pause = fault(0.0, 0.3, "pause-zookeeper", "pause")
    remove = fault(0.05, 0.35, "broker-remove", "remove", 2)
    kill = fault(0.4, LATER, "kill", "kill", 2)
    thread = carried(injector, pause, remove, kill)
    thread.join(2 * ZK_WAIT + WAIT)
    assert not thread.is_alive()
    assert injector.answered == {("start", "remove"): True, ("heal", "remove"): True}
    in_order(injector, ("heal", "pause"), ("start", "remove"))
    in_order(injector, ("heal", "remove"), ("start", "kill"), ("heal", "kill"))


def test_a_start_waits_for_the_heals_before_it_on_either_lane() -> None:
    """An election's heal held on the cluster's lane holds a ZooKeeper kill drawn
    after it; that kill's heal, held, holds a slow link drawn after it."""
    injector = FakeInjector()
    elect_healed, zookeeper_healed = threading.Event(), threading.Event()
    injector.holds[("heal", "elect")] = elect_healed
    injector.holds[("heal", "zk")] = zookeeper_healed
    elect = fault(0.0, 0.05, "elect-leaders", "elect")
    kill = fault(0.1, LATER, "kill-zookeeper", "zk")
    slow = fault(LATER + 0.1, 2 * LATER, "slow", "slow", 1)
    cut = fault(0.0, 0.2, "partition-halves", "cut")
    pause = fault(0.0, LATER + 0.3, "pause", "pause", 2)  # on time: slow's start is put
    thread = carried(injector, elect, kill, slow, cut, pause)
    until(lambda: injector.done(("heal", "cut")))
    assert ("heal", "elect") in injector.under_way
    assert not injector.done(("start", "zk"))
    elect_healed.set()
    until(lambda: injector.done(("heal", "pause")))
    until(lambda: ("heal", "zk") in injector.under_way)
    assert not injector.done(("start", "slow"))
    zookeeper_healed.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    in_order(injector, ("heal", "elect"), ("start", "zk"))
    in_order(injector, ("heal", "zk"), ("start", "slow"), ("heal", "slow"))
    assert injector.skipped == {}


def test_a_heal_waits_for_its_own_start_not_for_later_steps_on_the_lane() -> None:
    """Chaos seeds 174 and 184: a one-way cut whose start was held on the cluster's lane
    behind a membership heal had its heal queued there too, behind an elect-leaders put
    on the lane after that start, which waited 60 s at its start and 60 s at its heal
    for a cluster the cut kept from answering: 27 s drawn, 149 s carried out."""
    injector = FakeInjector()
    removed, elected = threading.Event(), threading.Event()
    injector.holds[("heal", "remove")] = removed
    injector.holds[("start", "elect")] = elected
    remove = fault(0.0, 0.05, "broker-remove", "remove", 3)
    pause = fault(0.0, 0.15, "pause", "pause", 1)  # on time: cut's start is put
    cut = fault(0.1, LATER, "partition-one-way", "cut")
    elect = fault(0.2, LATER - 0.2, "elect-leaders", "elect")
    thread = carried(injector, remove, pause, cut, elect)
    until(lambda: injector.done(("heal", "pause")))
    assert not injector.done(("start", "cut"))  # held behind the remove's heal
    removed.set()
    until(lambda: ("start", "elect") in injector.under_way)  # waiting on the cluster
    until(lambda: injector.done(("heal", "cut")))  # at its time, 2 s in
    assert not injector.done(("start", "elect"))
    elected.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    in_order(injector, ("heal", "remove"), ("start", "cut"), ("heal", "cut"))
    in_order(injector, ("start", "cut"), ("start", "elect"), ("heal", "elect"))
    assert injector.skipped == {}


def test_a_start_held_past_its_drawn_heal_is_skipped_with_its_heal() -> None:
    """A kill and a ZooKeeper kill drawn after a broker-remove's heal, both to heal
    before that heal is done: neither is started (nor healed at once after), and each
    is reported skipped, with how late it would have started."""
    injector = FakeInjector()
    removed = threading.Event()
    injector.holds[("heal", "remove")] = removed
    remove = fault(0.0, 0.05, "broker-remove", "remove", 3)
    kill = fault(0.1, 0.3, "kill", "kill", 3)
    zookeeper = fault(0.2, 0.4, "kill-zookeeper", "zk")
    pause = fault(0.0, 0.5, "pause", "pause", 1)  # on time: after both drawn heals
    thread = carried(injector, remove, kill, zookeeper, pause)
    until(lambda: injector.done(("heal", "pause")))
    until(lambda: ("heal", "remove") in injector.under_way)
    removed.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    # Neither started nor healed: only the remove's and the pause's steps were.
    assert {name for _, name in injector.steps} == {"remove", "pause"}
    in_order(injector, ("heal", "pause"), ("heal", "remove"))
    assert set(injector.skipped) == {"kill", "zk"}
    assert f"{AFTER_ITS_HEAL} at 0.3s" in injector.skipped["kill"]
    assert f"{AFTER_ITS_HEAL} at 0.4s" in injector.skipped["zk"]


def test_a_skipped_fault_is_recorded_and_counted() -> None:
    """The injector records a skipped fault as not started; the summary's lateness line
    counts the ones skipped for lateness, not the others."""
    injector = Injector(
        cast(ProcessCluster, object()), zookeeper=False, servers="x:9092"
    )
    cut = fault(104.4, 131.4, "partition-one-way", "cut")
    injector.skip(cut, f"could start only 30.2s late, {AFTER_ITS_HEAL} at 131.4s")
    down = Injected(fault(10.0, 20.0, "kill", "kill"), skipped="node 1 down (pause)")
    (record,) = injector.done
    assert record.started is None
    assert record.healed is None
    assert record.to_json()["skipped"] == (
        "could start only 30.2s late, after its drawn heal at 131.4s"
    )
    assert lateness_line([record, down], 0.0) == (
        "schedule lateness: no start, no heal; skipped, held past their drawn heal: 1"
    )
