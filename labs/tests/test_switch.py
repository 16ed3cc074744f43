"""The labs' switch (labs/switch/sitecustomize.py): a learner's object takes the place of
one in minikafka in any process started with the switch, and says clearly when it
cannot. Run on a made-up package in subprocesses, as ``make lab`` runs the checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minikafka.labs._runner import SWITCH_DIR, SWITCH_ENV

PROGRAM = "import demo; print(demo.answer(), demo.Box().size())"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    package = tmp_path / "demo"
    package.mkdir()
    (package / "__init__.py").write_text("from ._core import Box, answer\n")
    (package / "_core.py").write_text(
        textwrap.dedent(
            """
            def answer():
                return 1


            class Box:
                def size(self):
                    return 1
            """
        )
    )
    (package / "_user.py").write_text("from ._core import answer\n")
    return tmp_path


def run(
    demo: Path, spec: str | None, program: str = PROGRAM
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != SWITCH_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(SWITCH_DIR), str(demo)])
    if spec is not None:
        env[SWITCH_ENV] = spec
    return subprocess.run(
        [sys.executable, "-c", program],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_the_switch_the_real_code_runs(demo: Path) -> None:
    assert run(demo, None).stdout.split() == ["1", "1"]


def test_a_function_and_a_method_are_replaced_for_every_importer(demo: Path) -> None:
    mine = demo / "mine.py"
    mine.write_text("def answer():\n    return 42\n\n\ndef size(self):\n    return 7\n")
    spec = f"demo._core:answer={mine}:answer;demo._core:Box.size={mine}:size"
    done = run(demo, spec)
    assert done.stdout.split() == ["42", "7"], done.stderr
    # A module that imported the name after the replacement has the learner's too.
    imported = run(demo, spec, "import demo._user as u; print(u.answer())")
    assert imported.stdout.split() == ["42"], imported.stderr


def test_a_name_the_target_lacks_is_an_error_naming_it(demo: Path) -> None:
    mine = demo / "mine.py"
    mine.write_text("def answer():\n    return 42\n")
    done = run(demo, f"demo._core:anwser={mine}:answer")
    assert done.returncode != 0
    assert "demo._core has no anwser" in done.stderr


def test_a_learner_file_importing_what_imports_its_target_is_told_why(
    demo: Path,
) -> None:
    mine = demo / "mine.py"
    mine.write_text("from demo import Box\n\n\ndef answer():\n    return 42\n")
    done = run(demo, f"demo._core:answer={mine}:answer")
    assert done.returncode != 0
    assert "it may import what demo._core imports, not what imports it" in done.stderr


def test_a_malformed_switch_is_refused_naming_the_variable(demo: Path) -> None:
    done = run(demo, "demo._core:answer")
    assert done.returncode != 0
    assert f"{SWITCH_ENV}: 'demo._core:answer' is not module:name=file:attribute" in (
        done.stderr
    )
