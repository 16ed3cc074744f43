"""How an exercise says it is not done yet."""

from __future__ import annotations


class ExerciseNotDone(Exception):
    """Raised by a lab's ``exercises.py`` function until the reader writes it.

    ``make lab N`` runs the lab's tests against ``exercises.py``; each unfinished
    function fails its test with this message instead of a wrong answer.
    """

    def __init__(self, exercise: str, hint: str = "") -> None:
        message = f"exercise {exercise!r} is not done yet: write it in exercises.py"
        if hint:
            message += f" ({hint})"
        super().__init__(message)
        self.exercise = exercise
