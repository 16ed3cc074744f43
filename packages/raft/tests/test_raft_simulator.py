"""The simulator: seeded quorums under faults keep Raft's invariants, and a deliberately
broken rule is caught (what makes the clean runs mean something)."""

from __future__ import annotations

import pytest

from minikafka.raft import RaftNode
from minikafka.raft.__main__ import main
from minikafka.raft._simulator import (
    Fault,
    Scenario,
    Simulation,
    describe,
    random_scenario,
    shrink,
)

# (voters, observers, seeds): a few hundred seeds in all, about half a minute.
SHAPES = [(3, 2, range(0, 120)), (5, 1, range(0, 30)), (1, 1, range(0, 20)), (4, 0, range(0, 20))]


@pytest.mark.parametrize(("voters", "observers", "seeds"), SHAPES, ids=lambda v: str(v))
def test_seeded_runs_under_faults_keep_every_invariant(
    voters: int, observers: int, seeds: range
) -> None:
    """Election safety, committed entries never lost or changed, logs agreeing below the
    high watermark, the high watermark never going back, the same values applied in the
    same order everywhere; and, once the faults stop, everything committed everywhere."""
    failures = []
    elections = commits = 0
    for seed in seeds:
        result = Simulation(random_scenario(seed, voters, observers), seed).run()
        if not result.ok:
            failures.append(f"seed {seed}: {result.violation}\n{describe(result.scenario)}")
        elections += result.elections
        commits += result.commits
    assert not failures, "\n".join(failures)
    # The runs did something: leaders came and went, entries were committed.
    assert elections >= len(seeds) and commits >= 50 * len(seeds)


def test_the_same_seed_runs_the_same_way() -> None:
    scenario = random_scenario(7, 3, 1)
    first, second = Simulation(scenario, 7).run(), Simulation(scenario, 7).run()
    assert (first.events, first.commits, first.elections) == (
        second.events,
        second.commits,
        second.elections,
    )


def test_a_quorum_that_never_heals_is_reported_as_not_live() -> None:
    # Two of three voters crash and never come back within the run: no leader can be
    # elected, and the liveness check says so (it is a check that can fail).
    scenario = Scenario(
        voters=3,
        faults=(Fault(1.0, "crash", (1,)), Fault(1.0, "crash", (2,))),
        duration=5.0,
        settle=5.0,
    )
    simulation = Simulation(scenario, 1)
    simulation._push = _no_heal(simulation._push)  # type: ignore[method-assign]
    result = simulation.run()
    assert result.violation is not None
    assert "after the faults ended" in str(result.violation)


def _no_heal(push):  # type: ignore[no-untyped-def]
    def push_but_heal(at: float, kind: str, payload: object) -> None:
        if kind != "heal_all":
            push(at, kind, payload)

    return push_but_heal


class ForgetsVotes(RaftNode):
    """Broken: grants votes without writing them down first."""

    def _persist(self, state, why):  # type: ignore[no-untyped-def]
        if why != "grants a vote":
            super()._persist(state, why)


class CommitsOldEpochs(RaftNode):
    """Broken: moves the high watermark over entries of earlier epochs alone."""

    def _may_commit(self, offset, leader):  # type: ignore[no-untyped-def]
        return True
