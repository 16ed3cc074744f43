"""What every ZooKeeper change-notification follower of a broker does between
notifications (Kafka's ``ZkNodeChangeNotificationListener``: a watch on a notification
parent, and a thread that processes the new children whenever it fires).

The broker's :class:`~._config_changes.DynamicConfigManager` (``/config/changes``) and
:class:`~._security.ZkSecuritySource` (``/kafka-acl-changes``,
``/kafka-acl-extended-changes``) differ only in :meth:`NotificationFollower.process`,
what a batch of notifications means. The loop is this one: a watch that fires, or a
session that is back (a watch may have been lost), calls :meth:`~NotificationFollower.
notify`; :meth:`~NotificationFollower.run` wakes, processes every notification not
handled yet, and waits again. Notifies that come while it processes fold into one more
round. A failure is the broker's fault handler's (logged with its traceback, counted,
the loop goes on); ZooKeeper unreachable is a warning only, since the reconnection
notifies again.
"""

from __future__ import annotations

import abc
import logging
from typing import ClassVar

import trio
from kazoo.exceptions import KazooException

from .._local_replicas import LoggingFaultHandler

_logger = logging.getLogger("minikafka.broker")


class NotificationFollower(abc.ABC):
    """The base of a broker's follower of ZooKeeper change notifications. A subclass
    (an attrs class) has the fields ``faults`` and ``_wanted`` (``trio.Event``, not
    in ``__init__``), names its notifications in :attr:`NOTIFICATIONS` and says in
    :meth:`process` what they mean."""

    NOTIFICATIONS: ClassVar[str]
    """What the log lines call them: "config change", "ACL change"."""
    faults: LoggingFaultHandler
    _wanted: trio.Event

    @abc.abstractmethod
    async def process(self) -> None:
        """Handle every notification not handled yet; raises ``KazooException`` if
        ZooKeeper failed (the rest waits for the next round)."""

    def notify(self) -> None:
        """A notification parent's watch fired, or the session is back."""
        self._wanted.set()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            with self.faults.guard(
                f"Error processing {self.NOTIFICATIONS} notifications"
            ):
                try:
                    await self.process()
                except KazooException as exc:
                    # ZooKeeper unreachable: the reconnection notifies again.
                    _logger.warning(
                        "%s notifications not read: %r", self.NOTIFICATIONS, exc
                    )
