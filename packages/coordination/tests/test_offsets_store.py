"""Offsets and group metadata in __consumer_offsets, through the coordinator core.

The writes go to ``InMemoryOffsetsTopic`` (lists of records, committed at once or failed
on demand), so a test can replay exactly what was written into a fresh coordinator, as a
new leader of the partition would.
"""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupMetadataKey,
    GroupMetadataValue,
    GroupResult,
    GroupState,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetKey,
    SyncGroupRequest,
    SyncGroupResponse,
    decode_record,
    partition_for,
)
from minikafka.coordination.group._group_requests import DeletableGroupResult
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator

E = ErrorCode
G = GroupState
T0 = 1_700_000_000.0  # the wall clock: records carry it in milliseconds
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
CONFIG = GroupConfig(group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=5)


def test_partition_for_is_javas_string_hash() -> None:
    # "a".hashCode() == 97; "polygenelubricants".hashCode() == Integer.MIN_VALUE, which
    # Utils.abs maps to 0; a non-ASCII id hashes over UTF-16 code units.
    assert partition_for("a", 50) == 97 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("", 50) == 0
    java = 0
    for ch in "gröup-€":
        java = (31 * java + ord(ch)) & 0xFFFFFFFF
    signed = java - (1 << 32) if java >= 1 << 31 else java
    assert partition_for("gröup-€", 7) == abs(signed) % 7


class Driver:
    """One coordinator, one in-memory offsets topic, request ids and answers."""

    def __init__(
        self, coordinator: GroupCoordinator, topic: InMemoryOffsetsTopic
    ) -> None:
        self.coordinator = coordinator
        self.topic = topic
        self.now = T0
        self.answers: dict[int, object] = {}
        self.next_id = 0

    def take(self, result: GroupResult, *, flush: bool = True) -> None:
        replies = self.topic.take(result)
        if flush:
            replies = [*replies, *self.topic.flush(self.coordinator, self.now)]
        for reply in replies:
            assert reply.request_id not in self.answers
            self.answers[reply.request_id] = reply.response

    def rid(self) -> int:
        self.next_id += 1
        return self.next_id

    def join(self, member_id: str = "", group: str = "g") -> JoinGroupResponse:
        rid = self.rid()
        request = JoinGroupRequest(
            group,
            member_id,
            "consumer",
            (("range", b"sub"),),
            10_000,
            30_000,
            None,
            "c",
            "/h",
            3,
        )
        self.take(self.coordinator.join_group(rid, request, self.now))
        answer = self.answers[rid]
        assert isinstance(answer, JoinGroupResponse)
        return answer

    def sync(
        self,
        member_id: str,
        generation: int,
        plan: dict[str, bytes],
        *,
        flush: bool = True,
    ) -> int:
        rid = self.rid()
        request = SyncGroupRequest(
            "g", generation, member_id, assignments=tuple(plan.items())
        )
        self.take(self.coordinator.sync_group(rid, request, self.now), flush=flush)
        return rid

    def commit(
        self,
        offsets: dict[TopicPartition, int],
        member_id: str = "",
        generation: int = -1,
        group: str = "g",
        metadata: str = "m",
        *,
        flush: bool = True,
    ) -> OffsetCommitResponse:
        rid = self.rid()
        request = OffsetCommitRequest(
            group,
            generation,
            member_id,
            tuple((tp, CommittedOffset(o, 3, metadata)) for tp, o in offsets.items()),
        )
        self.take(self.coordinator.commit_offsets(rid, request, self.now), flush=flush)
        answer = self.answers[rid]
        assert isinstance(answer, OffsetCommitResponse)
        return answer

    def stable_member(self) -> tuple[str, int]:
        member = self.join().member_id
        joined = self.join(member)
        rid = self.sync(member, joined.generation_id, {member: b"plan"})
        assert self.answers[rid] == SyncGroupResponse(
            E.none, b"plan", "consumer", "range"
        )
        return member, joined.generation_id


def state_of(d: Driver, group_id: str) -> GroupState:
    group = d.coordinator.group(group_id)
    assert group is not None
    return group.state


def driver(config: GroupConfig = CONFIG) -> Driver:
    return Driver(
        serving_coordinator(config, random.Random(1), T0), InMemoryOffsetsTopic()
    )


def replayed(d: Driver, config: GroupConfig = CONFIG) -> GroupCoordinator:
    """What a new leader of every partition rebuilds from the records written so far."""
    fresh = GroupCoordinator(config, random.Random(2))
    for partition in range(config.offsets_topic_num_partitions):
        fresh.begin_loading(partition)
        fresh.load_partition(partition, d.topic.partitions.get(partition, []), d.now)
    return fresh


