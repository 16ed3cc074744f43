"""The simulator: seeded quorums under faults keep Raft's invariants, and a deliberately
broken rule is caught (what makes the clean runs mean something)."""

from __future__ import annotations

import attrs
import pytest

from minikafka.raft import ElectionState, RaftNode
from minikafka.raft.__main__ import main
from minikafka.raft._messages import VoteRequest
from minikafka.raft._scenarios import (
    Fault,
    Scenario,
    describe,
    random_scenario,
    storm_scenario,
)
from minikafka.raft._simulator import Result, Simulation, shrink

# (voters, observers, seeds): a few hundred seeds in all, about half a minute.
SHAPES = [(3, 2, range(120)), (5, 1, range(30)), (1, 1, range(20)), (4, 0, range(20))]


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
            failures.append(
                f"seed {seed}: {result.violation}\n{describe(result.scenario)}"
            )
        elections += result.elections
        commits += result.commits
    assert not failures, "\n".join(failures)
    # The runs did something: leaders came and went, entries were committed.
    assert elections >= len(seeds)
    assert commits >= 50 * len(seeds)


# Seeds fresh-seed runs (test_raft_fresh_seeds.py) once failed, kept to replay for good:
# (voters, observers, seed, what went wrong).
FOUND_SEEDS = [
    (
        3,
        2,
        938091182,
        "a voter left at an epoch above the leader's never rejoined: the majority "
        "refused its pre-votes while the leader never announced itself again",
    ),
]


@pytest.mark.parametrize(
    ("voters", "observers", "seed", "bug"),
    FOUND_SEEDS,
    ids=[f"{v}v{o}o-seed{s}" for v, o, s, _ in FOUND_SEEDS],
)
def test_seeds_that_once_failed_keep_every_invariant(
    voters: int, observers: int, seed: int, bug: str
) -> None:
    """Every invariant, liveness included, on the schedules that once broke one."""
    result = Simulation(random_scenario(seed, voters, observers), seed).run()
    assert result.ok, f"{bug}: {result.violation}\n{describe(result.scenario)}"


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
        heals=False,
    )
    result = Simulation(scenario, 1).run()
    assert result.violation is not None
    assert "after the faults ended" in str(result.violation)


class ForgetsVotes(RaftNode):
    """Broken: grants a vote without writing it to quorum-state first."""

    def _persist(self, state: ElectionState, why: str) -> None:
        if why != "grants a vote":
            super()._persist(state, why)


class VotesBlind(RaftNode):
    """Broken: grants a vote without comparing the candidate's log with its own."""

    def _log_is_up_to_date(self, request: VoteRequest) -> bool:
        return True


def first_failure(factory: type[RaftNode], voters: int, seeds: range) -> Result | None:
    for seed in seeds:
        result = Simulation(
            storm_scenario(seed, voters), seed, node_factory=factory
        ).run()
        if not result.ok:
            return result
    return None


def test_crash_storms_keep_every_invariant() -> None:
    """The storms that catch the broken rules below find nothing wrong with the real ones."""
    for voters, seeds in ((3, range(60)), (5, range(20))):
        for seed in seeds:
            result = Simulation(storm_scenario(seed, voters), seed).run()
            assert result.ok, f"{voters} voters, seed {seed}: {result.violation}"


def test_a_vote_not_written_down_before_answering_is_caught() -> None:
    """A voter crashes right after granting a vote, comes back without it, and votes
    again in the same epoch: two leaders in one epoch."""
    found = first_failure(ForgetsVotes, 3, range(300))
    assert found is not None
    assert "two leaders in epoch" in str(found.violation)
    # The same storm with the real rule holds.
    assert Simulation(found.scenario, found.seed).run().ok


def test_a_vote_granted_without_comparing_logs_is_caught() -> None:
    """A leader elected without every committed entry: a committed entry is replaced, or a
    follower is asked to truncate below its high watermark."""
    found = first_failure(VotesBlind, 3, range(100))
    assert found is not None
    assert "committed" in str(found.violation)
    assert Simulation(found.scenario, found.seed).run().ok


def test_a_failing_schedule_is_shrunk_to_the_faults_it_needs() -> None:
    found = first_failure(ForgetsVotes, 3, range(300))
    assert found is not None

    def fails(candidate: Scenario) -> bool:
        return not Simulation(candidate, found.seed, node_factory=ForgetsVotes).run().ok

    smaller = shrink(found.scenario, found.seed, fails)
    assert fails(smaller)
    assert len(smaller.faults) < len(found.scenario.faults)
    # 1-minimal: without any one of the remaining faults the run passes.
    for i in range(len(smaller.faults)):
        without = smaller.faults[:i] + smaller.faults[i + 1 :]
        assert not fails(
            Scenario(**{**attrs.asdict(smaller, recurse=False), "faults": without})
        )
    assert "crash" in describe(smaller)


def test_the_command_runs_seeds_and_says_how_it_went(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--voters", "3", "--observers", "1", "--seeds", "3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("3 seeds, 0 failed;")
    assert main(["simulate", "--seed", "2", "--timeline"]) == 0
    assert "-> Leader" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["simulate", "--faults", "meteor"])
    assert "unknown meteor" in capsys.readouterr().err
