"""The end of the join phase and the sync phase: the cases the group coordinator lab
promises that the scenarios of test_group_coordinator.py leave out (an empty group's
generation written, a join phase nobody rejoined, sessions restarted by the SyncGroup
answer, a late write of an older generation, the error a failed write answers)."""

from __future__ import annotations

import random

import attrs
from kio.schema.errors import ErrorCode

from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._group import GroupMetadata
from minikafka.coordination.group._group_requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.group._results import GroupReply, GroupResponse, GroupResult
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator

E = ErrorCode
G = GroupState
SESSION_MS = 10_000
REBALANCE_MS = 30_000


@attrs.define
class Group:
    """One group "g" on a coordinator; writes commit when ``flush`` says so."""

    coordinator: GroupCoordinator = attrs.field(
        factory=lambda: serving_coordinator(
            GroupConfig(group_initial_rebalance_delay_ms=0), random.Random(3)
        )
    )
    topic: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    auto_flush: bool = True
    now: float = 0.0
    answers: dict[int, GroupResponse] = attrs.field(factory=dict)
    next_id: int = 0

    def _take(self, result: GroupResult) -> None:
        replies = self.topic.take(result)
        if self.auto_flush:
            replies = replies + self.flush()
        for reply in replies:
            assert reply.request_id not in self.answers, "a request answered twice"
            self.answers[reply.request_id] = reply.response

    def flush(self) -> list[GroupReply]:
        return self.topic.flush(self.coordinator, self.now)

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def join(self, member_id: str = "", instance: str | None = None) -> int:
        rid = self._id()
        request = JoinGroupRequest(
            "g",
            member_id,
            "consumer",
            (("range", b"meta"),),
            SESSION_MS,
            REBALANCE_MS,
            instance,
            "client",
            "/10.0.0.1",
            9,
        )
        self._take(self.coordinator.join_group(rid, request, self.now))
        return rid

    def new_member(self) -> tuple[str, int]:
        """A dynamic member: MEMBER_ID_REQUIRED, then the join with its id."""
        first = self.joined(self.join())
        assert first.error_code is E.member_id_required
        return first.member_id, self.join(first.member_id)

    def sync(
        self, member_id: str, generation: int, plan: dict[str, bytes] | None = None
    ) -> int:
        rid = self._id()
        request = SyncGroupRequest(
            "g", generation, member_id, None, None, None, tuple((plan or {}).items())
        )
        self._take(self.coordinator.sync_group(rid, request, self.now))
        return rid

    def heartbeat(self, member_id: str, generation: int) -> None:
        request = HeartbeatRequest("g", generation, member_id, None)
        self._take(self.coordinator.heartbeat(self._id(), request, self.now))

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._take(self.coordinator.on_timer(self.now))

    def joined(self, rid: int) -> JoinGroupResponse:
        response = self.answers[rid]
        assert isinstance(response, JoinGroupResponse)
        return response

    def synced(self, rid: int) -> SyncGroupResponse:
        response = self.answers[rid]
        assert isinstance(response, SyncGroupResponse)
        return response

    @property
    def group(self) -> GroupMetadata:
        group = self.coordinator.group("g")
        assert group is not None
        return group


def two_members() -> tuple[Group, str, str, int]:
    """Members a (the leader) and b, both joined into one generation (returned),
    CompletingRebalance."""
    g = Group()
    a, _ = g.new_member()  # a's generation, alone
    b, _ = g.new_member()  # b joining starts the next
    g.join(a)  # a rejoins: everyone known has joined, the join phase ends
    assert g.group.state is G.COMPLETING_REBALANCE
    assert g.group.leader_id == a
    return g, a, b, g.group.generation_id


