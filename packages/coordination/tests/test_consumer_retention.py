"""``offsets.retention.minutes`` for consumer groups (KIP-848), as Kafka 4 applies it:
offsets of topics no member subscribes to (by name or by a resolved regular expression)
expire a retention after their commit, subscribed ones never; an Empty group loses them
all and then goes, its records tombstoned so a new coordinator does not bring it back."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._group_requests import (
    CommittedOffset,
    OffsetCommitRequest,
)

from .test_consumer_heartbeat import GROUP, Group

ORDERS, AUDIT = TopicPartition("orders", 0), TopicPartition("audit", 0)
RETENTION_S = 60


def make() -> Group:
    return Group.make(
        offsets_topic_num_partitions=1,
        offsets_retention_minutes=1,
        offsets_retention_check_interval_ms=10_000,
    )


def commit(group: Group, member: str, *partitions: TopicPartition) -> None:
    offsets = tuple((tp, CommittedOffset(7)) for tp in partitions)
    request = OffsetCommitRequest(
        GROUP, group.epochs[member], member, offsets, api_version=9
    )
    result = group.coordinator.commit_offsets(999, request, group.now)
    (reply,) = group.log.take(result) + group.log.flush(group.coordinator, group.now)
    assert all(e is ErrorCode.none for _, e in reply.response.errors)  # type: ignore[union-attr]


def check(group: Group, seconds: float, alive: tuple[str, ...] = ()) -> None:
    """``seconds`` pass, the ``alive`` members heartbeating every 5 s (within their
    session), and the timers run, the retention check among them."""
    end = group.now + seconds
    while group.now < end:
        group.now = min(end, group.now + 5)
        for member in alive:
            assert group.beat(member).error is ErrorCode.none
        result = group.coordinator.on_timer(group.now)
        group.log.take(result)
        group.log.flush(group.coordinator, group.now)


def committed(group: Group) -> set[TopicPartition]:
    answer = group.coordinator.fetch_offsets(GROUP, None)
    return {tp for tp, offset in answer.offsets if offset is not None}


def test_offsets_of_unsubscribed_topics_expire_while_the_group_has_members() -> None:
    group = make()
    group.join("a")  # subscribed to orders only
    group.settle(["a"])
    commit(group, "a", ORDERS, AUDIT)
    check(group, RETENTION_S - 5, ("a",))
    assert committed(group) == {ORDERS, AUDIT}  # younger than the retention
    check(group, 10, ("a",))
    assert committed(group) == {ORDERS}  # audit: nobody subscribes to it
    check(group, 3 * RETENTION_S, ("a",))
    assert committed(group) == {ORDERS}  # subscribed: never expires
    assert group.coordinator.consumer_group(GROUP) is not None


def test_a_topic_a_regex_resolves_to_counts_as_subscribed() -> None:
    group = make()
    group.join("a", topics=(), subscribed_topic_regex="aud.*")
    group.settle(["a"])
    commit(group, "a", ORDERS, AUDIT)
    check(group, RETENTION_S + 10, ("a",))
    assert committed(group) == {AUDIT}


def test_an_empty_consumer_group_loses_its_offsets_then_goes_for_good() -> None:
    group = make()
    group.join("a", topics=(), subscribed_topic_regex="orders")
    group.settle(["a"])
    commit(group, "a", ORDERS)
    group.beat("a", member_epoch=-1)
    assert group.coordinator.consumer_group(GROUP) is not None
    check(group, RETENTION_S - 10)
    assert committed(group) == {
        ORDERS
    }  # Empty, but committed less than a retention ago
    check(group, 20)
    assert committed(group) == set()
    assert group.coordinator.consumer_group(GROUP) is None
    fresh = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=1))
    fresh.begin_loading(0)
    fresh.load_partition(0, group.log.partitions[0], group.now)
    assert fresh.consumer_group(GROUP) is None
    assert fresh.group(GROUP) is None
