"""Running a lab's checks: one exercise, one lab, or every lab for a score table.

A trace lab's exercises are checked by its ``test_lab.py`` (each exercise's tests
chosen by ``select``). A build lab's exercise is checked by the package and end-to-end
tests its ``lab.toml`` names, run in a fresh Python with the learner's code switched in
(``labs/switch``: ``PYTHONPATH`` and :data:`SWITCH_ENV`), so the brokers those tests
start run it too. ``which`` is ``exercises`` (the learner's files) or ``solutions``
(what ``make test`` checks: a trace lab's ``labs/instructor/NN-*/solutions.py``; for a
rebuild lab, minikafka's own code, switched for nothing).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import attrs

from ._collected import COLLECTED_ENV
from ._config import Exercise
from ._lab import IMPLEMENTATION_ENV, LABS_ROOT, Lab
from ._patched import EXTEND_ENV, patched_packages
from ._runs import REUSE_ENV, RUNS_ENV

SWITCH_DIR = LABS_ROOT / "switch"
SWITCH_ENV = "MINIKAFKA_LAB_SWITCH"  # read by labs/switch/sitecustomize.py
RUNS_DIR = LABS_ROOT / ".runs"
_NOT_DONE = re.compile(r"exercise '([^']+)' is not done yet")


@attrs.frozen
class Outcome:
    """One exercise's checks: how many tests passed of how many ran (a build lab's
    checks stop at the first failure), and which functions said they are unfinished."""

    lab: Lab
    exercise: str
    passed: int
    total: int
    not_done: tuple[str, ...] = ()
    broken: bool = False
    """pytest stopped before any test (a file that does not import, a bad option)."""
    collected: int = 0
    """The checks there are: more than ``total`` when a run stopped at a failure."""
    failures: tuple[str, ...] = ()
    """Each failed test's name and the start of its failure message."""

    @property
    def done(self) -> bool:
        # Every check ran and passed: a run that stopped early is not done.
        return 0 < self.total == self.passed and self.collected <= self.total

    @property
    def tests(self) -> str:
        """``passed/ran``, and how many there are when the run stopped early."""
        counted = f"{self.passed}/{self.total}"
        if self.collected > self.total:
            counted += f" of {self.collected}"
        return counted

    @property
    def verdict(self) -> str:
        if self.done:
            return "done"
        if self.not_done:
            return "not done: " + ", ".join(self.not_done)
        if self.broken:
            return "does not load (see the errors above)"
        return "failing" if self.total else "no tests ran"


def switch_spec(lab: Lab, exercises: Sequence[Exercise], which: str) -> str:
    """The :data:`SWITCH_ENV` value putting ``which``'s code in place of minikafka's
    (nothing for ``solutions``: minikafka's own code is a rebuild lab's reference)."""
    if which == "solutions":
        return ""
    parts = []
    home = lab.directory
    for exercise in exercises:
        for target, source in exercise.replaces.items():
            file, _, attribute = source.rpartition(":")
            parts.append(f"{target}={home / file}:{attribute}")
    return ";".join(parts)


def switched_env(lab: Lab, exercises: Sequence[Exercise], which: str) -> dict[str, str]:
    """The environment of a process running ``which``'s code for ``exercises``."""
    path = os.environ.get("PYTHONPATH")
    return {
        SWITCH_ENV: switch_spec(lab, exercises, which),
        "PYTHONPATH": str(SWITCH_DIR) + (os.pathsep + path if path else ""),
    }


def command(
    lab: Lab, exercise: Exercise | None, which: str, junit: Path
) -> tuple[list[str], dict[str, str]]:
    """The pytest command line and the environment additions for one check."""
    config = lab.config
    env = {IMPLEMENTATION_ENV: which}
    if config.kind in ("trace", "extend"):
        targets = [str(lab.directory / "test_lab.py")]
        selects = [exercise.select] if exercise else []
        if config.kind == "extend":
            env[EXTEND_ENV] = "1"
    else:
        chosen = [exercise] if exercise else list(config.exercises)
        # In the lab.toml's order: the quick package tests before the real clients.
        targets = list(dict.fromkeys(test for e in chosen for test in e.tests))
        selects = [e.select for e in chosen]
        env |= switched_env(lab, chosen, which)
    args = [sys.executable, "-m", "pytest", "-q", "--no-header", "-rfE"]
    args += ["-p", "no:cacheprovider", "-p", "minikafka.labs._collected"]
    args += [f"--junitxml={junit}", *targets]
    if which == "exercises" and config.kind in ("rebuild", "extend"):
        # Stop at the first failure: an unfinished mechanism fails every test that
        # needs it, some only after waiting out a real client's timeouts.
        args.append("-x")
    if selects and all(selects):
        args += ["-k", " or ".join(f"({s})" for s in selects)]
    return args, env


