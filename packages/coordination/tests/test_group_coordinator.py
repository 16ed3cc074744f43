"""GroupCoordinator core: seed 002's scenarios, every error path, and a random walk."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from kio.schema.errors import ErrorCode

from minikafka.coordination.group._config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._group import GroupMetadata, offset_commit_error
from minikafka.coordination.group._group_requests import (
    DeletableGroupResult,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    Protocols,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.group._results import GroupResponse, GroupResult
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator

G = GroupState
E = ErrorCode
RANGE: Protocols = (("range", b"range-meta"), ("roundrobin", b"rr-meta"))
SESSION_MS = 10_000
REBALANCE_MS = 30_000


@attrs.define
class Harness:
    """Sends requests with fresh ids and checks that each is answered exactly once."""

    coordinator: GroupCoordinator
    topic: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    now: float = 0.0
    next_id: int = 0
    answers: dict[int, GroupResponse] = attrs.field(factory=dict)
    sent: set[int] = attrs.field(factory=set)

    @classmethod
    def make(cls, **overrides: int) -> Harness:
        config: dict[str, Any] = {"group_initial_rebalance_delay_ms": 0, **overrides}
        return cls(serving_coordinator(GroupConfig(**config), random.Random(7)))

    def _take(self, result: GroupResult) -> None:
        # Writes to __consumer_offsets commit at once here; their replies come in too.
        replies = self.topic.carry_out(self.coordinator, result, self.now)
        for reply in replies:
            assert reply.request_id in self.sent, "a reply to no request"
            assert reply.request_id not in self.answers, "a request answered twice"
            self.answers[reply.request_id] = reply.response

    def _id(self) -> int:
        self.next_id += 1
        self.sent.add(self.next_id)
        return self.next_id

    def join(
        self,
        member_id: str = "",
        *,
        client_id: str = "client",
        protocols: Protocols = RANGE,
        protocol_type: str = "consumer",
        instance: str | None = None,
        version: int = 9,
        session_ms: int = SESSION_MS,
        rebalance_ms: int = REBALANCE_MS,
        group: str = "g",
    ) -> int:
        rid = self._id()
        request = JoinGroupRequest(
            group,
            member_id,
            protocol_type,
            protocols,
            session_ms,
            rebalance_ms,
            instance,
            client_id,
            "/10.0.0.1",
            version,
        )
        self._take(self.coordinator.join_group(rid, request, self.now))
        return rid

    def new_member(
        self,
        client_id: str,
        *,
        protocols: Protocols = RANGE,
        rebalance_ms: int = REBALANCE_MS,
    ) -> tuple[str, int]:
        """A dynamic member's first JoinGroup (v9): MEMBER_ID_REQUIRED, then the rejoin.
        Returns the member id and the id of the rejoin request."""
        first = self.join_response(
            self.join(
                client_id=client_id, protocols=protocols, rebalance_ms=rebalance_ms
            )
        )
        assert first.error_code is E.member_id_required
        assert first.member_id.startswith(client_id + "-")
        rid = self.join(
            first.member_id,
            client_id=client_id,
            protocols=protocols,
            rebalance_ms=rebalance_ms,
        )
        return first.member_id, rid

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
        protocol_name: str | None = None,
        group: str = "g",
    ) -> int:
        rid = self._id()
        request = SyncGroupRequest(
            group,
            generation,
            member_id,
            instance,
            None,
            protocol_name,
            tuple((assignments or {}).items()),
        )
        self._take(self.coordinator.sync_group(rid, request, self.now))
        return rid

    def heartbeat(
        self,
        member_id: str,
        generation: int,
        *,
        instance: str | None = None,
        group: str = "g",
    ) -> ErrorCode:
        rid = self._id()
        request = HeartbeatRequest(group, generation, member_id, instance)
        self._take(self.coordinator.heartbeat(rid, request, self.now))
        response = self.answers[rid]
        assert isinstance(response, HeartbeatResponse)
        return response.error_code

    def leave(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        rid = self._id()
        self._take(self.coordinator.leave_group(rid, request, self.now))
        response = self.answers[rid]
        assert isinstance(response, LeaveGroupResponse)
        return response

    def unload(self) -> None:
        self._take(self.coordinator.unload_group("g"))

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._take(self.coordinator.on_timer(self.now))

    def pending(self, rid: int) -> bool:
        return rid not in self.answers

    def join_response(self, rid: int) -> JoinGroupResponse:
        response = self.answers[rid]
        assert isinstance(response, JoinGroupResponse)
        return response

    def sync_response(self, rid: int) -> SyncGroupResponse:
        response = self.answers[rid]
        assert isinstance(response, SyncGroupResponse)
        return response

    def state(self) -> GroupState:
        """The group's state, read anew each time (a method, so mypy does not narrow it)."""
        return self.group.state

    @property
    def group(self) -> GroupMetadata:
        group = self.coordinator.group("g")
        assert group is not None
        return group


def joined_group(*clients: str) -> tuple[Harness, list[str]]:
    """Members join within the initial delay (3 s) and, 6 s later, share the first
    generation in CompletingRebalance, waiting for the leader's SyncGroup."""
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    ids = [h.new_member(client)[0] for client in clients]
    h.advance(6.0)
    return h, ids


