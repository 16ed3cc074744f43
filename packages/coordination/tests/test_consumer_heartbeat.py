"""ConsumerGroupHeartbeat in the group coordinator (KIP-848): joins, reconciliation with
revocation before assignment, leaves, timeouts, Kafka's error codes for bad input, and
the line between classic and consumer groups."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError, TopicPartition
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._consumer_group import ConsumerGroupState
from minikafka.coordination.group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._group_requests import (
    CommittedOffset,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
)
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator

TOPICS = {"orders": 6, "audit": 2}
IDS = {name: uuid.uuid5(uuid.NAMESPACE_URL, name) for name in TOPICS}
GROUP = "g"


@attrs.define
class Group:
    """A coordinator, its log, and a clock."""

    coordinator: GroupCoordinator
    log: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    now: float = 0.0
    _ids: int = 0
    epochs: dict[str, int] = attrs.field(factory=dict)
    owned: dict[str, frozenset[TopicPartition]] = attrs.field(factory=dict)

    @classmethod
    def make(cls, **config: Any) -> Group:
        return cls(serving_coordinator(GroupConfig(**config), random.Random(3)))

    def send(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        self._ids += 1
        result = self.coordinator.consumer_group_heartbeat(self._ids, request, self.now)
        replies = self.log.take(result) + self.log.flush(self.coordinator, self.now)
        (reply,) = [r for r in replies if r.request_id == self._ids]
        assert isinstance(reply.response, ConsumerGroupHeartbeatResponse)
        return reply.response

    def join(
        self, member: str, topics: tuple[str, ...] = ("orders",), **extra: Any
    ) -> ConsumerGroupHeartbeatResponse:
        request = ConsumerGroupHeartbeatRequest(
            GROUP,
            member,
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=topics,
            owned=frozenset(),
            topics=TOPICS,
            topic_ids=IDS,
        )
        response = self.send(attrs.evolve(request, **extra))
        self._track(member, response)
        return response

    def beat(self, member: str, **extra: Any) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat as a well-behaved member sends it: its epoch and what it owns."""
        request = ConsumerGroupHeartbeatRequest(
            GROUP,
            member,
            self.epochs[member],
            owned=self.owned[member],
            topics=TOPICS,
            topic_ids=IDS,
        )
        response = self.send(attrs.evolve(request, **extra))
        self._track(member, response)
        return response

    def _track(self, member: str, response: ConsumerGroupHeartbeatResponse) -> None:
        if response.error is ErrorCode.none:
            self.epochs[member] = response.member_epoch
            if response.assignment is not None:
                # a member gives up what it is no longer assigned at once, and takes
                # what it is given
                self.owned[member] = response.assignment

    def settle(self, members: list[str], rounds: int = 10) -> None:
        """Everyone heartbeats until the group is Stable; at every step no partition is
        owned by two members."""
        for _ in range(rounds):
            for member in members:
                self.beat(member)
                self.assert_no_partition_owned_twice()
            if self.state is ConsumerGroupState.STABLE:
                return
        raise AssertionError(f"not stable after {rounds} rounds: {self.state}")

    @property
    def state(self) -> ConsumerGroupState:
        group = self.coordinator.consumer_group(GROUP)
        assert group is not None
        return group.state

    def assert_no_partition_owned_twice(self) -> None:
        seen: dict[TopicPartition, str] = {}
        for member, owned in self.owned.items():
            for tp in owned:
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {member}"
                seen[tp] = member


def all_partitions(topics: Mapping[str, int], *names: str) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t in names for p in range(topics[t])}


def test_three_members_share_every_partition_once_and_evenly() -> None:
    group = Group.make()
    for member in ("a", "b", "c"):
        assert group.join(member).error is ErrorCode.none
    group.settle(["a", "b", "c"])
    owned = [group.owned[m] for m in ("a", "b", "c")]
    assert set().union(*owned) == all_partitions(TOPICS, "orders")
    assert sorted(len(o) for o in owned) == [2, 2, 2]
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert described.group_epoch == described.assignment_epoch == 3


def test_a_joining_member_gets_partitions_only_after_their_owner_revoked_them() -> None:
    group = Group.make()
    group.join("a")
    group.settle(["a"])
    assert len(group.owned["a"]) == 6
    joined = group.join("b")
    # b's target is half of a's partitions, but a still owns them: b gets nothing yet
    assert joined.assignment == frozenset()
    a_told = group.beat("a")
    assert a_told.assignment is not None
    assert len(a_told.assignment) == 3
    # a has not reported the revocation yet: b still waits, at the new epoch
    assert group.beat("b").assignment in (None, frozenset())
    group.settle(["a", "b"])
    assert len(group.owned["a"]) == len(group.owned["b"]) == 3


