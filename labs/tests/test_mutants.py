"""Every lab's checks test what its page promises: each deliberately wrong solution of
``labs/instructor/NN-*/mutants.toml``, one per promise, fails the checks it names.

A rebuild lab's mutant is switched in for minikafka's own object, as a learner's file
is; an extend lab's is a patch over the answer's, in a copy of the packages. (A trace
lab's mutants run in its ``test_lab.py``, beside the reference, as strict expected
failures: ``labs/conftest.py``.) Skipped in a learner's checkout, which has no mutants.
"""

from __future__ import annotations

import pytest

from minikafka.labs import Lab, all_labs
from minikafka.labs._mutants import check_all, mutants, report

PROCESS_LABS = [
    lab
    for lab in all_labs()
    if lab.config.kind in ("rebuild", "extend") and mutants(lab)
]


def test_every_lab_has_a_wrong_solution_per_promise_or_is_in_a_learners_checkout() -> (
    None
):
    labs = all_labs()
    if not any(lab.solutions.exists() for lab in labs):
        pytest.skip("a learner's checkout: the mutants are in the instructors' copy")
    without = [lab.name for lab in labs if not mutants(lab)]
    assert not without, f"labs without mutants: {without}"


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("lab", PROCESS_LABS, ids=lambda lab: lab.name)
def test_each_wrong_solution_fails_the_checks_of_its_promise(lab: Lab) -> None:
    # A lab's mutants run a few at a time: each is a process of its own (forked from a
    # fork server that has imported pytest already) that mostly waits for brokers and
    # clients.
    verdicts = check_all(mutants(lab))
    idle = [v.mutant.name for v in verdicts if v.ran == 0]
    assert not idle, (
        f"lab {lab.number}: none of the checks of {idle} ran:\n"
        + "\n".join(v.output[-2000:] for v in verdicts if v.ran == 0)
    )
    missed = [v for v in verdicts if not v.caught]
    assert not missed, (
        f"lab {lab.number}: promises no check tests:\n"
        + report(missed)
        + "\n"
        + "\n".join(v.output[-2000:] for v in missed)
    )
