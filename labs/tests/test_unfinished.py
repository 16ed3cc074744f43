"""check_exercises_start_unfinished: a trace lab as shipped, from its lab.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.labs import Lab, check_exercises_start_unfinished

_TOML = """title = "made up"
kind = "trace"
chapter = "trace"

[exercises.count]
select = "test_count"
"""

_UNFINISHED = """from minikafka.labs import ExerciseNotDone

def count(frame):
    raise ExerciseNotDone("count", "group and count")
"""


def _lab(tmp_path: Path, exercises: str, solutions: str, number: int) -> Lab:
    directory = tmp_path / f"{number:02d}-made-up"
    directory.mkdir()
    (directory / "lab.toml").write_text(_TOML)
    (directory / "exercises.py").write_text(exercises)
    answers = tmp_path / "instructor" / directory.name
    answers.mkdir(parents=True)
    (answers / "solutions.py").write_text(solutions)
    return Lab(number, directory)


def test_a_lab_as_shipped_passes(tmp_path: Path) -> None:
    lab = _lab(tmp_path, _UNFINISHED, "def count(frame):\n    return frame\n", 91)
    check_exercises_start_unfinished(lab)


@pytest.mark.parametrize(
    ("exercises", "solutions", "complaint"),
    [
        ("def count(frame):\n    return 1\n", "def count(frame): ...\n", "is done"),
        (_UNFINISHED, "def count(frame, extra): ...\n", "the reference is"),
        (
            _UNFINISHED.replace('("count"', '("other"'),
            "def count(frame): ...\n",
            "says",
        ),
    ],
)
def test_a_lab_shipped_wrong_is_refused(
    tmp_path: Path, exercises: str, solutions: str, complaint: str
) -> None:
    number = 92 + len(complaint)  # a module name of its own per case
    lab = _lab(tmp_path, exercises, solutions, number)
    with pytest.raises(AssertionError, match=complaint):
        check_exercises_start_unfinished(lab)
