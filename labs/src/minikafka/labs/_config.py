"""A lab's ``lab.toml``: what kind of lab it is, its exercises, and how each is checked.

Three kinds (ARCHITECTURE.md, "Traces and labs"):

- ``trace``: the learner writes Spark queries in ``exercises.py`` over the traces of a
  scenario run; each exercise is checked by the tests of ``test_lab.py`` whose names
  match its ``select`` (a pytest ``-k`` expression).
- ``rebuild``: the learner writes one of minikafka's mechanisms again; each exercise
  names what it replaces (``"module:Name" = "file.py:Name"``) and the package and
  end-to-end tests that grade it, run with the learner's code switched in
  (``labs/switch``). The reference is minikafka's own code.
- ``extend``: the learner adds to minikafka's own source something it does not have;
  the lab's ``test_lab.py`` grades the behaviour (``tests`` or ``select`` per exercise).

Every lab also says what a learner plans with: ``minutes``, ``difficulty`` and the
chapters to read first (``after``, the lab's own ``chapter`` included), and what it
installs beyond the Python workspace (``needs``: ``java``, ``kcat``, ``zookeeper``).

The answers live apart from the learner's tree, in ``labs/instructor/NN-*/`` (left out
of a learner's checkout): a trace lab's ``solutions.py``, an extend lab's
``answer.patch``, and every lab's deliberately wrong solutions (``mutants.toml``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs

KINDS = ("trace", "rebuild", "extend")
DIFFICULTIES = ("easy", "moderate", "hard")
NEEDS = ("java", "kcat", "zookeeper")


class LabConfigError(ValueError):
    """A ``lab.toml`` that cannot be used; the message names the file and the key."""


@attrs.frozen
class Exercise:
    name: str
    select: str = ""
    """A pytest ``-k`` expression choosing this exercise's tests ("" = all of them)."""
    replaces: Mapping[str, str] = attrs.field(factory=dict)
    """``module:Name`` -> ``file.py:Name`` in the lab's directory (build labs)."""
    tests: tuple[str, ...] = ()
    """Test files or node ids, relative to the repository (build labs)."""


@attrs.frozen
class LabConfig:
    title: str
    kind: str
    chapter: str
    """The book chapter (its file name without ``.md``) the lab follows."""
    exercises: tuple[Exercise, ...]
    minutes: int = 0
    """About how long a first attempt takes, after reading the chapters."""
    difficulty: str = ""
    after: tuple[str, ...] = ()
    """The chapters to read first, in reading order (the lab's ``chapter`` last)."""
    needs: tuple[str, ...] = ()
    """What the lab installs beyond the Python workspace (``make lab`` does it)."""

    def exercise(self, name: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        known = ", ".join(e.name for e in self.exercises)
        raise LookupError(f"no exercise {name!r} (exercises: {known})")


def load_config(path: Path) -> LabConfig:
    """Parse and check ``path`` (a ``lab.toml``)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LabConfigError(f"{path}: {exc}") from None

    def text(table: Mapping[str, object], key: str, where: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value:
            raise LabConfigError(f"{path}: {where}{key} must be a non-empty string")
        return value

    kind = text(data, "kind", "")
    if kind not in KINDS:
        raise LabConfigError(f"{path}: kind must be one of {', '.join(KINDS)}")
    table = data.get("exercises")
    if not isinstance(table, dict) or not table:
        raise LabConfigError(f"{path}: [exercises.NAME] tables are missing")
    exercises = []
    for name, entry in table.items():
        where = f"exercises.{name}."
        if not isinstance(entry, dict):
            raise LabConfigError(f"{path}: {where[:-1]} must be a table")
        select = entry.get("select", "")
        if not isinstance(select, str):
            raise LabConfigError(f"{path}: {where}select must be a string")
        replaces = entry.get("replaces", {})
        tests = entry.get("tests", [])
        if kind == "rebuild":
            if not replaces or not isinstance(replaces, dict):
                raise LabConfigError(f"{path}: {where}replaces is missing")
            if not tests or not isinstance(tests, list):
                raise LabConfigError(f"{path}: {where}tests is missing")
        for target, source in replaces.items():
            if ":" not in target or not isinstance(source, str) or ":" not in source:
                raise LabConfigError(
                    f"{path}: {where}replaces: {target!r} = {source!r} is not "
                    '"module:Name" = "file.py:Name"'
                )
        exercises.append(
            Exercise(name, select, dict(replaces), tuple(str(t) for t in tests))
        )
    chapter = text(data, "chapter", "")
    minutes = data.get("minutes", 0)
    if not isinstance(minutes, int) or minutes < 0:
        raise LabConfigError(f"{path}: minutes must be a whole number of minutes")
    difficulty = data.get("difficulty", "")
    if difficulty and difficulty not in DIFFICULTIES:
        raise LabConfigError(
            f"{path}: difficulty must be one of {', '.join(DIFFICULTIES)}"
        )
    after = _strings(path, data, "after")
    needs = _strings(path, data, "needs")
    if unknown := set(needs) - set(NEEDS):
        raise LabConfigError(
            f"{path}: needs: {', '.join(sorted(unknown))} is not one of {', '.join(NEEDS)}"
        )
    return LabConfig(
        text(data, "title", ""),
        kind,
        chapter,
        tuple(exercises),
        minutes,
        str(difficulty),
        after or (chapter,),
        needs,
    )


def _strings(path: Path, data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LabConfigError(f"{path}: {key} must be a list of strings")
    return tuple(value)
