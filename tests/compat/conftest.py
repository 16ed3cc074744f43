"""Fixtures of the compatibility tests: a real broker process for real clients.

Every test that proves a cell of COMPAT.md's compatibility matrix is marked
``@pytest.mark.compat(api, client)``; ``scripts/compat_matrix.py`` builds the table from
those marks, and a test checks the README carries the current table.

Every broker process a test runs is watched: one that writes a traceback, or ends
without the test's ``stop()`` or ``kill()``, fails the test
(:class:`~tests.cluster._cluster.BrokerProcessWatch`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess
from tests.cluster._cluster import BrokerProcessWatch, check_crashes

_WATCH = BrokerProcessWatch()


@pytest.fixture(scope="session", autouse=True)
def _watch_broker_processes() -> Iterator[None]:
    """Every BrokerProcess a compatibility test starts (a fixture, or the test), watched."""
    with pytest.MonkeyPatch.context() as patch:
        _WATCH.install(patch)
        yield


@pytest.fixture(autouse=True)
def _no_broker_crashed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a passing test after which a broker process wrote a traceback or ended
    without ``stop()`` or ``kill()`` (torn down after the test's brokers are stopped)."""
    yield
    check_crashes(request.node, _WATCH.crashes())


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker per test module; tests use their own topic names."""
    with BrokerProcess(tmp_path_factory.mktemp("broker")) as process:
        yield process


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of this test alone (for restarts)."""
    with BrokerProcess(tmp_path / "data") as process:
        yield process


# The group tests' broker: a short initial rebalance delay (Kafka's 3 s would only slow
# them down) and a minimum session timeout below the consumers' own.
GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
}


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a module's groups; each test has its own topic and group."""
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), overrides=GROUP_OVERRIDES
    ) as process:
        yield process


@pytest.fixture
def own_group_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A group broker of this test alone, to restart."""
    with BrokerProcess(tmp_path / "data", overrides=GROUP_OVERRIDES) as process:
        yield process
