"""The simulator on seeds drawn fresh at every run: small quorums under random
partitions, crashes and message loss, and crash storms, each checked for Raft's
invariants after every event (the simulator's list), then for progress once the faults
stop. Fixed seeds test the same few hundred schedules forever; fresh ones try new
schedules each time, so a rule that breaks only once in a thousand runs is found in the
end, and the failing seed is printed with how to replay it.

    MINIKAFKA_RAFT_SEED=1234 pytest packages/raft/tests/test_raft_fresh_seeds.py  # replay
    MINIKAFKA_RAFT_RUNS=2000 pytest packages/raft/tests/test_raft_fresh_seeds.py  # more
"""

from __future__ import annotations

import os
import random
import time

import attrs
import pytest

from minikafka.raft._scenarios import (
    Scenario,
    describe,
    random_scenario,
    storm_scenario,
)
from minikafka.raft._simulator import Simulation

SEED_ENV = "MINIKAFKA_RAFT_SEED"
RUNS_ENV = "MINIKAFKA_RAFT_RUNS"
DEFAULT_RUNS = 240


@attrs.frozen
class Shape:
    """A kind of run: how many voters and observers, random faults or a crash storm,
    and its share of the runs."""

    voters: int
    observers: int
    storm: bool
    share: float

    @property
    def name(self) -> str:
        kind = "storm" if self.storm else "random"
        return f"{kind}-{self.voters}v{self.observers}o"

    def scenario(self, seed: int) -> Scenario:
        if self.storm:
            return storm_scenario(seed, self.voters, self.observers)
        return random_scenario(seed, self.voters, self.observers)

    def replay(self, seed: int) -> str:
        storm = " --storm" if self.storm else ""
        return (
            f"  {SEED_ENV}={seed} uv run --frozen --all-packages \\\n"
            f"    pytest packages/raft/tests/test_raft_fresh_seeds.py -k {self.name}\n"
            f"  uv run --frozen --all-packages python -m minikafka.raft simulate \\\n"
            f"    --voters {self.voters} --observers {self.observers}{storm} "
            f"--seed {seed} --timeline"
        )


SHAPES = [
    Shape(3, 2, storm=False, share=0.4),
    Shape(5, 1, storm=False, share=0.15),
    Shape(4, 0, storm=False, share=0.1),
    Shape(1, 1, storm=False, share=0.05),
    Shape(3, 0, storm=True, share=0.2),
    Shape(5, 0, storm=True, share=0.1),
]


def seeds_for(shape: Shape) -> list[int]:
    """The seeds to run: the one to replay, or fresh ones (never the same twice)."""
    replay = os.environ.get(SEED_ENV)
    if replay:
        return [int(replay)]
    runs = int(os.environ.get(RUNS_ENV, DEFAULT_RUNS))
    fresh = random.SystemRandom()
    return [fresh.randrange(2**32) for _ in range(max(1, round(runs * shape.share)))]


@pytest.mark.timeout(int(os.environ.get(RUNS_ENV, DEFAULT_RUNS)) + 120)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_fresh_seeds_keep_every_invariant(shape: Shape) -> None:
    seeds = seeds_for(shape)
    started = time.perf_counter()
    elections = 0
    for seed in seeds:
        result = Simulation(shape.scenario(seed), seed).run()
        if not result.ok:
            pytest.fail(
                f"{shape.name}, seed {seed}: {result.violation}\n"
                f"{describe(result.scenario)}\n"
                f"replay it (the same seed runs the same way) with:\n"
                f"{shape.replay(seed)}",
                pytrace=False,
            )
        elections += result.elections
    # The runs did something: every run elected at least one leader.
    assert elections >= len(seeds), (shape.name, seeds)
    print(
        f"{shape.name}: {len(seeds)} fresh seeds in "
        f"{time.perf_counter() - started:.1f}s, the first {seeds[0]}"
    )
