"""The controller answers oversized and ill-formed topic requests as Kafka's does.

MAX_RECORDS_PER_USER_OP bounds the records one CreateTopics, CreatePartitions or
DeleteTopics may write, validate-only or not, and the bound is checked by counting
before anything is placed; the requests' other rules (ranges, null configs, manual
assignments' partition ids, names listed twice, the empty name) get Kafka's codes.
"""

from __future__ import annotations

import tracemalloc
import uuid

from kio.schema.errors import ErrorCode

from minikafka.controller import (
    MAX_RECORDS_PER_USER_OP,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from minikafka.controller.testing import ControllerHarness


def cluster(n: int = 3) -> ControllerHarness:
    harness = ControllerHarness.start(seed=15)
    harness.add_brokers(range(1, n + 1))
    return harness


def create(
    h: ControllerHarness, *topics: CreatableTopic, validate_only: bool = False
) -> list[tuple[str, ErrorCode]]:
    response = h.request(CreateTopicsRequest(topics, validate_only=validate_only))
    assert isinstance(response, CreateTopicsResponse)
    return [(t.name, t.error_code) for t in response.topics]


def test_the_limit_is_kafkas() -> None:
    """Kafka's QuorumController.MAX_RECORDS_PER_USER_OP."""
    assert MAX_RECORDS_PER_USER_OP == 10_000


def test_create_topics_over_the_limit_is_refused_whole() -> None:
    """One request whose topics would write more than the limit is refused for every topic
    with POLICY_VIOLATION, and writes nothing; one record under the limit is created."""
    h = cluster()
    before = h.last_offset
    # 1 TopicRecord + 1 ConfigRecord + 9,998 PartitionRecords = 10,000: allowed.
    small = CreatableTopic("small", 1, 1)
    at_limit = CreatableTopic("big", 9_998, 1, configs=(("retention.ms", "1000"),))
    assert create(h, at_limit) == [("big", ErrorCode.none)]
    assert h.last_offset == before + MAX_RECORDS_PER_USER_OP
    before = h.last_offset
    over = CreatableTopic("bigger", 9_998, 1, configs=(("retention.ms", "1000"),))
    assert create(h, small, over) == [
        ("small", ErrorCode.policy_violation),
        ("bigger", ErrorCode.policy_violation),
    ]
    assert h.last_offset == before
    assert h.controller.replication.topic_named("small") is None


def test_validate_only_over_the_limit_is_refused_without_placing() -> None:
    """A validate-only CreateTopics for 10^6 and for 2^31-1 partitions is refused with
    POLICY_VIOLATION before any assignment is built: it allocates a few kilobytes, not the
    hundreds of megabytes a placement of 10^6 partitions takes."""
    h = cluster()
    for partitions in (10**6, 2**31 - 1):
        tracemalloc.start()
        try:
            answer = create(
                h, CreatableTopic("huge", partitions, 3), validate_only=True
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert answer == [("huge", ErrorCode.policy_violation)]
        assert peak < 1_000_000, peak
    response = h.request(
        CreateTopicsRequest((CreatableTopic("huge", 10**6, 3),), validate_only=True)
    )
    assert isinstance(response, CreateTopicsResponse)
    assert "excessively large" in (response.topics[0].error_message or "")


def test_a_placement_error_wins_over_the_limit_when_it_is_known_first() -> None:
    """Checks that need no placement come first: a replication factor above the broker
    count is INVALID_REPLICATION_FACTOR however many partitions are asked for, as Kafka's
    placer answers before it places anything."""
    h = cluster(1)
    assert create(h, CreatableTopic("t", 10**6, 3), validate_only=True) == [
        ("t", ErrorCode.invalid_replication_factor)
    ]


def test_create_partitions_over_the_limit_is_refused_whole() -> None:
    """Adding more than the limit's worth of partitions, over all the request's topics, is
    POLICY_VIOLATION for every topic, validate-only or not; nothing is written."""
    h = cluster()
    create(h, CreatableTopic("a", 1, 1), CreatableTopic("b", 1, 1))
    before = h.last_offset
    for validate_only in (True, False):
        request = CreatePartitionsRequest(
            (CreatePartitionsTopic("a", 6_000), CreatePartitionsTopic("b", 6_000)),
            validate_only=validate_only,
        )
        response = h.request(request)
        assert isinstance(response, CreatePartitionsResponse)
        assert [(t.name, t.error_code) for t in response.topics] == [
            ("a", ErrorCode.policy_violation),
            ("b", ErrorCode.policy_violation),
        ]
    huge = h.request(
        CreatePartitionsRequest((CreatePartitionsTopic("a", 2**31 - 1),), True)
    )
    assert isinstance(huge, CreatePartitionsResponse)
    assert huge.topics[0].error_code == ErrorCode.policy_violation
    assert h.last_offset == before


def test_delete_topics_over_the_limit_is_refused_whole() -> None:
    """Deleting more topics than the limit in one request is refused for all of them."""
    h = cluster(1)
    names = [f"t{i}" for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    # Created in two requests, each under the limit (2 records a topic).
    for chunk in (names[:4_000], names[4_000:8_000], names[8_000:]):
        assert {e for _, e in create(h, *(CreatableTopic(n, 1, 1) for n in chunk))} == {
            ErrorCode.none
        }
    before = h.last_offset
    response = h.request(DeleteTopicsRequest(tuple(names)))
    assert isinstance(response, DeleteTopicsResponse)
    assert {t.error_code for t in response.topics} == {ErrorCode.policy_violation}
    assert h.last_offset == before
    response = h.request(DeleteTopicsRequest(tuple(names[:MAX_RECORDS_PER_USER_OP])))
    assert isinstance(response, DeleteTopicsResponse)
    assert {t.error_code for t in response.topics} == {ErrorCode.none}


def test_ranges_of_partitions_and_replication_factor() -> None:
    """-1 means the default; 0 and anything below -1 are INVALID_PARTITIONS or
    INVALID_REPLICATION_FACTOR (the factor checked first, as Kafka does)."""
    h = cluster()
    assert create(
        h,
        CreatableTopic("p-2", -2, 1),
        CreatableTopic("p0", 0, 1),
        CreatableTopic("rf-2", 1, -2),
        CreatableTopic("rf0", 1, 0),
        CreatableTopic("both-bad", -5, -5),
        CreatableTopic("defaults", -1, -1),
    ) == [
        ("p-2", ErrorCode.invalid_partitions),
        ("p0", ErrorCode.invalid_partitions),
        ("rf-2", ErrorCode.invalid_replication_factor),
        ("rf0", ErrorCode.invalid_replication_factor),
        ("both-bad", ErrorCode.invalid_replication_factor),
        ("defaults", ErrorCode.none),
    ]


def test_a_null_config_value_is_invalid_config() -> None:
    """CreateTopics with a null config value is INVALID_CONFIG, naming the key; the topic
    is not created (it used to be created with the key silently dropped)."""
    h = cluster()
    response = h.request(
        CreateTopicsRequest(
            (CreatableTopic("t", 1, 1, configs=(("retention.ms", None),)),)
        )
    )
    assert isinstance(response, CreateTopicsResponse)
    (result,) = response.topics
    assert result.error_code == ErrorCode.invalid_config
    assert result.error_message is not None
    assert "retention.ms" in result.error_message
    assert h.controller.replication.topic_named("t") is None


def test_manual_assignment_partition_ids_are_kept_not_renumbered() -> None:
    """A manual assignment naming only partition 5 is INVALID_REPLICA_ASSIGNMENT (it used
    to become partition 0); one naming a partition twice likewise; ids given out of order
    but complete are placed where they say."""
    h = cluster()
    assert create(
        h, CreatableTopic("five", assignments=((1,),), partition_ids=(5,))
    ) == [("five", ErrorCode.invalid_replica_assignment)]
    assert create(
        h, CreatableTopic("dup", assignments=((1,), (2,)), partition_ids=(0, 0))
    ) == [("dup", ErrorCode.invalid_replica_assignment)]
    assert create(
        h, CreatableTopic("swapped", assignments=((2,), (1,)), partition_ids=(1, 0))
    ) == [("swapped", ErrorCode.none)]
    assert h.partition("swapped", 0).replicas == (1,)
    assert h.partition("swapped", 1).replicas == (2,)
    assert h.controller.replication.topic_named("five") is None


def test_a_name_listed_twice_is_invalid_request_and_nothing_is_done() -> None:
    """CreateTopics, CreatePartitions and DeleteTopics listing a name twice answer it once
    with INVALID_REQUEST and act on neither entry; the request's other topics go ahead."""
    h = cluster()
    assert create(
        h, CreatableTopic("x", 1, 1), CreatableTopic("x", 1, 1), CreatableTopic("y")
    ) == [
        ("x", ErrorCode.invalid_request),
        ("y", ErrorCode.none),
    ]
    assert h.controller.replication.topic_named("x") is None
    response = h.request(
        CreatePartitionsRequest(
            (CreatePartitionsTopic("y", 2), CreatePartitionsTopic("y", 3))
        )
    )
    assert isinstance(response, CreatePartitionsResponse)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("y", ErrorCode.invalid_request)
    ]
    topic = h.controller.replication.topic_named("y")
    assert topic is not None
    assert topic.num_partitions == 1
    response = h.request(DeleteTopicsRequest(("y", "y")))
    assert isinstance(response, DeleteTopicsResponse)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("y", ErrorCode.invalid_request)
    ]
    assert h.controller.replication.topic_named("y") is not None


def test_delete_topics_names_and_ids() -> None:
    """The empty name is UNKNOWN_TOPIC_OR_PARTITION (a name no topic has), not
    UNKNOWN_TOPIC_ID; a topic named both by name and by id, or an id given twice, is
    INVALID_REQUEST and not deleted; the zero id is INVALID_REQUEST."""
    h = cluster()
    create(h, CreatableTopic("a", 1, 1), CreatableTopic("b", 1, 1))
    a = h.topic_id("a")
    b = h.topic_id("b")
    zero = uuid.UUID(int=0)
    response = h.request(
        DeleteTopicsRequest(names=("", "a"), topic_ids=(a, b, b, zero))
    )
    assert isinstance(response, DeleteTopicsResponse)
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        ("", None, ErrorCode.unknown_topic_or_partition),
        ("a", a, ErrorCode.invalid_request),
        ("a", a, ErrorCode.invalid_request),
        (None, b, ErrorCode.invalid_request),
        (None, zero, ErrorCode.invalid_request),
    ]
    assert h.controller.replication.topic_named("a") is not None
    assert h.controller.replication.topic_named("b") is not None
    response = h.request(DeleteTopicsRequest(names=("a",), topic_ids=(b,)))
    assert response == DeleteTopicsResponse(
        (
            DeletableTopicResult("a", a, ErrorCode.none),
            DeletableTopicResult("b", b, ErrorCode.none),
        )
    )
