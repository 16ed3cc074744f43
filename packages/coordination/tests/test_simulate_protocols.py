"""Both group protocols in the simulator: the classic one (JoinGroup/SyncGroup, the
leader assigns) and KIP-848's consumer protocol (ConsumerGroupHeartbeat, the coordinator
assigns, each member reconciles on its own), on the same scripts.

The guarantees are the same for both, and are checked over seeded runs of random
scripts (members joining, leaving, crashing, turning slow): no partition is ever owned
by two members at once, and every partition has an owner again within the stated bound
after the event that changed the group (``settle_bound_ms``). What differs, and what
the consumer protocol is for: a member that joins costs the others nothing, and a slow
member holds up only the partitions it must give away.
"""

from __future__ import annotations

import random
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from minikafka.common import TopicPartition
from minikafka.coordination.__main__ import app
from minikafka.coordination.simulate._simulate import simulate
from minikafka.coordination.simulate._simulate_invariants import (
    ownership_violations,
    settle_bound_ms,
)
from minikafka.coordination.simulate._simulate_values import (
    EventAction,
    GroupEvent,
    OwnershipChange,
    SimulationConfig,
    SimulationResult,
    parse_events,
)

SEEDS = range(30)
CLASSIC_ASSIGNORS = ["range", "cooperative-sticky"]


def run(events: str = "", **changes: Any) -> SimulationResult:
    config = SimulationConfig(events=parse_events(events), protocol="consumer")
    return simulate(attrs.evolve(config, **changes))


def random_script(rng: random.Random, members: int) -> tuple[GroupEvent, ...]:
    """One to four events; at least one member stays, so the group never empties."""
    live, next_number, events = list(range(1, members + 1)), members + 1, []
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(list(EventAction))
        if action is EventAction.JOIN or len(live) < 2:
            events.append(GroupEvent(EventAction.JOIN, next_number))
            live.append(next_number)
            next_number += 1
            continue
        number = rng.choice(live)
        events.append(GroupEvent(action, number))
        if action is not EventAction.SLOW:
            live.remove(number)
    return tuple(events)


def seeded_configs() -> list[SimulationConfig]:
    configs = []
    for seed in SEEDS:
        rng = random.Random(seed)
        members = rng.randint(1, 5)
        base = SimulationConfig(
            members=members,
            partitions=rng.randint(1, 8),
            events=random_script(rng, members),
            seed=seed,
            session_timeout_ms=rng.choice([10_000, 45_000]),
            slow_processing_ms=rng.choice([5_000, 20_000]),
        )
        configs.append(attrs.evolve(base, protocol="consumer"))
        configs.append(attrs.evolve(base, assignor=rng.choice(CLASSIC_ASSIGNORS)))
    return configs


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_seeded_runs_never_share_a_partition_and_reown_every_one_within_the_bound(
    protocol: str,
) -> None:
    for config in seeded_configs():
        if config.protocol != protocol:
            continue
        result = simulate(config)
        assert ownership_violations(result) == [], config


def test_the_checker_catches_two_owners_and_an_orphan() -> None:
    """The invariants can fail: a forged record with both faults is refused."""
    result = run()
    tp = TopicPartition("topic", 0)
    forged = attrs.evolve(
        result,
        ownership=(
            *result.ownership,
            OwnershipChange(10**7, "consumer-1", frozenset({tp})),
            OwnershipChange(10**7, "consumer-2", frozenset({tp})),
            OwnershipChange(10**7 + 1, "consumer-1", frozenset()),
            OwnershipChange(10**7 + 1, "consumer-2", frozenset()),
            OwnershipChange(10**7 + 1, "consumer-3", frozenset()),
        ),
    )
    problems = ownership_violations(forged)
    assert any("owned by both consumer-1 and consumer-2" in p for p in problems)
    assert any("no owner from 10000001 ms to the end" in p for p in problems)


