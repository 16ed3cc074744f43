"""OffsetDelete (KIP-496): some of a group's committed offsets removed by tombstones.

What is checked, on the core driven by hand (a write commits when the test says so):

- an Empty group loses each named offset, once the tombstones are committed (before,
  OffsetFetch still shows them); a partition without an offset is answered NONE too;
- a consumer group with members keeps the offsets of the topics they subscribe to
  (GROUP_SUBSCRIBED_TO_TOPIC) and loses the others;
- a group with members of another protocol type is refused NON_EMPTY_GROUP, an unknown
  group GROUP_ID_NOT_FOUND, at once and without a write;
- a failed write is answered its error as a client should see it, and the offsets are
  back as they were.
"""

from __future__ import annotations

import random

from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetDeleteResponse,
    Subscription,
    SyncGroupRequest,
    encode_subscription,
)
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator

E = ErrorCode
T0 = 1_700_000_000.0
READ = TopicPartition("read", 0)
OTHER = TopicPartition("other", 0)
NEVER = TopicPartition("never", 0)
CONFIG = GroupConfig(group_initial_rebalance_delay_ms=0)


def fresh() -> GroupCoordinator:
    return serving_coordinator(CONFIG, random.Random(0), T0)


def commit_now(c: GroupCoordinator, *tps: TopicPartition) -> None:
    """A standalone commit of offset 5 for each, committed at once."""
    request = OffsetCommitRequest(
        "g", -1, "", tuple((tp, CommittedOffset(5)) for tp in tps)
    )
    InMemoryOffsetsTopic().carry_out(c, c.commit_offsets(1, request, T0), T0)


def fetched(c: GroupCoordinator) -> set[TopicPartition]:
    answer = c.fetch_offsets("g", None)
    return {tp for tp, offset in answer.offsets if offset is not None}


def one_member(c: GroupCoordinator, protocol_type: str, metadata: bytes) -> None:
    """A member joins (v3: no member id round trip) and syncs: the group is Stable."""
    topic = InMemoryOffsetsTopic()
    join = JoinGroupRequest(
        "g",
        "",
        protocol_type,
        (("range", metadata),),
        10_000,
        10_000,
        None,
        "client",
        "/10.0.0.1",
        3,
    )
    (reply,) = topic.carry_out(c, c.join_group(2, join, T0), T0)
    assert isinstance(reply.response, JoinGroupResponse)
    member = reply.response.member_id
    sync = SyncGroupRequest("g", 1, member, None, None, None, ((member, b""),))
    topic.carry_out(c, c.sync_group(3, sync, T0), T0)
    group = c.group("g")
    assert group is not None
    assert group.state.value == "Stable"


def deleted(c: GroupCoordinator, *tps: TopicPartition) -> OffsetDeleteResponse:
    """OffsetDelete answered at once (nothing to write) or once its write commits."""
    result = c.delete_offsets(9, "g", tps, T0)
    (reply,) = InMemoryOffsetsTopic().carry_out(c, result, T0)
    assert reply.request_id == 9
    assert isinstance(reply.response, OffsetDeleteResponse)
    return reply.response


def test_an_empty_group_loses_the_named_offsets_once_the_tombstones_commit() -> None:
    c = fresh()
    commit_now(c, READ, OTHER)
    result = c.delete_offsets(9, "g", (READ, NEVER), T0)
    assert result.replies == ()  # a write operation: answered once committed
    (write,) = result.records
    assert fetched(c) == {READ, OTHER}
    (reply,) = c.complete_write(write.write_id, E.none, T0).replies
    assert reply.response == OffsetDeleteResponse(
        E.none, ((READ, E.none), (NEVER, E.none))
    )
    assert fetched(c) == {OTHER}


def test_a_consumer_group_keeps_the_offsets_of_topics_it_reads() -> None:
    c = fresh()
    commit_now(c, READ, OTHER)
    one_member(c, "consumer", encode_subscription(Subscription(["read"])))
    answer = deleted(c, READ, OTHER)
    assert answer == OffsetDeleteResponse(
        E.none, ((READ, E.group_subscribed_to_topic), (OTHER, E.none))
    )
    assert fetched(c) == {READ}


def test_refusals_are_answered_at_once_without_a_write() -> None:
    c = fresh()
    result = c.delete_offsets(9, "nobody", (READ,), T0)
    assert result.records == ()
    (reply,) = result.replies
    assert reply.response == OffsetDeleteResponse(E.group_id_not_found)
    commit_now(c, READ)
    one_member(c, "connect", b"worker metadata")
    assert deleted(c, READ) == OffsetDeleteResponse(E.non_empty_group)
    assert fetched(c) == {READ}


def test_a_failed_write_is_answered_its_error_and_keeps_the_offsets() -> None:
    c = fresh()
    commit_now(c, READ)
    (write,) = c.delete_offsets(9, "g", (READ,), T0).records
    (reply,) = c.complete_write(write.write_id, E.not_leader_or_follower, T0).replies
    assert reply.response == OffsetDeleteResponse(E.not_coordinator)
    assert fetched(c) == {READ}