def stable_group(h: Harness, clients: Sequence[str]) -> list[str]:
    """Members join one by one into a first generation and sync into Stable."""
    # Members arriving within the initial delay share the first generation.
    h.coordinator.config = attrs.evolve(
        h.coordinator.config, group_initial_rebalance_delay_ms=3000
    )
    ids: list[str] = []
    joins: list[int] = []
    for client in clients:
        member_id, rid = h.new_member(client)
        ids.append(member_id)
        joins.append(rid)
    h.advance(3.0)
    h.advance(3.0)
    assert h.state() is G.COMPLETING_REBALANCE
    generation = h.group.generation_id
    syncs = [h.sync(m, generation) for m in ids[1:]]
    syncs.append(h.sync(ids[0], generation, {m: m.encode() for m in ids}))
    assert h.state() is G.STABLE
    for member_id, rid in zip(ids[1:] + ids[:1], syncs, strict=True):
        assert h.sync_response(rid).assignment == member_id.encode()
    return ids


# --- seed 002's scenarios ------------------------------------------------------------


def test_join_of_several_members_leader_gets_metadata_and_sync_distributes() -> None:
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    a, join_a = h.new_member("a")
    assert h.state() is G.PREPARING_REBALANCE
    h.advance(1.0)
    b, join_b = h.new_member(
        "b", protocols=(("roundrobin", b"b-rr"), ("range", b"b-range"))
    )
    h.advance(1.0)
    c, join_c = h.new_member("c", protocols=(("roundrobin", b"c-rr"),))
    h.advance(1.0)  # t=3: the initial delay ran out, but members arrived: wait again
    assert h.state() is G.PREPARING_REBALANCE
    assert all(map(h.pending, (join_a, join_b, join_c)))
    h.advance(3.0)  # t=6: nobody new, the join phase ends
    assert h.state() is G.COMPLETING_REBALANCE
    assert h.group.generation_id == 1
    assert h.group.protocol_name == "roundrobin"  # b and c vote roundrobin, a range
    leader = h.join_response(join_a)
    assert (leader.error_code, leader.member_id, leader.leader) == (E.none, a, a)
    assert (leader.generation_id, leader.protocol_type, leader.protocol_name) == (
        1,
        "consumer",
        "roundrobin",
    )
    assert [(m.member_id, m.metadata) for m in leader.members] == [
        (a, b"rr-meta"),
        (b, b"b-rr"),
        (c, b"c-rr"),
    ]
    for member_id, rid in ((b, join_b), (c, join_c)):
        follower = h.join_response(rid)
        assert (follower.error_code, follower.member_id, follower.leader) == (
            E.none,
            member_id,
            a,
        )
        # only the leader learns the others' subscriptions
        assert follower.members == ()

    sync_b = h.sync(b, 1)
    assert h.pending(sync_b)  # a follower's SyncGroup waits for the leader's
    sync_a = h.sync(a, 1, {a: b"A", b: b"B", c: b"C"})
    assert h.state() is G.STABLE
    assert h.sync_response(sync_a).assignment == b"A"
    assert h.sync_response(sync_b) == SyncGroupResponse(
        E.none, b"B", "consumer", "roundrobin"
    )
    assert h.sync_response(h.sync(c, 1)).assignment == b"C"  # Stable: answered at once
    assert h.group.pending_sync_members == frozenset()
    assert h.group.sync_deadline is None


def test_a_member_joining_a_stable_group_starts_a_rebalance() -> None:
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])
    d, join_d = h.new_member("d")
    assert h.state() is G.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) is E.rebalance_in_progress
    assert h.heartbeat(b, 1) is E.rebalance_in_progress
    join_a = h.join(a)
    assert h.pending(join_a)
    join_b = h.join(b)  # the last known member rejoined: the join phase ends at once
    assert h.state() is G.COMPLETING_REBALANCE
    assert h.group.generation_id == 2
    assert h.join_response(join_a).leader == a  # the leader stays the leader
    assert [m.member_id for m in h.join_response(join_a).members] == [a, b, d]
    assert all(h.join_response(r).generation_id == 2 for r in (join_b, join_d))


def test_a_crashed_member_is_removed_after_its_session_timeout() -> None:
    h = Harness.make()
    a, b, c = stable_group(h, ["a", "b", "c"])
    for _ in range(3):  # b has crashed: only a and c heartbeat
        h.advance(3.0)
        assert h.heartbeat(a, 1) is E.none
        assert h.heartbeat(c, 1) is E.none
    assert h.group.has(b)
    h.advance(1.0)  # 10 s after b's last SyncGroup
    assert not h.group.has(b)
    assert h.state() is G.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) is E.rebalance_in_progress
    join_a, join_c = h.join(a), h.join(c)
    assert h.group.generation_id == 2
    assert [m.member_id for m in h.join_response(join_a).members] == [a, c]
    assert h.join_response(join_c).leader == a


