"""The ZooKeeper-mode controller's core (seed 001), event by event.

Guarantees checked:
- a topic's creation runs seed 001's four steps in order, writes each partition's first
  leader and ISR, and tells the replicas (LeaderAndIsr, is_new) and every broker
  (UpdateMetadata);
- a leader's failure moves leadership to an in-sync replica only (never an out-of-sync
  one unless unclean election is enabled, by the topic's config or else the broker's),
  and the last in-sync replica stays in the ISR so that it can lead again without loss;
- the leader-imbalance check (``auto.leader.rebalance.enable``) gives leadership back
  to in-sync preferred replicas only, beyond the percentage allowed, never during a
  reassignment;
- every write is conditional on the version the controller predicted, and the
  predictions hold (checked against an in-memory ZooKeeper over random event sequences);
- AlterPartition is fenced by broker epoch, leader epoch and partition epoch;
- controlled shutdown moves leadership off the broker before it stops;
- deletion stops and deletes every replica, waits for a dead broker, then removes the
  znodes;
- a transition the tables forbid is an error, not skipped;
- every trace event an event emits carries the time its call was given.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    UNCLEAN_ELECTION,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionItem,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    ControllerConfig,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionState,
    ReassignablePartition,
)
from minikafka.controller.zk import (
    BrokerRequest,
    ControlledShutdownResult,
    IllegalStateTransitionError,
    LeaderAndIsr,
    StateTransition,
    StopReplica,
    UpdateMetadata,
    ZkController,
    ZkControllerResult,
)
from minikafka.trace.testing import RecordingTracer
from minikafka.zk import (
    BrokerRegistration,
    Check,
    Create,
    Delete,
    LeaderIsrAndControllerEpoch,
    LiveBroker,
    Op,
    SetData,
    TopicAssignment,
    ZkCluster,
    encode_topic_config,
)

EPOCH = 3
NOW = 1_700_000_000.0
"""The time every event is handed (seconds since the epoch): it only stamps traces."""
R = TypeVar("R")
TOPIC_ID = uuid.UUID(int=7)


def broker(broker_id: int, epoch: int = 100) -> LiveBroker:
    registration = BrokerRegistration(
        broker_id,
        (f"PLAINTEXT://127.0.0.1:{9092 + broker_id}",),
        {"PLAINTEXT": "PLAINTEXT"},
    )
    return LiveBroker(registration, epoch + broker_id)


def brokers(*ids: int) -> dict[int, LiveBroker]:
    return {b: broker(b) for b in ids}


def assignment(
    replicas: Mapping[int, Sequence[int]], topic_id: uuid.UUID = TOPIC_ID
) -> TopicAssignment:
    return TopicAssignment({p: tuple(r) for p, r in replicas.items()}, topic_id)


def started(
    live: Iterable[int] = (1, 2, 3),
    *,
    unclean: bool = False,
    tracer: RecordingTracer | None = None,
) -> ZkController:
    cluster = ZkCluster(brokers(*live), {}, {}, frozenset())
    config = ControllerConfig(
        default_replication_factor=2, unclean_leader_election_enable=unclean
    )
    controller, _ = ZkController.become_active(
        0, EPOCH, cluster, NOW, config=config, tracer=tracer, rng=random.Random(5)
    )
    return controller


def requests(result: ZkControllerResult, kind: type[R]) -> dict[int, R]:
    return {
        r.broker_id: r.payload for r in result.messages if isinstance(r.payload, kind)
    }


def partition_states(request: Any) -> dict[tuple[str, int], Any]:
    return {(p.topic, p.partition): p for p in request.partitions}


def leadership(
    controller: ZkController, topic: str, partition: int
) -> tuple[LeaderIsrAndControllerEpoch, int]:
    found = controller.context.leadership[(topic, partition)]
    return found.state, found.version


# --- creation (seed 001) --------------------------------------------------------------------


def test_a_new_topic_goes_through_seed_001s_four_steps() -> None:
    tracer = RecordingTracer()
    controller = started(tracer=tracer)
    result = controller.on_topic_change({"t": assignment({0: [1, 2], 1: [2, 3]})}, NOW)

    transitions = [
        (e.machine, e.partition, e.replica, e.from_state, e.to_state)
        for e in tracer.events
        if isinstance(e, StateTransition)
    ]
    assert transitions == [
        ("partition", 0, -1, "NonExistentPartition", "NewPartition"),
        ("partition", 1, -1, "NonExistentPartition", "NewPartition"),
        ("replica", 0, 1, "NonExistentReplica", "NewReplica"),
        ("replica", 0, 2, "NonExistentReplica", "NewReplica"),
        ("replica", 1, 2, "NonExistentReplica", "NewReplica"),
        ("replica", 1, 3, "NonExistentReplica", "NewReplica"),
        ("partition", 0, -1, "NewPartition", "OnlinePartition"),
        ("partition", 1, -1, "NewPartition", "OnlinePartition"),
        ("replica", 0, 1, "NewReplica", "OnlineReplica"),
        ("replica", 0, 2, "NewReplica", "OnlineReplica"),
        ("replica", 1, 2, "NewReplica", "OnlineReplica"),
        ("replica", 1, 3, "NewReplica", "OnlineReplica"),
    ]
    assert all(
        e.cause == "TopicChange"
        for e in tracer.events
        if isinstance(e, StateTransition)
    )
    # The first live replica leads, every live replica is in sync; znodes created at v0.
    assert result.records == (
        Create(
            "/brokers/topics/t/partitions/0/state",
            LeaderIsrAndControllerEpoch(1, 0, (1, 2), EPOCH).encode(),
            parents=True,
        ),
        Create(
            "/brokers/topics/t/partitions/1/state",
            LeaderIsrAndControllerEpoch(2, 0, (2, 3), EPOCH).encode(),
            parents=True,
        ),
    )
    leader_and_isr = requests(result, LeaderAndIsr)
    assert sorted(leader_and_isr) == [1, 2, 3]
    on_2 = partition_states(leader_and_isr[2])
    assert sorted(on_2) == [("t", 0), ("t", 1)]
    assert all(p.is_new for p in on_2.values())
    first = on_2[("t", 0)]
    assert (first.leader, first.leader_epoch, first.isr, first.zk_version) == (
        1,
        0,
        (1, 2),
        0,
    )
    request = leader_and_isr[2]
    assert (request.controller_id, request.controller_epoch, request.broker_epoch) == (
        0,
        EPOCH,
        102,
    )
    assert {(leader.broker_id, leader.port) for leader in request.live_leaders} == {
        (1, 9093),
        (2, 9094),
    }
    # Every broker hears the new partitions, after LeaderAndIsr.
    update = requests(result, UpdateMetadata)
    assert sorted(update) == [1, 2, 3]
    assert sorted(partition_states(update[3])) == [("t", 0), ("t", 1)]
    assert [b.broker_id for b in update[3].live_brokers] == [1, 2, 3]
    kinds = [r.api for r in result.messages if r.broker_id == 1]
    assert kinds == ["LeaderAndIsr", "UpdateMetadata"]


def test_each_events_trace_carries_the_time_its_call_was_given() -> None:
    """As every core's: the shell's ``now``, never the tracer's wall clock, and never an
    earlier event's time."""
    tracer = RecordingTracer()
    controller = started(tracer=tracer)
    started_at = len(tracer.records)
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW + 1)
    created = len(tracer.records)
    controller.on_broker_change(brokers(2, 3), NOW + 2)
    stamps = [ts for ts, _ in tracer.records]
    assert started_at < created < len(stamps)
    assert set(stamps[:started_at]) <= {NOW}
    assert set(stamps[started_at:created]) == {NOW + 1}
    assert set(stamps[created:]) == {NOW + 2}