def run(
    lab: Lab,
    exercise: Exercise | None,
    which: str,
    *,
    reuse: bool = False,
    quiet: bool = False,
) -> list[Outcome]:
    """Check one exercise of ``lab`` (or all of them); one :class:`Outcome` each."""
    config = lab.config
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        junit = scratch / "junit.xml"
        args, extra = command(lab, exercise, which, junit)
        env = {**os.environ, **extra, RUNS_ENV: str(RUNS_DIR)}
        env[COLLECTED_ENV] = str(scratch / "collected")
        if reuse:
            env[REUSE_ENV] = "1"
        if config.kind == "extend" and which == "solutions":
            # The answer is a patch to minikafka: check a patched copy of the packages.
            answer = [lab.solutions / "answer.patch"]
            env["PYTHONPATH"] = stack.enter_context(
                patched_packages(answer, scratch / "tree")
            )
        done = subprocess.run(
            args,
            env=env,
            cwd=LABS_ROOT.parent,
            check=False,
            capture_output=quiet,
            text=True,
        )
        cases = _cases(junit)
        collected = _collected(scratch / "collected")
    output = (done.stdout or "") + (done.stderr or "") if quiet else ""
    chosen = [exercise] if exercise else list(config.exercises)
    outcomes = []
    for each in chosen:
        mine = cases if len(chosen) == 1 else _matching(cases, each, config.kind)
        unfinished = sorted(
            {name for _, _, text in mine for name in _NOT_DONE.findall(text)}
            | set(_NOT_DONE.findall(output) if len(chosen) == 1 else ())
        )
        passed = sum(1 for _, ok, _ in mine if ok)
        failures = tuple(f"{name}: {text[:2000]}" for name, ok, text in mine if not ok)
        # pytest's exit codes: 1 tests failed, 5 none collected, others an error.
        broken = not mine and done.returncode not in (0, 1, 5)
        # Several exercises in one run share its count of collected tests.
        in_all = collected if len(chosen) == 1 else len(mine)
        outcomes.append(
            Outcome(
                lab,
                each.name,
                passed,
                len(mine),
                tuple(unfinished),
                broken,
                max(in_all, len(mine)),
                failures,
            )
        )
    return outcomes


def _collected(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


def _cases(junit: Path) -> list[tuple[str, bool, str]]:
    """(test name, passed, failure text) of every test that ran (skipped ones left out)."""
    if not junit.exists():
        return []
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        problems = [*case.iter("failure"), *case.iter("error")]
        text = " ".join((p.get("message") or "") + (p.text or "") for p in problems)
        found.append((case.get("name") or "", not problems, text))
    return found


def _matching(
    cases: list[tuple[str, bool, str]], exercise: Exercise, kind: str
) -> list[tuple[str, bool, str]]:
    # A trace or extend lab's select names its tests; several rebuild exercises in one
    # run are not separated (the runner checks rebuild exercises one at a time).
    if kind in ("trace", "extend") and exercise.select:
        # A select is a test's name, or several joined by " or ".
        names = {name.strip() for name in exercise.select.split(" or ")}
        return [
            case
            for case in cases
            if case[0].partition("[")[0] in names
            or any(name in case[0] for name in names)
        ]
    return cases


def table(outcomes: Sequence[Outcome]) -> str:
    """The score table ``make grade`` prints."""
    rows = [("lab", "exercise", "tests", "result")]
    rows += [
        (
            f"{o.lab.number:02d} {o.lab.name[3:]}",
            o.exercise,
            o.tests,
            o.verdict,
        )
        for o in outcomes
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[3]
        for row in rows
    ]
    done = sum(1 for o in outcomes if o.done)
    lines.append(f"score: {done}/{len(outcomes)} exercises done")
    return "\n".join(lines)
