"""A minikafka program leaves out hypothesis, which kio would import for nothing (see
``minikafka.common._program``), and a test process keeps it."""

from __future__ import annotations

import subprocess
import sys

import hypothesis  # noqa: F401  (imported: this process is a test and keeps it)
import pytest

from minikafka.common._program import started_as_program


@pytest.mark.parametrize(
    ("argv", "program"),
    [
        (
            ["-m", "broker"],
            True,
        ),  # ``python -m minikafka.broker`` importing its packages
        (["/venv/bin/minikafka", "broker"], True),  # the console script
        (["/venv/bin/pytest", "-q"], False),
        (["-c"], False),
        ([""], False),  # an embedded interpreter, a notebook kernel
        ([], False),
    ],
)
def test_programs_are_told_from_other_processes(argv: list[str], program: bool) -> None:
    assert started_as_program(argv) is program


def test_a_program_never_imports_hypothesis() -> None:
    # -X importtime lists every module imported, on stderr; a program that imports kio
    # must only show the attempt kio makes (ending in ImportError), never hypothesis's
    # own modules. Asked of minikafka.net: the lightest package that imports kio.
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "minikafka.net", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()]
    assert "kio.static._phantom" in imported  # kio was imported, and asked for it
    # The one line importtime writes for kio's failed ``import hypothesis.strategies`` is
    # the attempt itself (nothing is loaded); any other hypothesis module is a load.
    loaded = [
        m
        for m in imported
        if m.startswith("hypothesis.") and m != "hypothesis.strategies"
    ]
    assert not loaded
    assert "hypothesis" not in imported
    assert "pytest" not in imported


def test_this_test_process_keeps_hypothesis() -> None:
    assert sys.modules.get("hypothesis") is not None