def test_a_partition_with_no_live_replica_stays_new_until_one_comes() -> None:
    controller = started(live=[1])
    result = controller.on_topic_change({"t": assignment({0: [2, 3]})}, NOW)
    assert controller.psm.state(("t", 0)) is PartitionState.NEW
    assert result.records == ()
    result = controller.on_broker_change(brokers(1, 3), NOW)
    assert controller.psm.state(("t", 0)) is PartitionState.ONLINE
    assert leadership(controller, "t", 0) == (
        LeaderIsrAndControllerEpoch(3, 0, (3,), EPOCH),
        0,
    )
    assert isinstance(result.records[0], Create)


def test_added_partitions_are_created_and_existing_ones_left_alone() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    result = controller.on_topic_change({"t": assignment({0: [1, 2], 1: [3, 1]})}, NOW)
    assert [w.path for w in result.records] == ["/brokers/topics/t/partitions/1/state"]
    assert leadership(controller, "t", 0)[1] == 0


def test_a_topic_written_without_an_id_gets_one() -> None:
    controller = started()
    result = controller.on_topic_change({"t": TopicAssignment({0: (1,)})}, NOW)
    topic_id = controller.context.topic_id("t")
    assert topic_id is not None
    assert result.records[0] == SetData(
        "/brokers/topics/t", TopicAssignment({0: (1,)}, topic_id).encode()
    )
    # The watch fires again for that write: nothing more to do.
    again = controller.on_topic_change({"t": TopicAssignment({0: (1,)}, topic_id)}, NOW)
    assert again.records == ()
    assert again.messages == ()


# --- brokers failing and coming back ----------------------------------------------------------


def test_a_dead_leader_is_replaced_by_an_in_sync_replica() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    result = controller.on_broker_change(brokers(2, 3), NOW)

    state, version = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2, 3))
    assert state.leader_epoch == 1
    assert version == 1
    assert result.records[0] == SetData(
        "/brokers/topics/t/partitions/0/state",
        LeaderIsrAndControllerEpoch(2, 1, (2, 3), EPOCH).encode(),
        0,
    )
    assert sorted(requests(result, LeaderAndIsr)) == [2, 3]
    assert sorted(requests(result, UpdateMetadata)) == [2, 3]  # not the dead one
    assert controller.rsm.state(("t", 0, 1)).value == "OfflineReplica"


def test_the_last_in_sync_replica_stays_in_the_isr_and_leads_again_when_back() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    controller.on_broker_change(brokers(1, 3), NOW)  # 2 leaves the ISR
    controller.on_broker_change(brokers(3), NOW)  # 1, the last in sync, dies
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (-1, (1,))
    assert controller.psm.state(("t", 0)) is PartitionState.OFFLINE
    # 2 is back but was not in sync: no leader
    controller.on_broker_change(brokers(2, 3), NOW)
    assert leadership(controller, "t", 0)[0].leader == -1
    controller.on_broker_change(brokers(1, 2, 3), NOW)
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (1, (1,))
    assert controller.psm.state(("t", 0)) is PartitionState.ONLINE


def test_unclean_election_picks_a_live_replica_outside_the_isr_only_when_enabled() -> (
    None
):
    tracer = RecordingTracer()
    controller = started(unclean=True, tracer=tracer)
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    controller.on_broker_change(brokers(1, 3), NOW)
    controller.on_broker_change(brokers(3), NOW)
    controller.on_broker_change(brokers(2, 3), NOW)
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2,))
    reasons = [getattr(e, "reason", None) for e in tracer.events]
    assert "unclean" in reasons


