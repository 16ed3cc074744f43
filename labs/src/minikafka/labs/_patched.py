"""minikafka's packages with an extend lab's answer applied, in a copy of their own.

An extend lab's answer is a patch to minikafka's source (``labs/instructor/NN-*/
answer.patch``, paths from the repository's root). The checks run against a copy of
``packages/`` with it applied: the copy's ``src`` directories go first on
``PYTHONPATH``, ahead of the workspace's editable installs, so the tests and every
broker they start import the patched code, and the working tree is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ._lab import LABS_ROOT

EXTEND_ENV = "MINIKAFKA_LAB_EXTEND"
"""Set for an extend lab's checks: its ``test_lab.py`` is skipped without it, so the
normal test run does not check a feature minikafka does not have."""

# The compiled modules come along: copytree keeps each source's modification time, so
# Python reuses them for every file the patch leaves alone (and recompiles the ones it
# changes), instead of every broker a check starts compiling minikafka afresh.
_LEFT_OUT = shutil.ignore_patterns(".hypothesis", "*.egg-info", "tests")


class PatchError(RuntimeError):
    """A patch that no longer applies to minikafka's source."""


@contextmanager
def patched_packages(patches: Sequence[Path], scratch: Path) -> Iterator[str]:
    """Copy ``packages/`` into ``scratch``, apply ``patches`` in order, and yield the
    ``PYTHONPATH`` that imports the copy first."""
    root = LABS_ROOT.parent
    shutil.copytree(root / "packages", scratch / "packages", ignore=_LEFT_OUT)
    for patch in patches:
        done = subprocess.run(
            [
                "git",
                "apply",
                "--whitespace=nowarn",
                "--exclude=packages/*/tests/*",
                str(patch),
            ],
            cwd=scratch,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise PatchError(f"{patch} does not apply: {done.stderr.strip()}")
    sources = sorted(str(p) for p in (scratch / "packages").glob("*/src"))
    existing = os.environ.get("PYTHONPATH")
    yield os.pathsep.join(sources + ([existing] if existing else []))
