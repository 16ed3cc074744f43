"""The nemesis's schedule replays from its seed, draws only the faults asked for, and
keeps its rules (a majority of controllers up, a broker up, one fault per node, admin
operations mid-fault, all healed before the end) for every seed; each partition shape
cuts the links its name says."""

from __future__ import annotations

import io
import itertools
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.__main__ import main
from chaos.nemesis import (
    ACTIVE_CONTROLLER,
    KINDS,
    MID_FAULT,
    NODE_FAULTS,
    ZOOKEEPER,
    Fault,
    Options,
    Schedule,
    Topology,
    parse_faults,
    schedule,
)
from chaos.partitions import SHAPES, cut, reachable

KRAFT = Topology(brokers=(1, 2, 3, 4), controllers=(3000, 3001, 3002))
COMBINED = Topology(brokers=(1, 2, 3), controllers=(1, 2, 3))
ZK = Topology(brokers=(1, 2, 3))


def test_the_same_seed_gives_the_same_schedule() -> None:
    first = schedule(42, KRAFT)
    assert first == schedule(42, KRAFT)
    assert first.lines() == schedule(42, KRAFT).lines()
    assert first.faults != schedule(43, KRAFT).faults
    assert len(first.faults) > 10  # five minutes, a fault about every ten seconds


def test_faults_narrow_the_kinds_drawn() -> None:
    kinds = parse_faults("kill,partition")
    assert kinds == ("kill", *(f"partition-{shape}" for shape in SHAPES))
    drawn = {f.kind for f in schedule(7, KRAFT, Options(faults=kinds)).faults}
    assert drawn <= set(kinds)
    assert "kill" in drawn


def test_an_unknown_fault_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown fault 'gc'; choose from all"):
        parse_faults("kill,gc")


def check_rules(drawn: Schedule) -> None:
    topo, opts = drawn.topology, drawn.options
    for fault in drawn.faults:
        assert fault.kind in opts.faults
        assert 0 < fault.start < fault.heal <= opts.duration - opts.quiet
        if fault.kind in MID_FAULT:
            assert any(
                host.kind not in MID_FAULT
                and host.start <= fault.start
                and fault.heal <= host.heal
                for host in drawn.faults
            ), f"{fault} started outside any other fault"
    active: list[Fault] = []
    for _, step, fault in drawn.steps():
        if step == "heal":
            active.remove(fault)
            continue
        active.append(fault)
        assert len(active) <= opts.concurrency
        targets = [t for f in active for t in f.targets]
        assert len(targets) == len(set(targets)), f"two faults on one node: {active}"
        down = {t for f in active if f.kind in NODE_FAULTS for t in f.targets}
        extra = sum(1 for f in active if f.kind == "kill-active-controller")
        if len(topo.controllers) >= 3:
            controllers_down = len(down & set(topo.controllers)) + extra
            assert controllers_down <= (len(topo.controllers) - 1) // 2, active
            cut = {n for f in active for link in f.links for n in link}
            if controllers_down:
                assert not cut & set(topo.controllers), f"quorum may be cut: {active}"
        brokers_down = len(down & set(topo.brokers))
        if not topo.controllers or set(topo.controllers) & set(topo.brokers):
            brokers_down += extra
        assert brokers_down < len(topo.brokers), active
    assert not active


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.integers(0, 2**32),
    st.sampled_from([KRAFT, COMBINED, ZK]),
    st.integers(1, 3),
    st.lists(st.sampled_from(KINDS), min_size=1, unique=True),
)
def test_every_schedule_keeps_the_rules(
    seed: int, topology: Topology, concurrency: int, kinds: list[str]
) -> None:
    faults = tuple(kind for kind in KINDS if kind in kinds)
    opts = Options(duration=200.0, faults=faults, concurrency=concurrency, interval=4.0)
    check_rules(schedule(seed, topology, opts))


def test_operations_are_started_mid_fault() -> None:
    opts = Options(faults=parse_faults("admin,kill"), interval=5.0)
    drawn = [f for seed in range(10) for f in schedule(seed, KRAFT, opts).faults]
    assert {"reassign", "elect-leaders", "kill"} <= {f.kind for f in drawn}


