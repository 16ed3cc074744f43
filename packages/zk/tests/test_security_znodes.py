"""SCRAM credentials and ACLs as ZooKeeper mode keeps them: the znodes' bytes (Kafka
3.x's ``ScramCredentialUtils``, ``AclEntry``, ``ZkAclChangeStore``) and the reads and
writes on a real ZooKeeper.

Guarantees checked:

- a credential is Kafka's ``salt=...,stored_key=...,server_key=...,iterations=...``
  string, read back as the same credential; a string missing a field is refused, and
  a user's other config entries (quotas) are not taken for credentials;
- a user name is sanitized as Kafka's ``Sanitizer`` does and comes back unchanged;
- an ACL znode is Kafka's version 1 JSON with Kafka's names, under ``/kafka-acl`` or
  ``/kafka-acl-extended/prefixed``; both spellings of a name decode; bytes that are not
  an ACL znode say which path;
- a literal change notification is ``TOPIC:<name>`` (a name may hold colons), a
  prefixed one a version 1 JSON event; a later version is refused;
- on ZooKeeper: ACLs written with their notification are read back, the notification
  names the pattern, and removing a pattern's last ACL deletes its znode; a user's
  config is written with its ``users/<user>`` notification.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from minikafka.security import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    ScramCredential,
)
from minikafka.zk import (
    ACL_CHANGE_PREFIX,
    EXTENDED_ACL_CHANGES,
    LITERAL_ACL_CHANGES,
    ConfigChangeCursor,
    ZkClient,
    ZnodeError,
    ZooKeeperServer,
    acl_ops,
    acl_path,
    decode_acls,
    decode_scram_credential,
    desanitize,
    encode_acl_change,
    encode_acls,
    encode_scram_credential,
    read_acl_changes,
    read_acls,
    read_all_acls,
    read_all_scram_credentials,
    read_config_changes,
    read_user_config,
    sanitize,
    scram_credentials,
    user_config_ops,
)
from minikafka.zk._security_znodes import decode_acl_change
from minikafka.zk.testing import needs_zookeeper

CREDENTIAL = ScramCredential(b"salt", b"stored", b"server", 4096)
ALICE_READS = AccessControlEntry(
    "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
)
BOB_DENIED = AccessControlEntry(
    "User:bob", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.DENY
)


def test_a_credential_is_kafkas_string_and_reads_back() -> None:
    text = encode_scram_credential(CREDENTIAL)
    assert text == (
        "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    )
    assert decode_scram_credential(text) == CREDENTIAL


def test_a_credential_missing_a_field_is_refused() -> None:
    with pytest.raises(ValueError, match="not a SCRAM credential"):
        decode_scram_credential("salt=c2FsdA==,iterations=4096")


def test_only_scram_entries_of_a_user_config_are_credentials() -> None:
    config = {
        "SCRAM-SHA-512": encode_scram_credential(CREDENTIAL),
        "SCRAM-SHA-256": "salt=!!,stored_key=,server_key=,iterations=1",
        "producer_byte_rate": "1024",
    }
    assert scram_credentials(config) == {"SCRAM-SHA-512": CREDENTIAL}


@pytest.mark.parametrize(
    ("user", "znode"),
    [
        ("alice", "alice"),
        ("a@b.com", "a%40b.com"),
        ("x y*", "x%20y%2A"),
        ("a/b", "a%2Fb"),
    ],
)
def test_a_user_name_is_sanitized_as_kafka_does(user: str, znode: str) -> None:
    assert sanitize(user) == znode
    assert desanitize(znode) == user


def test_an_acl_znode_is_kafkas_json_at_kafkas_path() -> None:
    literal = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PatternType.LITERAL)
    prefixed = ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED)
    assert acl_path(literal) == "/kafka-acl/TransactionalId/tx"
    assert acl_path(prefixed) == "/kafka-acl-extended/prefixed/Topic/orders-"
    encoded = encode_acls({BOB_DENIED, ALICE_READS})
    assert json.loads(encoded) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "IdempotentWrite",
                "host": "10.0.0.1",
            },
        ],
    }
    assert decode_acls("/p", encoded) == {ALICE_READS, BOB_DENIED}


def test_both_spellings_of_a_name_decode() -> None:
    data = json.dumps(
        {
            "version": 1,
            "acls": [
                {
                    "principal": "User:bob",
                    "permissionType": "DENY",
                    "operation": "IDEMPOTENT_WRITE",
                    "host": "10.0.0.1",
                }
            ],
        }
    ).encode()
    assert decode_acls("/p", data) == {BOB_DENIED}


@pytest.mark.parametrize(
    "data", [b"{", b'{"version":1}', b'{"version":1,"acls":[{"principal":"User:a"}]}']
)
def test_bytes_that_are_not_an_acl_znode_name_the_path(data: bytes) -> None:
    with pytest.raises(ZnodeError, match="/kafka-acl/Topic/t"):
        decode_acls("/kafka-acl/Topic/t", data)


def test_change_notifications_name_the_pattern() -> None:
    literal = ResourcePattern(ResourceType.GROUP, "a:b", PatternType.LITERAL)
    assert encode_acl_change(literal) == b"GROUP:a:b"
    assert decode_acl_change(LITERAL_ACL_CHANGES, b"GROUP:a:b") == literal
    prefixed = ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED)
    assert json.loads(encode_acl_change(prefixed)) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "orders-",
        "patternType": "PREFIXED",
    }
    assert (
        decode_acl_change(EXTENDED_ACL_CHANGES, encode_acl_change(prefixed)) == prefixed
    )


@pytest.mark.parametrize(
    ("parent", "data"),
    [
        (LITERAL_ACL_CHANGES, b"no-separator"),
        (LITERAL_ACL_CHANGES, b"TABLE:x"),
        (
            EXTENDED_ACL_CHANGES,
            b'{"version":2,"resourceType":"TOPIC","name":"x","patternType":"PREFIXED"}',
        ),
        (EXTENDED_ACL_CHANGES, b"[]"),
    ],
)
def test_a_notification_that_names_no_pattern_is_refused(
    parent: str, data: bytes
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (each case its own message)
        decode_acl_change(parent, data)


@asynccontextmanager
async def connected(server: ZooKeeperServer) -> AsyncIterator[ZkClient]:
    client = ZkClient(server.connect_string, session_timeout=6.0)
    await client.connect(connect_timeout=30.0)
    try:
        yield client
    finally:
        await client.close()


@pytest.mark.external
@needs_zookeeper
async def test_acls_and_their_notifications_round_trip_in_zookeeper(
    zookeeper: ZooKeeperServer,
) -> None:
    pattern = ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED)
    async with connected(zookeeper) as zk:
        assert await read_acls(zk, pattern) == (frozenset(), -1)
        await zk.transaction(acl_ops(pattern, frozenset({ALICE_READS}), -1))
        entries, version = await read_acls(zk, pattern)
        assert entries == {ALICE_READS}
        assert await read_all_acls(zk) == {pattern: (entries, version)}
        cursor = ConfigChangeCursor(prefix=ACL_CHANGE_PREFIX)
        changes, _ = await read_acl_changes(zk, EXTENDED_ACL_CHANGES, cursor)
        assert [p for _, p in changes] == [pattern]
        # The last ACL gone: the znode goes too, with a second notification.
        await zk.transaction(acl_ops(pattern, frozenset(), version))
        assert await zk.exists(acl_path(pattern)) is None
        assert await read_all_acls(zk) == {}
        changes, _ = await read_acl_changes(zk, EXTENDED_ACL_CHANGES, cursor)
        assert [p for _, p in changes] == [pattern, pattern]


@pytest.mark.external
@needs_zookeeper
async def test_a_user_config_is_written_with_its_notification(
    zookeeper: ZooKeeperServer,
) -> None:
    config = {"SCRAM-SHA-256": encode_scram_credential(CREDENTIAL), "quota": "1"}
    async with connected(zookeeper) as zk:
        await zk.transaction(user_config_ops("a@b.com", config, -1))
        assert await read_user_config(zk, "a@b.com") == (config, 0)
        assert await read_all_scram_credentials(zk) == {
            "a@b.com": {"SCRAM-SHA-256": CREDENTIAL}
        }
        changes, _ = await read_config_changes(zk, ConfigChangeCursor())
        assert [(kind, name) for _, kind, name in changes] == [("users", "a%40b.com")]