def test_leaving_starts_a_rebalance_and_the_last_one_out_leaves_the_group_empty() -> (
    None
):
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])
    response = h.leave(LeaveGroupRequest("g", (MemberIdentity(b),)))
    assert response == LeaveGroupResponse(E.none, (response.members[0],))
    assert response.members[0].error_code is E.none
    assert h.state() is G.PREPARING_REBALANCE
    join_a = h.join(a)
    assert h.join_response(join_a).members[0].member_id == a
    assert h.group.generation_id == 2
    h.sync(a, 2, {a: b"all"})
    assert h.state() is G.STABLE
    h.leave(LeaveGroupRequest.single("g", a))
    # "first PreparingRebalance, then Empty" (seed 002 §1): a join phase with nobody.
    assert h.state() is G.EMPTY
    assert h.group.generation_id == 3
    assert h.group.leader_id is None
    assert h.group.protocol_name is None
    assert h.coordinator.describe_group("g").members == ()


def test_rebalance_timeout_removes_members_that_did_not_rejoin() -> None:
    h = Harness.make()
    a, b, c = stable_group(h, ["a", "b", "c"])
    join_b = h.join(b)  # a follower rejoining unchanged just gets generation 1 back
    assert h.join_response(join_b).generation_id == 1
    assert h.state() is G.STABLE
    join_b = h.join(b, protocols=(("range", b"new"),))  # changed metadata: a rebalance
    assert h.state() is G.PREPARING_REBALANCE
    for _ in range(5):  # a and c are alive (they heartbeat) but never rejoin
        h.advance(5.0)
        assert h.heartbeat(a, 1) is E.rebalance_in_progress
        assert h.heartbeat(c, 1) is E.rebalance_in_progress
    assert h.pending(join_b)
    h.advance(5.0)  # the rebalance timeout (30 s) ends the join phase without them
    assert h.state() is G.COMPLETING_REBALANCE
    assert list(h.group.members) == [b]
    assert h.group.leader_id == b  # the leader did not rejoin: the first who did leads
    assert h.join_response(join_b).leader == b
    assert h.heartbeat(a, 1) is E.unknown_member_id


def test_the_leader_rejoining_a_stable_group_starts_a_rebalance() -> None:
    h = Harness.make()
    a, _b = stable_group(h, ["a", "b"])
    join_a = h.join(a)
    assert h.pending(join_a)
    assert h.state() is G.PREPARING_REBALANCE


def test_a_follower_rejoining_unchanged_in_completing_rebalance_gets_the_generation_again() -> (
    None
):
    h, (a, b) = joined_group("a", "b")
    again = h.join_response(h.join(b))
    assert (again.error_code, again.generation_id, again.leader, again.members) == (
        E.none,
        1,
        a,
        (),
    )
    leader_again = h.join_response(h.join(a))
    assert [m.member_id for m in leader_again.members] == [a, b]
    assert h.state() is G.COMPLETING_REBALANCE


def test_a_sync_waiting_in_completing_rebalance_is_told_to_rejoin_when_a_rebalance_starts() -> (
    None
):
    h, (_a, b) = joined_group("a", "b")
    sync_b = h.sync(b, 1)
    assert h.pending(sync_b)
    h.new_member("c")  # a new member: back to PreparingRebalance
    assert h.sync_response(sync_b).error_code is E.rebalance_in_progress
    assert h.state() is G.PREPARING_REBALANCE
    assert all(m.assignment is None for m in h.group.members.values())


def test_initial_rebalance_delay_is_extended_per_new_member_up_to_the_rebalance_timeout() -> (
    None
):
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    _a, join_a = h.new_member("a", rebalance_ms=10_000)
    assert h.coordinator.next_deadline() == 3.0
    t = 0
    while h.pending(join_a):
        t += 1
        h.new_member(f"m{t}")  # a newcomer every second keeps extending the delay...
        h.advance(1.0)
    assert h.now == 10.0  # ... but not past the rebalance timeout (10 s)
    assert h.join_response(join_a).generation_id == 1
    assert len(h.join_response(join_a).members) == 11


def test_a_group_without_initial_delay_completes_its_first_join_at_once() -> None:
    h = Harness.make()
    a, join_a = h.new_member("a")
    assert h.join_response(join_a).members[0].member_id == a
    assert h.state() is G.COMPLETING_REBALANCE


def test_join_group_before_v4_gets_a_member_id_without_a_round_trip() -> None:
    h = Harness.make()
    rid = h.join(client_id="old", version=3)
    response = h.join_response(rid)
    assert response.error_code is E.none
    assert response.member_id.startswith("old-")
    assert response.leader == response.member_id


def test_member_ids_are_client_id_and_uuid_and_deterministic_with_the_rng() -> None:
    ids = []
    for _ in range(2):
        h = Harness.make()
        ids.append(h.join_response(h.join(client_id="consumer-1")).member_id)
    assert ids[0] == ids[1]
    prefix, _, uid = ids[0].partition("-1-")
    assert prefix == "consumer"
    assert len(uid) == 36
    assert uid[14] == "4"  # a version 4 UUID