def test_the_active_controller_is_named_when_the_fault_starts() -> None:
    opts = Options(faults=("kill-active-controller",))
    faults = schedule(1, KRAFT, opts).faults
    assert faults
    assert all(f.targets == (ACTIVE_CONTROLLER,) for f in faults)


def test_a_single_controller_may_go_down_but_three_keep_a_majority() -> None:
    single = Topology(brokers=(1, 2, 3), controllers=(3000,))
    kills = schedule(5, single, Options(faults=("kill",))).faults
    assert any(f.targets == (3000,) for f in kills)
    opts = Options(faults=("kill", "pause"), concurrency=3, interval=2.0)
    check_rules(schedule(5, KRAFT, opts))


def test_the_cli_prints_a_seeds_schedule() -> None:
    out = io.StringIO()
    argv = ["schedule", "--seed", "9", "--faults", "pause", "--controllers", "3000"]
    assert main(argv, out) == 0
    header, *faults = (json.loads(line) for line in out.getvalue().splitlines())
    assert header["seed"] == 9
    assert header["faults"] == ["pause"]
    assert faults
    assert {f["kind"] for f in faults} == {"pause"}


NODES = [1, 2, 3, 4, 5]


def test_halves_split_a_majority_from_a_minority() -> None:
    links, _ = cut("halves", NODES, random.Random(1))
    sides = {frozenset(reach) for reach in reachable(links, NODES).values()}
    assert sorted(len(side) for side in sides) == [2, 3]
    assert all((b, a) in links for a, b in links)  # both ways


def test_isolate_cuts_one_node_off() -> None:
    links, description = cut("isolate", NODES, random.Random(2))
    reach = reachable(links, NODES)
    alone = [node for node, seen in reach.items() if seen == {node}]
    assert len(alone) == 1
    assert description.startswith(f"[{alone[0]}]")


def test_a_bridge_reaches_both_sides_that_cannot_reach_each_other() -> None:
    links, _ = cut("bridge", NODES, random.Random(3))
    reach = reachable(links, NODES)
    [bridge] = [node for node, seen in reach.items() if len(seen) == len(NODES)]
    others = [reach[node] for node in NODES if node != bridge]
    assert all(
        len(seen) == 3 for seen in others
    )  # itself, its side's other, the bridge
    assert len(set(others)) == 2


def test_a_ring_gives_every_node_a_different_majority() -> None:
    links, _ = cut("ring", NODES, random.Random(4))
    reach = reachable(links, NODES)
    assert all(len(seen) == 3 for seen in reach.values())
    assert len(set(reach.values())) == len(NODES)


def test_one_way_drops_one_direction_only() -> None:
    links, _ = cut("one-way", NODES, random.Random(5))
    assert links
    assert not any((b, a) in links for a, b in links)


def test_zookeeper_faults_target_zookeepers_server_one_at_a_time() -> None:
    drawn = schedule(7, ZK, Options(duration=300, faults=parse_faults("zookeeper")))
    assert drawn.faults
    assert {f.kind for f in drawn.faults} <= {"kill-zookeeper", "pause-zookeeper"}
    assert all(f.targets == (ZOOKEEPER,) for f in drawn.faults)
    ordered = sorted(drawn.faults, key=lambda f: f.start)
    assert all(a.heal <= b.start for a, b in itertools.pairwise(ordered))


def test_adding_kinds_leaves_the_schedules_of_the_kinds_named_unchanged() -> None:
    """The ZooKeeper kinds came after the others in KINDS: a seed's schedule over the
    process kinds and partitions (make test's runs, the reported runs) is the same."""
    faults = parse_faults("kill,pause,kill-active-controller,partition")
    drawn = schedule(10, ZK, Options(duration=120, faults=faults))
    assert [f.kind for f in drawn.faults][:3] == [
        "pause",
        "pause",
        "kill-active-controller",
    ]