@pytest.mark.parametrize(
    ("broker_default", "topic_override", "unclean"),
    [
        (False, "true", True),
        (True, "false", False),
        (True, None, True),
        (False, None, False),
    ],
)
def test_unclean_election_follows_the_topic_config_over_the_broker_default(
    broker_default: bool, topic_override: str | None, unclean: bool
) -> None:
    # unclean.leader.election.enable is a topic config: the topic's override (in
    # /config/topics/t, read with its assignment) wins over the broker's default.
    controller = started(unclean=broker_default)
    overrides = (
        {}
        if topic_override is None
        else {"unclean.leader.election.enable": topic_override}
    )
    controller.on_topic_change(
        {"t": assignment({0: [1, 2]})}, NOW, configs={"t": overrides}
    )
    controller.on_broker_change(brokers(1, 3), NOW)  # 2 dies: leaves the ISR
    controller.on_broker_change(brokers(3), NOW)  # 1, the last in sync, dies
    controller.on_broker_change(brokers(2, 3), NOW)  # only 2, out of sync, is back
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == ((2, (2,)) if unclean else (-1, (1,)))


def test_elect_leaders_unclean_elects_a_live_replica_outside_the_isr() -> None:
    # Guarantee (KIP-460): ElectLeaders UNCLEAN gives a leaderless partition a live
    # replica from outside its ISR, though unclean election is off; a partition with a
    # live leader needs none; one whose replicas are all gone gets none.
    tracer = RecordingTracer()
    controller = started(unclean=False, tracer=tracer)
    controller.on_topic_change(
        {"t": assignment({0: [1, 2]}), "u": assignment({0: [3]})}, NOW
    )
    controller.on_broker_change(brokers(1, 3), NOW)  # 2 dies: leaves the ISR
    controller.on_broker_change(brokers(3), NOW)  # 1, the last in sync, dies
    controller.on_broker_change(brokers(2, 3), NOW)  # only 2, out of sync, is back
    assert leadership(controller, "t", 0)[0].leader == -1
    result = controller.on_elect_leaders(
        ElectLeadersRequest((("t", 0), ("u", 0)), UNCLEAN_ELECTION), NOW
    )
    response = result.replies[0]
    assert isinstance(response, ElectLeadersResponse)
    assert [(r.topic, r.error_code) for r in response.partitions] == [
        ("t", ErrorCode.none),
        ("u", ErrorCode.election_not_needed),
    ]
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2,))
    assert "unclean" in [getattr(e, "reason", None) for e in tracer.events]
    controller.on_broker_change(brokers(2), NOW)  # 3, u's only replica, dies
    gone = controller.on_elect_leaders(
        ElectLeadersRequest((("u", 0),), UNCLEAN_ELECTION), NOW
    ).replies[0]
    assert isinstance(gone, ElectLeadersResponse)
    [result_u] = gone.partitions
    assert result_u.error_code == ErrorCode.eligible_leaders_not_available


def test_a_new_controller_reads_each_topics_unclean_setting() -> None:
    cluster = ZkCluster(
        brokers(2, 3),
        {"t": assignment({0: [1, 2]})},
        {("t", 0): (LeaderIsrAndControllerEpoch(1, 4, (1,), EPOCH - 1), 7)},
        frozenset(),
        {"t": {"unclean.leader.election.enable": "true"}},
    )
    controller, _ = ZkController.become_active(
        0, EPOCH, cluster, NOW, rng=random.Random(5)
    )
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2,))  # broker default false, topic true


def test_a_bounced_broker_is_failed_then_started() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    result = controller.on_broker_change(
        {**brokers(2, 3), 1: broker(1, epoch=500)}, NOW
    )
    state, _ = leadership(controller, "t", 0)
    assert state.leader == 2  # it lost leadership as it died
    assert requests(result, LeaderAndIsr)[1].broker_epoch == 501  # the new incarnation


def test_a_starting_broker_hears_the_cluster_before_its_leader_and_isr() -> None:
    """Kafka's onBrokerStartup: UpdateMetadata first, in a batch of its own, so that a
    LeaderAndIsr whose answer is lost cannot hold the broker's first view of the
    cluster behind it on its channel (chaos seed 141)."""
    controller = started((1, 2))
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    result = controller.on_broker_change(brokers(1, 2, 3), NOW)
    to_3 = [type(r.payload) for r in result.messages if r.broker_id == 3]
    assert to_3[:2] == [UpdateMetadata, LeaderAndIsr]
    first = next(r.payload for r in result.messages if r.broker_id == 3)
    assert isinstance(first, UpdateMetadata)
    assert ("t", 0) in partition_states(first)
    assert sorted(b.broker_id for b in first.live_brokers) == [1, 2, 3]


def test_a_new_controller_tells_every_broker_the_cluster_before_any_leader_and_isr() -> (
    None
):
    cluster = ZkCluster(
        brokers(1, 2),
        {"t": assignment({0: [1, 2]})},
        {("t", 0): (LeaderIsrAndControllerEpoch(1, 0, (1, 2), 2), 0)},
        frozenset(),
    )
    _, result = ZkController.become_active(0, EPOCH, cluster, NOW)
    for b in (1, 2):
        kinds = [type(r.payload) for r in result.messages if r.broker_id == b]
        assert kinds[:2] == [UpdateMetadata, LeaderAndIsr]