def test_a_member_id_fits_the_protocol_whatever_the_client_id() -> None:
    """A member id travels as an int16-length string, so it is at most 32,767 characters.

    Found by the fuzz suite: a 32,767-character client id made a member id of 32,804,
    and the JoinGroup answer could not be encoded (the broker logged a traceback and
    closed the connection). The client id is cut short, the UUID kept whole.
    """
    for client_id, instance in (("c" * 32_767, None), ("c", "i" * 32_767)):
        h = Harness.make()
        member_id = h.join_response(
            h.join(client_id=client_id, instance=instance)
        ).member_id
        assert len(member_id) == 32_767
        assert member_id.startswith((instance or client_id)[:100])
        # the UUID's first group, whole
        assert len(member_id.rsplit("-", 5)[-5:][0]) == 8


def test_pending_member_holds_the_rebalance_until_it_rejoins_or_expires() -> None:
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])
    ghost = h.join_response(h.join(client_id="ghost")).member_id  # never comes back
    h.join(b, protocols=(("range", b"changed"),))
    join_a = h.join(a)
    assert h.pending(join_a)  # everyone known rejoined, but a handed-out id is pending
    assert h.group.is_pending_member(ghost)
    h.advance(10.0)  # its session timeout
    assert not h.group.is_pending_member(ghost)
    assert h.join_response(join_a).generation_id == 2


def test_a_new_member_whose_join_waits_too_long_is_dropped() -> None:
    h = Harness.make()
    a, _b = stable_group(h, ["a", "b"])
    # the leader rejoins with a 10 minute rebalance timeout
    h.join(a, rebalance_ms=600_000)
    late = h.join(version=3, client_id="late")
    expiry = h.now + NEW_MEMBER_JOIN_TIMEOUT_MS / 1000
    while h.now + 5 < expiry:  # b stays alive but does not rejoin: the rebalance waits
        h.advance(5.0)
        h.heartbeat(_b, 1)
    assert h.pending(late)
    h.advance(expiry - h.now)
    assert h.join_response(late) == JoinGroupResponse.error(E.unknown_member_id)
    assert len(h.group.members) == 2


def test_a_superseded_join_is_answered() -> None:
    h = Harness.make()
    a, _b = stable_group(h, ["a", "b"])
    first = h.join(a)
    second = h.join(a)
    assert h.join_response(first).error_code is E.rebalance_in_progress
    assert h.pending(second)


def test_sync_timeout_removes_members_that_never_synced() -> None:
    h, (a, b) = joined_group("a", "b")
    sync_a = h.sync(a, 1, {a: b"A", b: b"B"})
    assert h.sync_response(sync_a).assignment == b"A"
    for _ in range(6):  # b heartbeats but never sends SyncGroup
        assert h.group.has(b)
        assert h.heartbeat(a, 1) is E.none
        assert h.heartbeat(b, 1) is E.none
        h.advance(5.0)
    assert not h.group.has(b)  # the rebalance timeout after the join phase passed
    assert h.state() is G.PREPARING_REBALANCE


def test_selected_protocol_is_the_most_voted_among_the_common_ones() -> None:
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    h.new_member("a", protocols=(("sticky", b""), ("range", b""), ("roundrobin", b"")))
    h.new_member("b", protocols=(("range", b""), ("sticky", b"")))
    h.new_member("c", protocols=(("range", b""), ("roundrobin", b""), ("sticky", b"")))
    h.advance(6.0)
    # sticky 1 vote, range 2; roundrobin not common
    assert h.group.protocol_name == "range"


# --- static membership (KIP-345) -----------------------------------------------------


def static_group(h: Harness) -> tuple[str, str]:
    a_rid = h.join(client_id="a", instance="i-a")
    a = h.join_response(a_rid).member_id
    assert a.startswith("i-a-")  # no MEMBER_ID_REQUIRED round trip for static members
    assert h.join_response(a_rid).leader == a
    b_rid = h.join(client_id="b", instance="i-b")
    assert h.pending(b_rid)
    b = h.group.static_member_id("i-b")
    assert b is not None
    h.join(a, instance="i-a")
    assert h.join_response(b_rid).generation_id == 2
    h.sync(b, 2, instance="i-b")
    h.sync(a, 2, {a: b"A", b: b"B"}, instance="i-a")
    assert h.state() is G.STABLE
    return a, b


def test_a_restarted_static_member_replaces_its_old_id_without_a_rebalance() -> None:
    h = Harness.make()
    a, b = static_group(h)
    rid = h.join(client_id="b", instance="i-b")
    response = h.join_response(rid)
    new_b = response.member_id
    assert new_b != b
    assert (response.error_code, response.generation_id, response.leader) == (
        E.none,
        2,
        a,
    )
    assert response.members == ()
    assert h.state() is G.STABLE
    assert h.heartbeat(b, 2, instance="i-b") is E.fenced_instance_id
    assert h.heartbeat(b, 2) is E.unknown_member_id
    assert h.heartbeat(new_b, 2, instance="i-b") is E.none
    assert h.sync_response(h.sync(new_b, 2, instance="i-b")).assignment == b"B"  # kept
    assert h.group.static_member_id("i-b") == new_b


