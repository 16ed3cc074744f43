"""How an exercise says it is not done yet."""

from __future__ import annotations


class ExerciseNotDone(Exception):
    """Raised by the code a learner writes until they write it.

    ``make lab N`` runs the lab's tests against the learner's files; each unfinished
    function fails its tests with this message instead of a wrong answer, and the runner
    names it.
    """

    def __init__(
        self, exercise: str, hint: str = "", file: str = "exercises.py"
    ) -> None:
        message = f"exercise {exercise!r} is not done yet: write it in {file}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)
        self.exercise = exercise
