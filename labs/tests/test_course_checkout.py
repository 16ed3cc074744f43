"""A learner's checkout (``make course``: ``git archive``'s export of the repository)
holds no answer: no ``labs/instructor/``, and outside minikafka's packages and a rebuild
lab's skeletons no code of the objects the lab replaces (a line that defines one)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from lab_answers import answers, shown  # noqa: E402

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="a learner's checkout is made from the repository",
)


def test_a_learners_checkout_holds_no_answer(tmp_path: Path) -> None:
    dest = tmp_path / "course"
    subprocess.run(
        [str(ROOT / "scripts" / "course_checkout.sh"), str(dest)],
        check=True,
        capture_output=True,
    )
    files = [p for p in dest.rglob("*") if p.is_file()]
    assert files, "the export is empty"
    assert not (dest / "labs" / "instructor").exists()
    assert (dest / "labs" / "01-framing" / "lab.toml").exists()
    known = answers()
    shown_where = []
    for path in files:
        relative = path.relative_to(dest)
        # minikafka's packages are where the objects live (with the tests), and each
        # rebuild lab's skeletons hold their signatures; anything else holding one (a
        # page, a lab's test, a doc) would hold a copy.
        if relative.parts[0] in ("packages", "tests") or (
            relative.parts[0] == "labs"
            and relative.suffix == ".py"
            and relative.parts[1][:2].isdigit()
            and relative.name != "test_lab.py"
        ):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        shown_where += [(str(relative), hit.target) for hit in shown(text, known)]
    assert not shown_where, shown_where
