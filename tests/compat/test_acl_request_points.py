"""Kafka's authorization points beyond Produce and Fetch, with confluent-kafka over
SASL_PLAINTEXT/PLAIN against a broker running KRaft's StandardAuthorizer.

A transactional producer whose user may not WRITE its transactional id cannot start
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and writes nothing; with the ACL it commits a
transaction. A group consumer without READ on its group is refused
GROUP_AUTHORIZATION_FAILED and commits nothing. An admin client lists only the groups
its user may DESCRIBE.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
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
from tests.compat.test_acls import TIMEOUT, USERS, admin, create, sasl_overrides

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


def _sasl(user: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _acl(resource_type: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(
        resource_type,
        name,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


def _grant(address: str, *bindings: AclBinding) -> None:
    assert create(admin(address), list(bindings)) == [None] * len(bindings)


def _topic(address: str) -> str:
    name = f"points-{uuid.uuid4().hex[:8]}"
    client = admin(address)
    client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT)
    return name


def _end_offset(address: str, topic: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": address, "group.id": "x", **_sasl("admin")}
    )
    try:
        _low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT
        )
        return int(high)
    finally:
        consumer.close()


def _init(address: str, txn: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": address,
            "transactional.id": txn,
            "transaction.timeout.ms": 10_000,
            **_sasl("alice"),
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def test_a_transactional_producer_needs_write_on_its_transactional_id(
    address: str,
) -> None:
    topic, txn = _topic(address), f"txn-{uuid.uuid4().hex[:8]}"
    _grant(address, _acl(ResourceType.TOPIC, topic, AclOperation.WRITE))
    with pytest.raises(KafkaException) as refused:
        _init(address, txn)
    assert refused.value.args[0].code() == (
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    assert _end_offset(address, topic) == 0
    _grant(address, _acl(ResourceType.TRANSACTIONAL_ID, txn, AclOperation.WRITE))

    def committed() -> bool:
        try:
            producer = _init(address, txn)
        except KafkaException:
            return False
        producer.begin_transaction()
        producer.produce(topic, b"value")
        producer.commit_transaction(TIMEOUT)
        return True

    wait_for(committed, "alice's transaction commits once she may write its id")
    # the record and the commit marker
    assert _end_offset(address, topic) == 2


def _consume_and_commit(address: str, topic: str, group: str) -> int:
    """A group consumer of alice: 0 once it reads a record and commits it, else the
    error code it is told."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **_sasl("alice"),
        }
    )
    try:
        consumer.subscribe([topic])
        message = consumer.poll(TIMEOUT)
        assert message is not None
        error = message.error()
        if error is not None:
            return int(error.code())
        consumer.commit(asynchronous=False)  # the position after the record read
        return 0
    finally:
        consumer.close()


def _commits(address: str, topic: str, group: str) -> bool:
    return _consume_and_commit(address, topic, group) == 0


def _committed(address: str, topic: str, group: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": address, "group.id": group, **_sasl("admin")}
    )
    try:
        [found] = consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        return int(found.offset)
    finally:
        consumer.close()


def test_a_consumer_group_without_read_on_the_group_commits_nothing(
    address: str,
) -> None:
    topic, group = _topic(address), f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": address, **_sasl("admin")})
    producer.produce(topic, b"value")
    producer.flush(TIMEOUT)
    _grant(address, _acl(ResourceType.TOPIC, topic, AclOperation.READ))
    assert (
        _consume_and_commit(address, topic, group)
        == KafkaError.GROUP_AUTHORIZATION_FAILED
    )
    assert _committed(address, topic, group) < 0  # no offset committed
    _grant(address, _acl(ResourceType.GROUP, group, AclOperation.READ))
    wait_for(
        lambda: _consume_and_commit(address, topic, group) == 0,
        "alice's consumer reads and commits once she may read the group",
    )
    assert _committed(address, topic, group) == 1


def test_listing_groups_shows_only_those_the_user_may_describe(address: str) -> None:
    topic = _topic(address)
    producer = Producer({"bootstrap.servers": address, **_sasl("admin")})
    producer.produce(topic, b"value")
    producer.flush(TIMEOUT)
    shown, hidden = (f"g-{uuid.uuid4().hex[:8]}" for _ in range(2))
    _grant(
        address,
        _acl(ResourceType.TOPIC, topic, AclOperation.READ),
        _acl(ResourceType.GROUP, shown, AclOperation.READ),
        _acl(ResourceType.GROUP, hidden, AclOperation.READ),
    )
    for group in (shown, hidden):
        wait_for(functools.partial(_commits, address, topic, group), group)

    def listed(user: str) -> set[str]:
        client = admin(address, user)  # kept alive until the answer
        result = client.list_consumer_groups(request_timeout=TIMEOUT)
        return {g.group_id for g in result.result(timeout=TIMEOUT).valid}

    assert {shown, hidden} <= listed("admin")
    _grant(
        address,
        AclBinding(
            ResourceType.GROUP,
            hidden,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.DESCRIBE,
            AclPermissionType.DENY,
        ),
    )
    wait_for(lambda: hidden not in listed("alice"), "the DENY hides the group")
    assert shown in listed("alice")
