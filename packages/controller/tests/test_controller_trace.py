"""The controller's trace events (ARCHITECTURE.md, "Traces and labs"): records applied, partition
leader elections with their causes, broker registrations, and the quorum's elections."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import cast

import attrs

from minikafka.controller import (
    NO_LEADER,
    AlterableConfig,
    AlterConfigOp,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationChanged,
    ConfigResourceType,
    ControllerConfig,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    IncrementalAlterConfigsRequest,
    PartitionLeaderElected,
    QuorumController,
    ReassignablePartition,
    RecordsApplied,
)
from minikafka.controller.testing import ControllerHarness, metadata_voter
from minikafka.trace import event_types
from minikafka.trace.testing import RecordingTracer


def cluster(
    n: int,
    config: ControllerConfig | None = None,
    tracer: RecordingTracer | None = None,
) -> ControllerHarness:
    h = ControllerHarness.start(config, tracer=tracer)
    h.add_brokers(range(1, n + 1))
    return h


def traced_cluster(n: int) -> tuple[ControllerHarness, RecordingTracer]:
    """A cluster whose controller emits to a tracer of its own, emptied once it is set up
    (the tests look at what comes after)."""
    tracer = RecordingTracer()
    return cluster(n, tracer=tracer), tracer


def created(
    h: ControllerHarness, name: str, *assignments: tuple[int, ...]
) -> uuid.UUID:
    result = h.create_topic(name, assignments=assignments)
    assert result.topic_id is not None
    return result.topic_id


def expire(h: ControllerHarness, *alive: int) -> None:
    """Heartbeat ``alive`` and let every other broker's session run out."""
    timeout = h.controller.config.broker_session_timeout_ms / 1000
    h.now += timeout / 2
    for broker in alive:
        h.heartbeat(broker)
    h.advance(timeout / 2 + 0.001)
    h.commit()


def test_the_events_are_registered_under_controller() -> None:
    types = event_types()
    assert types["controller", "records_applied"] is RecordsApplied
    assert types["controller", "election"] is PartitionLeaderElected
    assert types["controller", "broker_registration"] is BrokerRegistrationChanged


def test_bootstrap_and_brokers_joining() -> None:
    tracer = RecordingTracer()
    h = ControllerHarness.start(tracer=tracer)
    h.add_brokers([1, 2])
    epochs = h.broker_epochs
    assert tracer.of_type(BrokerRegistrationChanged) == [
        BrokerRegistrationChanged(1, epochs[1], True, "registered"),
        BrokerRegistrationChanged(1, epochs[1], False, "caught_up"),
        BrokerRegistrationChanged(2, epochs[2], True, "registered"),
        BrokerRegistrationChanged(2, epochs[2], False, "caught_up"),
    ]
    # One event per batch written, each at the offset its last record got.
    assert tracer.of_type(RecordsApplied) == [
        RecordsApplied(0, 1, 1, {"FeatureLevelRecord": 1}),
        RecordsApplied(1, 1, 1, {"RegisterBrokerRecord": 1}),
        RecordsApplied(2, 1, 1, {"UnfenceBrokerRecord": 1}),
        RecordsApplied(3, 1, 1, {"RegisterBrokerRecord": 1}),
        RecordsApplied(4, 1, 1, {"UnfenceBrokerRecord": 1}),
    ]
    assert (epochs[1], epochs[2]) == (1, 3)  # a broker's epoch is its record's offset


def test_new_partitions_are_elections_and_validate_only_is_none() -> None:
    h, tracer = traced_cluster(3)
    before = h.last_offset
    tracer.records.clear()
    h.create_topic("orders", assignments=((2, 3), (3, 1)))
    h.request(
        # no records
        CreateTopicsRequest((CreatableTopic("dry", 2, 1),), validate_only=True)
    )
    h.request(CreatePartitionsRequest((CreatePartitionsTopic("orders", 3, ((1, 2),)),)))
    assert tracer.of_type(PartitionLeaderElected) == [
        PartitionLeaderElected("orders", 0, 2, NO_LEADER, 0, (2, 3), "new_partition"),
        PartitionLeaderElected("orders", 1, 3, NO_LEADER, 0, (3, 1), "new_partition"),
        PartitionLeaderElected("orders", 2, 1, NO_LEADER, 0, (1, 2), "new_partition"),
    ]
    assert tracer.of_type(RecordsApplied) == [
        RecordsApplied(before + 3, 1, 3, {"TopicRecord": 1, "PartitionRecord": 2}),
        RecordsApplied(before + 4, 1, 1, {"PartitionRecord": 1}),
    ]


