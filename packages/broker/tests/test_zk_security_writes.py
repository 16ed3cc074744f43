"""ZooKeeper mode's credential and ACL writes and the copy every broker keeps, on a real
ZooKeeper, without broker processes.

Guarantees checked:

- a creation that loses a race to another broker's on the same pattern is decided again
  over the new contents: both ACLs are kept, each with its notification;
- another broker's copy (:class:`ZkSecuritySource`) reads every credential and ACL at
  start, then follows the notifications: a new ACL, a deleted one, a new credential and
  a deleted one reach its image as KRaft's records; a notification naming no pattern is
  skipped and the ones after it handled, and a user-and-client quota's is ignored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker._local_replicas import LoggingFaultHandler
from minikafka.broker.zk._metadata import ZkBrokerMetadata
from minikafka.broker.zk._security import ZkSecuritySource, write_security_change
from minikafka.controller import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    ScramDeletion,
    ScramUpsertion,
)
from minikafka.security import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.zk import (
    LITERAL_ACL_CHANGES,
    Op,
    ZkClient,
    ZooKeeperServer,
    read_acls,
)
from minikafka.zk.testing import needs_zookeeper

pytestmark = [pytest.mark.external, needs_zookeeper]

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
READ = AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)
WRITE = AccessControlEntry("User:b", "*", AclOperation.WRITE, AclPermissionType.ALLOW)


class Racing(ZkClient):
    """A broker whose first transaction is preceded by another broker's creation."""

    other: ZkClient | None = None

    async def transaction(self, ops: Sequence[Op]) -> None:
        other, self.other = self.other, None
        if other is not None:
            request = CreateAclsRequest((AclBinding(ORDERS, WRITE),))
            await write_security_change(other, request)
        await super().transaction(ops)


@asynccontextmanager
async def connected(
    server: ZooKeeperServer, kind: type[ZkClient] = ZkClient
) -> AsyncIterator[ZkClient]:
    client = kind(server.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=30.0)
    try:
        yield client
    finally:
        await client.close()


async def test_a_creation_that_lost_a_race_is_decided_again(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper, Racing) as first, connected(zookeeper) as second:
        assert isinstance(first, Racing)
        first.other = second
        answer = await write_security_change(
            first, CreateAclsRequest((AclBinding(ORDERS, READ),))
        )
        assert isinstance(answer, CreateAclsResponse)
        assert [r.error_code for r in answer.results] == [ErrorCode.none]
        entries, _ = await read_acls(first, ORDERS)
        assert entries == {READ, WRITE}
        assert len(await first.get_children(LITERAL_ACL_CHANGES)) == 2


async def test_another_brokers_copy_follows_every_change(
    zookeeper: ZooKeeperServer,
) -> None:
    async with connected(zookeeper) as writer, connected(zookeeper) as reader:
        await write_security_change(
            writer, CreateAclsRequest((AclBinding(ORDERS, READ),))
        )
        metadata, published = ZkBrokerMetadata(1), []
        source = ZkSecuritySource(
            reader,
            metadata,
            lambda: published.append(1),
            LoggingFaultHandler("test"),
        )
        await source.start()
        assert [r.operation for r in metadata.image.acls.values()] == [
            AclOperation.READ
        ]
        assert published == [1]

        # A notification that names nothing, then a real change after it.
        await writer.create(f"{LITERAL_ACL_CHANGES}/acl_changes_", b"?", sequence=True)
        await write_security_change(
            writer, CreateAclsRequest((AclBinding(ORDERS, WRITE),))
        )
        await source.process()
        assert {r.operation for r in metadata.image.acls.values()} == {
            AclOperation.READ,
            AclOperation.WRITE,
        }
        every = AclBindingFilter(ResourcePatternFilter(), AccessControlEntryFilter())
        await write_security_change(writer, DeleteAclsRequest((every,)))
        await source.process()
        assert dict(metadata.image.acls) == {}
        assert await reader.exists("/kafka-acl/Topic/orders") is None

        upsert = ScramUpsertion("alice", 1, 4096, b"salt", b"s" * 32)
        answer = await write_security_change(
            writer, AlterUserScramCredentialsRequest((), (upsert,))
        )
        assert isinstance(answer, AlterUserScramCredentialsResponse)
        await source.on_user_config_change("alice")
        assert list(metadata.image.scram) == [("alice", 1)]
        # A user-and-client quota's notification names no credential: nothing read,
        # nothing published.
        before = len(published)
        await source.on_user_config_change("alice/clients/app")
        assert len(published) == before
        assert list(metadata.image.scram) == [("alice", 1)]
        deletion = ScramDeletion("alice", 1)
        await write_security_change(
            writer, AlterUserScramCredentialsRequest((deletion,), ())
        )
        await source.on_user_config_change("alice")
        assert dict(metadata.image.scram) == {}
