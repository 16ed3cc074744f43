"""The online migration between the classic and the consumer protocol (KIP-848): a live
classic group upgraded when a consumer-protocol member joins, its classic members served
by the consumer group, the downgrade when the last consumer-protocol member leaves,
``group.consumer.migration.policy``, and a failed write reverted."""

from __future__ import annotations

import random
import uuid
from typing import Any

import attrs
import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError, TopicPartition
from minikafka.coordination import MemberAssignmentChanged
from minikafka.coordination.assignors._assignor import Assignment, Subscription
from minikafka.coordination.assignors._consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from minikafka.coordination.group._config import GROUP_CONFIG, GroupConfig
from minikafka.coordination.group._consumer_group import ConsumerGroup
from minikafka.coordination.group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._group_requests import (
    CommittedOffset,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.group._migration import (
    ALLOWED,
    Direction,
    MigrationPolicy,
)
from minikafka.coordination.group._results import GroupResponse, GroupResult
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace import Tracer
from minikafka.trace.testing import recording_tracer

TOPICS = {"orders": 6}
IDS = {"orders": uuid.uuid5(uuid.NAMESPACE_URL, "orders")}
GROUP = "g"
SESSION_MS = 10_000


def tps(*partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition("orders", p) for p in partitions)


def protocols(owned: frozenset[TopicPartition] = frozenset()) -> Any:
    subscription = Subscription(("orders",), owned_partitions=sorted(owned))
    return (("range", encode_subscription(subscription)),)


@attrs.define
class Mixed:
    """A coordinator, its log and a clock; requests get fresh ids and each is answered
    once. ``owned`` is what each member holds, as its client would."""

    coordinator: GroupCoordinator
    log: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    now: float = 0.0
    next_id: int = 0
    answers: dict[int, GroupResponse | ConsumerGroupHeartbeatResponse] = attrs.field(
        factory=dict
    )
    owned: dict[str, frozenset[TopicPartition]] = attrs.field(factory=dict)
    generations: dict[str, int] = attrs.field(factory=dict)

    @classmethod
    def make(cls, tracer: Tracer | None = None, **config: Any) -> Mixed:
        settings = {"group_initial_rebalance_delay_ms": 0, **config}
        return cls(
            serving_coordinator(
                GroupConfig(**settings), random.Random(5), tracer=tracer
            )
        )

    def _take(self, result: GroupResult) -> None:
        for reply in self.log.carry_out(self.coordinator, result, self.now):
            assert reply.request_id not in self.answers, "a request answered twice"
            self.answers[reply.request_id] = reply.response

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    # --- classic members ----------------------------------------------------------------

    def join(self, member_id: str) -> JoinGroupResponse:
        response = self.answers.get(self.send_join(member_id))
        assert isinstance(response, JoinGroupResponse), response
        return response

    def send_join(self, member_id: str) -> int:
        rid = self._id()
        owned = self.owned.get(member_id, frozenset())
        request = JoinGroupRequest(
            GROUP,
            member_id,
            "consumer",
            protocols(owned),
            SESSION_MS,
            30_000,
            version=3,
        )
        self._take(self.coordinator.join_group(rid, request, self.now))
        return rid

    def sync(self, member_id: str, assignments: Any = ()) -> SyncGroupResponse:
        return self.synced(member_id, self.send_sync(member_id, assignments))

    def send_sync(self, member_id: str, assignments: Any = ()) -> int:
        rid = self._id()
        request = SyncGroupRequest(
            GROUP, self.generations[member_id], member_id, assignments=assignments
        )
        self._take(self.coordinator.sync_group(rid, request, self.now))
        return rid

    def synced(self, member_id: str, rid: int) -> SyncGroupResponse:
        response = self.answers[rid]
        assert isinstance(response, SyncGroupResponse)
        if response.error_code is ErrorCode.none:
            self.owned[member_id] = frozenset(
                decode_assignment(response.assignment).partitions
            )
        return response

    def heartbeat(self, member_id: str) -> ErrorCode:
        rid = self._id()
        request = HeartbeatRequest(GROUP, self.generations[member_id], member_id)
        self._take(self.coordinator.heartbeat(rid, request, self.now))
        response = self.answers[rid]
        assert isinstance(response, HeartbeatResponse)
        return response.error_code

    def rejoin_and_sync(self, member_id: str) -> None:
        """A classic member told to rejoin: an eager client gives everything up,
        rejoins, syncs."""
        self.owned[member_id] = frozenset()
        joined = self.join(member_id)
        assert joined.error_code is ErrorCode.none
        self.generations[member_id] = joined.generation_id
        assert self.sync(member_id).error_code is ErrorCode.none

    def classic_group(self) -> tuple[str, str]:
        """Two classic members, Stable, holding orders 0-2 and 3-5."""
        a = self.join("").member_id
        parked = self.send_join("")  # a rebalance starts: b waits for a to rejoin
        again = self.join(a)
        second = self.answers[parked]
        assert isinstance(second, JoinGroupResponse)
        b = second.member_id
        gen = again.generation_id
        self.generations.update({a: gen, b: gen})
        plan = {a: tps(0, 1, 2), b: tps(3, 4, 5)}
        encoded = tuple(
            (m, encode_assignment(Assignment(sorted(p)))) for m, p in plan.items()
        )
        leader = again.leader or a
        follower = b if leader == a else a
        waiting = self.send_sync(follower)
        self.sync(leader, encoded)
        self.synced(follower, waiting)
        classic = self.coordinator.group(GROUP)
        assert classic is not None
        assert classic.state is GroupState.STABLE
        assert self.owned == plan
        return a, b

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._take(self.coordinator.on_timer(self.now))

    # --- consumer-protocol members -------------------------------------------------------

    def beat(self, member: str, epoch: int) -> ConsumerGroupHeartbeatResponse:
        rid = self._id()
        request = ConsumerGroupHeartbeatRequest(
            GROUP,
            member,
            epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=("orders",) if epoch == 0 else None,
            owned=self.owned.get(member, frozenset()),
            topics=TOPICS,
            topic_ids=IDS,
        )
        self._take(self.coordinator.consumer_group_heartbeat(rid, request, self.now))
        response = self.answers[rid]
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        if response.error is ErrorCode.none and response.assignment is not None:
            self.owned[member] = response.assignment
        if response.error is ErrorCode.none:
            self.generations[member] = response.member_epoch
        return response

    def consumer_group(self) -> ConsumerGroup:
        group = self.coordinator.consumer_group(GROUP)
        assert group is not None
        return group

    def assert_no_partition_held_twice(self) -> None:
        held = [tp for owned in self.owned.values() for tp in owned]
        assert len(held) == len(set(held)), self.owned


def test_migration_policies_are_a_table_of_directions() -> None:
    assert ALLOWED[MigrationPolicy.BIDIRECTIONAL] == frozenset(Direction)
    assert not ALLOWED[MigrationPolicy.DISABLED]
    assert MigrationPolicy.parse("Upgrade").allows(Direction.UPGRADE)
    assert not MigrationPolicy.UPGRADE.allows(Direction.DOWNGRADE)


def test_a_bad_migration_policy_stops_the_config_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"group\.consumer\.migration\.policy"):
        GroupConfig.from_properties({"group.consumer.migration.policy": "sideways"})
    config = GroupConfig.from_properties(
        {"group.consumer.migration.policy": "DOWNGRADE"}
    )
    assert MigrationPolicy.parse(config.group_consumer_migration_policy) is (
        MigrationPolicy.DOWNGRADE
    )
    assert GroupConfig().group_consumer_migration_policy == "bidirectional"
    assert "group.consumer.migration.policy" in {k.name for k in GROUP_CONFIG.keys}


