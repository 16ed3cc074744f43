"""Fixtures of the end-to-end tests: broker processes a test may kill -9 and restart.

Every broker process a test runs is watched: one that writes a traceback, or ends
without the test's ``stop()`` or ``kill()``, fails the test
(:class:`~tests.cluster._cluster.BrokerProcessWatch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess
from tests.cluster._cluster import BrokerProcessWatch, check_crashes

_WATCH = BrokerProcessWatch()


@pytest.fixture(scope="session", autouse=True)
def _watch_broker_processes() -> Iterator[None]:
    """Every BrokerProcess an end-to-end test starts (a fixture, or the test), watched."""
    with pytest.MonkeyPatch.context() as patch:
        _WATCH.install(patch)
        yield


@pytest.fixture(autouse=True)
def _no_broker_crashed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a passing test after which a broker process wrote a traceback or ended
    without ``stop()`` or ``kill()`` (torn down after the test's brokers are stopped)."""
    yield
    check_crashes(request.node, _WATCH.crashes())


@pytest.fixture
def expect_exit() -> Callable[[BrokerProcess], None]:
    """Call it with a BrokerProcess the test means to end by itself (a fatal fault it
    provokes): that exit is not a crash."""
    return _WATCH.expect_exit


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
