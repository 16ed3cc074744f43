"""Fixtures of the end-to-end tests: broker processes a test may kill -9 and restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A started broker of this test alone, data in ``tmp_path / "data"``.

    The test may ``kill()``, ``start()`` and ``stop()`` it; whatever is still running at
    the end is stopped (or killed, if it does not stop in time).
    """
    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        if process.process is not None:
            process.stop()
