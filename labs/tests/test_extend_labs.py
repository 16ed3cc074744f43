"""Every extend lab is solvable: its checks pass against minikafka with the answer's
patch applied (in a copy of the packages; the working tree is never touched), every
exercise's checks run, and none of them is skipped. Skipped in a learner's checkout."""

from __future__ import annotations

import pytest

from minikafka.labs import Lab, all_labs
from minikafka.labs._runner import run

EXTEND_LABS = [lab for lab in all_labs() if lab.config.kind == "extend"]

# An extend lab's checks start clusters and wait on them with deadlines: alone, after the
# tests that run in parallel (conftest.py).
pytestmark = pytest.mark.serial


@pytest.mark.timeout(900)
@pytest.mark.parametrize("lab", EXTEND_LABS, ids=lambda lab: lab.name)
def test_each_extend_lab_passes_with_its_answer(lab: Lab) -> None:
    if not (lab.solutions / "answer.patch").exists():
        pytest.skip("a learner's checkout: the answer is in the instructors' copy")
    outcomes = run(lab, None, "solutions", quiet=True)
    assert [o.exercise for o in outcomes] == [e.name for e in lab.config.exercises]
    for outcome in outcomes:
        assert outcome.done, outcome