def test_a_consumer_member_joining_a_live_classic_group_upgrades_it() -> None:
    """The classic generation becomes the epochs; each classic member keeps what it
    holds; the joining member moves the group epoch."""
    m = Mixed.make()
    a, b = m.classic_group()
    generation = m.generations[a]
    joined = m.beat("n", 0)
    assert joined.error is ErrorCode.none
    assert m.coordinator.group(GROUP) is None
    group = m.consumer_group()
    assert set(group.members) == {a, b, "n"}
    assert set(group.classic) == {a, b}
    assert group.group_epoch == generation + 1
    assert group.members[a].assigned <= tps(0, 1, 2)
    # the classic group's record is gone from the log, the consumer group's are there
    records = m.log.plain(m.coordinator.manager.partition_for(GROUP))
    assert any(value is None for _, value in records)


def test_classic_members_rejoin_and_the_group_settles_with_no_partition_held_twice() -> (
    None
):
    m = Mixed.make()
    a, b = m.classic_group()
    m.beat("n", 0)
    for _ in range(6):
        for member in (a, b):
            if m.heartbeat(member) is ErrorCode.rebalance_in_progress:
                m.rejoin_and_sync(member)
            m.assert_no_partition_held_twice()
        m.beat("n", m.generations["n"])
        m.assert_no_partition_held_twice()
    group = m.consumer_group()
    assert group.state.value == "Stable"
    assert set().union(*m.owned.values()) == tps(0, 1, 2, 3, 4, 5)
    assert all(m.owned[x] for x in (a, b, "n"))


