"""SCRAM credentials and ACLs in ZooKeeper mode, with real clients, on two
``minikafka broker`` processes and Debian's ZooKeeper (Kafka 3.x's ZooKeeper mode:
``/config/users`` and ``/kafka-acl``, ``kafka.security.authorizer.AclAuthorizer``).

Each broker's client listener speaks SASL_PLAINTEXT (PLAIN for the ``admin`` super user,
SCRAM-SHA-256/512 with no configured user), the brokers talk over a PLAINTEXT
REPLICATION listener. What each test proves:

- a SCRAM user created through broker 0 (confluent-kafka's AdminClient) is written as
  Kafka writes it, ``SCRAM-SHA-256=salt=...,stored_key=...,server_key=...,iterations=``
  in ``/config/users/<user>`` with a ``users/<user>`` notification; SCRAM clients
  (confluent-kafka's, kafka-python's) then authenticate on broker 1, which describes
  the user; after the deletion,
  through broker 1, broker 0 refuses it; Kafka's errors for a deletion of what does
  not exist and a description of an unknown user;
- an ACL created through broker 0 is written under ``/kafka-acl-extended/prefixed``
  and enforced by broker 1: a SCRAM user refused WRITE on a topic led by broker 1 may
  produce once a prefixed ALLOW exists, and is refused again after kafka-python
  deletes it through broker 1; DescribeAcls agrees on both brokers;
- both survive a restart of every broker.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.admin import (
    ACLFilter,
    ACLPermissionType,
    KafkaAdminClient,
    ResourcePatternFilter,
)
from kafka.admin import ACLOperation as KpOperation
from kafka.admin import ACLResourcePatternType as KpPatternType
from kafka.admin import ResourceType as KpResourceType

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.zk import CONFIG_CHANGES, ZkClient, decode_config_change
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import FAST, SHARED, WAIT, wait_for

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.external,
    pytest.mark.skipif(
        not ZOOKEEPER_JAR.exists(),
        reason="Debian's zookeeper is installed by `make test`",
    ),
]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
BROKERS = (0, 1)


def _overrides() -> dict[str, str]:
    return {
        **FAST,
        "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,"
        "REPLICATION:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.plaintext.plain.sasl.jaas.config": (
            f'{PLAIN_MODULE} required user_admin="admin-secret";'
        ),
        "listener.name.plaintext.scram-sha-256.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
        "listener.name.plaintext.scram-sha-512.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
        "authorizer.class.name": ACL_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    ports = free_ports(2 * len(BROKERS) + 1)
    replication = {b: (ports[3 + b], ports[3 + b]) for b in BROKERS}
    made = ProcessCluster.create(
        Path(tmp_path_factory.mktemp("cluster")),
        len(BROKERS),
        broker_ports=ports[1:3],
        replication_ports=replication,
        overrides=_overrides(),
        zookeeper=True,
        zookeeper_port=ports[0],
    )
    SHARED.append(made)  # each test's crash check asks it too
    try:
        made.up()
        yield made
    finally:
        SHARED.remove(made)
        made.kill_all()


def address(cluster: ProcessCluster, broker: int) -> str:
    return f"{cluster.host}:{cluster.port(broker)}"


def admin(cluster: ProcessCluster, broker: int) -> AdminClient:
    """A PLAIN super user's admin client that knows only ``broker``."""
    return AdminClient(
        {
            "bootstrap.servers": address(cluster, broker),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )


def scram(
    cluster: ProcessCluster, broker: int, user: str, password: str
) -> dict[str, Any]:
    return {
        "bootstrap.servers": address(cluster, broker),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": password,
    }


def authenticates(cluster: ProcessCluster, broker: int, user: str, pw: str) -> bool:
    """Whether ``user`` passes SCRAM-SHA-256 on ``broker`` (asks for metadata there)."""
    client = AdminClient({**scram(cluster, broker, user, pw), "log_level": 0})
    try:
        client.list_topics(timeout=5)
    except KafkaException:
        return False
    return True


def in_zookeeper(cluster: ProcessCluster, path: str) -> tuple[bytes | None, list[str]]:
    """A znode's data (None: absent) and the entity paths ``/config/changes`` names."""

    async def read() -> tuple[bytes | None, list[str]]:
        client = ZkClient(cluster.zookeeper.connect_string, session_timeout=6.0)
        await client.connect(connect_timeout=WAIT)
        try:
            found = await client.get_many([path])
            named = []
            for child in await client.get_children(CONFIG_CHANGES):
                note, _ = await client.get(f"{CONFIG_CHANGES}/{child}")
                named.append("/".join(decode_config_change(child, note)))
            got = found[path]
            return (None if got is None else got[0]), named
        finally:
            await client.close()

    return trio.run(read)


def _result(future: Any) -> object:
    try:
        future.result(timeout=WAIT)
    except KafkaException as exc:
        return exc.args[0].name()
    return None


def test_a_scram_user_made_through_one_broker_authenticates_on_the_other(
    cluster: ProcessCluster,
) -> None:
    user = f"user-{uuid.uuid4().hex[:6]}"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    upsert = UserScramCredentialUpsertion(user, info, b"pw-1")
    first, second = admin(cluster, 0), admin(cluster, 1)  # kept: a freed client
    futures = first.alter_user_scram_credentials([upsert])  # fails its futures
    assert [_result(f) for f in futures.values()] == [None]

    data, named = in_zookeeper(cluster, f"/config/users/{user}")
    assert data is not None
    config = json.loads(data)["config"]
    fields = dict(p.split("=", 1) for p in config["SCRAM-SHA-256"].split(","))
    assert sorted(fields) == ["iterations", "salt", "server_key", "stored_key"]
    assert fields["iterations"] == "8192"
    assert f"users/{user}" in named

    wait_for(
        lambda: authenticates(cluster, 1, user, "pw-1"), f"{user} passes on broker 1"
    )
    assert not authenticates(cluster, 1, user, "wrong")
    # kafka-python's SCRAM client too, on broker 1 alone.
    kp = KafkaAdminClient(
        bootstrap_servers=address(cluster, 1),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username=user,
        sasl_plain_password="pw-1",
    )
    try:
        assert isinstance(kp.list_topics(), list)
    finally:
        kp.close()
    described = per_user(second.describe_user_scram_credentials([user]))
    description = described[user].result(timeout=WAIT)
    assert [
        (i.mechanism, i.iterations) for i in description.scram_credential_infos
    ] == [(ScramMechanism.SCRAM_SHA_256, 8192)]

    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
    futures = second.alter_user_scram_credentials([deletion])
    assert [_result(f) for f in futures.values()] == [None]
    wait_for(
        lambda: not authenticates(cluster, 0, user, "pw-1"),
        f"{user} refused on broker 0 once deleted",
    )
    # Kafka's errors: nothing to delete, nobody to describe.
    futures = first.alter_user_scram_credentials([deletion])
    assert [_result(f) for f in futures.values()] == ["RESOURCE_NOT_FOUND"]
    described = per_user(first.describe_user_scram_credentials([user]))
    assert _result(described[user]) == "RESOURCE_NOT_FOUND"


def produce(cluster: ProcessCluster, broker: int, user: str, topic: str) -> object:
    """One record from ``user``: None, or the error's name."""
    producer = Producer(
        {**scram(cluster, broker, user, "pw"), "linger.ms": 0, "log_level": 0}
    )
    outcome: list[KafkaError | None] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        outcome.append(err)

    producer.produce(topic, b"v", on_delivery=delivered)
    producer.flush(WAIT)
    assert len(outcome) == 1, "no answer to the produce"
    return None if outcome[0] is None else outcome[0].name()


def acl(prefix: str, user: str) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        prefix,
        ResourcePatternType.PREFIXED,
        f"User:{user}",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )


