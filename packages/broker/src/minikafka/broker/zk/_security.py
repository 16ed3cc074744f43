"""SCRAM credentials and ACLs in ZooKeeper mode, the shell (Kafka 3.x's ZooKeeper-mode
``ZkAdminManager.alterUserScramCredentials``, ``AclAuthorizer`` and its
``ZkNodeChangeNotificationListener``\\ s, the ``CredentialCache`` its
``UserConfigHandler`` fills).

No controller takes part. The broker a client sends AlterUserScramCredentials,
CreateAcls or DeleteAcls to reads the znodes concerned, decides with KRaft's checks
(:mod:`._security_diff`) and writes the new contents over the versions it read, each
with its change notification, in one transaction (a concurrent writer makes it fail:
read and decide again). The client is answered once ZooKeeper has them.

Every broker, this one too, follows the notifications (:class:`ZkSecuritySource`): a
user's (``/config/changes``, entity ``users/<user>``, handed over by the
:class:`~._config_changes.DynamicConfigManager`) and the ACL changes'
(``/kafka-acl-changes``, ``/kafka-acl-extended-changes``), reads the named znode again,
and puts the credentials and the ACLs in the broker's image as KRaft's records: the
SASL listeners' credential lookup, the authorizer, DescribeUserScramCredentials and
DescribeAcls read them there, as in KRaft mode.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import ClassVar

import attrs
import trio
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ControllerError,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from minikafka.security import (
    AccessControlEntry,
    ResourcePattern,
    ScramCredential,
)
from minikafka.zk import (
    ACL_CHANGE_PREFIX,
    ACL_CHANGES,
    CONFIG_CHANGE_EXPIRATION_MS,
    ConfigChangeCursor,
    Op,
    ZkClient,
    acl_ops,
    desanitize,
    purge_expired_config_changes,
    read_acl_changes,
    read_acls,
    read_all_acls,
    read_all_scram_credentials,
    read_user_config,
    scram_credentials,
    user_config_ops,
)

from .._local_replicas import LoggingFaultHandler
from ._metadata import ZkBrokerMetadata
from ._notifications import NotificationFollower
from ._security_diff import (
    acl_image,
    acls_created,
    acls_deleted,
    altered_user_configs,
    scram_image,
    storable,
)

_logger = logging.getLogger("minikafka.broker")
_CONFLICTS = (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError)
"""What a transaction meets when another writer was first: read and decide again."""

SecurityRequest = (
    AlterUserScramCredentialsRequest | CreateAclsRequest | DeleteAclsRequest
)
SecurityAnswer = (
    AlterUserScramCredentialsResponse | CreateAclsResponse | DeleteAclsResponse
)


_RETRIES = 10
"""How often a write that lost a race is decided again before the request fails with
UNKNOWN_SERVER_ERROR (Kafka's ``AclAuthorizer`` gives up after as many)."""


async def _write_scram(
    zk: ZkClient, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    named = [d.name for d in request.deletions if d.name]
    named += [u.name for u in request.upsertions if u.name]
    for _ in range(_RETRIES):
        read = {user: await read_user_config(zk, user) for user in dict.fromkeys(named)}
        altered, answer = altered_user_configs(
            {user: config for user, (config, _) in read.items()}, request
        )
        ops: list[Op] = []
        for user, config in altered.items():
            ops += user_config_ops(user, config, read[user][1])
        try:
            if ops:
                await zk.transaction(ops)
        except _CONFLICTS:
            continue
        return answer
    raise ControllerError(ErrorCode.unknown_server_error)


async def _write_acls(
    zk: ZkClient, request: CreateAclsRequest | DeleteAclsRequest
) -> CreateAclsResponse | DeleteAclsResponse:
    for _ in range(_RETRIES):
        if isinstance(request, CreateAclsRequest):
            patterns = {b.pattern for b in request.creations if storable(b.pattern)}
            versions = {p: await read_acls(zk, p) for p in patterns}
        else:
            versions = await read_all_acls(zk)
        current = {p: entries for p, (entries, _) in versions.items()}
        changed, answer = (
            acls_created(current, request)
            if isinstance(request, CreateAclsRequest)
            else acls_deleted(current, request)
        )
        ops: list[Op] = []
        for pattern, entries in changed.items():
            ops += acl_ops(pattern, entries, versions.get(pattern, ((), -1))[1])
        try:
            if ops:
                await zk.transaction(ops)
        except _CONFLICTS:
            continue
        return answer
    raise ControllerError(ErrorCode.unknown_server_error)


async def write_security_change(
    zk: ZkClient, request: SecurityRequest
) -> SecurityAnswer:
    """A client's credential or ACL change, written to ZooKeeper by this broker.
    ZooKeeper unreachable: REQUEST_TIMED_OUT for everything asked, nothing written."""
    try:
        if isinstance(request, AlterUserScramCredentialsRequest):
            return await _write_scram(zk, request)
        return await _write_acls(zk, request)
    except KazooException as exc:
        _logger.warning("%s not written: %r", type(request).__name__, exc)
        raise ControllerError(ErrorCode.request_timed_out) from exc


@attrs.define(eq=False)
class ZkSecuritySource(NotificationFollower):
    """One broker's copy of the credentials and the ACLs ZooKeeper holds, kept in its
    image. :meth:`start` reads them all; then :meth:`on_user_config_change` (from
    ``/config/changes``) and :meth:`notify` (an ACL change parent's watch fired, or the
    session is back; :class:`~._notifications.NotificationFollower`'s loop) keep them
    current."""

    zk: ZkClient
    metadata: ZkBrokerMetadata
    publish: Callable[[], None]
    faults: LoggingFaultHandler
    expiration_ms: int = CONFIG_CHANGE_EXPIRATION_MS
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)
    users: dict[str, dict[str, ScramCredential]] = attrs.field(factory=dict)
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = attrs.field(
        factory=dict
    )
    cursors: dict[str, ConfigChangeCursor] = attrs.field(
        factory=lambda: {
            p: ConfigChangeCursor(prefix=ACL_CHANGE_PREFIX) for p in ACL_CHANGES
        }
    )
    _wanted: trio.Event = attrs.field(init=False, factory=trio.Event)
    NOTIFICATIONS: ClassVar[str] = "ACL change"

    async def start(self) -> None:
        """Set the ACL change watches, skip the notifications already there, then read
        every credential and ACL (each later change is a notification handled after).
        Called after the config change manager's start, for the users' changes."""
        for parent, cursor in self.cursors.items():
            await self.zk.ensure_path(parent)
            cursor.skip_existing(await self.zk.get_children(parent, watch=True))
        self.users = await read_all_scram_credentials(self.zk)
        self.acls = {p: e for p, (e, _) in (await read_all_acls(self.zk)).items()}
        self._apply()

    async def on_user_config_change(self, entity: str) -> None:
        """A user's config changed (``users/<sanitized name>``): read it again. A
        user-and-client quota's entity (``users/<user>/clients/<client>``) holds no
        credential and is left alone."""
        if "/" in entity:
            return
        user = desanitize(entity)
        config, _ = await read_user_config(self.zk, user)
        credentials = scram_credentials(config)
        if credentials:
            self.users[user] = credentials
        else:
            self.users.pop(user, None)
        self._apply()

    async def process(self) -> None:
        """Read again each pattern a notification not handled yet names, then purge the
        expired notifications. A notification naming no pattern is skipped, as Kafka
        logs and skips it."""
        for parent, cursor in self.cursors.items():
            changes, created = await read_acl_changes(self.zk, parent, cursor)
            for number, pattern in changes:
                if pattern is not None and storable(pattern):
                    entries, _ = await read_acls(self.zk, pattern)
                    if entries:
                        self.acls[pattern] = entries
                    else:
                        self.acls.pop(pattern, None)
                cursor.handled(number)
            if changes:
                self._apply()
            await purge_expired_config_changes(
                self.zk, created, self.clock_ms(), self.expiration_ms, parent=parent
            )

    def _apply(self) -> None:
        self.metadata.image = attrs.evolve(
            self.metadata.image,
            scram=scram_image(self.users),
            acls=acl_image(self.acls),
        )
        self.publish()
