"""Finding the labs and loading their modules (ARCHITECTURE.md, "Traces and labs").

A lab is a directory ``labs/NN-topic/`` of plain modules and a ``lab.toml``
(:mod:`._config`), not a package: its name starts with a digit. A trace lab holds
``scenario.py``, ``exercises.py`` and ``test_lab.py``; a rebuild lab the files the
learner writes. The answers sit apart, in ``labs/instructor/NN-topic/``, which a
learner's checkout leaves out (``.gitattributes``), so the learner's tree holds
exercises and tests, not solutions. :class:`Lab` loads modules by
path under names of their own, so two labs' ``scenario`` modules never meet in
``sys.modules``.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import attrs

from ._config import LabConfig, load_config

LABS_ROOT = Path(__file__).resolve().parents[3]
"""The repository's ``labs/`` directory (this package lives in ``labs/src``)."""

IMPLEMENTATION_ENV = "MINIKAFKA_LAB_IMPL"
"""Which answers a lab's tests check: ``solutions`` (the default, ``make test``) or
``exercises`` (``make lab N``)."""

IMPLEMENTATIONS = ("solutions", "exercises")

INSTRUCTOR_ROOT = LABS_ROOT / "instructor"
"""Where the answers and the wrong answers live, one directory per lab, apart from the
exercises; a learner's checkout has none."""

_LAB_DIR = re.compile(r"^(?P<number>\d{2})-[a-z0-9-]+$")


@attrs.frozen
class Lab:
    number: int
    directory: Path

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def config(self) -> LabConfig:
        return load_config(self.directory / "lab.toml")

    @property
    def solutions(self) -> Path:
        """This lab's directory of answers (``labs/instructor/NN-topic``)."""
        return self.directory.parent / "instructor" / self.directory.name

    def module(self, name: str) -> ModuleType:
        """The lab's ``name``.py (``solutions`` from :attr:`solutions`), loaded once per
        process."""
        home = self.solutions if name == "solutions" else self.directory
        return self.module_at(home / f"{name}.py")

    def module_at(self, path: Path) -> ModuleType:
        """The module at ``path`` (a file of this lab's), loaded once per process under
        a name of this lab's own."""
        try:
            relative = path.relative_to(LABS_ROOT).with_suffix("")
        except ValueError:  # a lab outside the repository (a test's copy)
            relative = path.relative_to(path.parents[1]).with_suffix("")
        slug = re.sub(r"\W", "_", str(relative))
        qualified = f"minikafka_lab{self.number:02d}_{slug}"
        loaded = sys.modules.get(qualified)
        if loaded is not None:
            return loaded
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is not here: a learner's checkout has no answers "
                "(they are in the instructors' copy, labs/instructor/)"
            )
        spec = importlib.util.spec_from_file_location(qualified, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        # Registered before it runs: attrs and dataclasses look their module up by name.
        sys.modules[qualified] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[qualified]
            raise
        return module

    def implementation(self, which: str | None = None) -> ModuleType:
        """``solutions.py`` or ``exercises.py``: ``which``, else ``$MINIKAFKA_LAB_IMPL``;
        or ``mutant:NAME``, the reference with one of its mutants' mistakes."""
        chosen = which or os.environ.get(IMPLEMENTATION_ENV) or "solutions"
        if chosen.startswith("mutant:"):
            from ._mutants import find_mutant, mutant_module

            return mutant_module(find_mutant(self, chosen.removeprefix("mutant:")))
        if chosen not in IMPLEMENTATIONS:
            raise ValueError(
                f"{IMPLEMENTATION_ENV}={chosen!r}: expected one of {', '.join(IMPLEMENTATIONS)}"
            )
        return self.module(chosen)


def all_labs() -> list[Lab]:
    """Every lab under ``labs/``, by number."""
    labs = []
    for path in sorted(LABS_ROOT.iterdir()):
        match = _LAB_DIR.match(path.name)
        # A directory without lab.toml is not a lab (what a renumbering leaves
        # behind: an old name holding only __pycache__).
        if match and (path / "lab.toml").is_file():
            labs.append(Lab(int(match["number"]), path))
    return labs


def find_lab(number: int) -> Lab:
    for lab in all_labs():
        if lab.number == number:
            return lab
    known = ", ".join(str(lab.number) for lab in all_labs()) or "none"
    raise LookupError(f"there is no lab {number} (labs: {known})")


def lab_of(file: str | Path) -> Lab:
    """The lab a file (a ``test_lab.py``'s ``__file__``) belongs to."""
    directory = Path(file).resolve().parent
    match = _LAB_DIR.match(directory.name)
    if match is None:
        raise LookupError(f"{file} is not in a lab directory (labs/NN-topic/)")
    return Lab(int(match["number"]), directory)


def check_exercises_start_unfinished(lab: Lab) -> None:
    """A trace lab as shipped: every exercise its ``lab.toml`` names is a function of
    ``exercises.py`` with its reference's signature, and raises ExerciseNotDone naming
    itself (given any arguments: it must not look at them). AssertionError otherwise."""
    from ._exercise import ExerciseNotDone

    exercises, solutions = lab.module("exercises"), lab.module("solutions")
    for exercise in lab.config.exercises:
        written = getattr(exercises, exercise.name)
        signature = inspect.signature(written)
        reference = inspect.signature(getattr(solutions, exercise.name))
        if signature != reference:
            raise AssertionError(
                f"{exercise.name}{signature}: the reference is {reference}"
            )
        try:
            written(*[None] * len(signature.parameters))
        except ExerciseNotDone as exc:
            if exc.exercise != exercise.name:
                raise AssertionError(
                    f"{exercise.name} says {exc.exercise!r} is not done"
                ) from exc
        else:
            raise AssertionError(f"{exercise.name} is done as shipped")