def test_a_preferred_election_gives_leadership_back_to_the_first_replica() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2], 1: [2, 3]})}, NOW)
    controller.on_broker_change(brokers(2, 3), NOW)  # 1 dies: t-0 moves to 2
    controller.on_broker_change(brokers(1, 2, 3), NOW)  # 1 is back, but only a follower
    assert leadership(controller, "t", 0)[0].leader == 2
    alter = AlterPartitionItem(
        TOPIC_ID,
        0,
        leadership(controller, "t", 0)[0].leader_epoch,
        (2, 1),
        leadership(controller, "t", 0)[1],
    )
    # 1 caught up
    controller.on_alter_partition(AlterPartitionRequest(2, 102, (alter,)), NOW)
    result = controller.on_elect_leaders(
        ElectLeadersRequest((("t", 0), ("t", 1), ("u", 0))), NOW
    )
    assert isinstance(result.replies[0], ElectLeadersResponse)
    assert [r.error_code for r in result.replies[0].partitions] == [
        ErrorCode.none,
        ErrorCode.election_not_needed,
        ErrorCode.unknown_topic_or_partition,
    ]
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (1, (2, 1))
    assert sorted(requests(result, LeaderAndIsr)) == [1, 2]


def _catch_up(controller: ZkController, partition: int, isr: tuple[int, ...]) -> None:
    """The partition's leader reports ``isr`` in sync (AlterPartition, as a leader would)."""
    state, version = leadership(controller, "t", partition)
    item = AlterPartitionItem(TOPIC_ID, partition, state.leader_epoch, isr, version)
    leader = controller.context.brokers[state.leader]
    request = AlterPartitionRequest(state.leader, leader.epoch, (item,))
    result = controller.on_alter_partition(request, NOW)
    assert isinstance(result.replies[0], AlterPartitionResponse)
    assert [r.error_code for r in result.replies[0].partitions] == [ErrorCode.none]


def bounced_first_replica(percentage: int = 10) -> tuple[ZkController, RecordingTracer]:
    """Broker 1, first replica of t-0 and t-1, died and came back: both are led by others,
    t-0 has 1 back in sync, t-1 does not; t-2 was never 1's."""
    tracer = RecordingTracer()
    cluster = ZkCluster(brokers(1, 2, 3), {}, {}, frozenset())
    config = ControllerConfig(leader_imbalance_per_broker_percentage=percentage)
    controller, _ = ZkController.become_active(
        0, EPOCH, cluster, NOW, config=config, tracer=tracer, rng=random.Random(5)
    )
    controller.on_topic_change(
        {"t": assignment({0: [1, 2], 1: [1, 3], 2: [2, 3]})}, NOW
    )
    controller.on_broker_change(brokers(2, 3), NOW)
    controller.on_broker_change(brokers(1, 2, 3), NOW)
    _catch_up(controller, 0, (2, 1))
    assert [leadership(controller, "t", p)[0].leader for p in range(3)] == [2, 3, 2]
    return controller, tracer


def test_the_leader_imbalance_check_gives_leadership_back_where_the_first_replica_is_in_sync() -> (
    None
):
    # auto.leader.rebalance.enable: broker 1 leads none of the two partitions it is the
    # preferred replica of (100% > 10%): t-0 goes back to it; t-1 cannot, 1 is not in its
    # ISR; t-2's preferred replica leads it already.
    controller, tracer = bounced_first_replica()
    result = controller.on_auto_leader_rebalance(NOW)
    assert [leadership(controller, "t", p)[0].leader for p in range(3)] == [1, 3, 2]
    assert leadership(controller, "t", 0)[0].isr == (2, 1)  # the ISR does not change
    assert sorted(requests(result, LeaderAndIsr)) == [1, 2]
    assert [w.path for w in result.records if isinstance(w, SetData)] == [
        "/brokers/topics/t/partitions/0/state"
    ]
    reasons = [getattr(e, "reason", None) for e in tracer.events]
    assert reasons.count("auto_rebalance") == 1
    # Balanced now (for what can move): a second check changes nothing.
    again = controller.on_auto_leader_rebalance(NOW)
    assert again.records == ()
    assert again.messages == ()


@pytest.mark.parametrize(("percentage", "moves"), [(50, False), (49, True)])
def test_the_leader_imbalance_check_leaves_an_imbalance_within_the_percentage(
    percentage: int, moves: bool
) -> None:
    # After t-0 went back, broker 1 leads 1 of the 2 partitions it is preferred for:
    # 50% imbalanced. With t-1 in sync on 1 too, it moves only if that is more than
    # leader.imbalance.per.broker.percentage.
    controller, _ = bounced_first_replica(percentage=percentage)
    controller.on_elect_leaders(ElectLeadersRequest((("t", 0),)), NOW)
    _catch_up(controller, 1, (3, 1))
    result = controller.on_auto_leader_rebalance(NOW)
    assert leadership(controller, "t", 1)[0].leader == (1 if moves else 3)
    assert bool(result.records) is moves


def test_the_leader_imbalance_check_waits_for_a_reassignment_to_finish() -> None:
    controller, _ = bounced_first_replica()
    moved = controller.on_alter_partition_reassignments(
        AlterPartitionReassignmentsRequest((ReassignablePartition("t", 2, (3, 2, 1)),)),
        NOW,
    )
    assert isinstance(moved.replies[0], AlterPartitionReassignmentsResponse)
    assert [r.error_code for r in moved.replies[0].partitions] == [ErrorCode.none]
    result = controller.on_auto_leader_rebalance(NOW)
    assert result.records == ()
    assert result.messages == ()
    assert leadership(controller, "t", 0)[0].leader == 2


# --- AlterPartition (KIP-497) -------------------------------------------------------------------


def alter(
    controller: ZkController,
    *,
    leader: int = 1,
    isr: tuple[int, ...] = (1,),
    **fields: int,
) -> ZkControllerResult:
    state, version = leadership(controller, "t", 0)
    item = AlterPartitionItem(
        TOPIC_ID,
        0,
        fields.get("leader_epoch", state.leader_epoch),
        isr,
        fields.get("partition_epoch", version),
    )
    epoch = fields.get("broker_epoch", controller.context.brokers[leader].epoch)
    return controller.on_alter_partition(
        AlterPartitionRequest(leader, epoch, (item,)), NOW
    )


