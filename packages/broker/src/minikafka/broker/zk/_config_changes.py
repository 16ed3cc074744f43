"""Dynamic topic and broker configs in ZooKeeper mode (Kafka 2.8's ``ZkAdminManager``
with ``AdminZkClient.changeTopicConfig`` and ``changeBrokerConfig``, and its
``DynamicConfigManager`` with a ``ZkNodeChangeNotificationListener`` on every broker).

No controller takes part. The broker a client sends IncrementalAlterConfigs or
AlterConfigs to, once it has checked what only a broker checks (:mod:`.._alter_configs`),
makes the change itself (:func:`alter_configs_in_zookeeper`): it reads
``/config/topics/<topic>`` (or, for a broker resource, ``/config/brokers/<id>`` or
``/config/brokers/<default>``), computes the new overrides with the functions KRaft's
controller uses (:func:`minikafka.controller.incrementally_altered`,
:func:`minikafka.controller.replaced_configs`: one bad entry refuses the resource, with
Kafka's error), and writes them with a change notification under ``/config/changes``
(:func:`minikafka.zk.alter_topic_config`). The client is answered once ZooKeeper has
both.

Every broker, this one too, follows the notifications (:class:`DynamicConfigManager`):
when ``/config/changes`` gets a child, it reads the notifications it has not handled,
in order, and for each entity named reads its znode again and applies it
(:mod:`._config_handlers`: the broker's copy, which DescribeConfigs and the partitions'
settings read; the controller broker's controller updates its copy too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import ClassVar

import attrs
import trio
from kazoo.exceptions import KazooException
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    ConfigChangeError,
    ConfigResourceType,
    ControllerError,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    incrementally_altered,
    replaced_configs,
)
from minikafka.zk import (
    BROKERS_ENTITY,
    CONFIG_CHANGE_EXPIRATION_MS,
    CONFIG_CHANGES,
    TOPICS_ENTITY,
    USERS_ENTITY,
    ConfigChangeCursor,
    ZkClient,
    alter_broker_config,
    alter_topic_config,
    broker_resource,
    purge_expired_config_changes,
    read_config_changes,
)

from .._local_replicas import LoggingFaultHandler
from ._notifications import NotificationFollower

_logger = logging.getLogger("minikafka.broker")

ConfigChange = IncrementalAlterConfigsRequest | AlterConfigsRequest
ConfigChangeAnswer = IncrementalAlterConfigsResponse | AlterConfigsResponse


async def alter_configs_in_zookeeper(
    zk: ZkClient, request: ConfigChange
) -> ConfigChangeAnswer:
    """One resource's change, written to ZooKeeper by this broker: a topic's overrides
    (``/config/topics/<topic>``) or a broker resource's dynamic configs
    (``/config/brokers/<id>``, ``/config/brokers/<default>`` for ``""``; Kafka 2.8's
    ``changeBrokerConfig``). A broker resource's keys and values have been checked by
    the broker's own check (:func:`.._dynamic_config.check_broker_change`);
    ``incrementally_altered`` checks only a topic's."""
    answer = (
        IncrementalAlterConfigsResponse
        if isinstance(request, IncrementalAlterConfigsRequest)
        else AlterConfigsResponse
    )
    kind, name = request.resource_type, request.resource_name

    def alter(current: dict[str, str]) -> dict[str, str]:
        if isinstance(request, IncrementalAlterConfigsRequest):
            return incrementally_altered(kind, current, request.configs)
        return replaced_configs(kind, request.configs)

    try:
        if kind == ConfigResourceType.BROKER:
            await alter_broker_config(
                zk, name, alter, validate_only=request.validate_only
            )
            return answer(ErrorCode.none)
        if kind != ConfigResourceType.TOPIC:
            alter({})  # checked, as the controller checks it; nothing to write
            return answer(ErrorCode.none)
        altered = await alter_topic_config(
            zk, name, alter, validate_only=request.validate_only
        )
    except ConfigChangeError as exc:
        return answer(exc.error_code, str(exc))
    except KazooException as exc:
        _logger.warning("config change of %s %r not written: %r", kind, name, exc)
        raise ControllerError(ErrorCode.request_timed_out) from exc
    if altered is None:
        return answer(
            ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist."
        )
    return answer(ErrorCode.none)


async def _ignore(name: str) -> None:
    """A listener that does nothing with a broker resource's change."""


@attrs.define(eq=False)
class DynamicConfigManager(NotificationFollower):
    """Follows ``/config/changes`` for one broker: :meth:`notify` when its children
    watch fires (or the session is back: a watch may have been lost), and :meth:`run`
    (:class:`~._notifications.NotificationFollower`'s loop) handles every notification
    not handled yet, in order, calling ``on_topic_config``
    with each topic named, ``on_broker_config`` with each broker resource named
    (``""`` for ``brokers/<default>``, else the id: every broker's, the listener
    decides which it follows) and ``on_user_config`` with each user named.

    A notification whose handling fails because ZooKeeper cannot be reached is not
    marked handled: it is handled again at the next notification or reconnection
    (Kafka marks it handled anyway and logs the error). Any other failure is logged
    and the notification counted as handled, as Kafka does."""

    zk: ZkClient
    on_topic_config: Callable[[str], Awaitable[None]]
    faults: LoggingFaultHandler
    on_broker_config: Callable[[str], Awaitable[None]] = attrs.field(
        default=_ignore, kw_only=True
    )
    on_user_config: Callable[[str], Awaitable[None]] = attrs.field(
        default=_ignore, kw_only=True
    )
    """A user's config changed (its sanitized name): its SCRAM credentials."""
    expiration_ms: int = CONFIG_CHANGE_EXPIRATION_MS
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)
    """Wall-clock milliseconds, as ZooKeeper stamps a znode's creation."""
    cursor: ConfigChangeCursor = attrs.field(factory=ConfigChangeCursor)
    _wanted: trio.Event = attrs.field(init=False, factory=trio.Event)
    NOTIFICATIONS: ClassVar[str] = "config change"

    async def start(self) -> None:
        """Set the watch and skip the notifications already there: a broker reads a
        topic's config in full when it first hosts the topic, so older changes are in
        what it reads."""
        await self.zk.ensure_path(CONFIG_CHANGES)
        self.cursor.skip_existing(
            await self.zk.get_children(CONFIG_CHANGES, watch=True)
        )

    async def process(self) -> None:
        """Handle every notification not handled yet, then purge the expired ones.
        Raises ``KazooException`` if ZooKeeper failed (the rest waits for the next
        call)."""
        changes, created = await read_config_changes(self.zk, self.cursor)
        for number, kind, name in changes:
            try:
                await self._handle(kind, name)
            except KazooException:
                raise
            except Exception as exc:
                self.faults.handle_fault(
                    f"Error applying the config change of {kind}/{name}", exc
                )
            self.cursor.handled(number)
        await purge_expired_config_changes(
            self.zk, created, self.clock_ms(), self.expiration_ms
        )

    async def _handle(self, kind: str, name: str) -> None:
        """One notification's entity to its listener (other entity types, clients'
        quotas, have none here)."""
        if kind == TOPICS_ENTITY:
            await self.on_topic_config(name)
        elif kind == BROKERS_ENTITY:
            await self.on_broker_config(broker_resource(name))
        elif kind == USERS_ENTITY:
            await self.on_user_config(name)
