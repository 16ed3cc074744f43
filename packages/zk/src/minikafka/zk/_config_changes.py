"""Dynamic configs in ZooKeeper mode: the write and the notification every broker follows
(Kafka 2.8's ``AdminZkClient.changeTopicConfig`` and ``changeBrokerConfig``, and
``ZkNodeChangeNotificationListener``).

A topic's overrides live in one znode, ``/config/topics/<topic>``; a broker's dynamic
configs (KIP-226) in ``/config/brokers/<id>``, and the cluster-wide default ones in
``/config/brokers/<default>``. Changing one takes two writes, made here in one
ZooKeeper transaction:

- the znode's new content, over the version that was read (a concurrent change makes
  the transaction fail, and :func:`alter_topic_config` or :func:`alter_broker_config`
  reads and computes again), for a topic with a check that ``/brokers/topics/<topic>``
  still exists;
- a *change notification*, the sequential znode ``/config/changes/config_change_<n>``
  naming the entity (``{"version":2,"entity_path":"topics/<topic>"}``, or
  ``"brokers/<id>"``, ``"brokers/<default>"``).

Kafka makes the two writes one after the other; one transaction means a change is
never written without its notification.

Every broker watches ``/config/changes`` (a children watch). When it fires, the broker
lists the notifications, takes those numbered above the last one it handled, in
number order (:class:`ConfigChangeCursor`), and reads each named entity's znode again:
the notification says only *which* config changed. Notifications older than
:data:`CONFIG_CHANGE_EXPIRATION_MS` are deleted as they are listed
(:func:`purge_expired_config_changes`), so the list stays short.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

import attrs
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from ._client import Check, Create, Op, SetData, ZkClient
from ._znodes import (
    CONFIG_CHANGE_PREFIX,
    CONFIG_CHANGES,
    broker_config_path,
    broker_entity,
    config_change_number,
    decode_broker_config,
    decode_config_change,
    decode_entity_config,
    encode_config_change,
    encode_topic_config,
    topic_config_path,
    topic_path,
)

CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
"""How old a change notification gets before it is deleted (Kafka's
``changeExpirationMs``): long enough for every live broker to have read it."""

TOPICS_ENTITY = "topics"
"""The entity type of a topic's config (``/config/topics``), as notifications name it."""

BROKERS_ENTITY = "brokers"
"""The entity type of a broker's dynamic config (``/config/brokers``): a notification
names ``brokers/<id>`` or ``brokers/<default>``."""


@attrs.define
class ConfigChangeCursor:
    """Which notifications a broker has handled: every one numbered up to :attr:`last`.
    ZooKeeper numbers a parent's sequential children in creation order, so handling them
    in number order handles the changes in the order they were written."""

    last: int = -1
    prefix: str = CONFIG_CHANGE_PREFIX
    """The notifications' names before their number (ACL changes': ``acl_changes_``)."""

    def skip_existing(self, children: Iterable[str]) -> None:
        """Start after the newest notification there is (a broker starting up reads a
        topic's config when it first hosts the topic: older changes are in it)."""
        numbers = [
            n
            for c in children
            if (n := config_change_number(c, self.prefix)) is not None
        ]
        self.last = max([self.last, *numbers])

    def new(self, children: Iterable[str]) -> list[tuple[int, str]]:
        """(number, child) of each notification not handled yet, oldest first."""
        found = [
            (n, c)
            for c in children
            if (n := config_change_number(c, self.prefix)) is not None and n > self.last
        ]
        return sorted(found)

    def handled(self, number: int) -> None:
        self.last = max(self.last, number)


def expired(
    created_ms: Mapping[str, int], now_ms: int, expiration_ms: int
) -> list[str]:
    """The notifications (child -> when created) older than ``expiration_ms``."""
    return sorted(c for c, at in created_ms.items() if now_ms - at > expiration_ms)


async def alter_topic_config(
    zk: ZkClient,
    topic: str,
    alter: Callable[[dict[str, str]], dict[str, str]],
    *,
    validate_only: bool = False,
) -> dict[str, str] | None:
    """Read the topic's overrides, compute the new ones with ``alter`` (which raises to
    refuse the change) and, unless ``validate_only``, write them with their
    notification. Returns the new overrides, or None if the topic does not exist."""
    return await _alter_entity_config(
        zk,
        topic_config_path(topic),
        (TOPICS_ENTITY, topic),
        alter,
        validate_only=validate_only,
        must_exist=topic_path(topic),
    )