def test_a_member_that_leaves_hands_its_partitions_to_the_others() -> None:
    group = Group.make()
    group.join("a")
    group.join("b")
    group.settle(["a", "b"])
    left = group.beat("b", member_epoch=-1)
    assert (left.error, left.member_epoch) == (ErrorCode.none, -1)
    del group.owned["b"], group.epochs["b"]
    group.settle(["a"])
    assert group.owned["a"] == all_partitions(TOPICS, "orders")


def test_a_silent_member_is_fenced_after_its_session_and_its_partitions_move() -> None:
    group = Group.make(group_consumer_session_timeout_ms=10_000)
    group.join("a")
    group.join("b")
    group.settle(["a", "b"])
    for _ in range(3):  # a keeps heartbeating, b goes quiet
        group.now += 4
        group.beat("a")
    deadline = group.coordinator.next_deadline()
    assert deadline is not None
    assert deadline <= group.now
    group.log.take(group.coordinator.on_timer(group.now))
    late = group.beat("b")
    assert late.error is ErrorCode.unknown_member_id
    del group.owned["b"]
    group.settle(["a"])
    assert group.owned["a"] == all_partitions(TOPICS, "orders")


def test_a_stale_member_epoch_is_fenced_and_changes_nothing() -> None:
    group = Group.make()
    group.join("a")
    group.join("b")
    group.settle(["a", "b"])
    epoch = group.epochs["a"]
    assert epoch > 1
    stale = group.beat("a", member_epoch=epoch - 1, owned=None)
    assert stale.error is ErrorCode.fenced_member_epoch
    ahead = group.beat("a", member_epoch=group.epochs["a"] + 5)
    assert ahead.error is ErrorCode.fenced_member_epoch
    # nothing was lost: a heartbeat with the right epoch is still answered
    assert group.beat("a").error is ErrorCode.none
    assert group.state is ConsumerGroupState.STABLE


def test_an_unknown_assignor_is_unsupported_assignor_and_nothing_joins() -> None:
    group = Group.make()
    refused = group.join("a", server_assignor="sticky")
    assert refused.error is ErrorCode.unsupported_assignor
    assert group.coordinator.consumer_group(GROUP) is None
    assert group.join("a", server_assignor="range").error is ErrorCode.none


def test_bad_fields_are_invalid_request() -> None:
    group = Group.make()
    bad: list[dict[str, Any]] = [
        {"group_id": ""},
        {"member_id": ""},
        {"rebalance_timeout_ms": -1},
        {"owned": None},
        {"owned": frozenset({TopicPartition("orders", 0)})},
        {"subscribed_topic_names": None},
        {"member_epoch": -3},
        {"instance_id": ""},
    ]
    for fields in bad:
        assert group.join("a", **fields).error is ErrorCode.invalid_request, fields
    assert group.coordinator.consumer_group(GROUP) is None


def test_unknown_members_and_groups_get_kafkas_errors() -> None:
    group = Group.make()
    group.epochs["x"], group.owned["x"] = 3, frozenset()
    assert group.beat("x").error is ErrorCode.group_id_not_found
    group.join("a")
    assert group.beat("x").error is ErrorCode.unknown_member_id


def test_a_static_member_that_comes_back_keeps_its_partitions_without_a_new_epoch() -> (
    None
):
    group = Group.make()
    group.join("a", instance_id="i-a")
    group.join("b", instance_id="i-b")
    group.settle(["a", "b"])
    before = group.owned["a"]
    consumer = group.coordinator.consumer_group(GROUP)
    assert consumer is not None
    epoch = consumer.group_epoch
    assert group.beat("a", member_epoch=-2, instance_id="i-a").member_epoch == -2
    back = group.join("a2", instance_id="i-a")
    assert back.error is ErrorCode.none
    assert back.assignment == before
    assert consumer.group_epoch == epoch
    # the instance id cannot be taken while its member is live
    assert group.join("a3", instance_id="i-a").error is ErrorCode.unreleased_instance_id


def test_a_classic_group_with_members_is_not_a_consumer_group_and_vice_versa() -> None:
    group = Group.make()
    join = JoinGroupRequest(
        "classic", "", "consumer", (("range", b""),), 10_000, version=3
    )
    group.log.take(group.coordinator.join_group(1, join, 0.0))
    refused = group.send(
        ConsumerGroupHeartbeatRequest(
            "classic",
            "m",
            0,
            rebalance_timeout_ms=1,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
        )
    )
    assert refused.error is ErrorCode.group_id_not_found
    group.join("a")
    result = group.coordinator.join_group(99, attrs.evolve(join, group_id=GROUP), 0.0)
    (reply,) = result.replies
    assert isinstance(reply.response, JoinGroupResponse)
    assert reply.response.error_code is ErrorCode.group_id_not_found


