"""The group admin APIs from real clients: OffsetDelete (KIP-496) from kafka-python's
admin client, and ListGroups' state and type filters (KIP-518, KIP-848) from
confluent-kafka's.

What each test proves:

- an Empty group's committed offsets go for the partitions named, and the others stay
  (OffsetFetch then lists only those);
- while a consumer of the group is subscribed, the offsets of its topic stay
  (GROUP_SUBSCRIBED_TO_TOPIC) and those of a topic it does not read go;
- an unknown group is GROUP_ID_NOT_FOUND, a partition that does not exist
  UNKNOWN_TOPIC_OR_PARTITION, and neither changes anything;
- ListGroups lists a group only if its state is among those asked for, and every group
  here as a classic one (none of KIP-848's consumer type).
"""

from __future__ import annotations

from collections.abc import Iterator

import kafka.errors as errors
import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from minikafka.broker.testing import BrokerProcess
from minikafka.common.testing import GROUP_POLL_MS
from tests.compat._groups import unique_name


@pytest.fixture
def admin(group_broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def names(request: pytest.FixtureRequest, admin: KafkaAdminClient) -> tuple[str, str]:
    """The test's group, and its topic (two partitions); a second topic beside it."""
    topic = unique_name(request, "od-")
    admin.create_topics([NewTopic(topic, 2, 1), NewTopic(topic + "-other", 1, 1)])
    return topic + "-group", topic


def committed(
    group_broker: BrokerProcess, group: str, offsets: dict[TopicPartition, int]
) -> None:
    """Commit ``offsets`` for ``group`` as a consumer that then leaves (Empty)."""
    consumer = KafkaConsumer(
        bootstrap_servers=group_broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
    )
    try:
        consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
    finally:
        consumer.close()


def listed(admin: KafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    offsets = admin.list_group_offsets({group: None})[group]
    return {tp: meta.offset for tp, meta in offsets.items()}


@pytest.mark.compat("OffsetDelete", "kafka-python")
def test_an_empty_groups_named_offsets_go_and_the_others_stay(
    group_broker: BrokerProcess, admin: KafkaAdminClient, names: tuple[str, str]
) -> None:
    group, topic = names
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    committed(group_broker, group, {p0: 3, p1: 4})
    assert admin.delete_group_offsets(group, [p0]) == {p0: errors.NoError}
    assert listed(admin, group) == {p1: 4}


@pytest.mark.compat("OffsetDelete", "kafka-python")
def test_a_subscribed_topics_offsets_stay_while_its_consumer_reads(
    group_broker: BrokerProcess, admin: KafkaAdminClient, names: tuple[str, str]
) -> None:
    group, topic = names
    mine, other = TopicPartition(topic, 0), TopicPartition(topic + "-other", 0)
    committed(group_broker, group, {mine: 3, other: 5})
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=group_broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
    )
    try:
        # Poll until the consumer holds its partitions: the group is Stable.
        for _ in range(10):
            consumer.poll(timeout_ms=GROUP_POLL_MS)
            if consumer.assignment():
                break
        assert consumer.assignment() == {mine, TopicPartition(topic, 1)}
        answer = admin.delete_group_offsets(group, [mine, other])
        assert answer == {
            mine: errors.GroupSubscribedToTopicError,
            other: errors.NoError,
        }
    finally:
        consumer.close()
    assert listed(admin, group) == {mine: 3}


@pytest.mark.compat("OffsetDelete", "kafka-python")
def test_unknown_groups_and_partitions_get_kafkas_errors_and_change_nothing(
    group_broker: BrokerProcess, admin: KafkaAdminClient, names: tuple[str, str]
) -> None:
    group, topic = names
    p0 = TopicPartition(topic, 0)
    committed(group_broker, group, {p0: 3})
    with pytest.raises(errors.GroupIdNotFoundError):
        admin.delete_group_offsets(group + "-missing", [p0])
    missing = TopicPartition(topic, 7)
    assert admin.delete_group_offsets(group, [missing]) == {
        missing: errors.UnknownTopicOrPartitionError
    }
    assert listed(admin, group) == {p0: 3}


@pytest.mark.compat("ListGroups", "confluent-kafka")
def test_list_groups_filters_by_state_and_by_type(
    group_broker: BrokerProcess, names: tuple[str, str]
) -> None:
    group, topic = names
    committed(group_broker, group, {TopicPartition(topic, 0): 1})  # Empty
    client = AdminClient({"bootstrap.servers": group_broker.bootstrap})

    def listed(**filters: object) -> dict[str, tuple[object, object]]:
        future = client.list_consumer_groups(request_timeout=20, **filters)
        answer = future.result(timeout=20)
        assert not answer.errors
        return {g.group_id: (g.state, g.type) for g in answer.valid}

    empty_classic = (ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC)
    assert listed(states={ConsumerGroupState.EMPTY})[group] == empty_classic
    assert group not in listed(states={ConsumerGroupState.STABLE})
    assert listed(types={ConsumerGroupType.CLASSIC})[group] == empty_classic
    assert group not in listed(types={ConsumerGroupType.CONSUMER})
