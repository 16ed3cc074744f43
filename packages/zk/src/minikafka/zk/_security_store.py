"""Reading and writing SCRAM credentials and ACLs in ZooKeeper (Kafka 3.x's
``KafkaZkClient``: ``getEntityConfigs``, ``getVersionedAclsForResource``,
``conditionalSetAclsForResource``, ``createAclChangeNotification``).

The encoding is :mod:`._security_znodes`'; here are the reads and the writes as
transaction operations. Every write names the version it read (a concurrent writer
makes the transaction fail, and the caller reads and decides again) and carries its
change notification, so a change is never written without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from kazoo.exceptions import NoNodeError

from minikafka.security import AccessControlEntry, ResourcePattern, ScramCredential

from ._client import Create, Delete, Op, SetData, ZkClient
from ._config_changes import ConfigChangeCursor
from ._security_znodes import (
    ACL_CHANGE_PREFIX,
    USER_CONFIGS,
    USERS_ENTITY,
    acl_change_parent,
    acl_path,
    acl_type_paths,
    decode_acl_change,
    decode_acls,
    desanitize,
    encode_acl_change,
    encode_acls,
    sanitize,
    scram_credentials,
    user_config_path,
)
from ._znodes import (
    CONFIG_CHANGE_PREFIX,
    CONFIG_CHANGES,
    decode_entity_config,
    encode_config_change,
    encode_topic_config,
)

ResourcePatternAcls: TypeAlias = dict[
    ResourcePattern, tuple[frozenset[AccessControlEntry], int]
]
"""Each stored pattern's ACLs and its znode's version."""


async def read_user_config(zk: ZkClient, user: str) -> tuple[dict[str, str], int]:
    """A user's config entries and the znode's version (-1: no znode)."""
    path = user_config_path(user)
    try:
        data, stat = await zk.get(path)
    except NoNodeError:
        return {}, -1
    return decode_entity_config(path, data), stat.version


def user_config_ops(user: str, config: Mapping[str, str], version: int) -> list[Op]:
    """Write a user's config over ``version`` (-1: create it) and announce it."""
    path, encoded = user_config_path(user), encode_topic_config(config)
    write: Op = (
        Create(path, encoded, parents=True)
        if version < 0
        else SetData(path, encoded, version)
    )
    notify = Create(
        f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}",
        encode_config_change(USERS_ENTITY, sanitize(user)),
        parents=True,
        sequence=True,
    )
    return [write, notify]


async def read_all_scram_credentials(
    zk: ZkClient,
) -> dict[str, dict[str, ScramCredential]]:
    """Every user's SCRAM credentials (user -> mechanism name -> credential)."""
    try:
        children = await zk.get_children(USER_CONFIGS)
    except NoNodeError:
        return {}
    read = await zk.get_many([f"{USER_CONFIGS}/{c}" for c in children])
    users: dict[str, dict[str, ScramCredential]] = {}
    for child in children:
        path = f"{USER_CONFIGS}/{child}"
        found = read[path]
        if found is None:
            continue
        try:
            credentials = scram_credentials(decode_entity_config(path, found[0]))
        except ValueError:
            continue  # not a config znode: no credential, as Kafka logs and skips it
        if credentials:
            users[desanitize(child)] = credentials
    return users


async def read_acls(
    zk: ZkClient, pattern: ResourcePattern
) -> tuple[frozenset[AccessControlEntry], int]:
    """A pattern's ACLs and its znode's version (-1: no znode, no ACL)."""
    path = acl_path(pattern)
    try:
        data, stat = await zk.get(path)
    except NoNodeError:
        return frozenset(), -1
    return decode_acls(path, data), stat.version


def acl_ops(
    pattern: ResourcePattern, entries: frozenset[AccessControlEntry], version: int
) -> list[Op]:
    """Write a pattern's ACLs over ``version`` (-1: create the znode; no ACL left: delete
    it, as Kafka's ``deleteResource`` does) and announce the change."""
    path = acl_path(pattern)
    write: Op
    if not entries:
        write = Delete(path, version)
    elif version < 0:
        write = Create(path, encode_acls(entries), parents=True)
    else:
        write = SetData(path, encode_acls(entries), version)
    notify = Create(
        f"{acl_change_parent(pattern)}/{ACL_CHANGE_PREFIX}",
        encode_acl_change(pattern),
        parents=True,
        sequence=True,
    )
    return [write, notify]


async def read_all_acls(zk: ZkClient) -> ResourcePatternAcls:
    """Every stored pattern's ACLs and znode version. A znode that does not decode is
    left out (Kafka's authorizer fails to load it and logs)."""
    found: ResourcePatternAcls = {}
    for pattern_type, kind, parent in acl_type_paths():
        try:
            names = await zk.get_children(parent)
        except NoNodeError:
            continue
        read = await zk.get_many([f"{parent}/{n}" for n in names])
        for name in names:
            got = read[f"{parent}/{name}"]
            if got is None:
                continue
            try:
                entries = decode_acls(f"{parent}/{name}", got[0])
            except ValueError:
                continue
            found[ResourcePattern(kind, name, pattern_type)] = (
                entries,
                got[1].version,
            )
    return found


async def read_acl_changes(
    zk: ZkClient, parent: str, cursor: ConfigChangeCursor
) -> tuple[list[tuple[int, ResourcePattern | None]], dict[str, int]]:
    """List ``parent``'s notifications (setting the watch again): (number, pattern) of
    each not handled yet, oldest first (None: it names no pattern, and is skipped), and
    when each child was created (for purging)."""
    await zk.ensure_path(parent)
    children = await zk.get_children(parent, watch=True)
    read = await zk.get_many([f"{parent}/{c}" for c in children])
    created = {
        c: got[1].created_ms
        for c in children
        if (got := read[f"{parent}/{c}"]) is not None
    }
    changes: list[tuple[int, ResourcePattern | None]] = []
    for number, child in cursor.new(children):
        got = read[f"{parent}/{child}"]
        if got is None:
            continue  # purged meanwhile
        try:
            changes.append((number, decode_acl_change(parent, got[0])))
        except ValueError:
            changes.append((number, None))
    return changes, created