def every_acl(
    kind: ResourceType, name: str, pattern: ResourcePatternType
) -> AclBindingFilter:
    # None matches any principal or host (the stubs say str, the client takes None)
    return AclBindingFilter(
        kind,
        name,
        pattern,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def per_user(answer: object) -> dict[str, Any]:
    """describe_user_scram_credentials(users) answers one future per user."""
    assert isinstance(answer, dict)
    return answer


def kafka_python_admin(cluster: ProcessCluster, broker: int) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=address(cluster, broker),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password="admin-secret",
    )


def test_an_acl_made_through_one_broker_is_enforced_by_the_other(
    cluster: ProcessCluster,
) -> None:
    user, prefix = f"writer-{uuid.uuid4().hex[:6]}", f"acl-{uuid.uuid4().hex[:6]}-"
    topic = f"{prefix}t"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    client = admin(cluster, 0)
    upsert = UserScramCredentialUpsertion(user, info, b"pw")
    for future in client.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=WAIT)
    # Led by broker 1: the produce is broker 1's to authorize.
    created = client.create_topics([NewTopic(topic, 1, replica_assignment=[[1]])])
    assert [_result(f) for f in created.values()] == [None]
    wait_for(lambda: authenticates(cluster, 1, user, "pw"), f"{user} known on 1")
    assert produce(cluster, 1, user, topic) == "TOPIC_AUTHORIZATION_FAILED"

    made = client.create_acls([acl(prefix, user)], request_timeout=WAIT)
    assert [_result(f) for f in made.values()] == [None]
    data, _ = in_zookeeper(cluster, f"/kafka-acl-extended/prefixed/Topic/{prefix}")
    assert data is not None
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": f"User:{user}",
                "permissionType": "Allow",
                "operation": "Write",
                "host": "*",
            }
        ],
    }
    wait_for(lambda: produce(cluster, 1, user, topic) is None, "broker 1 allows it")
    any_for = every_acl(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED)
    for broker in BROKERS:
        asker = admin(cluster, broker)
        assert asker.describe_acls(any_for).result(timeout=WAIT) == [acl(prefix, user)]

    # kafka-python deletes it through broker 1; broker 1 refuses again.
    kp = kafka_python_admin(cluster, 1)
    try:
        kp_filter = ACLFilter(
            principal=None,
            host=None,
            operation=KpOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                KpResourceType.TOPIC, prefix, KpPatternType.PREFIXED
            ),
        )
        ((_, deleted, error),) = kp.delete_acls([kp_filter])
        assert error.errno == 0
        assert len(deleted) == 1
    finally:
        kp.close()
    wait_for(
        lambda: produce(cluster, 1, user, topic) == "TOPIC_AUTHORIZATION_FAILED",
        "broker 1 refuses once the ACL is deleted",
    )
    data, _ = in_zookeeper(cluster, f"/kafka-acl-extended/prefixed/Topic/{prefix}")
    assert data is None, "the last ACL of a pattern takes its znode with it"

    # Kafka's refusal (the cluster is named kafka-cluster), and minikafka's of a name
    # no znode can have: INVALID_REQUEST, nothing written.
    bad = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        f"User:{user}",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    nested = acl(f"{prefix}a/b", user)
    refused = client.create_acls([bad, nested], request_timeout=WAIT)
    assert [_result(f) for f in refused.values()] == ["INVALID_REQUEST"] * 2
    data, _ = in_zookeeper(cluster, f"/kafka-acl-extended/prefixed/Topic/{prefix}a")
    assert data is None


def test_credentials_and_acls_survive_a_restart_of_every_broker(
    cluster: ProcessCluster,
) -> None:
    user, name = f"kept-{uuid.uuid4().hex[:6]}", f"kept-{uuid.uuid4().hex[:6]}"
    client = admin(cluster, 0)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    upsert = UserScramCredentialUpsertion(user, info, b"pw")
    for future in client.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=WAIT)
    binding = AclBinding(
        ResourceType.GROUP,
        name,
        ResourcePatternType.LITERAL,
        f"User:{user}",
        "*",
        AclOperation.READ,
        AclPermissionType.DENY,
    )
    for future in client.create_acls([binding], request_timeout=WAIT).values():
        future.result(timeout=WAIT)
    for broker in BROKERS:
        cluster.restart(broker)
    for broker in BROKERS:
        asker = admin(cluster, broker)
        found = asker.describe_acls(
            every_acl(ResourceType.GROUP, name, ResourcePatternType.LITERAL)
        )
        assert found.result(timeout=WAIT) == [binding]
        described = per_user(asker.describe_user_scram_credentials([user]))
        infos = described[user].result(timeout=WAIT).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [
            (ScramMechanism.SCRAM_SHA_512, 4096)
        ]