def test_alter_partition_writes_the_isr_over_the_version_the_leader_named() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    result = alter(controller, isr=(1, 3))
    assert isinstance(result.replies[0], AlterPartitionResponse)
    assert result.replies[0].error_code == ErrorCode.none
    (answer,) = result.replies[0].partitions
    assert (
        answer.error_code,
        answer.isr,
        answer.leader_epoch,
        answer.partition_epoch,
    ) == (
        ErrorCode.none,
        (1, 3),
        0,
        1,
    )
    assert result.records == (
        SetData(
            "/brokers/topics/t/partitions/0/state",
            LeaderIsrAndControllerEpoch(1, 0, (1, 3), EPOCH).encode(),
            0,
        ),
    )
    assert sorted(requests(result, UpdateMetadata)) == [1, 2, 3]
    assert requests(result, LeaderAndIsr) == {}


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"partition_epoch": 5}, ErrorCode.invalid_update_version),
        ({"leader_epoch": 4}, ErrorCode.unknown_leader_epoch),
        ({"leader": 2}, ErrorCode.not_leader_or_follower),
    ],
)
def test_alter_partition_is_fenced_by_epochs(
    fields: dict[str, int], error: ErrorCode
) -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    result = alter(controller, isr=(fields.get("leader", 1),), **fields)
    assert result.records == ()
    assert isinstance(result.replies[0], AlterPartitionResponse)
    assert result.replies[0].partitions[0].error_code == error


def test_a_proposal_sent_again_after_it_was_applied_is_answered_with_the_state() -> (
    None
):
    """Its first answer lost, the leader sends the same proposal on the partition epoch
    it knew: the controller answers with the state that holds it (Kafka's
    equalsAllowStalePartitionEpoch), not INVALID_UPDATE_VERSION, which would leave the
    leader waiting for a LeaderAndIsr that never comes."""
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    _, version = leadership(controller, "t", 0)
    alter(controller, isr=(1, 3))
    again = alter(controller, isr=(1, 3), partition_epoch=version)
    assert again.records == ()
    assert isinstance(again.replies[0], AlterPartitionResponse)
    (answer,) = again.replies[0].partitions
    assert (answer.error_code, answer.isr, answer.partition_epoch) == (
        ErrorCode.none,
        (1, 3),
        version + 1,
    )
    other = alter(controller, isr=(1, 2), partition_epoch=version)
    assert isinstance(other.replies[0], AlterPartitionResponse)
    assert other.replies[0].partitions[0].error_code == ErrorCode.invalid_update_version


def test_alter_partition_from_an_old_broker_incarnation_is_refused_whole() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    result = alter(controller, broker_epoch=1)
    assert isinstance(result.replies[0], AlterPartitionResponse)
    assert result.replies[0].error_code == ErrorCode.stale_broker_epoch
    assert result.records == ()


# --- reassignment (KIP-236, KIP-455) ------------------------------------------------------


def reassign(
    controller: ZkController,
    replicas: tuple[int, ...] | None,
    allow_rf_change: bool = True,
) -> ZkControllerResult:
    request = AlterPartitionReassignmentsRequest(
        (ReassignablePartition("t", 0, replicas),), allow_rf_change
    )
    return controller.on_alter_partition_reassignments(request, NOW)


def test_a_move_may_be_forbidden_to_change_the_replication_factor() -> None:
    """KIP-860 in ZooKeeper mode: the same rule as the KRaft controller's, measured
    against the replicas the partition is headed for; a refusal writes nothing."""
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)

    def answer(result: ZkControllerResult) -> tuple[ErrorCode, str | None]:
        (reply,) = result.replies
        assert isinstance(reply, AlterPartitionReassignmentsResponse)
        (partition,) = reply.partitions
        return partition.error_code, partition.error_message

    refused = reassign(controller, (1, 2, 3), allow_rf_change=False)
    assert answer(refused) == (
        ErrorCode.invalid_replication_factor,
        "The replication factor is changed from 2 to 3",
    )
    assert refused.records == ()
    assert controller.context.topics["t"] == assignment({0: [1, 2]})
    assert answer(reassign(controller, (2, 3), allow_rf_change=False))[0] is (
        ErrorCode.none
    )
    # RS is (2, 3, 1) while 3 catches up; the target it is headed for is (2, 3).
    assert answer(reassign(controller, (3,), allow_rf_change=False)) == (
        ErrorCode.invalid_replication_factor,
        "The replication factor is changed from 2 to 1",
    )
    assert answer(reassign(controller, None, allow_rf_change=False))[0] is (
        ErrorCode.none
    )


def test_a_move_may_name_a_replica_whose_broker_is_down_but_adds_only_live_ones() -> (
    None
):
    """Kafka 2.8's validateReplicas: only the replicas to be added must be on live
    brokers. Broker 1, down (restarting), keeps its replica of the target; broker 4,
    not registered, cannot be added (chaos seed 141)."""
    controller = started((1, 2, 3, 4))
    controller.on_topic_change({"t": assignment({0: [1, 2, 3]})}, NOW)
    controller.on_broker_change(brokers(2, 3, 4), NOW)

    def answer(result: ZkControllerResult) -> tuple[ErrorCode, str | None]:
        (reply,) = result.replies
        assert isinstance(reply, AlterPartitionReassignmentsResponse)
        (partition,) = reply.partitions
        return partition.error_code, partition.error_message

    assert answer(reassign(controller, (4, 1, 2))) == (ErrorCode.none, None)
    assert controller.context.topics["t"].adding[0] == (4,)
    reassign(controller, None)
    controller.on_broker_change(brokers(2, 3), NOW)
    code, message = answer(reassign(controller, (4, 1, 2)))
    assert code is ErrorCode.invalid_replica_assignment
    assert message is not None
    assert "not alive" in message
    assert "[4]" in message
    assert answer(reassign(controller, (2, 2, 3)))[0] is (
        ErrorCode.invalid_replica_assignment
    )