def test_the_last_consumer_member_leaving_downgrades_the_group() -> None:
    m = Mixed.make()
    a, b = m.classic_group()
    m.beat("n", 0)
    left = m.beat("n", -1)
    assert left.error is ErrorCode.none
    assert m.coordinator.consumer_group(GROUP) is None
    classic = m.coordinator.group(GROUP)
    assert classic is not None
    assert set(classic.members) == {a, b}
    assert classic.state is GroupState.PREPARING_REBALANCE
    # its members are told to rejoin, and rebalance through the classic protocol
    # (a member behind the group epoch hears ILLEGAL_GENERATION, as from Kafka; both
    # make a client rejoin)
    rejoin = {ErrorCode.rebalance_in_progress, ErrorCode.illegal_generation}
    assert m.heartbeat(a) in rejoin
    parked = m.send_join(a)
    joined = m.join(b)
    first = m.answers[parked]
    assert isinstance(first, JoinGroupResponse)
    assert first.generation_id == joined.generation_id == classic.generation_id
    assert m.coordinator.group(GROUP) is classic
    assert classic.state.value == GroupState.COMPLETING_REBALANCE.value
    assert {first.leader} <= {a, b}


def test_the_member_whose_leave_downgrades_the_group_is_traced_owning_nothing() -> None:
    """The ``group.member_assignment`` trace ends the leaving member with nothing, as it
    ends any departed member: a reader replaying it (who owned which partition when)
    must not count its partitions as its own while the classic members take them."""
    with recording_tracer(node=1) as tracer:
        m = Mixed.make(tracer=tracer)
        a, b = m.classic_group()
        m.beat("n", 0)
        for _ in range(6):  # the group settles: n owns a share
            for member in (a, b):
                if m.heartbeat(member) is ErrorCode.rebalance_in_progress:
                    m.rejoin_and_sync(member)
            m.beat("n", m.generations["n"])
        assert m.owned["n"]
        m.beat("n", -1)
        assert m.coordinator.consumer_group(GROUP) is None
        last = [
            e for e in tracer.of_type(MemberAssignmentChanged) if e.member_id == "n"
        ][-1]
        assert (last.assigned_partitions, last.partitions_pending_revocation) == (
            (),
            (),
        )
        assert last.member_epoch == -1


def test_a_classic_member_leaving_does_not_downgrade_and_is_removed() -> None:
    m = Mixed.make()
    a, b = m.classic_group()
    m.beat("n", 0)
    rid = m._id()
    leave = LeaveGroupRequest(GROUP, (MemberIdentity(a),))
    m._take(m.coordinator.leave_group(rid, leave, m.now))
    group = m.consumer_group()
    assert set(group.members) == {b, "n"}


def test_the_disabled_policy_refuses_the_upgrade_with_group_id_not_found() -> None:
    m = Mixed.make(group_consumer_migration_policy="disabled")
    a, b = m.classic_group()
    refused = m.beat("n", 0)
    assert refused.error is ErrorCode.group_id_not_found
    assert refused.error_message == f"Group {GROUP} is not a consumer group."
    classic = m.coordinator.group(GROUP)
    assert classic is not None
    assert set(classic.members) == {a, b}
    assert m.heartbeat(a) is ErrorCode.none


def test_the_upgrade_policy_keeps_the_consumer_group_when_consumer_members_leave() -> (
    None
):
    m = Mixed.make(group_consumer_migration_policy="upgrade")
    a, b = m.classic_group()
    m.beat("n", 0)
    m.beat("n", -1)
    group = m.consumer_group()
    assert set(group.members) == {a, b}


