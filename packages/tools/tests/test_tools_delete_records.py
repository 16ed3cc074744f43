"""``minikafka delete-records``' own parts: the offset JSON file as Kafka's tool reads
it, and each partition's line as Kafka's tool prints it."""

from __future__ import annotations

import json

import pytest
from kio.schema.errors import ErrorCode

from minikafka.client import DeletedRecords, KafkaError
from minikafka.common import TopicPartition
from minikafka.tools import ToolError
from minikafka.tools._delete_records import parse_offsets, result_line

T0 = TopicPartition("t", 0)


def test_the_file_gives_each_partitions_offset_in_order() -> None:
    text = json.dumps(
        {
            "partitions": [
                {"topic": "t", "partition": 1, "offset": -1},
                {"topic": "t", "partition": 0, "offset": 12},
            ],
            "version": 1,
        }
    )
    assert list(parse_offsets(text).items()) == [
        (TopicPartition("t", 1), -1),
        (T0, 12),
    ]


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ("{", "not JSON"),
        ("[]", '"partitions"'),
        ('{"partitions": []}', '"partitions"'),
        ('{"partitions": [{"topic": "t", "offset": 1}]}', "topic/partition/offset"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1},'
            ' {"topic": "t", "partition": 0, "offset": 2}]}',
            "duplicate topic partitions: t-0",
        ),
    ],
)
def test_a_bad_file_is_refused_saying_why(document: str, says: str) -> None:
    with pytest.raises(ToolError, match=says):
        parse_offsets(document)


def test_each_partitions_line_is_kafkas() -> None:
    assert result_line(T0, DeletedRecords(7)) == "partition: t-0\tlow_watermark: 7"
    # No message in the answer: Kafka's default message for the error.
    assert result_line(T0, KafkaError(ErrorCode.offset_out_of_range)) == (
        "partition: t-0\terror: org.apache.kafka.common.errors."
        "OffsetOutOfRangeException: The requested offset is not within the range of "
        "offsets maintained by the server."
    )
    # The client's own message, where it has one, is kept.
    found = KafkaError(ErrorCode.leader_not_available, "partition t-0 has no leader")
    assert result_line(T0, found).endswith(
        "LeaderNotAvailableException: partition t-0 has no leader"
    )
