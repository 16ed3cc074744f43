"""Every lab's checks test what its page promises: each deliberately wrong solution of
``labs/instructor/NN-*/mutants.toml``, one per promise, fails the checks it names.

A rebuild lab's mutant is switched in for minikafka's own object, as a learner's file
is; an extend lab's is a patch over the answer's, in a copy of the packages. (A trace
lab's mutants run in its ``test_lab.py``, beside the reference, as strict expected
failures: ``labs/conftest.py``.) Skipped in a learner's checkout, which has no mutants.
"""

from __future__ import annotations

import pytest

from minikafka.labs import all_labs
from minikafka.labs._mutants import Mutant, check, mutants

PROCESS_MUTANTS = [
    mutant
    for lab in all_labs()
    if lab.config.kind in ("rebuild", "extend")
    for mutant in mutants(lab)
]


def test_every_lab_has_a_wrong_solution_per_promise_or_is_in_a_learners_checkout() -> (
    None
):
    labs = all_labs()
    if not any(lab.solutions.exists() for lab in labs):
        pytest.skip("a learner's checkout: the mutants are in the instructors' copy")
    without = [lab.name for lab in labs if not mutants(lab)]
    assert not without, f"labs without mutants: {without}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "mutant", PROCESS_MUTANTS, ids=lambda m: f"{m.lab.number:02d}-{m.name}"
)
def test_each_wrong_solution_fails_the_checks_of_its_promise(mutant: Mutant) -> None:
    verdict = check(mutant)
    assert verdict.ran > 0, f"none of {mutant.tests} ran:\n{verdict.output[-3000:]}"
    assert verdict.caught, (
        f"lab {mutant.lab.number}: mutant {mutant.name} passes {mutant.tests}, so no "
        f"check tests the promise: {mutant.promise}\n{verdict.output[-3000:]}"
    )
