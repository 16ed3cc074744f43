"""The book's editions (``book/_ext/edition.py``): an ``only instructor`` block is in the
instructor edition's pages and not in the student's, and a misspelt edition stops the
build. A two-line Sphinx project built in a subprocess, as ``make book`` builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"


def build(tmp_path: Path, edition: str | None) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = ['edition']\n"
    )
    (source / "index.rst").write_text(
        "Lab\n===\n\nQuestion.\n\n.. only:: instructor\n\n   THE ANSWER\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MINIKAFKA_EDITION"}
    if edition is not None:
        env["MINIKAFKA_EDITION"] = edition
    out = tmp_path / f"out-{edition}"
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(source), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(("edition", "shown"), [(None, False), ("instructor", True)])
def test_the_answers_are_in_the_instructor_edition_only(
    tmp_path: Path, edition: str | None, shown: bool
) -> None:
    done = build(tmp_path, edition)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / f"out-{edition}" / "index.html").read_text()
    assert "Question." in page
    assert ("THE ANSWER" in page) is shown


def test_a_misspelt_edition_stops_the_build(tmp_path: Path) -> None:
    done = build(tmp_path, "instrutor")
    assert done.returncode != 0
    assert "MINIKAFKA_EDITION='instrutor': expected one of student, instructor" in (
        done.stderr + done.stdout
    )
