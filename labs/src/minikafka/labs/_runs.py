"""Keeping a trace lab's scenario run, so that checking an exercise takes seconds.

A scenario drives a real broker for a minute or two; the exercises only read what it
left. ``python -m minikafka.labs run N`` keeps each run in ``labs/.runs/NN-topic/`` (set
by :data:`RUNS_ENV`), and ``--reuse`` (:data:`REUSE_ENV`) takes a finished one (its
``truth.json`` written, the scenario's last step) instead of running it again. Without
:data:`RUNS_ENV` every run goes to a fresh temporary directory.

The lab pages of the book get their runs here too: ``make test`` keeps the runs its
tests made and builds the book reusing them, so each scenario runs once per
``make test``, and the book shows the very run the tests checked.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol

from ._lab import Lab

RUNS_ENV = "MINIKAFKA_LAB_RUNS"
REUSE_ENV = "MINIKAFKA_LAB_REUSE"
FINISHED = "truth.json"


class _TempDirs(Protocol):
    def mktemp(self, basename: str, numbered: bool = True) -> Path: ...


def scenario_run(lab: Lab, temp: _TempDirs | None = None, **options: object) -> Path:
    """The directory of a finished run of ``lab``'s scenario (run now, or reused).
    Not kept: in a directory of ``temp`` (pytest's ``tmp_path_factory``), or else a new
    temporary directory."""
    kept = os.environ.get(RUNS_ENV)
    if not kept:
        prefix = f"lab{lab.number:02d}"
        fresh = (
            temp.mktemp(prefix) if temp else Path(tempfile.mkdtemp(prefix=prefix + "-"))
        )
        out: Path = lab.module("scenario").run(fresh, **options)
        return out
    home = Path(kept) / lab.name
    if os.environ.get(REUSE_ENV) and (home / FINISHED).exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    finished: Path = lab.module("scenario").run(home, **options)
    return finished
