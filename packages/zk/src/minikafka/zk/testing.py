"""Helpers other packages' tests reuse for ZooKeeper mode: :data:`needs_zookeeper`, the
mark that skips a test when Debian's ZooKeeper is not installed, and the ``zookeeper``
fixture, a real server of the test's own (:class:`~minikafka.zk.ZooKeeperServer` on a
port of :func:`~minikafka.common.testing.free_ports`), killed after it.

A test suite takes the fixture into its ``conftest.py``
(``from minikafka.zk.testing import zookeeper as zookeeper``) and marks its ZooKeeper
tests ``needs_zookeeper``.

:func:`drop_connection` and :func:`expire_session` break a client's connection or end
its session the way kazoo's own test harness does, from the client's side.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.protocol.connection import _CONNECTION_DROP, _SESSION_EXPIRED

from minikafka.common.testing import free_ports

from ._client import ZkClient
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


def drop_connection(zk: ZkClient) -> None:
    """Break ``zk``'s connection as a network fault would: the requests in flight fail
    with ``ConnectionLoss``, the client goes ``SUSPENDED`` and connects again to the same
    session, which lives on."""
    zk._client()._call(_CONNECTION_DROP, None)


def expire_session(zk: ZkClient) -> None:
    """End ``zk``'s session as its expiry would, seen from the client: the requests in
    flight fail with ``SessionExpiredError``, the client goes ``LOST`` and then connects
    in a new session. (ZooKeeper itself forgets the old session, and deletes its
    ephemeral znodes, only once its timeout has passed.)"""
    zk._client()._call(_SESSION_EXPIRED, None)
