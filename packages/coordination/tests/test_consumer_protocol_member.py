"""The KIP-848 member core without a network, in virtual time: each move of its state
table, the heartbeat's fields (all of them on a join and after an error, only changes
otherwise), revoke-before-assign reconciliation, fencing and leaving."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.member import (
    TRANSITIONS,
    ConsumerGroupHeartbeat,
    ConsumerMemberState,
    ConsumerProtocolMember,
    FindCoordinator,
    OffsetCommit,
    RebalanceEvent,
    SubscriptionState,
)

S = ConsumerMemberState
TP0, TP1, TP2 = (TopicPartition("t", p) for p in range(3))


@attrs.frozen
class Settings:
    partition_assignment_strategy: Sequence[str] = ("range",)
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    retry_backoff_ms: int = 100


def member(settings: Settings | None = None) -> ConsumerProtocolMember:
    subscriptions = SubscriptionState("earliest")
    subscriptions.subscribe(["t"])
    m = ConsumerProtocolMember(
        settings or Settings(), subscriptions, "g", "m-1", 300_000, "uniform"
    )
    m.on_find_coordinator(ErrorCode.none, 1, 0.0)
    return m


def state_of(m: ConsumerProtocolMember) -> ConsumerMemberState:
    return m.state  # read afresh after each call (no narrowing across calls)


def heartbeats(m: ConsumerProtocolMember, now: float) -> list[ConsumerGroupHeartbeat]:
    return [
        r for r in m.on_timer(now).messages if isinstance(r, ConsumerGroupHeartbeat)
    ]


def joined(m: ConsumerProtocolMember, *owned: TopicPartition) -> None:
    """Join and own ``owned``: the member is STABLE at epoch 1."""
    heartbeats(m, 0.0)
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, owned, 0.0)
    m.on_timer(0.0)
    m.events.clear()
    m.events_done()
    heartbeats(m, 0.0)  # the acknowledgement
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 0.0)
    assert state_of(m) is S.STABLE


def test_the_transition_table_names_every_state_and_refuses_other_moves() -> None:
    assert set(TRANSITIONS) == set(S)
    m = member()
    with pytest.raises(AssertionError):
        m._move(S.ACKNOWLEDGING)  # UNSUBSCRIBED cannot acknowledge anything


def test_a_member_finds_its_coordinator_before_it_heartbeats() -> None:
    subscriptions = SubscriptionState("earliest")
    subscriptions.subscribe(["t"])
    m = ConsumerProtocolMember(Settings(), subscriptions, "g", "m-1", 300_000)
    assert m.on_timer(0.0).messages == (FindCoordinator("g"),)
    assert m.on_timer(0.0).messages == ()  # one FindCoordinator at a time


def test_a_join_sends_every_field_with_epoch_zero() -> None:
    m = member()
    (hb,) = heartbeats(m, 0.0)
    assert state_of(m) is S.JOINING
    assert hb == ConsumerGroupHeartbeat(
        "g", "m-1", 0, None, 300_000, ("t",), "uniform", ()
    )


def test_an_assignment_is_reconciled_then_acknowledged_with_the_owned_partitions() -> (
    None
):
    m = member()
    heartbeats(m, 0.0)
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, (TP0, TP1), 0.0)
    assert state_of(m) is S.RECONCILING
    assert m.member_epoch == 1
    assert heartbeats(m, 0.0) == []  # nothing until the application took it
    assert m.events == [RebalanceEvent("assign", (TP0, TP1))]
    m.events.clear()
    m.events_done()
    assert state_of(m) is S.ACKNOWLEDGING
    (ack,) = heartbeats(m, 0.0)
    assert ack.owned == (TP0, TP1)
    assert ack.member_epoch == 1
    assert ack.subscribed_topic_names is None  # unchanged: not sent again
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 0.1)
    assert state_of(m) is S.STABLE


def test_a_stable_heartbeat_carries_only_what_changed_at_the_coordinators_interval() -> (
    None
):
    m = member()
    joined(m, TP0)
    assert heartbeats(m, 0.5) == []  # interval 1000 ms from the answer
    (hb,) = heartbeats(m, 1.0)
    assert (hb.owned, hb.subscribed_topic_names, hb.rebalance_timeout_ms) == (
        None,
        None,
        None,
    )
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 1.0)
    m.subscriptions.subscribe(["t", "u"])
    m.request_rejoin()
    (hb,) = heartbeats(m, 1.0)
    assert hb.subscribed_topic_names == ("t", "u")


def test_revocation_comes_before_the_assignment_and_commits_first() -> None:
    m = member()
    joined(m, TP0, TP1)
    m.subscriptions.seek(TP1, 7)
    heartbeats(m, 1.0)
    m.on_heartbeat_response(ErrorCode.none, "m-1", 2, 1000, (TP0, TP2), 1.0)
    out = m.on_timer(1.0).messages
    commits = [r for r in out if isinstance(r, OffsetCommit)]
    assert commits
    assert commits[0].offsets[0][:2] == (TP1, 7)
    assert commits[0].generation_id == 2
    assert commits[0].member_epoch
    assert m.events == [
        RebalanceEvent("revoke", (TP1,)),
        RebalanceEvent("assign", (TP2,)),
    ]
    assert TP1 in m.subscriptions.assignment  # on_revoke may still commit it
    m.events.clear()
    m.events_done()
    assert set(m.subscriptions.assignment) == {TP0, TP2}
    (ack,) = heartbeats(m, 1.0)
    assert ack.owned == (TP0, TP2)


@pytest.mark.parametrize(
    "error", [ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id]
)
def test_a_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero(
    error: ErrorCode,
) -> None:
    m = member()
    joined(m, TP0, TP1)
    heartbeats(m, 1.0)
    m.on_heartbeat_response(error, None, -1, 0, None, 1.0)
    assert state_of(m) is S.FENCED
    assert m.events == [RebalanceEvent("lost", (TP0, TP1))]
    assert m.subscriptions.assignment == {}
    assert heartbeats(m, 1.0) == []  # on_lost first
    m.events.clear()
    m.events_done()
    (hb,) = heartbeats(m, 1.0)
    assert state_of(m) is S.JOINING
    assert (hb.member_epoch, hb.member_id, hb.subscribed_topic_names, hb.owned) == (
        0,
        "m-1",
        ("t",),
        (),
    )


def test_an_assignment_naming_an_unknown_topic_is_asked_for_again_in_full() -> None:
    """The guarantee: a partition of a topic the client's metadata did not yet know is
    not lost for good. Its part of the assignment is left out, and the next heartbeat
    carries the owned partitions, which makes the coordinator send the whole assignment
    again, even though the resolved part changed nothing."""
    m = member()
    joined(m, TP0)
    (hb,) = heartbeats(m, 1.0)
    # The coordinator assigned TP0 and a partition of a topic still unknown: the shell
    # hands over the resolved part, which is what the member owns already.
    m.on_heartbeat_response(ErrorCode.none, "m-1", 2, 1000, (TP0,), 1.0)
    m.assignment_unresolved()
    (hb,) = heartbeats(m, 2.0)
    assert hb.owned == (TP0,)
    assert hb.subscribed_topic_names == ("t",)
    # Without the call the member would send only what changed: nothing.
    m.on_heartbeat_response(ErrorCode.none, "m-1", 2, 1000, (TP0,), 2.0)
    (hb,) = heartbeats(m, 3.0)
    assert hb.owned is None


def test_after_another_error_the_next_heartbeat_sends_every_field_again() -> None:
    m = member()
    joined(m, TP0)
    heartbeats(m, 1.0)
    m.on_heartbeat_response(
        ErrorCode.coordinator_load_in_progress, None, 0, 0, None, 1.0
    )
    assert heartbeats(m, 1.05) == []  # retry.backoff.ms
    (hb,) = heartbeats(m, 2.0)
    assert hb.subscribed_topic_names == ("t",)
    assert hb.owned == (TP0,)
    assert hb.rebalance_timeout_ms == 300_000


def test_a_moved_coordinator_is_found_again() -> None:
    m = member()
    joined(m, TP0)
    heartbeats(m, 1.0)
    m.on_heartbeat_response(ErrorCode.not_coordinator, None, 0, 0, None, 1.0)
    assert m.coordinator is None
    assert m.on_timer(2.0).messages == (FindCoordinator("g"),)


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("static-1", -2)])
def test_leaving_heartbeats_epoch_minus_one_or_minus_two_for_a_static_member(
    instance: str | None, epoch: int
) -> None:
    m = member(Settings(group_instance_id=instance))
    joined(m, TP0)
    (leave,) = m.leave().messages
    assert leave == ConsumerGroupHeartbeat("g", "m-1", epoch, instance)
    assert state_of(m) is S.UNSUBSCRIBED
    assert m.leave().messages == ()  # once


def test_a_member_that_never_joined_has_nothing_to_leave() -> None:
    m = member()
    assert m.leave().messages == ()


def test_a_member_whose_application_stops_polling_leaves_and_rejoins_at_next_poll() -> (
    None
):
    m = member(Settings(max_poll_interval_ms=10_000))
    joined(m, TP0)
    m.app_polled(0.0)
    assert heartbeats(m, 5.0) != []  # within max.poll.interval.ms: heartbeats go on
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 5.0)
    (leave,) = m.on_timer(10.5).messages
    assert leave == ConsumerGroupHeartbeat("g", "m-1", -1, None)
    assert m.events == [RebalanceEvent("lost", (TP0,))]
    m.events.clear()
    m.events_done()
    assert heartbeats(m, 11.0) == []  # out until the application is back
    m.app_polled(12.0)
    (join,) = heartbeats(m, 12.0)
    assert join.member_epoch == 0


def test_a_fatal_error_stops_the_heartbeats_and_is_kept_for_the_application() -> None:
    m = member()
    heartbeats(m, 0.0)
    m.on_heartbeat_response(
        ErrorCode.unsupported_assignor, None, 0, 0, None, 0.0, "no such assignor"
    )
    assert m.fatal == (ErrorCode.unsupported_assignor, "no such assignor")
    assert heartbeats(m, 10.0) == []