def test_a_restarted_static_leader_learns_the_members_but_skips_the_assignment() -> (
    None
):
    h = Harness.make()
    a, b = static_group(h)
    response = h.join_response(h.join(client_id="a", instance="i-a"))
    assert response.leader == response.member_id != a
    assert response.skip_assignment
    assert [m.member_id for m in response.members] == [b, response.member_id]
    assert h.state() is G.STABLE


def test_a_static_member_changing_the_groups_protocol_starts_a_rebalance() -> None:
    h = Harness.make()
    _a, _b = static_group(h)
    assert h.group.protocol_name == "range"
    rid = h.join(client_id="b", instance="i-b", protocols=(("roundrobin", b"x"),))
    assert h.pending(rid)
    assert h.state() is G.PREPARING_REBALANCE


def test_a_static_member_rejoining_fences_its_parked_requests() -> None:
    h = Harness.make()
    a, b = static_group(h)
    old_join = h.join(b, instance="i-b", protocols=(("range", b"changed"),))
    assert h.state() is G.PREPARING_REBALANCE
    new_join = h.join(client_id="b", instance="i-b", protocols=(("range", b"changed"),))
    assert h.join_response(old_join) == JoinGroupResponse.error(E.fenced_instance_id, b)
    h.join(a, instance="i-a")
    assert h.join_response(new_join).generation_id == 3


def test_static_members_that_do_not_rejoin_stay_until_their_session_expires() -> None:
    h = Harness.make()
    a, b = static_group(h)
    h.join(a, instance="i-a")
    for _ in range(6):
        h.advance(5.0)
        h.heartbeat(b, 2, instance="i-b")
    assert h.state() is G.COMPLETING_REBALANCE
    assert set(h.group.members) == {a, b}  # b did not rejoin but keeps its place
    assert h.group.generation_id == 3
    h.advance(SESSION_MS / 1000)  # ... until its session expires
    assert b not in h.group.members


def test_join_with_a_member_id_that_is_not_the_instances_is_fenced() -> None:
    h = Harness.make()
    a, b = static_group(h)
    assert h.join_response(h.join(a, instance="i-b")).error_code is E.fenced_instance_id
    assert h.join_response(h.join(b, instance="i-x")).error_code is E.unknown_member_id


# --- error codes ---------------------------------------------------------------------


def test_join_errors() -> None:
    h = Harness.make()

    def error(rid: int) -> ErrorCode:
        return h.join_response(rid).error_code

    assert error(h.join(group="")) is E.invalid_group_id
    assert error(h.join(session_ms=5999)) is E.invalid_session_timeout
    assert error(h.join(session_ms=1_800_001)) is E.invalid_session_timeout
    assert error(h.join("nobody", group="other")) is E.unknown_member_id
    assert h.coordinator.group("other") is None
    assert error(h.join(protocols=())) is E.inconsistent_group_protocol
    assert error(h.join(protocol_type="")) is E.inconsistent_group_protocol
    stable_group(h, ["a", "b"])
    assert (
        error(h.join(version=3, protocol_type="connect"))
        is E.inconsistent_group_protocol
    )
    assert (
        error(h.join(version=3, protocols=(("sticky", b""),)))
        is E.inconsistent_group_protocol
    )
    assert error(h.join("nobody")) is E.unknown_member_id
    h.coordinator.config = GroupConfig(group_max_size=2)
    assert error(h.join(version=3, client_id="c")) is E.group_max_size_reached
    assert error(h.join(client_id="c")) is E.group_max_size_reached
    assert h.state() is G.STABLE


def test_max_size_counts_rejoined_members_during_a_rebalance() -> None:
    h = Harness.make()
    a, b, c = stable_group(h, ["a", "b", "c"])
    h.coordinator.config = GroupConfig(group_max_size=2)  # lowered while the group runs
    join_a = h.join(a, protocols=(("range", b"changed"),))
    join_b = h.join(b)
    rejected = h.join_response(h.join(c))  # a and b rejoined first: c is one too many
    assert rejected == JoinGroupResponse.error(E.group_max_size_reached)
    assert set(h.group.members) == {a, b}
    assert (
        h.join_response(join_a).generation_id
        == h.join_response(join_b).generation_id
        == 2
    )


def test_sync_errors() -> None:
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])

    def error(rid: int) -> ErrorCode:
        return h.sync_response(rid).error_code

    assert error(h.sync(a, 1, group="unknown")) is E.unknown_member_id
    assert error(h.sync("nobody", 1)) is E.unknown_member_id
    assert error(h.sync(a, 7)) is E.illegal_generation
    assert error(h.sync(a, 1, protocol_name="sticky")) is E.inconsistent_group_protocol
    assert error(h.sync(a, 1, instance="i-a")) is E.unknown_member_id
    assert error(h.sync(a, 1, protocol_name="range")) is E.none
    h.join(a)
    assert error(h.sync(b, 1)) is E.rebalance_in_progress


def test_superseded_sync_is_answered() -> None:
    h, (_a, b) = joined_group("a", "b")
    first = h.sync(b, 1)
    second = h.sync(b, 1)
    assert h.sync_response(first).error_code is E.rebalance_in_progress
    assert h.pending(second)