def test_a_session_timeout_fences_and_elects_and_the_last_isr_member_leads_again() -> (
    None
):
    h, tracer = traced_cluster(2)
    created(h, "t", (1, 2))
    tracer.records.clear()
    expire(h, 2)  # the leader's session ends: broker 2 takes over
    expire(h)  # and broker 2's: nobody may lead, the ISR keeps [2]
    h.heartbeat(1)  # out of sync: unfenced, but may not lead
    h.heartbeat(2)  # the last in-sync replica returns and leads
    assert [
        (e.broker_id, e.fenced, e.reason)
        for e in tracer.of_type(BrokerRegistrationChanged)
    ] == [
        (1, True, "session_timeout"),
        (2, True, "session_timeout"),
        (1, False, "caught_up"),
        (2, False, "caught_up"),
    ]
    assert tracer.of_type(PartitionLeaderElected) == [
        PartitionLeaderElected("t", 0, 2, 1, 1, (2,), "broker_fenced"),
        PartitionLeaderElected("t", 0, NO_LEADER, 2, 2, (2,), "broker_fenced"),
        PartitionLeaderElected("t", 0, 2, NO_LEADER, 3, (2,), "broker_unfenced"),
    ]


def test_want_shutdown_and_want_fence_are_their_own_reasons() -> None:
    h, tracer = traced_cluster(3)
    created(h, "t", (1, 2, 3))
    tracer.records.clear()
    for broker, shutdown in ((1, True), (2, False)):
        beat = BrokerHeartbeatRequest(
            broker,
            h.broker_epochs[broker],
            h.committed_offset,
            want_fence=not shutdown,
            want_shutdown=shutdown,
        )
        h.request(beat)
    assert [
        (e.broker_id, e.fenced, e.reason)
        for e in tracer.of_type(BrokerRegistrationChanged)
    ] == [(1, True, "controlled_shutdown"), (2, True, "fence_requested")]
    assert [
        (e.leader, e.previous_leader, e.isr, e.reason)
        for e in tracer.of_type(PartitionLeaderElected)
    ] == [
        (2, 1, (2, 3), "controlled_shutdown"),
        (3, 2, (3,), "broker_fenced"),
    ]


def test_an_out_of_sync_leader_is_an_unclean_election() -> None:
    h, tracer = traced_cluster(2)
    created(h, "t", (1, 2))
    h.request(
        IncrementalAlterConfigsRequest(
            ConfigResourceType.TOPIC,
            "t",
            (
                AlterableConfig(
                    "unclean.leader.election.enable", AlterConfigOp.SET, "true"
                ),
            ),
        )
    )
    expire(h, 1)  # broker 2 leaves the ISR; the leader stays
    tracer.records.clear()
    expire(h)  # broker 1, the only in-sync replica, goes: nobody may lead cleanly
    h.heartbeat(2)  # the out-of-sync replica returns and leads, unclean
    assert tracer.of_type(PartitionLeaderElected) == [
        PartitionLeaderElected("t", 0, NO_LEADER, 1, 1, (1,), "broker_fenced"),
        PartitionLeaderElected("t", 0, 2, NO_LEADER, 2, (2,), "unclean"),
    ]


def test_a_reassignment_that_moves_the_leader_is_traced_when_it_completes() -> None:
    h, tracer = traced_cluster(3)
    created(h, "r", (1, 2))
    tracer.records.clear()
    # The targets are in sync already: phases U, A and B in one record.
    h.request(
        AlterPartitionReassignmentsRequest((ReassignablePartition("r", 0, (2,)),))
    )
    assert tracer.of_type(PartitionLeaderElected) == [
        PartitionLeaderElected("r", 0, 2, 1, 1, (2,), "reassignment")
    ]


def test_a_standby_replaying_committed_records_traces_them_without_an_epoch() -> None:
    h = cluster(2)
    created(h, "t", (1, 2))
    tracer = RecordingTracer()
    standby = QuorumController(tracer=tracer)
    records = [record for _, record in h.committed_records()]
    standby.replay_committed(records, h.committed_offset, now=0.0)
    standby.replay_committed([], h.committed_offset, now=0.0)  # nothing: no event
    assert tracer.events == [
        RecordsApplied(
            h.committed_offset,
            -1,
            len(records),
            {
                "FeatureLevelRecord": 1,
                "RegisterBrokerRecord": 2,
                "UnfenceBrokerRecord": 2,
                "TopicRecord": 1,
                "PartitionRecord": 1,
            },
        )
    ]


def test_every_start_of_the_one_voter_quorum_is_an_election(tmp_path: Path) -> None:
    """The metadata quorum's elections are its Raft node's events: a lone voter becomes
    the leader at each start, in the next epoch, with nobody to ask."""
    tracer = RecordingTracer(node=3)
    for start in range(2):
        _, log = metadata_voter(tmp_path, node_id=3, now=float(start), tracer=tracer)
        log.close()
    state_change = event_types()["raft", "state_change"]  # the Raft node's event
    changes = [
        attrs.asdict(cast(attrs.AttrsInstance, e)) for e in tracer.of_type(state_change)
    ]
    elected = [(c["node_id"], c["epoch"]) for c in changes if c["new"] == "Leader"]
    assert elected == [(3, 1), (3, 2)]


def test_nothing_is_traced_when_tracing_is_off() -> None:
    tracer = RecordingTracer()
    tracer.close()  # a closed tracer is not enabled: emitting to it would raise
    h = cluster(2, tracer=tracer)
    created(h, "t", (1, 2))
    expire(h, 2)
    assert tracer.records == []