def test_a_classic_member_commits_offsets_with_its_member_epoch_as_generation() -> None:
    m = Mixed.make()
    a, _ = m.classic_group()
    m.beat("n", 0)
    epoch = m.consumer_group().members[a].member_epoch

    def commit(generation: int) -> ErrorCode:
        rid = m._id()
        offsets = ((TopicPartition("orders", 0), CommittedOffset(1)),)
        request = OffsetCommitRequest(GROUP, generation, a, offsets, api_version=8)
        m._take(m.coordinator.commit_offsets(rid, request, m.now))
        response = m.answers[rid]
        assert isinstance(response, OffsetCommitResponse)
        return response.errors[0][1]

    assert commit(epoch) is ErrorCode.none
    assert commit(epoch + 7) is ErrorCode.illegal_generation


def test_the_classic_members_metadata_survives_a_failover() -> None:
    """The member records carry ClassicMemberMetadata (tagged field 0): a coordinator
    replaying the partition serves the classic members as classic members."""
    m = Mixed.make()
    a, _b = m.classic_group()
    m.beat("n", 0)
    partition = m.coordinator.manager.partition_for(GROUP)
    other = serving_coordinator(GroupConfig(), random.Random(1))
    other.begin_loading(partition)
    other.load_partition(partition, m.log.partitions[partition], m.now)
    group = other.consumer_group(GROUP)
    assert group is not None
    assert group.classic == m.consumer_group().classic
    assert group.classic[a].session_timeout_ms == SESSION_MS


def test_a_failed_write_reverts_the_heartbeat_that_made_it() -> None:
    m = Mixed.make()
    m.beat("a", 0)
    m.beat("a", m.generations["a"])
    before = m.consumer_group()
    snapshot = (
        before.group_epoch,
        before.assignment_epoch,
        dict(before.target),
        {k: (v.member_epoch, v.assigned) for k, v in before.members.items()},
    )
    rid = m._id()
    offsets = ((TopicPartition("orders", 0), CommittedOffset(1)),)
    commit = OffsetCommitRequest(GROUP, m.generations["a"], "a", offsets, api_version=9)
    m._take(m.coordinator.commit_offsets(rid, commit, m.now))
    m.log.fail_with = ErrorCode.not_leader_or_follower
    failed = m.beat("b", 0)
    assert failed.error is ErrorCode.not_coordinator
    # its offsets do not make it a classic group too
    assert m.coordinator.group(GROUP) is None
    after = m.consumer_group()
    assert (
        after.group_epoch,
        after.assignment_epoch,
        dict(after.target),
        {k: (v.member_epoch, v.assigned) for k, v in after.members.items()},
    ) == snapshot


def test_a_failed_upgrade_write_leaves_the_classic_group_in_place() -> None:
    m = Mixed.make()
    a, b = m.classic_group()
    m.log.fail_with = ErrorCode.not_enough_replicas
    failed = m.beat("n", 0)
    assert failed.error is ErrorCode.coordinator_not_available
    assert m.coordinator.consumer_group(GROUP) is None
    classic = m.coordinator.group(GROUP)
    assert classic is not None
    assert set(classic.members) == {a, b}


def test_after_a_failed_write_the_group_is_what_the_log_replays_to() -> None:
    """Two heartbeats' writes in flight; the first fails, the second commits: the
    coordinator's group is the one a new coordinator loads from the log (the timeline
    reverts the first and keeps the second on top, as Kafka's does)."""
    m = Mixed.make()
    first = m.coordinator.consumer_group_heartbeat(
        1,
        ConsumerGroupHeartbeatRequest(
            GROUP,
            "a",
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
            topics=TOPICS,
            topic_ids=IDS,
        ),
        m.now,
    )
    second = m.coordinator.consumer_group_heartbeat(
        2,
        ConsumerGroupHeartbeatRequest(
            GROUP,
            "b",
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
            topics=TOPICS,
            topic_ids=IDS,
        ),
        m.now,
    )
    (w1,), (w2,) = first.records, second.records
    failed = m.coordinator.complete_write(
        w1.write_id, ErrorCode.not_enough_replicas, m.now
    )
    (reply,) = failed.replies
    assert isinstance(reply.response, ConsumerGroupHeartbeatResponse)
    assert reply.response.error is ErrorCode.coordinator_not_available
    m.coordinator.complete_write(w2.write_id, ErrorCode.none, m.now)
    other = serving_coordinator(GroupConfig(), random.Random(1))
    other.begin_loading(w2.partition)
    other.load_partition(w2.partition, list(w2.records), m.now)
    here, there = m.consumer_group(), other.consumer_group(GROUP)
    assert there is not None
    assert set(here.members) == set(there.members) == {"b"}
    assert (here.group_epoch, here.assignment_epoch, here.target) == (
        there.group_epoch,
        there.assignment_epoch,
        there.target,
    )


