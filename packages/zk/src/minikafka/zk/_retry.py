"""A request retried across a lost connection: Kafka's
``KafkaZkClient.retryRequestsUntilConnected``.

A connection to ZooKeeper can drop while its session lives on: the server restarts, or
the network between them fails for less than the session timeout. The requests in
flight then fail with a lost connection (kazoo's ``ConnectionLoss``), and nothing says
whether ZooKeeper applied them. Kafka's ZooKeeper-mode controller does not give up on
such a request: ``retryRequestsUntilConnected`` waits for its client to be connected
again (``ZooKeeperClient.waitUntilConnected``) and sends the request again, as often as
it takes. Only the end of the session ends the wait: a controller whose session expired
resigns. :func:`retry_until_connected` is that rule, for one step of any number of
requests.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kazoo.exceptions import ConnectionLoss

from ._client import ZkClient

T = TypeVar("T")

_logger = logging.getLogger("minikafka.zk")


async def retry_until_connected(zk: ZkClient, request: Callable[[], Awaitable[T]]) -> T:
    """Run ``request`` (one or more calls on ``zk``) until it is done; each time it
    fails on a lost connection (kazoo's ``ConnectionLoss``), wait for the connection
    to come back and run it again, as Kafka's ``retryRequestsUntilConnected`` does.

    The wait is bounded by the session the request began in: if that session ends
    (kazoo's ``LOST``), or no connection comes back within its timeout, kazoo's
    ``SessionExpiredError`` is raised (:meth:`~ZkClient.wait_until_connected`). A
    request started while the connection is lost (kazoo's ``SUSPENDED``) waits the
    same way before it is sent. Any other error is ``request``'s own.

    ``request`` must bear running again: a read does; a write that ZooKeeper applied
    just before the connection dropped fails the second time, over the versions it
    changed, and its caller meets that as it meets anyone else's write.
    """
    session = zk.session
    while True:
        await zk.wait_until_connected(session)
        try:
            return await request()
        except ConnectionLoss:
            _logger.info(
                "ZooKeeper connection lost mid-request; retrying once connected"
            )
