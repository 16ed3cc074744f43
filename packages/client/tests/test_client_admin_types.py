"""The admin clients' request-side values, without a broker: ``OffsetSpec`` as the
timestamps ListOffsets carries, and partitions keyed by topic and partition alone."""

from __future__ import annotations

import pytest

from minikafka.client import OffsetSpec
from minikafka.client import TopicPartition as ClientTopicPartition
from minikafka.client._admin_port import by_topic, key
from minikafka.common import TopicPartition


def test_offset_specs_are_kafkas_special_timestamps_and_refuse_a_negative_time() -> (
    None
):
    assert OffsetSpec.earliest().timestamp == -2
    assert OffsetSpec.latest().timestamp == -1
    assert OffsetSpec.max_timestamp().timestamp == -3
    assert OffsetSpec.for_timestamp(1_700_000_000_000).timestamp == 1_700_000_000_000
    with pytest.raises(ValueError, match="ms since the epoch"):
        OffsetSpec.for_timestamp(-1)


def test_a_client_topic_partition_keys_as_its_topic_and_partition_without_offset() -> (
    None
):
    # Guarantee: the confluent-kafka-shaped TopicPartition, whatever its offset, and
    # minikafka.common's name the same key, so answers can be looked up with either.
    with_offset = ClientTopicPartition("orders", 1, 42)
    assert (
        key(with_offset)
        == key(TopicPartition("orders", 1))
        == TopicPartition("orders", 1)
    )
    parts = [TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("b", 1)]
    assert by_topic(parts) == {"b": [0, 1], "a": [2]}