def test_a_reassignment_adds_then_waits_for_sync_then_removes_and_moves_leadership() -> (
    None
):
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    result = reassign(controller, (2, 3))
    assert isinstance(result.replies[0], AlterPartitionReassignmentsResponse)
    assert result.replies[0].partitions[0].error_code == ErrorCode.none
    # Phase A: RS = TRS + (ORS - TRS), the new replica told to follow, a new leader epoch.
    written = controller.context.topics["t"]
    assert (written.partitions[0], written.adding[0], written.removing[0]) == (
        (2, 3, 1),
        (3,),
        (1,),
    )
    assert sorted(requests(result, LeaderAndIsr)) == [1, 2, 3]
    assert partition_states(requests(result, LeaderAndIsr)[3])[("t", 0)].is_new
    assert leadership(controller, "t", 0)[0].leader_epoch == 1
    listed = controller.list_reassignments().reassignments
    assert [(r.topic, r.partition, r.adding_replicas) for r in listed] == [
        ("t", 0, (3,))
    ]
    # Phase B, when the leader reports 3 in sync: 2 leads (1 is being removed), 1 is
    # stopped and deleted, and the assignment is TRS alone.
    state, version = leadership(controller, "t", 0)
    item = AlterPartitionItem(TOPIC_ID, 0, state.leader_epoch, (1, 2, 3), version)
    done = controller.on_alter_partition(AlterPartitionRequest(1, 101, (item,)), NOW)
    assert isinstance(done.replies[0], AlterPartitionResponse)
    # The answer is the ISR written, on leader 1's own epoch: leader 1 commits it and
    # counts 3 until LeaderAndIsr and StopReplica tell it of the move.
    (answer,) = done.replies[0].partitions
    assert (answer.error_code, answer.leader, answer.isr) == (
        ErrorCode.none,
        1,
        (1, 2, 3),
    )
    assert (answer.leader_epoch, answer.partition_epoch) == (
        state.leader_epoch,
        version + 1,
    )
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2, 3))
    assert controller.context.topics["t"] == assignment({0: [2, 3]})
    stop = requests(done, StopReplica)[1]
    assert [(p.partition, p.delete) for p in stop.partitions] == [(0, True)]
    assert controller.rsm.state(("t", 0, 1)).value == "NonExistentReplica"
    assert controller.list_reassignments().reassignments == ()


def test_a_cancelled_reassignment_goes_back_and_deletes_what_it_added() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    reassign(controller, (2, 3))
    cancelled = reassign(controller, None)
    # ORS is RS without AR, in RS's order, as Kafka reads it: (2, 1), not (1, 2).
    assert controller.context.topics["t"] == assignment({0: [2, 1]})
    assert [
        (p.partition, p.delete) for p in requests(cancelled, StopReplica)[3].partitions
    ] == [(0, True)]
    nothing = reassign(controller, None)
    assert isinstance(nothing.replies[0], AlterPartitionReassignmentsResponse)
    assert (
        nothing.replies[0].partitions[0].error_code
        == ErrorCode.no_reassignment_in_progress
    )


# --- controlled shutdown ------------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_and_reports_what_cannot_move() -> None:
    controller = started()
    controller.on_topic_change(
        {
            "t": assignment({0: [1, 2], 1: [2, 1], 2: [1]}),
            "u": assignment({0: [1, 3]}, uuid.UUID(int=8)),
        },
        NOW,
    )
    alter_u = AlterPartitionItem(uuid.UUID(int=8), 0, 0, (1,), 0)  # u-0's ISR is only 1
    controller.on_alter_partition(AlterPartitionRequest(1, 101, (alter_u,)), NOW)
    result = controller.on_controlled_shutdown(1, 101, NOW)

    assert isinstance(result.replies[0], ControlledShutdownResult)
    assert result.replies[0].remaining == (
        ("u", 0),
    )  # t-2 has one replica: not counted
    assert leadership(controller, "t", 0)[0].leader == 2
    assert leadership(controller, "t", 0)[0].isr == (2,)
    assert leadership(controller, "t", 1)[0].isr == (2,)  # the follower left the ISR
    stop = requests(result, StopReplica)[1]
    assert [(k, p.delete) for k, p in partition_states(stop).items()] == [
        (("t", 1), False)
    ]
    assert 1 not in {
        leader.broker_id for leader in requests(result, LeaderAndIsr)[2].live_leaders
    }
    stale = controller.on_controlled_shutdown(1, 7, NOW)
    assert isinstance(stale.replies[0], ControlledShutdownResult)
    assert stale.replies[0].error_code == ErrorCode.stale_broker_epoch


# --- deletion ---------------------------------------------------------------------------------


def test_deletion_stops_and_deletes_every_replica_then_removes_the_znodes() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    result = controller.on_topic_deletion(["t", "never-existed"], NOW)
    assert Delete("/admin/delete_topics/never-existed") in result.records
    stops = requests(result, StopReplica)
    assert sorted(stops) == [1, 2]
    assert all(p.delete for p in partition_states(stops[1]).values())
    update = requests(result, UpdateMetadata)[1]
    assert partition_states(update)[("t", 0)].leader == -2  # LeaderDuringDelete

    controller.on_stop_replica_response(1, {("t", 0): ErrorCode.none}, NOW)
    assert "t" in controller.context.topics  # broker 2 has not answered
    done = controller.on_stop_replica_response(2, {("t", 0): ErrorCode.none}, NOW)
    assert done.records == (
        Delete("/brokers/topics/t", recursive=True),
        Delete("/config/topics/t", must_exist=False),
        Delete("/admin/delete_topics/t"),
    )
    assert "t" not in controller.context.topics
    assert controller.rsm.state(("t", 0, 1)).value == "NonExistentReplica"