def test_heartbeat_errors() -> None:
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    assert h.heartbeat("x", 0, group="unknown") is E.unknown_member_id
    a, _ = h.new_member("a")
    assert h.heartbeat("nobody", 0) is E.unknown_member_id
    assert h.heartbeat(a, 0) is E.rebalance_in_progress  # PreparingRebalance
    h.advance(3.0)
    assert h.state() is G.COMPLETING_REBALANCE
    assert h.heartbeat(a, 0) is E.illegal_generation
    assert h.heartbeat(a, 1) is E.none  # CompletingRebalance: heartbeats are fine
    h.sync(a, 1, {a: b""})
    assert h.heartbeat(a, 1) is E.none
    assert h.heartbeat(a, 2) is E.illegal_generation
    assert h.heartbeat(a, 1, instance="i-a") is E.unknown_member_id


def test_leave_group_errors_and_batches() -> None:
    h = Harness.make()
    a, _b = static_group(h)
    response = h.leave(LeaveGroupRequest("unknown", (MemberIdentity("x"),)))
    assert response.error_code is E.none
    assert response.members[0].error_code is E.unknown_member_id
    ghost = h.join_response(h.join(client_id="ghost")).member_id
    response = h.leave(
        LeaveGroupRequest(
            "g",
            (
                MemberIdentity("nobody"),
                MemberIdentity(a, "i-b"),  # a is not i-b's member
                MemberIdentity("", "i-b"),  # an administrative removal by instance id
                MemberIdentity(ghost),  # a pending member id
                MemberIdentity("", "i-z"),
            ),
        )
    )
    assert [m.error_code for m in response.members] == [
        E.unknown_member_id,
        E.fenced_instance_id,
        E.none,
        E.none,
        E.unknown_member_id,
    ]
    assert list(h.group.members) == [a]
    assert not h.group.is_pending_member(ghost)
    assert h.state() is G.PREPARING_REBALANCE
    assert h.leave(LeaveGroupRequest.single("g", "nobody")) == LeaveGroupResponse(
        E.unknown_member_id
    )


def test_leave_answers_the_leavers_parked_requests() -> None:
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])
    join_b = h.join(b, protocols=(("range", b"changed"),))
    h.leave(LeaveGroupRequest("g", (MemberIdentity(b),)))
    assert h.join_response(join_b) == JoinGroupResponse.error(E.unknown_member_id)
    assert h.state() is G.PREPARING_REBALANCE
    h.join(a)
    assert h.state() is G.COMPLETING_REBALANCE


def test_offset_commit_rules() -> None:
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    c = h.coordinator
    # A simple consumer (generation -1, no member id) may commit to a group nobody joined.
    assert c.validate_offset_commit("simple", "", -1, 0.0) is E.none
    simple = c.group("simple")
    assert simple is not None
    assert simple.state is G.EMPTY
    assert c.validate_offset_commit("unknown", "", 3, 0.0) is E.illegal_generation
    assert c.validate_offset_commit("simple", "m", 0, 0.0) is E.unknown_member_id
    a, _ = h.new_member("a")
    # PreparingRebalance: members still commit (heartbeats will tell them to rejoin).
    assert c.validate_offset_commit("g", a, 0, 0.0) is E.none
    assert c.validate_offset_commit("g", "", -1, 0.0) is E.unknown_member_id
    h.advance(3.0)
    assert c.validate_offset_commit("g", a, 1, 3.0) is E.rebalance_in_progress
    assert c.validate_offset_commit("g", a, 0, 3.0) is E.illegal_generation
    assert c.validate_offset_commit("g", "b", 1, 3.0) is E.unknown_member_id
    assert c.validate_offset_commit("g", a, 1, 3.0, "i-a") is E.unknown_member_id
    h.sync(a, 1, {a: b"A"})
    assert c.validate_offset_commit("g", a, 1, 9.0) is E.none
    # a heartbeat
    assert h.group.members[a].heartbeat_deadline == 9.0 + SESSION_MS / 1000
    assert (
        offset_commit_error(GroupMetadata("d", G.DEAD), "", -1)
        is E.coordinator_not_available
    )


def delete_group(h: Harness, group_id: str = "g") -> ErrorCode:
    """DeleteGroups through the harness (its write commits at once): the group's error."""
    rid = h._id()
    h._take(h.coordinator.delete_group(rid, group_id, h.now))
    response = h.answers[rid]
    assert isinstance(response, DeletableGroupResult)
    return response.error_code


def test_delete_group() -> None:
    h = Harness.make()
    assert delete_group(h) is E.group_id_not_found
    (a,) = stable_group(h, ["a"])
    assert delete_group(h) is E.non_empty_group
    h.leave(LeaveGroupRequest("g", (MemberIdentity(a),)))
    group = h.group
    assert delete_group(h) is E.none
    assert group.state is G.DEAD
    assert h.coordinator.group("g") is None
    assert h.coordinator.describe_group("g").state is G.DEAD