def test_a_join_phase_that_leaves_the_group_empty_writes_its_generation() -> None:
    """A coordinator that takes the group over from the log must see the generation
    the last join phase moved to, not the one before it."""
    g = Group()
    a, _ = g.new_member()
    g.sync(a, 1, {a: b"all"})
    assert g.group.state is G.STABLE
    g._take(
        g.coordinator.leave_group(
            g._id(), LeaveGroupRequest("g", (MemberIdentity(a),)), g.now
        )
    )
    assert (g.group.state, g.group.generation_id) == (G.EMPTY, 2)
    successor = GroupCoordinator(g.coordinator.config, random.Random(4))
    for partition in range(successor.config.offsets_topic_num_partitions):
        successor.begin_loading(partition)
        successor.load_partition(partition, g.topic.partitions.get(partition, []), 9.0)
    loaded = successor.group("g")
    assert loaded is not None
    assert (loaded.state, loaded.generation_id) == (G.EMPTY, 2)


def test_a_join_phase_nobody_rejoined_waits_another_rebalance_timeout() -> None:
    """Static members that did not rejoin stay; with nobody to lead, no generation."""
    g = Group()
    rid_a = g.join(instance="i-a")
    a = g.joined(rid_a).member_id
    g.sync(a, 1, {a: b"A"})
    rid_b = g.join(instance="i-b")  # b's arrival starts a rebalance
    b = g.group.static_member_id("i-b")
    assert b is not None
    assert rid_b not in g.answers
    # b leaves before the join phase ends, and a (alive) never rejoins it.
    g._take(
        g.coordinator.leave_group(
            g._id(), LeaveGroupRequest("g", (MemberIdentity(b, "i-b"),)), g.now
        )
    )
    assert g.group.state is G.PREPARING_REBALANCE
    generation = g.group.generation_id
    for _ in range(REBALANCE_MS // 5000):
        g.advance(5.0)
        g.heartbeat(a, generation)  # a is alive, but does not rejoin
    assert g.group.state is G.PREPARING_REBALANCE
    assert g.group.generation_id == generation
    rid = g.join(a, instance="i-a")  # a rejoins at last: it leads the next generation
    assert g.joined(rid).generation_id == generation + 1
    assert g.joined(rid).leader == a


def test_a_members_session_restarts_when_its_sync_group_is_answered() -> None:
    g, a, b, gen = two_members()
    g.advance(1.0)
    g.sync(b, gen)  # parked until the leader's plan is written
    g.advance(8.0)
    rid = g.sync(a, gen, {a: b"A", b: b"B"})  # at 9 s: b is answered now
    assert g.synced(rid).assignment == b"A"
    assert g.group.state is G.STABLE
    g.advance(9.0)  # 18 s: 17 s since b's SyncGroup, 9 s since its answer
    assert b in g.group.members
    g.advance(3.0)  # 21 s: b's session, restarted at 9 s, has expired
    assert b not in g.group.members


def test_a_plan_written_for_an_older_generation_changes_nothing() -> None:
    g, a, b, gen = two_members()
    g.auto_flush = False
    g.sync(a, gen, {a: b"old-a", b: b"old-b"})
    late, g.topic.pending = g.topic.pending, []  # the write of the plan, in flight
    assert len(late) == 1
    # Meanwhile c joins: a rebalance into the next generation, which a and b rejoin.
    g.auto_flush = True
    c, _ = g.new_member()
    g.join(a)
    g.join(b)
    assert (g.group.state, g.group.generation_id) == (G.COMPLETING_REBALANCE, gen + 1)
    sync_b = g.sync(b, gen + 1)
    # The older generation's write comes back, committed: it must not hand out its plan.
    g._take(g.coordinator.complete_write(late[0].write_id, E.none, g.now))
    assert g.group.state is G.COMPLETING_REBALANCE
    assert sync_b not in g.answers
    g.sync(a, gen + 1, {a: b"new-a", b: b"new-b", c: b"new-c"})
    assert g.synced(sync_b).assignment == b"new-b"


def test_a_failed_write_of_the_plan_answers_the_error_a_client_expects() -> None:
    g, a, b, gen = two_members()
    sync_b = g.sync(b, gen)
    g.topic.fail_with = E.not_enough_replicas
    sync_a = g.sync(a, gen, {a: b"A", b: b"B"})
    # Kafka's storeGroup: the log's NOT_ENOUGH_REPLICAS is COORDINATOR_NOT_AVAILABLE
    # to a member, which then looks the coordinator up again.
    assert g.synced(sync_a).error_code is E.coordinator_not_available
    assert g.synced(sync_b).error_code is E.coordinator_not_available