def test_deletion_waits_for_a_dead_broker_and_finishes_when_it_returns() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    controller.on_broker_change(brokers(1, 3), NOW)
    result = controller.on_topic_deletion(["t"], NOW)
    assert requests(result, StopReplica) == {}
    assert controller.rsm.state(("t", 0, 2)).value == "ReplicaDeletionIneligible"
    back = controller.on_broker_change(brokers(1, 2, 3), NOW)
    assert sorted(requests(back, StopReplica)) == [1, 2]
    controller.on_stop_replica_response(1, {("t", 0): ErrorCode.none}, NOW)
    failed = controller.on_stop_replica_response(
        2, {("t", 0): ErrorCode.kafka_storage_error}, NOW
    )
    assert sorted(requests(failed, StopReplica)) == [2]  # retried at once
    done = controller.on_stop_replica_response(2, {("t", 0): ErrorCode.none}, NOW)
    assert Delete("/brokers/topics/t", recursive=True) in done.records


# --- admin requests (they write znodes; the watches do the rest) ----------------------------


def test_create_topics_writes_the_assignment_and_the_watch_creates_the_partitions() -> (
    None
):
    controller = started()
    request = CreateTopicsRequest(
        (CreatableTopic("t", 3, 2, configs=(("retention.ms", "60000"),)),)
    )
    result = controller.on_create_topics(request, NOW)
    assert isinstance(result.replies[0], CreateTopicsResponse)
    assert result.replies[0].topics[0].error_code == ErrorCode.none
    config, write = result.records
    assert config == Create(
        "/config/topics/t", encode_topic_config({"retention.ms": "60000"}), parents=True
    )
    assert isinstance(write, Create)
    assert write.path == "/brokers/topics/t"
    written = TopicAssignment.decode("t", write.data)
    assert sorted(written.partitions) == [0, 1, 2]
    assert all(len(r) == 2 for r in written.partitions.values())
    assert controller.context.leadership == {}  # nothing happens before the watch fires
    again = controller.on_create_topics(
        request, NOW
    )  # before the watch: already exists
    assert isinstance(again.replies[0], CreateTopicsResponse)
    assert again.replies[0].topics[0].error_code == ErrorCode.topic_already_exists
    assert again.records == ()
    created = controller.on_topic_change({"t": written}, NOW)
    assert len([w for w in created.records if isinstance(w, Create)]) == 3
    assert controller.context.pending == {}


def test_create_topics_is_checked_as_in_kraft_mode() -> None:
    controller = started()
    result = controller.on_create_topics(
        CreateTopicsRequest(
            (CreatableTopic("bad name", 1, 1), CreatableTopic("t", 1, 4))
        ),
        NOW,
    )
    assert isinstance(result.replies[0], CreateTopicsResponse)
    errors = [t.error_code for t in result.replies[0].topics]
    assert errors == [
        ErrorCode.invalid_topic_exception,
        ErrorCode.invalid_replication_factor,
    ]
    assert result.records == ()


def test_delete_topics_lists_the_topic_for_the_deletion_manager() -> None:
    controller = started()
    controller.on_topic_change({"t": assignment({0: [1, 2]})}, NOW)
    result = controller.on_delete_topics(DeleteTopicsRequest(("t", "u")), NOW)
    assert result.records == (Create("/admin/delete_topics/t"),)
    assert isinstance(result.replies[0], DeleteTopicsResponse)
    assert [r.error_code for r in result.replies[0].topics] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
    ]
    assert controller.on_delete_topics(DeleteTopicsRequest(("t",)), NOW).records == ()


def test_producer_id_blocks_follow_each_other_under_a_conditional_write() -> None:
    controller = started()
    first = controller.on_allocate_producer_ids(AllocateProducerIdsRequest(1, 101), NOW)
    second = controller.on_allocate_producer_ids(
        AllocateProducerIdsRequest(2, 102), NOW
    )
    assert isinstance(first.replies[0], AllocateProducerIdsResponse)
    assert isinstance(second.replies[0], AllocateProducerIdsResponse)
    assert (
        first.replies[0].producer_id_start,
        second.replies[0].producer_id_start,
    ) == (
        0,
        1000,
    )
    assert isinstance(first.records[0], Create)
    assert isinstance(second.records[0], SetData)
    assert second.records[0].version == 0
    assert json.loads(second.records[0].data)["block_end"] == "1999"
    stale = controller.on_allocate_producer_ids(AllocateProducerIdsRequest(1, 5), NOW)
    assert isinstance(stale.replies[0], AllocateProducerIdsResponse)
    assert stale.replies[0].error_code != ErrorCode.none
    assert stale.records == ()


# --- taking over --------------------------------------------------------------------------------


def test_a_new_controller_loads_the_cluster_and_elects_where_leaders_are_gone() -> None:
    # written by the previous controller (epoch 2)
    state = LeaderIsrAndControllerEpoch(1, 4, (1, 2), 2)
    cluster = ZkCluster(
        brokers(2, 3),
        {"t": assignment({0: [1, 2], 1: [2, 3]})},
        {
            ("t", 0): (state, 6),
            ("t", 1): (LeaderIsrAndControllerEpoch(2, 0, (2, 3), 2), 0),
        },
        frozenset(),
    )
    controller, result = ZkController.become_active(0, EPOCH, cluster, NOW)
    # Broker 1 died while there was no controller: it leaves t-0's ISR (which leaves
    # t-0 leaderless), then t-0 elects 2, the one in-sync replica left.
    assert leadership(controller, "t", 0) == (
        LeaderIsrAndControllerEpoch(2, 6, (2,), EPOCH),
        8,
    )
    assert [w.version for w in result.records] == [6, 7]  # type: ignore[union-attr]
    update = requests(result, UpdateMetadata)
    assert sorted(update) == [2, 3]
    assert sorted(partition_states(update[3])) == [("t", 0), ("t", 1)]
    assert sorted(requests(result, LeaderAndIsr)) == [2, 3]