def test_the_bound_is_session_plus_three_rounds_of_heartbeat_and_poll() -> None:
    config = SimulationConfig(protocol="consumer", events=parse_events("slow:1"))
    assert settle_bound_ms(config) == 45_000 + 3 * (3_000 + 20_000) + 1_000
    classic = SimulationConfig()
    assert settle_bound_ms(classic) == 45_000 + 3_000 + 3 * (3_000 + 1_000) + 1_000


def test_a_consumer_protocol_join_takes_nothing_from_members_that_keep_theirs() -> None:
    """KIP-848: no barrier. The members that keep their partitions never stop; the one
    partition that moves is unowned only between its revocation and its new owner's
    heartbeat."""
    result = run("join:4")
    join = result.rebalances[-1]
    assert join.cause == "join:4"
    assert dict(join.without_partitions_ms)["consumer-1"] == 0
    paused = dict(join.paused_partitions_ms)
    assert len(paused) == 1
    assert max(paused.values()) <= result.config.heartbeat_interval_ms


def test_an_eager_join_stops_every_partition_the_consumer_protocol_only_one() -> None:
    events = "join:4"
    classic = simulate(SimulationConfig(events=parse_events(events)))
    consumer = run(events)
    assert len(classic.rebalances[-1].paused_partitions_ms) == 5
    assert len(consumer.rebalances[-1].paused_partitions_ms) == 1


def test_a_consumer_protocol_crash_is_noticed_after_the_session_timeout() -> None:
    result = run("crash:1", session_timeout_ms=10_000)
    crash = result.rebalances[-1]
    assert crash.start_ms - crash.trigger_ms == pytest.approx(10_000, abs=5)
    expired = [e for e in result.timeline if e.text.startswith("coordinator: session")]
    assert [e.member for e in expired] == ["consumer-1"]


def test_a_slow_member_holds_up_only_what_it_must_give_away() -> None:
    """The consumer protocol: a join while consumer-1 is slow; only the partitions
    consumer-1 revokes wait for its poll, the others move on the next heartbeats."""
    result = run("slow:1,join:4", slow_processing_ms=20_000)
    join = result.rebalances[-1]
    paused = dict(join.paused_partitions_ms)
    assert all(ms <= 20_000 + 3_000 for ms in paused.values())
    assert dict(join.without_partitions_ms)["consumer-2"] == 0


def test_the_same_seed_gives_the_same_consumer_protocol_run() -> None:
    assert run("join:4,crash:2,leave:3") == run("join:4,crash:2,leave:3")


def test_both_prints_the_two_protocols_and_each_members_partitions_over_time() -> None:
    result = CliRunner().invoke(
        app, ["simulate", "--protocol", "both", "--events", "join:4,leave:2"]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "classic protocol, assignor range (EAGER)" in out
    assert "consumer protocol (KIP-848), server assignor uniform" in out
    assert out.count("owned partitions over time:") == 2
    assert "generation 1 at" in out
    assert "leader the coordinator" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "kip848"], "unknown group protocol 'kip848'"),
        (["--protocol", "consumer", "--remote-assignor", "sticky"], "unknown server"),
        (["--events", "slow:9"], "slow:9: there is no running consumer-9"),
    ],
)
def test_bad_protocol_input_exits_2_with_one_line(
    args: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["simulate", *args])
    assert result.exit_code == 2
    assert message in result.stderr


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_member_slower_than_its_session_keeps_its_place_until_it_polls(
    protocol: str,
) -> None:
    """A poll slower than ``session.timeout.ms`` is not a dead member: it keeps
    heartbeating until its application has run the callbacks and it rejoins (KIP-62),
    so it is never expelled while it still owns partitions that go to another."""
    result = run(
        "join:4,slow:2,crash:1,leave:3",
        partitions=6,
        protocol=protocol,
        session_timeout_ms=10_000,
    )
    assert ownership_violations(result) == []
    expired = [e.member for e in result.timeline if e.text.startswith("coordinator:")]
    assert expired == ["consumer-1"]
