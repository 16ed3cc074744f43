"""The coordinator's timers come from a heap: ``next_deadline`` must always be
what a scan of every group and member would find, whatever the requests did; and its
trace events go to the tracer it was given, so coordinators in one process are apart."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupReply,
    GroupResult,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    MemberJoined,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace.testing import RecordingTracer, recording_tracer

GROUPS = ("g-a", "g-b", "g-c")
PROTOCOLS = (("range", b"m"),)


EXPIRY_CHECK_MS = 10**12  # far away, so that the group timers are the ones compared


def scanned_deadline(coordinator: GroupCoordinator) -> float | None:
    """What the coordinator answered before the heap: every timer of every group, and
    the offsets expiry check (scheduled when the partitions were loaded, at 0)."""
    found: list[float] = [EXPIRY_CHECK_MS / 1000]
    for group_id in GROUPS:
        group = coordinator.group(group_id)
        if group is None:
            continue
        found += [
            d for d in (group.join_deadline, group.sync_deadline) if d is not None
        ]
        found += group.pending_members.values()
        found += [
            d for m in group.members.values() if (d := m.session_deadline) is not None
        ]
    return min(found, default=None)


class Scenario:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        config = GroupConfig(
            group_initial_rebalance_delay_ms=1000,
            offsets_retention_check_interval_ms=EXPIRY_CHECK_MS,
        )
        self.coordinator = serving_coordinator(config, random.Random(seed))
        self.topic = InMemoryOffsetsTopic()
        self.now = 0.0
        self.next_id = 0
        self.generations: dict[str, int] = dict.fromkeys(GROUPS, 0)

    def _take(self, result: GroupResult) -> list[GroupReply]:
        replies = self.topic.take(result)
        if self.rng.random() < 0.7:  # sometimes leave writes in flight a while
            replies = [*replies, *self.topic.flush(self.coordinator, self.now)]
        for reply in replies:
            if (
                isinstance(reply.response, JoinGroupResponse)
                and reply.response.generation_id > 0
            ):
                self.generations[self._group_of(reply.response.member_id)] = (
                    reply.response.generation_id
                )
        return replies

    def _group_of(self, member_id: str) -> str:
        return next(g for g in GROUPS if member_id.startswith(g))

    def _rid(self) -> int:
        self.next_id += 1
        return self.next_id

    def _members(self, group_id: str) -> list[str]:
        group = self.coordinator.group(group_id)
        return [] if group is None else list(group.members)

    def step(self) -> None:
        c, rng = self.coordinator, self.rng
        group_id = rng.choice(GROUPS)
        members = self._members(group_id)
        member = rng.choice(members) if members else ""
        generation = self.generations[group_id]
        action = rng.choice(
            ["join", "join", "rejoin", "sync", "beat", "leave", "commit", "wait"]
        )
        if action == "join" or (not member and action != "wait"):
            request = JoinGroupRequest(
                group_id,
                "",
                "consumer",
                PROTOCOLS,
                rng.choice([6000, 8000]),
                client_id=group_id,
            )
            replies = self._take(c.join_group(self._rid(), request, self.now))
            for reply in replies:
                response = reply.response
                if (
                    isinstance(response, JoinGroupResponse)
                    and response.error_code is ErrorCode.member_id_required
                    and rng.random() < 0.7  # else the pending id expires
                ):
                    again = JoinGroupRequest(
                        group_id,
                        response.member_id,
                        "consumer",
                        PROTOCOLS,
                        6000,
                        client_id=group_id,
                    )
                    self._take(c.join_group(self._rid(), again, self.now))
        elif action == "rejoin":
            rejoin = JoinGroupRequest(
                group_id, member, "consumer", PROTOCOLS, 6000, client_id=group_id
            )
            self._take(c.join_group(self._rid(), rejoin, self.now))
        elif action == "sync":
            plan = tuple((m, b"") for m in members)
            sync = SyncGroupRequest(group_id, generation, member, assignments=plan)
            self._take(c.sync_group(self._rid(), sync, self.now))
        elif action == "beat":
            beat = HeartbeatRequest(group_id, generation, member)
            self._take(c.heartbeat(self._rid(), beat, self.now))
        elif action == "leave":
            leave = LeaveGroupRequest(group_id, (MemberIdentity(member),), version=3)
            self._take(c.leave_group(self._rid(), leave, self.now))
        elif action == "commit":
            offsets = ((TopicPartition("t", 0), CommittedOffset(5)),)
            commit = OffsetCommitRequest(group_id, generation, member, offsets)
            self._take(c.commit_offsets(self._rid(), commit, self.now))
        else:
            self.now += rng.choice([0.5, 1.0, 3.0, 7.0])
            self._take(c.on_timer(self.now))


@pytest.mark.parametrize("seed", range(8))
def test_next_deadline_is_what_a_scan_of_every_group_finds(seed: int) -> None:
    scenario = Scenario(seed)
    for _ in range(400):
        scenario.step()
        assert scenario.coordinator.next_deadline() == scanned_deadline(
            scenario.coordinator
        )
    # Everything due has fired: nothing left at or before now.
    deadline = scenario.coordinator.next_deadline()
    assert deadline is None or deadline > scenario.now


def test_coordinators_in_one_process_trace_to_their_own_tracers() -> None:
    tracers = [RecordingTracer(node=n) for n in (1, 2, 3)]
    coordinators = [
        serving_coordinator(GroupConfig(group_initial_rebalance_delay_ms=0), tracer=t)
        for t in tracers
    ]
    with recording_tracer() as process_tracer:
        for n, coordinator in enumerate(coordinators, start=1):
            request = JoinGroupRequest(
                f"group-{n}",
                "",
                "consumer",
                PROTOCOLS,
                6000,
                version=3,
                client_id=f"c{n}",
            )
            coordinator.join_group(1, request, float(n))
    assert process_tracer.records == []  # nothing through the process-global tracer
    for n, tracer in enumerate(tracers, start=1):
        assert tracer.node == n
        joined = tracer.of_type(MemberJoined)
        assert [(e.group_id, e.client_id) for e in joined] == [(f"group-{n}", f"c{n}")]
        assert {ts for ts, _ in tracer.records} == {float(n)}
        assert {getattr(e, "group_id", None) for e in tracer.events} == {f"group-{n}"}