async def alter_broker_config(
    zk: ZkClient,
    resource_name: str,
    alter: Callable[[dict[str, str]], dict[str, str]],
    *,
    validate_only: bool = False,
) -> dict[str, str]:
    """A broker resource's dynamic configs (KIP-226; Kafka 2.8's
    ``AdminZkClient.changeBrokerConfig``): ``resource_name`` ``""`` is the cluster-wide
    default, ``/config/brokers/<default>``, an id that broker's own,
    ``/config/brokers/<id>``. Read, computed with ``alter`` and, unless
    ``validate_only``, written with a notification naming ``brokers/<entity>``, as
    :func:`alter_topic_config` does. Returns the new configs."""
    altered = await _alter_entity_config(
        zk,
        broker_config_path(resource_name),
        (BROKERS_ENTITY, broker_entity(resource_name)),
        alter,
        validate_only=validate_only,
        must_exist=None,
    )
    assert altered is not None  # only a topic can be missing
    return altered


async def read_broker_config(zk: ZkClient, resource_name: str) -> dict[str, str]:
    """A broker resource's dynamic configs as ZooKeeper has them ({}: none written)."""
    try:
        data, _ = await zk.get(broker_config_path(resource_name))
    except NoNodeError:
        return {}
    return decode_broker_config(resource_name, data)


async def _alter_entity_config(
    zk: ZkClient,
    path: str,
    entity: tuple[str, str],
    alter: Callable[[dict[str, str]], dict[str, str]],
    *,
    validate_only: bool,
    must_exist: str | None,
) -> dict[str, str] | None:
    """The config znode at ``path`` read, altered and written over the version read,
    with the notification naming ``entity`` (type, znode name), in one transaction;
    None if ``must_exist`` (the entity's own znode) is gone."""
    while True:
        if must_exist is not None and await zk.exists(must_exist) is None:
            return None
        try:
            data, stat = await zk.get(path)
            current, version = decode_entity_config(path, data), stat.version
        except NoNodeError:
            current, version = {}, -1
        altered = alter(dict(current))
        if validate_only:
            return altered
        encoded = encode_topic_config(altered)
        write: Op = (
            Create(path, encoded, parents=True)
            if version < 0
            else SetData(path, encoded, version)
        )
        guard: list[Op] = [] if must_exist is None else [Check(must_exist, -1)]
        try:
            await zk.transaction(
                [
                    *guard,
                    write,
                    Create(
                        f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}",
                        encode_config_change(*entity),
                        parents=True,
                        sequence=True,
                    ),
                ]
            )
        except (BadVersionError, NodeExistsError, NoNodeError):
            # Someone changed (or created) the config since it was read, or the topic
            # went: read again, and decide again.
            continue
        return altered


async def read_config_changes(
    zk: ZkClient, cursor: ConfigChangeCursor
) -> tuple[list[tuple[int, str, str]], dict[str, int]]:
    """List ``/config/changes`` (setting the watch again) and read the notifications not
    handled yet: (number, entity type, entity name) of each, oldest first, and when each
    child listed was created (for :func:`expired`). A notification that cannot be
    decoded is skipped, as Kafka logs and skips it."""
    await zk.ensure_path(CONFIG_CHANGES)
    children = await zk.get_children(CONFIG_CHANGES, watch=True)
    read = await zk.get_many([f"{CONFIG_CHANGES}/{c}" for c in children])
    created = {
        c: found[1].created_ms
        for c in children
        if (found := read[f"{CONFIG_CHANGES}/{c}"]) is not None
    }
    changes: list[tuple[int, str, str]] = []
    for number, child in cursor.new(children):
        path = f"{CONFIG_CHANGES}/{child}"
        found = read[path]
        if found is None:
            continue  # purged meanwhile
        try:
            kind, name = decode_config_change(path, found[0])
        except ValueError:
            cursor.handled(number)
            continue
        changes.append((number, kind, name))
    return changes, created


async def purge_expired_config_changes(
    zk: ZkClient,
    created_ms: Mapping[str, int],
    now_ms: int,
    expiration_ms: int = CONFIG_CHANGE_EXPIRATION_MS,
    parent: str = CONFIG_CHANGES,
) -> list[str]:
    """Delete the notifications under ``parent`` older than ``expiration_ms`` (every
    broker does, so one may find it gone already)."""
    gone = expired(created_ms, now_ms, expiration_ms)
    for child in gone:
        with contextlib.suppress(NoNodeError):
            await zk.delete(f"{parent}/{child}")
    return gone