def test_an_illegal_transition_is_an_error() -> None:
    controller = started()
    with pytest.raises(
        IllegalStateTransitionError, match="NonExistentPartition -> OnlinePartition"
    ):
        controller._partitions_to([("t", 0)], PartitionState.ONLINE)


# --- the controller's version predictions, on an in-memory ZooKeeper -------------------------


@attrs.define
class MemoryZnodes:
    """Just enough of ZooKeeper to apply the controller's transactions and fail them as
    ZooKeeper would: a create over an existing znode, a write over a wrong version."""

    nodes: dict[str, tuple[bytes, int]] = attrs.Factory(dict)

    def apply(self, ops: Sequence[Op]) -> None:
        for op in ops:
            match op:
                case Create(path, data):
                    assert path not in self.nodes, f"create over existing {path}"
                    self.nodes[path] = (data, 0)
                case SetData(path, data, version):
                    if path.count("/") > 3:  # a state znode: must exist at that version
                        assert self.nodes[path][1] == version, (
                            f"{path} is not at v{version}"
                        )
                    old = self.nodes.get(path, (b"", -1))[1]
                    self.nodes[path] = (data, old + 1)
                case Delete(path, _, recursive):
                    for known in [
                        p for p in self.nodes if p == path or p.startswith(path + "/")
                    ]:
                        if recursive or known == path:
                            del self.nodes[known]
                case Check():
                    pass


events = st.lists(
    st.one_of(
        st.tuples(st.just("brokers"), st.sets(st.integers(1, 4))),
        st.tuples(st.just("topic"), st.integers(0, 2), st.integers(1, 3)),
        st.tuples(st.just("shrink"), st.integers(0, 2)),
        st.tuples(st.just("delete"), st.integers(0, 2)),
        st.tuples(st.just("stopped"), st.integers(1, 4)),
        st.tuples(
            st.just("reassign"),
            st.integers(0, 2),
            st.none()
            | st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True),
        ),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(events)
def test_every_write_names_the_version_zookeeper_has_and_leaders_stay_in_sync(
    script: list[tuple[Any, ...]],
) -> None:
    controller = started(live=[1, 2, 3])
    zk = MemoryZnodes()
    unanswered: list[BrokerRequest] = []

    def carry_out(result: ZkControllerResult) -> None:
        zk.apply(result.records)
        unanswered.extend(
            r for r in result.messages if isinstance(r.payload, StopReplica)
        )
        for tp, known in controller.context.leadership.items():
            path = f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"
            assert zk.nodes[path] == (known.state.encode(), known.version)
            state = known.state
            assert set(state.isr) <= set(controller.context.replicas(tp))
            assert state.isr
            if state.leader >= 0 and tp[0] not in controller.context.deleting:
                assert state.leader in state.isr
                assert state.leader in controller.context.brokers
                assert controller.psm.state(tp) is PartitionState.ONLINE
        # A deleted topic leaves no state znode behind.
        for path in zk.nodes:
            if path.endswith("/state"):
                _, _, _, topic, _, index, _ = path.split("/")
                assert (topic, int(index)) in controller.context.leadership

    for kind, *args in script:
        if kind == "brokers":
            carry_out(controller.on_broker_change(brokers(*args[0]), NOW))
        elif kind == "topic":
            name = f"t{args[0]}"
            if name not in controller.context.topics:
                replicas = {
                    p: [1 + (p + i) % 4 for i in range(args[1])] for p in range(2)
                }
                new = assignment(replicas, uuid.UUID(int=args[0] + 1))
                # What the watch reads back: ZooKeeper holds the controller's own writes.
                carry_out(
                    controller.on_topic_change(
                        {**controller.context.topics, name: new}, NOW
                    )
                )
        elif kind == "shrink":
            tp = (f"t{args[0]}", 0)
            current = controller.context.leadership.get(tp)
            if (
                current is None
                or current.state.leader < 0
                or tp[0] in controller.context.deleting
            ):
                continue
            leader = current.state.leader
            item = AlterPartitionItem(
                uuid.UUID(int=args[0] + 1),
                0,
                current.state.leader_epoch,
                (leader,),
                current.version,
            )
            epoch = controller.context.brokers[leader].epoch
            result = controller.on_alter_partition(
                AlterPartitionRequest(leader, epoch, (item,)), NOW
            )
            assert isinstance(result.replies[0], AlterPartitionResponse)
            assert result.replies[0].error_code == ErrorCode.none
            carry_out(result)
        elif kind == "reassign":
            target = None if args[1] is None else tuple(args[1])
            move = ReassignablePartition(f"t{args[0]}", 0, target)
            carry_out(
                controller.on_alter_partition_reassignments(
                    AlterPartitionReassignmentsRequest((move,)), NOW
                )
            )
        elif kind == "delete":
            carry_out(controller.on_topic_deletion([f"t{args[0]}"], NOW))
        else:  # every StopReplica sent so far is answered (by brokers still alive)
            answering, unanswered[:] = list(unanswered), []
            for request in answering:
                if request.broker_id in controller.context.brokers:
                    answers = dict.fromkeys(
                        partition_states(request.payload), ErrorCode.none
                    )
                    carry_out(
                        controller.on_stop_replica_response(
                            request.broker_id, answers, NOW
                        )
                    )