def test_unload_answers_parked_syncs_with_not_coordinator() -> None:
    h, (_a, b) = joined_group("a", "b")
    sync_b = h.sync(b, 1)
    group = h.group
    h.unload()
    assert h.sync_response(sync_b) == SyncGroupResponse(E.not_coordinator)
    assert group.state is G.DEAD
    assert h.coordinator.group("g") is None
    assert not h.coordinator.unload_group("g")
    # No group timer is left, only the periodic offsets-expiry check.
    retention_check = h.coordinator.config.offsets_retention_check_interval_ms / 1000
    assert h.coordinator.next_deadline() == retention_check


def test_unload_answers_parked_joins_with_not_coordinator() -> None:
    h = Harness.make(group_initial_rebalance_delay_ms=3000)
    a, join_a = h.new_member("a")
    h.unload()
    assert h.join_response(join_a) == JoinGroupResponse.error(E.not_coordinator, a)
    assert h.coordinator.describe_group("g").state is G.DEAD


def test_describe_and_list_groups() -> None:
    h = Harness.make()
    a, b = stable_group(h, ["a", "b"])
    h.coordinator.validate_offset_commit("simple", "", -1, h.now)
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.protocol_type, summary.protocol) == (
        G.STABLE,
        "consumer",
        "range",
    )
    assert [
        (m.member_id, m.client_id, m.metadata, m.assignment) for m in summary.members
    ] == [
        (a, "a", b"range-meta", a.encode()),
        (b, "b", b"range-meta", b.encode()),
    ]
    assert summary.members[0].client_host == "/10.0.0.1"
    listed = h.coordinator.list_groups()
    assert [(g.group_id, g.protocol_type, g.state) for g in listed] == [
        ("g", "consumer", G.STABLE),
        ("simple", "", G.EMPTY),
    ]
    assert [g.group_id for g in h.coordinator.list_groups([G.EMPTY])] == ["simple"]
    h.join(a)
    rebalancing = h.coordinator.describe_group("g")
    assert rebalancing.protocol == ""
    assert all(m.metadata == m.assignment == b"" for m in rebalancing.members)


def test_next_deadline_follows_sessions() -> None:
    h = Harness.make()
    # With no group, only the offsets-expiry check is scheduled.
    retention_check = h.coordinator.config.offsets_retention_check_interval_ms / 1000
    assert h.coordinator.next_deadline() == retention_check
    a, b = stable_group(h, ["a", "b"])
    assert h.coordinator.next_deadline() == h.now + SESSION_MS / 1000
    h.advance(2.0)
    h.heartbeat(a, 1)
    h.heartbeat(b, 1)
    assert h.coordinator.next_deadline() == h.now + SESSION_MS / 1000


# --- a random walk -------------------------------------------------------------------

PROTOCOL_CHOICES: list[Protocols] = [
    (("range", b"r"), ("roundrobin", b"rr")),
    (("roundrobin", b"rr"), ("range", b"r")),
    (("roundrobin", b"rr2"),),
    (("sticky", b"s"),),
]
CLIENTS = [
    "c0",
    "c1",
    "c2",
    "s3",
    "s4",
]  # s*: static members (instance id = client name)


