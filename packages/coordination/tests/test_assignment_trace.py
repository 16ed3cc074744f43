"""``group.member_assignment``: who owned which partition when, under both protocols.

The trace lab on rebalances measures, per partition, how long nobody owned it; that is
only right if the snapshots the coordinator emits never show a partition with two
owners, end every departed member with nothing, and end a settled group with every
partition owned once.
"""

from __future__ import annotations

import random
import uuid

from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    MemberAssignmentChanged,
    SimulationConfig,
    parse_events,
    simulate,
)
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace import event_types
from minikafka.trace.testing import RecordingTracer, recording_tracer

TOPICS = {"orders": 6}
IDS = {"orders": uuid.uuid5(uuid.NAMESPACE_URL, "orders")}
ALL = {f"orders-{p}" for p in range(6)}


def owners_over_time(tracer: RecordingTracer) -> dict[str, set[str]]:
    """Replay the snapshots in order, checking at each step that no partition has two
    owners (assigned or pending revocation); the owners at the end."""
    owned: dict[str, set[str]] = {}
    for _, event in tracer.records:
        if not isinstance(event, MemberAssignmentChanged):
            continue
        owned[event.member_id] = {
            *event.assigned_partitions,
            *event.partitions_pending_revocation,
        }
        seen: list[str] = [p for parts in owned.values() for p in parts]
        assert len(seen) == len(set(seen)), f"a partition owned twice: {owned}"
    return {m: parts for m, parts in owned.items() if parts}


def test_the_event_is_registered_under_its_name_with_kafkas_field_names() -> None:
    assert event_types()["group", "member_assignment"] is MemberAssignmentChanged


class ConsumerMembers:
    """Consumer-protocol members that do what their heartbeat answers say at once."""

    def __init__(self, tracer: RecordingTracer) -> None:
        self.coordinator = serving_coordinator(
            GroupConfig(), random.Random(1), tracer=tracer
        )
        self.log = InMemoryOffsetsTopic()
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, frozenset[TopicPartition]] = {}
        self.now = 0.0
        self._ids = 0

    def beat(self, member: str, epoch: int | None = None) -> None:
        self._ids += 1
        self.now += 0.5
        request = ConsumerGroupHeartbeatRequest(
            "g",
            member,
            self.epochs.get(member, 0) if epoch is None else epoch,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("orders",),
            owned=self.owned.get(member, frozenset()),
            topics=TOPICS,
            topic_ids=IDS,
            client_id=f"client-{member}",
        )
        result = self.coordinator.consumer_group_heartbeat(self._ids, request, self.now)
        replies = self.log.take(result) + self.log.flush(self.coordinator, self.now)
        (reply,) = [r for r in replies if r.request_id == self._ids]
        response = reply.response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        assert response.error is ErrorCode.none
        self.epochs[member] = response.member_epoch
        if response.assignment is not None:
            self.owned[member] = response.assignment


def test_consumer_members_hand_partitions_over_without_two_owners_and_leave_empty() -> (
    None
):
    with recording_tracer(node=1) as tracer:
        members = ConsumerMembers(tracer)
        for _ in range(3):
            members.beat("a")
        members.beat("b")  # joins: a must revoke half before b gets it
        for _ in range(4):
            members.beat("a")
            members.beat("b")
        settled = owners_over_time(tracer)
        assert settled.keys() == {"a", "b"}
        assert settled["a"] | settled["b"] == ALL
        assert len(settled["a"]) == len(settled["b"]) == 3
        events = tracer.of_type(MemberAssignmentChanged)
        assert {e.group_type for e in events} == {"consumer"}
        assert {e.client_id for e in events} == {"client-a", "client-b"}
        # a passed through a step where it still had to give some back
        assert any(e.partitions_pending_revocation for e in events)
        members.beat("b", epoch=-1)  # leaves
        last = tracer.of_type(MemberAssignmentChanged)[-1]
        assert (last.member_id, last.assigned_partitions, last.member_epoch) == (
            "b",
            (),
            -1,
        )


def test_classic_members_are_traced_at_join_sync_and_removal() -> None:
    config = SimulationConfig(
        members=3, partitions=6, assignor="range", events=parse_events("leave:2")
    )
    with recording_tracer(node=1) as tracer:
        simulate(config)
    events = tracer.of_type(MemberAssignmentChanged)
    assert {e.group_type for e in events} == {"classic"}
    settled = owners_over_time(tracer)
    assert len(settled) == 2
    owned = [p for parts in settled.values() for p in parts]
    assert len(owned) == len(set(owned)) == 6  # every partition, once
    left = [e for e in events if e.client_id.startswith("consumer-2")]
    assert left[-1].assigned_partitions == ()
