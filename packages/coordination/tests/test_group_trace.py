"""The group coordinator's trace events (ARCHITECTURE.md, "Traces and labs"): whole groups on
virtual time through the simulator, and the rarer paths driven request by request."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    Assignment,
    GroupConfig,
    GroupCoordinator,
    GroupResult,
    GroupState,
    GroupStateChanged,
    JoinGroupRequest,
    JoinGroupResponse,
    MemberAssigned,
    MemberAssignmentChanged,
    MemberJoined,
    MemberRemoved,
    RebalanceCompleted,
    RebalanceStarted,
    SimulationConfig,
    SyncGroupRequest,
    encode_assignment,
    parse_events,
    simulate,
)
from minikafka.coordination.group._group_requests import Protocols
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace import NullTracer, TraceEvent, Tracer, event_types
from minikafka.trace.testing import RecordingTracer, recording_tracer

SIM_PARTITIONS = 6


def _client(member_id: str | None) -> str | None:
    """``consumer-2-<uuid>`` -> ``consumer-2``: the simulator's member ids are seeded, but
    the client ids are what a reader can write down."""
    return None if member_id is None else member_id.rsplit("-", 5)[0]


def _row(event: TraceEvent) -> tuple[object, ...]:
    """One event, reduced to the fields a sequence check reads."""
    match event:
        case MemberJoined():
            return ("join", _client(event.member_id), event.generation_id, event.state)
        case GroupStateChanged():
            return (
                "state",
                event.previous_state,
                event.state,
                event.generation_id,
                event.members,
            )
        case RebalanceStarted():
            return (
                "start",
                event.generation_id,
                event.reason,
                event.client_id,
                event.members,
            )
        case RebalanceCompleted():
            return ("end", event.generation_id, event.members, _client(event.leader_id))
        case MemberAssigned():
            return (
                "sync",
                _client(event.member_id),
                event.generation_id,
                event.partitions,
            )
        case MemberRemoved():
            return ("removed", _client(event.member_id), event.reason)
    raise AssertionError(f"not a group event: {event!r}")


def _without_assignments(tracer: RecordingTracer) -> list[TraceEvent]:
    """The events these sequences are about: member_assignment has its own tests
    (test_assignment_trace.py)."""
    return [e for e in tracer.events if not isinstance(e, MemberAssignmentChanged)]


def _simulate(assignor: str, events: str) -> RecordingTracer:
    config = SimulationConfig(
        members=3,
        partitions=SIM_PARTITIONS,
        assignor=assignor,
        events=parse_events(events),
    )
    with recording_tracer(node=1) as tracer:
        simulate(config)
    return tracer


def _check_rebalances(tracer: RecordingTracer) -> None:
    """Each rebalance_end matches the last rebalance_start: same group, the next
    generations, its duration the virtual time between them, the whole topic assigned."""
    start: tuple[float, RebalanceStarted] | None = None
    for ts, event in tracer.records:
        assert event.COMPONENT == "group"
        if isinstance(event, RebalanceStarted):
            start = (ts, event)
        elif isinstance(event, RebalanceCompleted):
            assert start is not None
            started_at, started = start
            assert event.generation_id > started.generation_id
            assert event.duration_ms == pytest.approx((ts - started_at) * 1000)
            assert event.duration_ms > 0
            assert len(event.assignment_sizes) == event.members
            assert event.leader_id in event.assignment_sizes
            assert event.protocol_name is not None


def test_eager_join_leave_and_session_expiry_are_traced_in_order() -> None:
    tracer = _simulate("range", "leave:2,crash:3")
    _check_rebalances(tracer)
    assert [_row(e) for e in _without_assignments(tracer)] == [
        # Three members join an empty group; the initial delay gathers them.
        ("join", "consumer-1", 0, "Empty"),
        ("state", "Empty", "PreparingRebalance", 0, 1),
        ("start", 0, "member_joined", "consumer-1", 1),
        ("join", "consumer-2", 0, "PreparingRebalance"),
        ("join", "consumer-3", 0, "PreparingRebalance"),
        ("state", "PreparingRebalance", "CompletingRebalance", 1, 3),
        ("sync", "consumer-1", 1, 2),
        ("state", "CompletingRebalance", "Stable", 1, 3),
        ("end", 1, 3, "consumer-1"),
        ("sync", "consumer-2", 1, 2),
        ("sync", "consumer-3", 1, 2),
        # consumer-2 leaves.
        ("removed", "consumer-2", "left"),
        ("state", "Stable", "PreparingRebalance", 1, 2),
        ("start", 1, "member_left", "consumer-2", 2),
        ("join", "consumer-3", 1, "PreparingRebalance"),
        ("join", "consumer-1", 1, "PreparingRebalance"),
        ("state", "PreparingRebalance", "CompletingRebalance", 2, 2),
        ("sync", "consumer-1", 2, 3),
        ("state", "CompletingRebalance", "Stable", 2, 2),
        ("end", 2, 2, "consumer-1"),
        ("sync", "consumer-3", 2, 3),
        # consumer-3 crashes; its session expires.
        ("removed", "consumer-3", "session_timeout"),
        ("state", "Stable", "PreparingRebalance", 2, 1),
        ("start", 2, "session_timeout", "consumer-3", 1),
        ("join", "consumer-1", 2, "PreparingRebalance"),
        ("state", "PreparingRebalance", "CompletingRebalance", 3, 1),
        ("sync", "consumer-1", 3, 6),
        ("state", "CompletingRebalance", "Stable", 3, 1),
        ("end", 3, 1, "consumer-1"),
    ]
    ends = tracer.of_type(RebalanceCompleted)
    assert [sorted(e.assignment_sizes.values()) for e in ends] == [
        [2, 2, 2],
        [3, 3],
        [6],
    ]
    assert all(sum(e.assignment_sizes.values()) == SIM_PARTITIONS for e in ends)
    assert {e.protocol_name for e in ends} == {"range"}
    # The first rebalance waited out the initial delay: 3 s, extended once by 3 s.
    first_start, first_end = _first_rebalance_times(tracer)
    assert ends[0].duration_ms == pytest.approx((first_end - first_start) * 1000)
    assert ends[0].duration_ms >= 6000
    # What each member was given adds up to what the rebalance_end announced.
    for end in ends:
        synced = {
            e.member_id: e.partitions
            for e in tracer.of_type(MemberAssigned)
            if e.generation_id == end.generation_id
        }
        assert synced == dict(end.assignment_sizes)
    removed = tracer.of_type(MemberRemoved)
    starts = tracer.of_type(RebalanceStarted)
    assert [(r.member_id, r.client_id) for r in removed] == [
        (s.member_id, s.client_id) for s in starts[1:]
    ]


def _first_rebalance_times(tracer: RecordingTracer) -> tuple[float, float]:
    start = next(ts for ts, e in tracer.records if isinstance(e, RebalanceStarted))
    end = next(ts for ts, e in tracer.records if isinstance(e, RebalanceCompleted))
    return start, end


def test_cooperative_join_traces_the_follow_up_rebalance() -> None:
    tracer = _simulate("cooperative-sticky", "join:4")
    _check_rebalances(tracer)
    starts = tracer.of_type(RebalanceStarted)
    # KIP-429: the new member's rebalance only revokes; the member that gave a partition
    # up rejoins at once, and that second rebalance hands it to the new member.
    assert [(s.generation_id, s.reason, s.client_id, s.members) for s in starts] == [
        (0, "member_joined", "consumer-1", 1),
        (1, "member_joined", "consumer-4", 4),
        (2, "member_rejoined", "consumer-3", 4),
    ]
    ends = tracer.of_type(RebalanceCompleted)
    assert [(e.generation_id, e.members) for e in ends] == [(1, 3), (2, 4), (3, 4)]
    assert {e.protocol_name for e in ends} == {"cooperative-sticky"}
    # The middle generation holds back the partition being revoked.
    assert [sum(e.assignment_sizes.values()) for e in ends] == [6, 5, 6]
    newcomer = next(m for m in ends[1].assignment_sizes if _client(m) == "consumer-4")
    # Generation 2 revokes without assigning: the newcomer gets its partition in 3.
    assert ends[1].assignment_sizes[newcomer] == 0
    assert ends[2].assignment_sizes[newcomer] == 1
    rejoin = next(
        e
        for e in tracer.of_type(MemberJoined)
        if e.generation_id == 2 and e.state == "Stable"
    )
    assert _client(rejoin.member_id) == "consumer-3"
    assert tracer.of_type(MemberRemoved) == []


def test_tracing_changes_nothing_the_group_does() -> None:
    config = SimulationConfig(
        members=3,
        assignor="cooperative-sticky",
        events=parse_events("join:4,leave:1,crash:2"),
    )
    untraced = simulate(config)
    with recording_tracer() as tracer:
        traced = simulate(config)
    assert traced == untraced
    assert tracer.records
    with recording_tracer() as tracer:
        tracer.close()  # disabled: nothing may be built or emitted
        assert simulate(config) == untraced
    assert tracer.records == []


def test_the_group_events_are_registered_under_the_agreed_names() -> None:
    types = event_types()
    for key, cls in {
        ("group", "state_change"): GroupStateChanged,
        ("group", "rebalance_start"): RebalanceStarted,
        ("group", "rebalance_end"): RebalanceCompleted,
        ("group", "member_join"): MemberJoined,
        ("group", "member_sync"): MemberAssigned,
        ("group", "member_removed"): MemberRemoved,
    }.items():
        assert types[key] is cls
    assert [f.name for f in attrs.fields(RebalanceStarted)] == [
        "group_id",
        "generation_id",
        "reason",
        "member_id",
        "client_id",
        "members",
    ]
    assert [f.name for f in attrs.fields(RebalanceCompleted)] == [
        "group_id",
        "generation_id",
        "protocol_name",
        "leader_id",
        "members",
        "duration_ms",
        "assignment_sizes",
    ]


# --- paths the simulator does not take, request by request ----------------------------

RANGE: Protocols = (("range", b"meta"),)
REBALANCE_MS = 5_000  # below the session timeout, so rebalance timers fire first


@attrs.define(eq=False)
class _Relay:
    """The tracer a Driver's coordinator is built with (tracing is injected);
    ``Driver.recording`` points it at a RecordingTracer for the length of a block."""

    target: Tracer = attrs.field(factory=NullTracer)
    node: int = 0

    @property
    def enabled(self) -> bool:
        return self.target.enabled

    def wants(self, event_type: type[TraceEvent]) -> bool:
        return self.target.wants(event_type)

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        self.target.emit(event, ts)

    def emit_fields(
        self,
        event_type: type[TraceEvent],
        fields: tuple[object, ...],
        ts: float | None = None,
    ) -> None:
        self.target.emit_fields(event_type, fields, ts)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


@attrs.define
class Driver:
    relay: _Relay = attrs.field(factory=_Relay)
    coordinator: GroupCoordinator = attrs.field()
    topic: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    now: float = 10.0
    next_id: int = 0
    answers: dict[int, object] = attrs.field(factory=dict)

    @coordinator.default
    def _coordinator(self) -> GroupCoordinator:
        config = GroupConfig(group_initial_rebalance_delay_ms=0)
        return serving_coordinator(config, random.Random(3), tracer=self.relay)

    @contextmanager
    def recording(self) -> Iterator[RecordingTracer]:
        """What the coordinator emits within the block."""
        tracer = RecordingTracer()
        self.relay.target = tracer
        try:
            yield tracer
        finally:
            self.relay.target = NullTracer()

    def _take(self, result: GroupResult) -> None:
        for reply in self.topic.carry_out(self.coordinator, result, self.now):
            self.answers[reply.request_id] = reply.response

    def join(
        self,
        member_id: str = "",
        client_id: str = "c",
        *,
        instance: str | None = None,
        protocol_type: str = "consumer",
        protocols: Protocols = RANGE,
    ) -> JoinGroupResponse | None:
        self.next_id += 1
        request = JoinGroupRequest(
            "g",
            member_id,
            protocol_type,
            protocols,
            10_000,
            REBALANCE_MS,
            instance,
            client_id,
            "/10.0.0.1",
            9,
        )
        self._take(self.coordinator.join_group(self.next_id, request, self.now))
        response = self.answers.get(self.next_id)
        assert response is None or isinstance(response, JoinGroupResponse)
        return response

    def new_member(self, client_id: str, protocol_type: str = "consumer") -> str:
        bounce = self.join(client_id=client_id, protocol_type=protocol_type)
        assert bounce is not None
        assert bounce.error_code is ErrorCode.member_id_required
        self.join(bounce.member_id, client_id, protocol_type=protocol_type)
        return bounce.member_id

    def sync(self, member_id: str, assignments: dict[str, bytes] | None = None) -> None:
        self.next_id += 1
        generation = self.group_generation
        request = SyncGroupRequest("g", generation, member_id, None, None, None)
        request = attrs.evolve(request, assignments=tuple((assignments or {}).items()))
        self._take(self.coordinator.sync_group(self.next_id, request, self.now))

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._take(self.coordinator.on_timer(self.now))

    @property
    def group_generation(self) -> int:
        group = self.coordinator.group("g")
        assert group is not None
        return group.generation_id

    def state(self) -> GroupState:
        """Read anew each call (a method, so mypy does not narrow it)."""
        group = self.coordinator.group("g")
        assert group is not None
        return group.state


def _assignment(*partitions: int) -> bytes:
    return encode_assignment(Assignment([TopicPartition("t", p) for p in partitions]))


def test_the_member_id_required_bounce_is_no_join_and_timestamps_are_the_cores_clock() -> (
    None
):
    d = Driver()
    with d.recording() as tracer:
        bounce = d.join(client_id="a")
        assert tracer.records == []
        assert bounce is not None
        d.now = 12.5
        d.join(bounce.member_id, "a")
    assert tracer.records[0] == (
        12.5,
        MemberJoined("g", bounce.member_id, "a", 0, "Empty"),
    )
    assert {ts for ts, _ in tracer.records} == {12.5}
    # No delay and everyone joined: the join phase ends within the same JoinGroup.
    assert [type(e).__name__ for e in _without_assignments(tracer)] == [
        "MemberJoined",
        "GroupStateChanged",
        "RebalanceStarted",
        "GroupStateChanged",
    ]


def test_a_member_that_never_syncs_is_removed_with_sync_timeout() -> None:
    d = Driver()
    a = d.new_member("a")
    b = d.new_member("b")  # joins the running rebalance, which ends at once
    d.join(a, "a")
    assert d.state() is GroupState.COMPLETING_REBALANCE
    generation = d.group_generation
    with d.recording() as tracer:
        d.sync(a, {a: _assignment(0, 1), b: _assignment(2)})
        assert d.state() is GroupState.STABLE
        d.advance(REBALANCE_MS / 1000)
    ends = tracer.of_type(RebalanceCompleted)
    assert [dict(e.assignment_sizes) for e in ends] == [{a: 2, b: 1}]
    assert tracer.of_type(MemberRemoved) == [MemberRemoved("g", b, "b", "sync_timeout")]
    assert tracer.of_type(RebalanceStarted) == [
        RebalanceStarted("g", generation, "sync_timeout", None, None, 1)
    ]


def test_a_failed_assignment_write_restarts_the_rebalance() -> None:
    d = Driver()
    a = d.new_member("a")
    generation = d.group_generation
    d.topic.fail_with = ErrorCode.not_enough_replicas
    with d.recording() as tracer:
        d.sync(a, {a: _assignment(0)})
    assert tracer.of_type(RebalanceCompleted) == []
    assert tracer.of_type(MemberAssigned) == []
    assert tracer.of_type(RebalanceStarted) == [
        RebalanceStarted("g", generation, "write_failed", None, None, 1)
    ]


def test_a_restarted_static_member_is_traced_as_replaced_and_joined() -> None:
    d = Driver()
    first = d.join(client_id="s", instance="i-1")
    assert first is not None
    assert first.error_code is ErrorCode.none
    old = first.member_id
    d.sync(old, {old: _assignment(0, 1, 2)})
    assert d.state() is GroupState.STABLE
    with d.recording() as tracer:
        again = d.join(client_id="s2", instance="i-1")
    assert again is not None
    new = again.member_id
    assert _without_assignments(tracer) == [
        MemberRemoved("g", old, "s", "replaced"),
        MemberJoined("g", new, "s2", 1, "Stable"),
    ]
    # A new protocol does need a rebalance, caused by the static member's replacement.
    with d.recording() as tracer:
        d.join(
            client_id="s3",
            instance="i-1",
            protocols=(("roundrobin", b"m"), ("range", b"m")),
        )
    started = tracer.of_type(RebalanceStarted)
    assert [(s.reason, s.client_id, s.generation_id) for s in started] == [
        ("static_member_replaced", "s3", 1)
    ]


def test_assignment_sizes_that_cannot_be_decoded_are_minus_one() -> None:
    d = Driver()
    a = d.new_member("a")
    b = d.new_member("b")
    d.join(a, "a")
    with d.recording() as tracer:
        d.sync(b)
        d.sync(a, {a: b"not an assignment"})  # b left out: it gets no bytes at all
    (end,) = tracer.of_type(RebalanceCompleted)
    assert dict(end.assignment_sizes) == {a: -1, b: 0}
    assert {(e.member_id, e.partitions) for e in tracer.of_type(MemberAssigned)} == {
        (a, -1),
        (b, 0),
    }

    other = Driver()
    with other.recording() as tracer:
        worker = other.new_member("w", protocol_type="connect")
        other.sync(worker, {worker: _assignment(0)})
    (end,) = tracer.of_type(RebalanceCompleted)
    assert dict(end.assignment_sizes) == {worker: -1}  # not the consumer protocol


def test_a_dynamic_member_that_does_not_rejoin_is_removed_with_join_timeout() -> None:
    d = Driver()
    a = d.new_member("a")
    b = d.new_member("b")
    d.join(a, "a")
    d.sync(b)
    d.sync(a, {a: _assignment(0), b: _assignment(1)})
    assert d.state() is GroupState.STABLE
    with d.recording() as tracer:
        d.join(a, "a", protocols=(("range", b"changed"),))  # a rejoins; b never does
        d.advance(REBALANCE_MS / 1000)
    assert [(s.reason, s.member_id) for s in tracer.of_type(RebalanceStarted)] == [
        ("member_rejoined", a)
    ]
    assert tracer.of_type(MemberRemoved) == [MemberRemoved("g", b, "b", "join_timeout")]
    changes = [
        (c.previous_state, c.state, c.members)
        for c in tracer.of_type(GroupStateChanged)
    ]
    assert changes == [
        ("Stable", "PreparingRebalance", 2),
        ("PreparingRebalance", "CompletingRebalance", 1),
    ]