def test_a_restarted_static_classic_member_takes_its_old_place_without_a_new_epoch() -> (
    None
):
    m = Mixed.make()
    m.beat("n", 0)
    rid = m._id()
    join = JoinGroupRequest(
        GROUP, "", "consumer", protocols(), SESSION_MS, 30_000, "static-1", version=3
    )
    m._take(m.coordinator.join_group(rid, join, m.now))
    first = m.answers[rid]
    assert isinstance(first, JoinGroupResponse)
    assert first.error_code is ErrorCode.none
    m.generations[first.member_id] = first.generation_id
    m.sync(first.member_id)
    for _ in range(4):
        m.beat("n", m.generations["n"])
        if m.heartbeat(first.member_id) is ErrorCode.rebalance_in_progress:
            m.rejoin_and_sync(first.member_id)
    epoch = m.consumer_group().group_epoch
    held = m.consumer_group().members[first.member_id].assigned
    assert held
    rid = m._id()
    m._take(m.coordinator.join_group(rid, join, m.now))  # the restart: no member id
    again = m.answers[rid]
    assert isinstance(again, JoinGroupResponse)
    assert again.error_code is ErrorCode.none
    assert again.member_id != first.member_id
    group = m.consumer_group()
    assert first.member_id not in group.members
    assert group.group_epoch == epoch
    assert group.members[again.member_id].assigned == held
    # the old incarnation is fenced out
    stale = attrs.evolve(join, member_id=first.member_id)
    rid = m._id()
    m._take(m.coordinator.join_group(rid, stale, m.now))
    fenced = m.answers[rid]
    assert isinstance(fenced, JoinGroupResponse)
    assert fenced.error_code is ErrorCode.fenced_instance_id


def test_a_failed_write_of_another_group_leaves_a_consumer_group_with_offsets_alone() -> (
    None
):
    """The offsets' revert restores the groups its partition's offsets name; a
    consumer group with offsets is not made a classic group too."""
    m = Mixed.make()
    m.beat("a", 0)
    rid = m._id()
    offsets = ((TopicPartition("orders", 0), CommittedOffset(1)),)
    commit = OffsetCommitRequest(GROUP, m.generations["a"], "a", offsets, api_version=9)
    m._take(m.coordinator.commit_offsets(rid, commit, m.now))
    partition_for = m.coordinator.manager.partition_for
    other = next(
        f"other-{i}"
        for i in range(10_000)
        if partition_for(f"other-{i}") == partition_for(GROUP)
    )
    m.log.fail_with = ErrorCode.not_leader_or_follower
    request = ConsumerGroupHeartbeatRequest(
        other,
        "z",
        0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("orders",),
        owned=frozenset(),
        topics=TOPICS,
        topic_ids=IDS,
    )
    m._take(m.coordinator.consumer_group_heartbeat(m._id(), request, m.now))
    assert m.coordinator.consumer_group(other) is None
    assert m.coordinator.group(GROUP) is None
    assert set(m.consumer_group().members) == {"a"}


def test_the_last_consumer_member_fenced_by_its_session_downgrades_the_group() -> None:
    """Kafka's ``consumerGroupFenceMember``: a session that ends is a leave."""
    m = Mixed.make()
    a, b = m.classic_group()
    m.beat("n", 0)
    for _ in range(12):  # n says nothing for 60 s; the classic members heartbeat
        m.advance(5.0)
        if m.coordinator.consumer_group(GROUP) is None:
            break
        for member in (a, b):
            if m.heartbeat(member) is ErrorCode.rebalance_in_progress:
                m.rejoin_and_sync(member)
    assert m.coordinator.consumer_group(GROUP) is None
    classic = m.coordinator.group(GROUP)
    assert classic is not None
    assert set(classic.members) == {a, b}
    assert classic.state is GroupState.PREPARING_REBALANCE


def test_the_downgrade_policy_refuses_the_upgrade() -> None:
    m = Mixed.make(group_consumer_migration_policy="downgrade")
    m.classic_group()
    assert m.beat("n", 0).error is ErrorCode.group_id_not_found
    assert m.coordinator.consumer_group(GROUP) is None