@attrs.define
class Client:
    name: str
    member_id: str = ""
    generation: int = -1
    members: tuple[
        str, ...
    ] = ()  # set when our last JoinGroup answer made us the leader

    @property
    def instance(self) -> str | None:
        return self.name if self.name.startswith("s") else None


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness.make(
            group_initial_rebalance_delay_ms=3000, group_min_session_timeout_ms=6000
        )
        self.clients = {name: Client(name) for name in CLIENTS}
        self.sender: dict[int, tuple[str, str]] = {}  # request id -> (client, api)
        self.owner: dict[str, str] = {}  # every member id ever -> its client
        self.leaders: dict[int, str] = {}  # generation -> the client that led it
        self.seen = 0
        self.generation = 0

    def _send(self, client: str, api: str, rid: int) -> None:
        self.sender[rid] = (client, api)
        self._flush()

    def _flush(self) -> None:
        """Let the clients learn from the replies of the last step, in the order sent."""
        new = list(self.h.answers)[self.seen :]
        self.seen = len(self.h.answers)
        for rid in new:  # member ids first: a leader's reply may follow a follower's
            response = self.h.answers[rid]
            if isinstance(response, JoinGroupResponse) and response.member_id:
                self.owner[response.member_id] = self.sender[rid][0]
        for rid in new:
            self._learn(rid)

    def _learn(self, rid: int) -> None:
        name, _ = self.sender[rid]
        client = self.clients[name]
        response = self.h.answers[rid]
        if isinstance(response, JoinGroupResponse):
            if response.error_code is E.none:
                client.member_id, client.generation = (
                    response.member_id,
                    response.generation_id,
                )
                leader = self.owner[response.leader]
                # One leader per generation (static members keep leading under a new id).
                assert self.leaders.setdefault(response.generation_id, leader) == leader
                is_leader = response.leader == response.member_id
                assert bool(response.members) == is_leader
                client.members = tuple(m.member_id for m in response.members)
            elif response.error_code is E.member_id_required:
                client.member_id = response.member_id
            elif response.error_code in (E.unknown_member_id, E.fenced_instance_id):
                client.member_id, client.generation = "", -1
        elif isinstance(response, SyncGroupResponse):
            if response.error_code is E.none and client.instance is None:
                # Each member gets only its own part of the leader's plan.
                assert response.assignment == client.member_id.encode()
        elif (
            isinstance(response, LeaveGroupResponse)
            and response.members[0].error_code is E.none
        ):
            client.member_id, client.generation = "", -1

    @rule(
        name=st.sampled_from(CLIENTS),
        protocols=st.sampled_from(PROTOCOL_CHOICES),
        version=st.sampled_from([3, 9]),
        rebalance_ms=st.sampled_from([10_000, 20_000]),
    )
    def join(
        self, name: str, protocols: Protocols, version: int, rebalance_ms: int
    ) -> None:
        c = self.clients[name]
        rid = self.h.join(
            c.member_id,
            client_id=name,
            protocols=protocols,
            instance=c.instance,
            version=version,
            rebalance_ms=rebalance_ms,
        )
        self._send(name, "join", rid)

    @rule(name=st.sampled_from(CLIENTS))
    def sync(self, name: str) -> None:
        c = self.clients[name]
        plan = {m: m.encode() for m in c.members}
        rid = self.h.sync(c.member_id, c.generation, plan, instance=c.instance)
        self._send(name, "sync", rid)

    @rule(name=st.sampled_from(CLIENTS))
    def heartbeat(self, name: str) -> None:
        c = self.clients[name]
        self.h.heartbeat(c.member_id, c.generation, instance=c.instance)
        self._send(name, "heartbeat", self.h.next_id)

    @rule(name=st.sampled_from(CLIENTS))
    def leave(self, name: str) -> None:
        c = self.clients[name]
        self.h.leave(LeaveGroupRequest("g", (MemberIdentity(c.member_id, c.instance),)))
        self._send(name, "leave", self.h.next_id)

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0, 3.0, 5.0]))
    def advance(self, seconds: float) -> None:
        self.h.advance(seconds)
        self._flush()

    @invariant()
    def group_is_consistent(self) -> None:
        group = self.h.coordinator.group("g")
        if group is None:
            return
        members = group.members
        # The leader is a member; a group with members has one.
        assert (group.leader_id is None) == (not members)
        assert group.leader_id is None or group.leader_id in members
        # The generation grows by one per completed join phase.
        assert group.generation_id in (self.generation, self.generation + 1)
        self.generation = group.generation_id
        if group.state is G.STABLE:
            assert all(m.assignment is not None for m in members.values())
            assert not any(
                m.is_awaiting_join or m.is_awaiting_sync for m in members.values()
            )
        if group.state is G.COMPLETING_REBALANCE:
            assert not any(m.is_awaiting_join for m in members.values())
        if group.state is G.PREPARING_REBALANCE:
            assert group.join_deadline is not None
        if group.state is G.EMPTY:
            assert not members
        for instance, member_id in group.static_members.items():
            assert members[member_id].group_instance_id == instance
        # No member outlives its session without heartbeats (parked requests excepted).
        for member in members.values():
            deadline = member.session_deadline
            assert deadline is None or deadline > self.h.now
        assert all(d > self.h.now for d in group.pending_members.values())

    @invariant()
    def every_request_is_answered_or_parked(self) -> None:
        parked: set[int] = set()
        group = self.h.coordinator.group("g")
        if group is not None:
            for m in group.members.values():
                parked.update(
                    r for r in (m.awaiting_join, m.awaiting_sync) if r is not None
                )
        assert parked == self.h.sent - set(self.h.answers)


GroupMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None
)
test_group_machine = GroupMachine.TestCase


@pytest.mark.parametrize("seed", range(3))
def test_long_random_walk_keeps_every_request_answered(seed: int) -> None:
    rng = random.Random(seed)
    machine = GroupMachine()
    for _ in range(2000):
        name = rng.choice(CLIENTS)
        action = rng.choice(
            ["join", "sync", "sync", "heartbeat", "heartbeat", "leave", "advance"]
        )
        if action == "join":
            machine.join(name, rng.choice(PROTOCOL_CHOICES), rng.choice([3, 9]), 10_000)
        elif action == "sync":
            machine.sync(name)
        elif action == "heartbeat":
            machine.heartbeat(name)
        elif action == "leave" and rng.random() < 0.2:
            machine.leave(name)
        elif action == "advance":
            machine.advance(rng.choice([0.5, 1.0, 3.0]))
        machine.group_is_consistent()
        machine.every_request_is_answered_or_parked()
    assert machine.generation > 5


def test_a_commit_to_a_missing_group_is_group_id_not_found_from_v9() -> None:
    # KIP-848: from OffsetCommit v9 a commit that carries a generation, to a group that
    # does not exist, names the group missing; before, ILLEGAL_GENERATION. A simple
    # consumer's commit (generation -1) still creates the group in every version.
    offsets = Harness.make().coordinator.offsets
    assert offsets.validate_offset_commit("gone", "m", 3, 0.0, None, 8) is (
        E.illegal_generation
    )
    assert offsets.validate_offset_commit("gone", "m", 3, 0.0, None, 9) is (
        E.group_id_not_found
    )
    assert offsets.validate_offset_commit("simple", "", -1, 0.0, None, 9) is E.none