def test_offsets_commit_fetch_and_survive_a_replay() -> None:
    d = driver()
    answer = d.commit({TP0: 10, TP1: 20})
    assert answer == OffsetCommitResponse(((TP0, E.none), (TP1, E.none)))
    written = d.topic.plain(partition_for("g", 5))
    keys = [decode_record(k, v)[0] for k, v in written]
    assert keys == [OffsetKey("g", "t", 0), OffsetKey("g", "t", 1)]
    fetched = d.coordinator.fetch_offsets("g", [TP0, TP1, TopicPartition("t", 2)])
    assert fetched.error_code is E.none
    assert fetched.offsets == (
        (TP0, CommittedOffset(10, 3, "m")),
        (TP1, CommittedOffset(20, 3, "m")),
        (TopicPartition("t", 2), None),
    )
    d.commit({TP0: 11})
    fresh = replayed(d)
    assert fresh.fetch_offsets("g", None) == d.coordinator.fetch_offsets("g", None)
    assert dict(fresh.fetch_offsets("g", None).offsets)[TP0] == CommittedOffset(
        11, 3, "m"
    )


def test_the_commit_is_answered_only_once_written() -> None:
    d = driver()
    rid = d.rid()
    request = OffsetCommitRequest("g", -1, "", ((TP0, CommittedOffset(5)),))
    d.take(d.coordinator.commit_offsets(rid, request, d.now), flush=False)
    assert rid not in d.answers
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets == ((TP0, None),)
    d.take(CoreResult())
    assert d.answers[rid] == OffsetCommitResponse(((TP0, E.none),))
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets == (
        (TP0, CommittedOffset(5)),
    )


@pytest.mark.parametrize(
    ("failure", "told"),
    [
        (E.not_leader_or_follower, E.not_coordinator),
        (E.request_timed_out, E.coordinator_not_available),
        (E.not_enough_replicas, E.coordinator_not_available),
        (E.message_too_large, E.invalid_commit_offset_size),
    ],
)
def test_a_failed_commit_changes_nothing(failure: ErrorCode, told: ErrorCode) -> None:
    d = driver()
    d.topic.fail_with = failure
    assert d.commit({TP0: 7}) == OffsetCommitResponse(((TP0, told),))
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets == ((TP0, None),)


def test_metadata_too_large_refuses_only_that_partition() -> None:
    d = driver(GroupConfig(offset_metadata_max_bytes=4, offsets_topic_num_partitions=5))
    rid = d.rid()
    request = OffsetCommitRequest(
        "g",
        -1,
        "",
        ((TP0, CommittedOffset(1, -1, "toolong")), (TP1, CommittedOffset(2))),
    )
    d.take(d.coordinator.commit_offsets(rid, request, d.now))
    assert d.answers[rid] == OffsetCommitResponse(
        ((TP0, E.offset_metadata_too_large), (TP1, E.none))
    )


def test_stable_only_after_the_group_is_written() -> None:
    d = driver()
    member = d.join().member_id
    joined = d.join(member)
    assert joined.error_code is E.none
    rid = d.sync(member, joined.generation_id, {member: b"plan"}, flush=False)
    group = d.coordinator.group("g")
    assert group is not None
    assert state_of(d, "g") is G.COMPLETING_REBALANCE
    assert rid not in d.answers
    # A commit is refused while the assignment is not yet stored (seed 002 §1).
    assert d.commit({TP0: 1}, member, joined.generation_id, flush=False).errors == (
        (TP0, E.rebalance_in_progress),
    )
    d.take(CoreResult())  # the group record commits
    assert d.answers[rid] == SyncGroupResponse(E.none, b"plan", "consumer", "range")
    assert state_of(d, "g") is G.STABLE
    stored = [decode_record(k, v) for k, v in d.topic.plain(partition_for("g", 5))]
    key, value = stored[-1]
    assert key == GroupMetadataKey("g")
    assert isinstance(value, GroupMetadataValue)
    assert value.generation_id == joined.generation_id
    assert [m.assignment for m in value.members] == [b"plan"]


def test_a_failed_group_write_sends_the_members_back_to_join() -> None:
    d = driver()
    member = d.join().member_id
    joined = d.join(member)
    d.topic.fail_with = E.not_leader_or_follower
    rid = d.sync(member, joined.generation_id, {member: b"plan"})
    assert d.answers[rid] == SyncGroupResponse(E.not_coordinator)
    group = d.coordinator.group("g")
    assert group is not None
    assert group.state is G.PREPARING_REBALANCE


def test_a_replayed_group_is_stable_with_its_assignment_and_sessions() -> None:
    d = driver()
    member, generation = d.stable_member()
    d.commit({TP0: 42}, member, generation)
    fresh = replayed(d)
    group = fresh.group("g")
    assert group is not None
    assert (group.state, group.generation_id, group.leader_id) == (
        G.STABLE,
        generation,
        member,
    )
    assert group.members[member].assignment == b"plan"
    assert fresh.fetch_offsets("g", [TP0]).offsets == (
        (TP0, CommittedOffset(42, 3, "m")),
    )
    # The member must heartbeat within its session timeout, counted from the load.
    assert not fresh.on_timer(d.now + 9.9)
    assert member in group.members
    fresh.on_timer(d.now + 10.0)
    # Its only member gone, the rebalance ends at once: Empty, one generation on.
    assert member not in group.members
    assert (group.state, group.generation_id) == (G.EMPTY, generation + 1)


