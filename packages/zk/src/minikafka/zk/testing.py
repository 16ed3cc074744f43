"""Helpers other packages' tests reuse for ZooKeeper mode: :data:`needs_zookeeper`, the
mark that skips a test when Debian's ZooKeeper is not installed, and the ``zookeeper``
fixture, a real server of the test's own (:class:`~minikafka.zk.ZooKeeperServer` on a
port of :func:`~minikafka.common.testing.free_ports`), killed after it.

A test suite takes the fixture into its ``conftest.py``
(``from minikafka.zk.testing import zookeeper as zookeeper``) and marks its ZooKeeper
tests ``needs_zookeeper``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.common.testing import free_ports

from ._server import ZOOKEEPER_JAR, ZooKeeperServer

needs_zookeeper = pytest.mark.skipif(
    not ZOOKEEPER_JAR.exists(), reason="Debian's zookeeper is installed by `make test`"
)


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A started ZooKeeper server of this test alone, its files under ``tmp_path``."""
    server = ZooKeeperServer(tmp_path / "zookeeper", free_ports(1)[0])
    server.start()
    try:
        yield server
    finally:
        server.kill()
