"""Keeping a trace lab's scenario run, so that checking an exercise takes seconds.

A scenario drives a real broker for a minute or two; the exercises only read what it
left. ``python -m minikafka.labs run N`` keeps each run in ``labs/.runs/NN-topic/`` (set
by :data:`RUNS_ENV`), and ``--reuse`` (:data:`REUSE_ENV`) takes a finished one (its
``truth.json`` written, the scenario's last step) instead of running it again. Without
:data:`RUNS_ENV` (``make test``) every run goes to a fresh temporary directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol

from ._lab import Lab

RUNS_ENV = "MINIKAFKA_LAB_RUNS"
REUSE_ENV = "MINIKAFKA_LAB_REUSE"
FINISHED = "truth.json"


class _TempDirs(Protocol):
    def mktemp(self, basename: str, numbered: bool = True) -> Path: ...


def scenario_run(lab: Lab, temp: _TempDirs, **options: object) -> Path:
    """The directory of a finished run of ``lab``'s scenario (run now, or reused)."""
    kept = os.environ.get(RUNS_ENV)
    if not kept:
        out: Path = lab.module("scenario").run(
            temp.mktemp(f"lab{lab.number:02d}"), **options
        )
        return out
    home = Path(kept) / lab.name
    if os.environ.get(REUSE_ENV) and (home / FINISHED).exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    finished: Path = lab.module("scenario").run(home, **options)
    return finished