def test_offset_commits_carry_the_member_epoch_as_generation() -> None:
    group = Group.make()
    group.join("a")
    group.settle(["a"])
    epoch = group.epochs["a"]
    tp = TopicPartition("orders", 0)

    def commit(member: str, generation: int, version: int = 9) -> ErrorCode:
        request = OffsetCommitRequest(
            GROUP, generation, member, ((tp, CommittedOffset(5)),), api_version=version
        )
        result = group.coordinator.commit_offsets(1000, request, group.now)
        replies = group.log.take(result) + group.log.flush(group.coordinator, group.now)
        (reply,) = replies
        return reply.response.errors[0][1]  # type: ignore[union-attr]

    assert commit("a", epoch) is ErrorCode.none
    assert commit("a", epoch - 1) is ErrorCode.stale_member_epoch
    assert commit("a", epoch + 1) is ErrorCode.stale_member_epoch
    assert commit("nobody", epoch) is ErrorCode.unknown_member_id
    assert commit("a", epoch, version=8) is ErrorCode.unsupported_version
    fetched = group.coordinator.fetch_offsets(GROUP, [tp])
    assert fetched.offsets[0][1].offset == 5  # type: ignore[union-attr]


def test_a_new_coordinator_replays_the_records_into_the_same_groups() -> None:
    """Everything a heartbeat changed is in the log (KIP-848's six record types): a
    fresh coordinator that loads the partition has the same epochs, subscriptions,
    targets and member assignments, and the members heartbeat on without rejoining."""
    group = Group.make(offsets_topic_num_partitions=1)
    group.join("a", instance_id="i-a")
    group.join("b", topics=("orders", "audit"), server_assignor="range")
    group.join("c")
    group.settle(["a", "b", "c"])
    group.beat("c", member_epoch=-1)  # c leaves: its records become tombstones
    del group.owned["c"], group.epochs["c"]
    group.beat("a")  # a mid-way state: a target newer than what b holds
    before = group.coordinator.consumer_group(GROUP)
    assert before is not None
    fresh = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=1))
    fresh.begin_loading(0)
    fresh.load_partition(0, group.log.partitions[0], group.now)
    after = fresh.consumer_group(GROUP)
    assert after is not None
    assert (after.group_epoch, after.assignment_epoch) == (
        before.group_epoch,
        before.assignment_epoch,
    )
    assert after.subscriptions == before.subscriptions
    assert after.target == before.target
    assert after.metadata == before.metadata
    for member_id, member in before.members.items():
        loaded = after.members[member_id]
        assert (loaded.member_epoch, loaded.state, loaded.assigned) == (
            member.member_epoch,
            member.state,
            member.assigned,
        )
        assert loaded.pending_revocation == member.pending_revocation
    assert set(after.members) == {"a", "b"}
    assert fresh.group(GROUP) is None  # not also a classic group
    group.coordinator = fresh
    group.settle(["a", "b"])
    assert group.owned["a"] | group.owned["b"] == all_partitions(
        TOPICS, "orders", "audit"
    )


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_fenced() -> None:
    """The rebalance timeout runs from the request to revoke: a member that still
    reports the partitions when it ends is removed, and the others get them."""
    group = Group.make()
    group.join("a", rebalance_timeout_ms=5_000)
    group.settle(["a"])
    held = group.owned["a"]
    group.join("b")
    group.beat("a")  # told to revoke half
    for _ in range(3):  # keeps heartbeating, but never lets go
        group.now += 2
        group.beat("a", owned=held)
    group.log.take(group.coordinator.on_timer(group.now))
    assert group.beat("a", owned=held).error is ErrorCode.unknown_member_id
    del group.owned["a"]
    group.settle(["b"])
    assert group.owned["b"] == all_partitions(TOPICS, "orders")


def test_deleting_a_consumer_group_needs_it_empty_and_takes_its_records() -> None:
    group = Group.make(offsets_topic_num_partitions=1)
    group.join("a")
    group.settle(["a"])

    def delete() -> ErrorCode:
        result = group.coordinator.delete_group(500, GROUP, group.now)
        replies = group.log.take(result) + group.log.flush(group.coordinator, group.now)
        (reply,) = replies
        return reply.response.error_code  # type: ignore[union-attr]

    assert delete() is ErrorCode.non_empty_group
    group.beat("a", member_epoch=-1)
    assert delete() is ErrorCode.none
    assert group.coordinator.consumer_group(GROUP) is None
    fresh = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=1))
    fresh.begin_loading(0)
    fresh.load_partition(0, group.log.partitions[0], group.now)
    assert fresh.consumer_group(GROUP) is None
    assert fresh.group(GROUP) is None


def test_group_consumer_assignors_names_the_default_and_refuses_unknown_ones() -> None:
    config = GroupConfig.from_properties({"group.consumer.assignors": "range,uniform"})
    group = Group(serving_coordinator(config))
    group.join("a")
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert described.assignor == "range"
    with pytest.raises(ConfigError, match="sticky"):
        GroupConfig.from_properties({"group.consumer.assignors": "uniform,sticky"})
