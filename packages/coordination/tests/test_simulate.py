"""The group simulation: the real coordinator with simulated consumers on virtual time.

What the simulation must show is what seeds 000 and 002 say about rebalances: every
generation hands each partition to one live member; a member that leaves starts a
rebalance at once while a crash is only noticed a session timeout later; under EAGER
every member stops consuming during a rebalance, under COOPERATIVE (KIP-429) only the
partitions that move stop, and never does a partition have two consumers. And the
command must be deterministic and refuse bad input with exit status 2.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from minikafka.common import TopicPartition
from minikafka.coordination.__main__ import app
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.simulate._simulate import simulate
from minikafka.coordination.simulate._simulate_values import (
    EntryKind,
    EventAction,
    GroupEvent,
    SimulationConfig,
    SimulationError,
    SimulationResult,
    TimelineEntry,
    parse_events,
    render_simulation,
)

EXAMPLE = ["--members", "3", "--partitions", "5", "--assignor", "range"]
EXAMPLE_EVENTS = "join:4,leave:2,crash:1"
EAGER_ASSIGNORS = ["range", "roundrobin", "sticky"]
ALL_ASSIGNORS = [*EAGER_ASSIGNORS, "cooperative-sticky"]


def run(events: str = "", **changes: Any) -> SimulationResult:
    """Simulate the default group (3 consumers, 5 partitions, range) with ``changes``."""
    return simulate(
        attrs.evolve(SimulationConfig(events=parse_events(events)), **changes)
    )


def entries(
    result: SimulationResult, kind: EntryKind, member: str
) -> list[TimelineEntry]:
    return [e for e in result.timeline if e.kind is kind and e.member == member]


def owners_after_each_change(
    result: SimulationResult,
) -> Iterator[tuple[int, dict[str, frozenset[TopicPartition]]]]:
    """Who owns what after every change, in the order the changes happened."""
    owners: dict[str, frozenset[TopicPartition]] = {}
    for change in result.ownership:
        owners[change.member] = change.partitions
        yield change.time_ms, dict(owners)


def assert_never_two_owners(result: SimulationResult) -> None:
    for time_ms, owners in owners_after_each_change(result):
        owned = [tp for partitions in owners.values() for tp in partitions]
        assert len(owned) == len(set(owned)), (
            f"a partition with two consumers at {time_ms} ms"
        )


def all_partitions(config: SimulationConfig) -> set[TopicPartition]:
    return {TopicPartition(config.topic, p) for p in range(config.partitions)}


# --- assignments ----------------------------------------------------------------------


@pytest.mark.parametrize("assignor", EAGER_ASSIGNORS)
def test_every_eager_generation_assigns_each_partition_once_among_live_members(
    assignor: str,
) -> None:
    result = run(EXAMPLE_EVENTS, assignor=assignor)
    assert [g.generation for g in result.generations] == [1, 2, 3, 4]
    live_per_generation = [{1, 2, 3}, {1, 2, 3, 4}, {1, 3, 4}, {3, 4}]
    for generation, live in zip(result.generations, live_per_generation, strict=True):
        assert {member for member, _ in generation.assignment} == {
            f"consumer-{n}" for n in live
        }
        placed = [tp for _, partitions in generation.assignment for tp in partitions]
        assert sorted(placed) == sorted(all_partitions(result.config))


def test_a_cooperative_join_takes_two_generations_and_the_second_completes_the_plan() -> (
    None
):
    result = run("join:4", assignor="cooperative-sticky")
    first, second = (g for g in result.generations if g.generation in (2, 3))
    # KIP-429: the first round withholds what moves; the new member gets it in the second.
    assert first.partitions_of("consumer-4") == ()
    withheld = all_partitions(result.config) - {
        tp for _, ps in first.assignment for tp in ps
    }
    assert withheld
    assert set(second.partitions_of("consumer-4")) == withheld
    placed = [tp for _, partitions in second.assignment for tp in partitions]
    assert sorted(placed) == sorted(all_partitions(result.config))
    assert result.rebalances[-1].generations == (2, 3)


@st.composite
def scripts(draw: st.DrawFn) -> SimulationConfig:
    members = draw(st.integers(1, 5))
    live, events = set(range(1, members + 1)), []
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(EventAction)) if live else EventAction.JOIN
        if action is EventAction.JOIN:
            number = draw(st.sampled_from(sorted(set(range(1, 10)) - live)))
            live.add(number)
        else:
            number = draw(st.sampled_from(sorted(live)))
            if action is not EventAction.SLOW:
                live.discard(number)
        events.append(GroupEvent(action, number))
    return SimulationConfig(
        members=members,
        partitions=draw(st.integers(1, 9)),
        assignor=draw(st.sampled_from(ALL_ASSIGNORS)),
        events=tuple(events),
        seed=draw(st.integers(0, 1000)),
        session_timeout_ms=draw(st.sampled_from([6000, 10_000, 45_000])),
    )


@given(scripts())
@settings(derandomize=True, max_examples=60, deadline=None)
def test_any_script_settles_with_every_partition_placed_once_and_never_twice_owned(
    config: SimulationConfig,
) -> None:
    result = simulate(config)
    cooperative = config.assignor == "cooperative-sticky"
    by_generation = {g.generation: g for g in result.generations}
    for generation in result.generations:
        placed = [tp for _, partitions in generation.assignment for tp in partitions]
        assert len(placed) == len(set(placed))
        if not cooperative:  # a cooperative first round may withhold partitions
            assert set(placed) == all_partitions(config)
    for rebalance in result.rebalances:
        if not rebalance.members:
            continue  # the group emptied
        last = by_generation[rebalance.generations[-1]]
        assert tuple(member for member, _ in last.assignment) == rebalance.members
        assert {tp for _, ps in last.assignment for tp in ps} == all_partitions(config)
    assert_never_two_owners(result)


# --- leave and crash (seed 002 §3) ----------------------------------------------------


@pytest.mark.parametrize("session_timeout_ms", [10_000, 45_000])
def test_a_crash_is_noticed_only_after_the_session_timeout(
    session_timeout_ms: int,
) -> None:
    result = run("crash:1", session_timeout_ms=session_timeout_ms)
    (crashed,) = entries(result, EntryKind.CRASHED, "consumer-1")
    (expired,) = entries(result, EntryKind.SESSION_EXPIRED, "consumer-1")
    assert expired.time_ms - crashed.time_ms >= session_timeout_ms
    # Until then the coordinator believes in the crashed member: no rebalance at all.
    meanwhile = [
        e for e in result.timeline if crashed.time_ms <= e.time_ms < expired.time_ms
    ]
    assert {e.state for e in meanwhile} == {GroupState.STABLE}
    assert expired.state is GroupState.PREPARING_REBALANCE
    assert result.rebalances[-1].start_ms == expired.time_ms


def test_a_leave_rebalances_at_once() -> None:
    config = SimulationConfig(events=parse_events("leave:2"))
    result = simulate(config)
    (left,) = entries(result, EntryKind.LEFT, "consumer-2")
    assert left.state is GroupState.PREPARING_REBALANCE
    rebalance = result.rebalances[-1]
    assert rebalance.start_ms - rebalance.trigger_ms <= 2 * config.network_latency_ms
    # The others learn it from their next heartbeat and rejoin at their next poll().
    bound = (
        config.heartbeat_interval_ms
        + config.processing_ms[1]
        + 10 * config.network_latency_ms
    )
    assert rebalance.end_ms - rebalance.trigger_ms <= bound
    assert rebalance.members == ("consumer-1", "consumer-3")


def test_the_first_generation_waits_for_the_initial_rebalance_delay() -> None:
    for members, delay_ms, rounds in [(1, 3000, 1), (3, 3000, 2), (3, 500, 2)]:
        config = GroupConfig(group_initial_rebalance_delay_ms=delay_ms)
        result = run(members=members, group_config=config)
        first_join = next(e for e in result.timeline if e.kind is EntryKind.JOINED)
        # Members that arrive during the delay extend it once (they all arrive at once).
        assert rounds * delay_ms <= first_join.time_ms <= rounds * delay_ms + 10


# --- eager against cooperative (seed 000, "重平衡协议") -----------------------------------


@pytest.mark.parametrize("assignor", EAGER_ASSIGNORS)
def test_eager_members_all_hold_nothing_during_each_rebalance(assignor: str) -> None:
    result = run(EXAMPLE_EVENTS, assignor=assignor)
    assert len(result.rebalances) == 4
    for rebalance in result.rebalances:
        assert all(ms > 0 for _, ms in rebalance.without_partitions_ms), rebalance
        assert {tp for tp, _ in rebalance.paused_partitions_ms} == all_partitions(
            result.config
        )
        # Before the join phase ends, every member has revoked everything (in the first
        # rebalance nobody owned anything yet).
        states = [
            owners
            for time_ms, owners in owners_after_each_change(result)
            if rebalance.trigger_ms <= time_ms <= rebalance.end_ms
        ]
        assert rebalance.cause == "initial join" or any(
            not any(o.values()) for o in states
        )


def test_cooperative_members_keep_consuming_through_a_join() -> None:
    result = run("join:4", assignor="cooperative-sticky", partitions=6)
    join = result.rebalances[-1]
    without = dict(join.without_partitions_ms)
    assert without.pop("consumer-4") > 0  # the newcomer had nothing yet
    assert set(without.values()) == {0}
    # Only what moved to consumer-4 paused, between its revocation and the second round.
    revoked = {
        tp
        for e in result.timeline
        if e.kind is EntryKind.REVOKED and e.time_ms >= join.trigger_ms
        for tp in e.partitions
    }
    assert revoked
    assert {tp for tp, _ in join.paused_partitions_ms} == revoked
    assert set(result.generations[-1].partitions_of("consumer-4")) == revoked
    assert_never_two_owners(result)


@pytest.mark.parametrize("assignor", ALL_ASSIGNORS)
def test_no_partition_ever_has_two_consumers(assignor: str) -> None:
    for events in [EXAMPLE_EVENTS, "join:4,join:5,crash:2,leave:1,join:2"]:
        assert_never_two_owners(run(events, assignor=assignor, partitions=7))


# --- determinism and the command ------------------------------------------------------


def test_the_same_seed_gives_the_same_run() -> None:
    config = SimulationConfig(
        assignor="cooperative-sticky", events=parse_events(EXAMPLE_EVENTS)
    )
    assert simulate(config) == simulate(config)
    assert render_simulation(simulate(config)) == render_simulation(simulate(config))
    other = SimulationConfig(
        assignor="cooperative-sticky", events=parse_events(EXAMPLE_EVENTS), seed=1
    )
    assert render_simulation(simulate(other)) != render_simulation(simulate(config))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--assignor", "fastest"], "unknown assignor 'fastest'"),
        (["--events", "join:x"], "bad event 'join:x'"),
        (["--events", "jump:4"], "bad event 'jump:4'"),
        (["--events", "leave:7"], "leave:7: there is no running consumer-7"),
        (["--events", "crash:1,leave:1"], "leave:1: there is no running consumer-1"),
        (["--events", "join:3"], "join:3: consumer-3 is already running"),
        (["--members", "0"], "--members must be at least 1"),
        (["--partitions", "0"], "--partitions must be at least 1"),
        (["--session-timeout-ms", "1000"], "session.timeout.ms 1000 is outside"),
        (["--heartbeat-interval-ms", "50000"], "must be positive and lower than"),
        (["--topic", "no/slash"], "not a legal topic name"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["simulate", *args])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert message in result.stderr
    assert result.stdout == ""


def test_parse_events_keeps_the_order_and_refuses_garbage() -> None:
    assert parse_events(" join:4, leave:2 ,crash:1 ") == (
        GroupEvent(EventAction.JOIN, 4),
        GroupEvent(EventAction.LEAVE, 2),
        GroupEvent(EventAction.CRASH, 1),
    )
    assert parse_events("") == ()
    for bad in ["join", "join:", "join:0", "join:-1", "leave:two", "kill:1"]:
        with pytest.raises(SimulationError):
            parse_events(bad)


def test_the_example_command_prints_its_four_generations() -> None:
    command = [sys.executable, "-m", "minikafka.coordination", "simulate", *EXAMPLE]
    done = subprocess.run(
        [*command, "--events", EXAMPLE_EVENTS],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for expected in [
        "generation 1 at 6008 ms (protocol range, leader consumer-1):\n"
        "  consumer-1 -> topic-0,topic-1\n"
        "  consumer-2 -> topic-2,topic-3\n"
        "  consumer-3 -> topic-4\n",
        "generation 2 at 9541 ms (protocol range, leader consumer-1):\n"
        "  consumer-1 -> topic-0,topic-1\n"
        "  consumer-2 -> topic-2\n"
        "  consumer-3 -> topic-3\n"
        "  consumer-4 -> topic-4\n",
        "generation 3 at 13172 ms (protocol range, leader consumer-1):\n"
        "  consumer-1 -> topic-0,topic-1\n"
        "  consumer-3 -> topic-2,topic-3\n"
        "  consumer-4 -> topic-4\n",
        "generation 4 at 61729 ms (protocol range, leader consumer-3):\n"
        "  consumer-3 -> topic-0,topic-1,topic-2\n"
        "  consumer-4 -> topic-3,topic-4\n",
        "consumer-1  coordinator: session expired, no heartbeat for 45000 ms",
        "consumer-2  LeaveGroup: left",
        "crash:1: generation 4; event at 16172 ms, rebalance 61173-61729 ms",
    ]:
        assert expected in out
    assert "generation 5" not in out
