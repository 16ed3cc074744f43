"""ACLs kept in the metadata log (KIP-801), made, listed and deleted by a real client.

confluent-kafka's AdminClient, authenticated with PLAIN on a SASL_PLAINTEXT listener of
a broker whose ``authorizer.class.name`` is KRaft's StandardAuthorizer, creates ACLs
with CreateAcls, finds them with DescribeAcls (MATCH finds the literal, wildcard and
prefixed ACLs that apply to a name) and removes them with DeleteAcls; a bad principal
gets INVALID_REQUEST and the other creations of the request are kept. A broker with no
authorizer answers SECURITY_DISABLED, and an unknown authorizer class stops start-up.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from minikafka.broker import KafkaConfig
from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.common import ConfigError

pytestmark = pytest.mark.external

TIMEOUT = 30.0
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def sasl_overrides(plaintext: int, sasl: int) -> dict[str, str]:
    """A PLAINTEXT listener (the brokers' own, so its ANONYMOUS is a super user, as a
    Kafka user must configure it) and a SASL_PLAINTEXT one serving PLAIN for USERS;
    the authorizer on, ``User:admin`` a super user."""
    jaas = " ".join(f'user_{user}="{secret}"' for user, secret in USERS.items())
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            f"{PLAIN_MODULE} required {jaas};"
        ),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
    }


@pytest.fixture(scope="module")
def sasl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plaintext, sasl = free_ports(2)
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        port=plaintext,
        overrides=sasl_overrides(plaintext, sasl),
    ) as process:
        yield f"127.0.0.1:{sasl}"
        assert "Traceback" not in "\n".join(process.output)


def unique_name(prefix: str) -> str:
    """A name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin(address: str, user: str = "admin") -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
        }
    )


def topic_acl(
    name: str,
    principal: str = "User:alice",
    operation: AclOperation = AclOperation.WRITE,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, pattern, principal, "*", operation, permission
    )


def create(client: AdminClient, bindings: list[AclBinding]) -> list[int | None]:
    """Each creation's error code, None if it succeeded."""
    codes: list[int | None] = []
    for future in client.create_acls(bindings, request_timeout=TIMEOUT).values():
        try:
            future.result(timeout=TIMEOUT)
            codes.append(None)
        except KafkaException as exc:
            codes.append(exc.args[0].code())
    return codes


def _described(client: AdminClient, acl_filter: AclBindingFilter) -> set[AclBinding]:
    result = client.describe_acls(acl_filter, request_timeout=TIMEOUT).result(
        timeout=TIMEOUT
    )
    return set(result)


def _topic_filter(
    name: str | None, pattern: ResourcePatternType = ResourcePatternType.ANY
) -> AclBindingFilter:
    # None matches any name, principal or host (the stubs say str, the client takes None)
    return AclBindingFilter(
        ResourceType.TOPIC,
        name,  # type: ignore[arg-type]
        pattern,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


@pytest.mark.compat("CreateAcls", "confluent-kafka")
@pytest.mark.compat("DescribeAcls", "confluent-kafka")
@pytest.mark.compat("DeleteAcls", "confluent-kafka")
def test_created_acls_are_described_by_match_and_deleted_by_filter(
    sasl_address: str,
) -> None:
    client = admin(sasl_address)
    name = unique_name("acl-topic")
    literal = topic_acl(name)
    prefixed = topic_acl(name[:6], pattern=ResourcePatternType.PREFIXED)
    other = topic_acl(name + "-other", principal="User:bob")
    assert create(client, [literal, prefixed, other]) == [None, None, None]
    assert create(client, [literal]) == [None]  # an existing ACL: no error, no copy

    matching = _described(client, _topic_filter(name, ResourcePatternType.MATCH))
    assert literal in matching
    assert prefixed in matching
    assert other not in matching
    assert {literal, prefixed, other} <= _described(client, _topic_filter(None))

    futures = client.delete_acls([_topic_filter(name)], request_timeout=TIMEOUT)
    (deleted,) = [f.result(timeout=TIMEOUT) for f in futures.values()]
    assert deleted == [literal]
    left = _described(client, _topic_filter(None))
    assert literal not in left
    assert prefixed in left


def test_an_invalid_principal_is_refused_and_the_other_creations_are_kept(
    sasl_address: str,
) -> None:
    client = admin(sasl_address)
    name = unique_name("acl-bad")
    codes = create(client, [topic_acl(name, principal="alice"), topic_acl(name)])
    assert codes == [KafkaError.INVALID_REQUEST, None]
    assert _described(client, _topic_filter(name)) == {topic_acl(name)}


def test_a_broker_without_an_authorizer_answers_security_disabled(
    tmp_path: Path,
) -> None:
    plaintext, sasl = free_ports(2)
    overrides = sasl_overrides(plaintext, sasl)
    del overrides["authorizer.class.name"]
    with BrokerProcess(tmp_path, port=plaintext, overrides=overrides):
        client = admin(f"127.0.0.1:{sasl}")
        assert create(client, [topic_acl("t")]) == [KafkaError.SECURITY_DISABLED]
        futures = client.delete_acls([_topic_filter(None)], request_timeout=TIMEOUT)
        for future in futures.values():
            with pytest.raises(KafkaException) as deleted:
                future.result(timeout=TIMEOUT)
            assert deleted.value.args[0].code() == KafkaError.SECURITY_DISABLED


def test_an_unknown_authorizer_class_stops_start_up_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name"):
        KafkaConfig.from_properties(
            {"node.id": "1", "authorizer.class.name": "kafka.security.AclAuthorizer"}
        )
