"""Produce authorized by ACLs (KIP-801's StandardAuthorizer), with real clients over
SASL_PLAINTEXT/PLAIN.

A user with no ACL on a topic gets TOPIC_AUTHORIZATION_FAILED on produce; an ALLOW WRITE
ACL lets it produce; a DENY beats an ALLOW; a PREFIXED ACL grants a family of topics;
a super user needs no ACL. The brokers' own principal (ANONYMOUS, on the PLAINTEXT
listener) is a super user, as a Kafka cluster with an authorizer must configure it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from minikafka.broker.testing import BrokerProcess, free_ports
from tests.cluster._cluster import wait_for
from tests.compat.test_acls import (
    TIMEOUT,
    USERS,
    admin,
    create,
    sasl_overrides,
    topic_acl,
)

pytestmark = pytest.mark.external


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plaintext, sasl = free_ports(2)
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        port=plaintext,
        overrides=sasl_overrides(plaintext, sasl),
    ) as process:
        yield f"127.0.0.1:{sasl}"
        assert "Traceback" not in "\n".join(process.output)


def _topic(address: str, prefix: str = "authz") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    client = admin(address)  # kept alive until the answer: a dropped client cancels
    client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT)
    return name


def produce(address: str, user: str, topic: str) -> int:
    """One record produced as ``user``: its delivery's error code (0: written)."""
    producer = Producer(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
            "message.timeout.ms": 10_000,
            "retries": 0,
        }
    )
    outcome: list[int] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        outcome.append(0 if err is None else err.code())

    producer.produce(topic, b"value", on_delivery=delivered)
    producer.flush(TIMEOUT)
    assert len(outcome) == 1
    return outcome[0]


def _grant(address: str, *bindings: AclBinding) -> None:
    assert create(admin(address), list(bindings)) == [None] * len(bindings)


def test_a_user_without_write_is_refused_and_an_allow_lets_it_produce(
    address: str,
) -> None:
    topic = _topic(address)
    assert produce(address, "alice", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(address, topic_acl(topic, "User:alice"))
    wait_for(lambda: produce(address, "alice", topic) == 0, "alice may write")
    # bob still has no ACL on the topic
    assert produce(address, "bob", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_deny_beats_an_allow(address: str) -> None:
    topic = _topic(address)
    _grant(address, topic_acl(topic, "User:bob"))
    wait_for(lambda: produce(address, "bob", topic) == 0, "bob may write")
    _grant(address, topic_acl("*", "User:bob", permission=AclPermissionType.DENY))
    wait_for(
        lambda: produce(address, "bob", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
        "the wildcard DENY wins over bob's ALLOW",
    )


def test_a_prefixed_acl_grants_a_family_of_topics(address: str) -> None:
    family = f"fam{uuid.uuid4().hex[:6]}"
    first, second = _topic(address, family), _topic(address, family)
    other = _topic(address, "other")
    _grant(
        address,
        topic_acl(
            family,
            "User:alice",
            operation=AclOperation.WRITE,
            pattern=ResourcePatternType.PREFIXED,
        ),
    )
    wait_for(lambda: produce(address, "alice", first) == 0, "the prefix grants")
    assert produce(address, "alice", second) == 0
    assert produce(address, "alice", other) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_super_user_produces_without_any_acl(address: str) -> None:
    assert produce(address, "admin", _topic(address)) == 0


def test_only_a_user_allowed_to_alter_the_cluster_creates_acls(address: str) -> None:
    """The ACL APIs are authorized themselves: CreateAcls needs cluster ALTER."""
    refused = create(admin(address, "alice"), [topic_acl("anything", "User:alice")])
    assert refused == [KafkaError.CLUSTER_AUTHORIZATION_FAILED]


def first_poll(address: str, user: str, topic: str) -> int:
    """A consumer of ``user`` reading ``topic``'s partition 0 from the start (assigned,
    no group): 0 once it reads a record, else the error code the fetch answered."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
            "group.id": "unused",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        message = consumer.poll(TIMEOUT)
        assert message is not None
        error = message.error()
        return 0 if error is None else error.code()
    finally:
        consumer.close()


def test_a_consumer_needs_read_on_the_topic(address: str) -> None:
    topic = _topic(address)
    assert produce(address, "admin", topic) == 0
    # DESCRIBE lets bob's consumer find the topic in Metadata; Fetch still needs READ.
    # (The consumer looks up its group's coordinator too: that needs group DESCRIBE.)
    _grant(
        address,
        topic_acl(topic, "User:bob", operation=AclOperation.DESCRIBE),
        AclBinding(
            ResourceType.GROUP,
            "unused",
            ResourcePatternType.LITERAL,
            "User:bob",
            "*",
            AclOperation.DESCRIBE,
            AclPermissionType.ALLOW,
        ),
    )
    wait_for(
        lambda: (
            first_poll(address, "bob", topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        ),
        "bob's fetch is refused",
    )
    _grant(address, topic_acl(topic, "User:bob", operation=AclOperation.READ))
    wait_for(lambda: first_poll(address, "bob", topic) == 0, "bob may read")


def test_creating_a_topic_needs_create_on_it_or_on_the_cluster(address: str) -> None:
    name = f"made-{uuid.uuid4().hex[:8]}"
    client = admin(address, "alice")
    with pytest.raises(KafkaException) as refused:
        client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(address, topic_acl(name, "User:alice", operation=AclOperation.CREATE))

    def created() -> bool:
        try:
            client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT)
        except KafkaException:
            return False
        return True

    wait_for(created, "alice may create the topic")


def test_metadata_lists_only_the_topics_the_user_may_describe(address: str) -> None:
    hidden, shown = _topic(address), _topic(address)
    _grant(address, topic_acl(shown, "User:bob", operation=AclOperation.DESCRIBE))

    def listed(user: str) -> set[str]:
        topics = admin(address, user).list_topics(timeout=TIMEOUT).topics
        return set(topics)

    wait_for(lambda: shown in listed("bob"), "bob sees the topic he may describe")
    assert hidden not in listed("bob")
    assert {hidden, shown} <= listed("admin")


def group_poll(address: str, user: str, topic: str, group: str) -> int:
    """A group consumer of ``user`` subscribed to ``topic``: 0 once it reads a record,
    else the error code it is told."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        message = consumer.poll(TIMEOUT)
        assert message is not None
        error = message.error()
        return 0 if error is None else error.code()
    finally:
        consumer.close()


def test_a_group_member_needs_read_on_the_group(address: str) -> None:
    topic, group = _topic(address), f"g-{uuid.uuid4().hex[:8]}"
    assert produce(address, "admin", topic) == 0
    _grant(address, topic_acl(topic, "User:alice", operation=AclOperation.READ))
    wait_for(
        lambda: (
            group_poll(address, "alice", topic, group)
            == KafkaError.GROUP_AUTHORIZATION_FAILED
        ),
        "alice may not join the group",
    )
    _grant(
        address,
        AclBinding(
            ResourceType.GROUP,
            group,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
    )
    wait_for(lambda: group_poll(address, "alice", topic, group) == 0, "alice joins")


def test_deleting_a_topic_needs_delete_on_it(address: str) -> None:
    topic = _topic(address)
    client = admin(address, "alice")
    with pytest.raises(KafkaException) as refused:
        client.delete_topics([topic])[topic].result(timeout=TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(address, topic_acl(topic, "User:alice", operation=AclOperation.DELETE))

    def deleted() -> bool:
        try:
            client.delete_topics([topic])[topic].result(timeout=TIMEOUT)
        except KafkaException:
            return False
        return True

    wait_for(deleted, "alice may delete the topic")