def test_an_emptied_group_records_its_new_generation() -> None:
    d = driver()
    member, generation = d.stable_member()
    rid = d.rid()
    d.take(d.coordinator.leave_group(rid, LeaveGroupRequest.single("g", member), d.now))
    group = d.coordinator.group("g")
    assert group is not None
    assert group.state is G.EMPTY
    fresh = replayed(d).group("g")
    assert fresh is not None
    assert (fresh.state, fresh.generation_id) == (G.EMPTY, generation + 1)


def test_delete_writes_tombstones_and_the_group_is_gone_after_a_replay() -> None:
    d = driver()
    d.commit({TP0: 1, TP1: 2})
    rid = d.rid()
    d.take(d.coordinator.delete_group(rid, "g", d.now))  # the group's tombstones
    assert d.answers[rid] == DeletableGroupResult("g", E.none)
    tail = d.topic.plain(partition_for("g", 5))[-3:]
    assert all(value is None for _, value in tail)
    fresh = replayed(d)
    assert fresh.group("g") is None
    assert fresh.fetch_offsets("g", None).offsets == ()


def test_offsets_expire_once_the_group_has_been_empty_for_the_retention() -> None:
    config = GroupConfig(
        group_initial_rebalance_delay_ms=0,
        offsets_topic_num_partitions=5,
        offsets_retention_minutes=1,
        offsets_retention_check_interval_ms=10_000,
    )
    d = driver(config)
    member, generation = d.stable_member()
    d.commit({TP0: 9}, member, generation)
    d.now += 120  # a Stable group's offsets never expire
    d.take(d.coordinator.on_timer(d.now))
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets == (
        (TP0, CommittedOffset(9, 3, "m")),
    )
    d.take(
        d.coordinator.leave_group(d.rid(), LeaveGroupRequest.single("g", member), d.now)
    )
    d.now += 50  # Empty for less than a minute: kept
    d.take(d.coordinator.on_timer(d.now))
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets[0][1] is not None
    d.now += 20
    d.take(d.coordinator.on_timer(d.now))
    assert d.coordinator.fetch_offsets("g", [TP0]).offsets == ((TP0, None),)
    assert d.coordinator.group("g") is None  # Empty without offsets: deleted
    assert replayed(d, config).group("g") is None


def test_groups_of_a_partition_not_led_here_are_refused() -> None:
    coordinator = GroupCoordinator(CONFIG, random.Random(0))
    assert coordinator.group_status("g") is E.not_coordinator
    partition = partition_for("g", 5)
    coordinator.begin_loading(partition)
    assert coordinator.group_status("g") is E.coordinator_load_in_progress
    assert (
        coordinator.fetch_offsets("g", None).error_code
        is E.coordinator_load_in_progress
    )
    coordinator.load_partition(partition, [], T0)
    assert coordinator.group_status("g") is E.none
    coordinator.unload_partition(partition)
    assert coordinator.group_status("g") is E.not_coordinator


def test_unloading_a_partition_makes_its_groups_dead() -> None:
    d = driver()
    member = d.join().member_id
    joined = d.join(member)
    rid = d.sync(member, joined.generation_id, {member: b"p"}, flush=False)
    group = d.coordinator.group("g")
    assert group is not None
    d.take(d.coordinator.unload_partition(partition_for("g", 5)), flush=False)
    assert d.answers[rid] == SyncGroupResponse(E.not_coordinator)
    assert group.state is G.DEAD
    d.take(
        CoreResult()
    )  # the group write completes after the unload: nothing more happens
    assert d.coordinator.group("g") is None


def test_replay_skips_records_it_cannot_read() -> None:
    d = driver()
    d.commit({TP0: 3})
    partition = partition_for("g", 5)
    d.topic.partitions[partition][:0] = [(b"\x00\x09junk", b"x"), (b"\xff", None)]
    fresh = replayed(d)
    assert fresh.fetch_offsets("g", [TP0]).offsets == (
        (TP0, CommittedOffset(3, 3, "m")),
    )


def test_an_empty_group_without_offsets_is_removed_at_the_next_check() -> None:
    config = GroupConfig(
        group_initial_rebalance_delay_ms=0,
        offsets_topic_num_partitions=5,
        offsets_retention_check_interval_ms=10_000,
    )
    d = driver(config)
    member, _ = d.stable_member()
    d.take(
        d.coordinator.leave_group(d.rid(), LeaveGroupRequest.single("g", member), d.now)
    )
    d.commit({TP0: 1}, group="kept")  # a group with offsets stays until they expire
    assert state_of(d, "g") is G.EMPTY
    d.now += 10
    d.take(d.coordinator.on_timer(d.now))
    assert d.coordinator.group("g") is None
    assert d.coordinator.group("kept") is not None
    # the group's tombstone
    assert d.topic.plain(partition_for("g", 5))[-1][1] is None
    assert replayed(d, config).group("g") is None
