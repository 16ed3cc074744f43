"""A pytest plugin the lab runner loads (``-p minikafka.labs._collected``): it writes how
many checks were collected to ``$MINIKAFKA_LAB_COLLECTED``, so a run that stops at the
first failure still says how many checks there are in all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

COLLECTED_ENV = "MINIKAFKA_LAB_COLLECTED"


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get(COLLECTED_ENV)
    if target:
        Path(target).write_text(str(len(session.items)))
