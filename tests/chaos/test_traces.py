"""The trace checks find two leaders in one leader epoch, two active controllers in one
epoch and an acks=all acknowledgement with an empty ISR, in lines written by the real
event classes and encoder, and find nothing in a trace of a clean failover."""

from __future__ import annotations

import json

from chaos.history import Op
from chaos.traces import check_traces
from minikafka.controller import PartitionLeaderElected, ZkControllerElected
from minikafka.raft import ElectionState, RaftNode
from minikafka.raft._events import StateChanged
from minikafka.raft.simulation import Simulation, storm_scenario
from minikafka.replication import BecameLeader, HighWatermarkAdvanced, IsrChanged
from minikafka.trace import TraceEvent, encode_line
from minikafka.trace.testing import RecordingTracer


def line(event: TraceEvent, ts: float, node: int) -> dict[str, object]:
    record = json.loads(encode_line(event, ts, node))
    assert isinstance(record, dict)
    return record


def elected(
    ts: float,
    leader: int,
    epoch: int,
    isr: tuple[int, ...],
    reason: str,
    controller: int = 3001,
) -> dict[str, object]:
    """``controller``: the voter that chose (the quorum's second leader by default)."""
    previous = -1 if reason == "new_partition" else 1
    event = PartitionLeaderElected("t", 0, leader, previous, epoch, isr, reason)
    return line(event, ts, controller)


def leads(ts: float, node: int, epoch: int, isr: tuple[int, ...]) -> dict[str, object]:
    return line(BecameLeader("t", 0, epoch, epoch, (1, 2, 3), isr, 0), ts, node)


def raft_leader(ts: float, node: int, epoch: int) -> dict[str, object]:
    event = StateChanged(node, "Candidate", "Leader", epoch, node, "won", 0.1)
    return line(event, ts, node)


def clean_failover() -> list[dict[str, object]]:
    """Broker 1 leads epoch 0, is fenced; broker 2 leads epoch 1 with the ISR shrunk,
    then broker 1 rejoins the ISR; one Raft leader per epoch."""
    return [
        raft_leader(0.5, 3000, 1),
        elected(1.0, 1, 0, (1, 2, 3), "new_partition", controller=3000),
        leads(1.1, 1, 0, (1, 2, 3)),
        line(HighWatermarkAdvanced("t", 0, 0, 5, 0), 1.5, 1),
        raft_leader(1.8, 3001, 2),
        elected(2.0, 2, 1, (2, 3), "broker_fenced"),
        leads(2.1, 2, 1, (2, 3)),
        line(IsrChanged("t", 0, 1, 2, (2, 3), (1, 2, 3)), 3.0, 2),
        line(HighWatermarkAdvanced("t", 0, 5, 9, 1), 3.5, 2),
    ]


def send(index: int, complete: float, acks: int = -1) -> Op:
    return Op(
        index,
        0,
        "send",
        "ok",
        complete - 0.1,
        complete,
        topic="t",
        partition=0,
        value=index,
        offset=index,
        acks=acks,
    )


def test_a_clean_failover_shows_nothing() -> None:
    assert check_traces(clean_failover(), [send(0, 1.6), send(1, 3.6)]) == []


def test_two_brokers_leading_one_partition_at_one_epoch_are_found() -> None:
    records = [*clean_failover(), leads(2.2, 3, 1, (2, 3))]
    [anomaly] = check_traces(records)
    assert anomaly.kind == "two_leaders"
    assert "broker 2 and broker 3 became leaders at leader epoch 1" in anomaly.detail
    assert {(e.node, e.kind) for e in anomaly.events} == {
        (2, "replication.become_leader"),
        (3, "replication.become_leader"),
    }


def test_the_controller_electing_two_leaders_for_one_epoch_is_found() -> None:
    records = [*clean_failover(), elected(2.5, 3, 1, (3,), "unclean")]
    [anomaly] = check_traces(records)
    assert anomaly.kind == "two_leaders"
    assert "elected by the controller" in anomaly.detail


def test_a_deposed_controllers_choice_at_a_taken_epoch_is_not_an_anomaly() -> None:
    """The first quorum leader, paused through the second's election, wakes and fences
    broker 2 at epoch 1 before check-quorum resigns it: a choice never committed (Raft
    drops an old epoch's entries the new leader lacks), which no broker acts on."""
    records = [*clean_failover(), elected(2.5, 3, 1, (3,), "broker_fenced", 3000)]
    assert check_traces(records) == []


def test_a_recreated_topic_starts_its_leader_epochs_over() -> None:
    """Deleted and created again under its name, the partition's epoch 0 has a new
    leader: a new incarnation, not a second leader."""
    records = [
        *clean_failover(),
        elected(10.0, 3, 0, (3, 1, 2), "new_partition"),
        leads(10.1, 3, 0, (3, 1, 2)),
    ]
    assert check_traces(records) == []


def test_two_raft_leaders_in_one_epoch_are_two_active_controllers() -> None:
    records = [*clean_failover(), raft_leader(2.5, 3002, 2)]
    [anomaly] = check_traces(records)
    assert anomaly.kind == "two_controllers"
    assert anomaly.detail == (
        "node 3001 and node 3002 were the active controller at raft epoch 2"
    )


def test_two_brokers_winning_one_zookeeper_controller_epoch_are_found() -> None:
    records = [
        line(ZkControllerElected(1, 4, False), 1.0, 1),
        line(ZkControllerElected(1, 4, True), 2.0, 1),
        line(ZkControllerElected(2, 5, False), 2.1, 2),
    ]
    assert check_traces(records) == []
    [anomaly] = check_traces([*records, line(ZkControllerElected(3, 5, False), 2.2, 3)])
    assert anomaly.kind == "two_controllers"
    assert "controller epoch 5" in anomaly.detail


def test_a_high_watermark_moved_with_an_empty_isr_is_found() -> None:
    records = [
        *clean_failover(),
        line(IsrChanged("t", 0, 1, 3, (1, 2, 3), ()), 4.0, 2),
        line(HighWatermarkAdvanced("t", 0, 9, 12, 1), 4.5, 2),
    ]
    [anomaly] = check_traces(records)
    assert anomaly.kind == "empty_isr_ack"
    assert [e.kind for e in anomaly.events] == [
        "replication.isr_change",
        "replication.hw_advance",
    ]


def test_an_acks_all_send_acknowledged_while_the_isr_was_empty_is_found() -> None:
    records = [*clean_failover(), elected(4.0, -1, 2, (), "broker_fenced")]
    history = [send(0, 1.6), send(1, 4.5), send(2, 4.6, acks=1)]
    [anomaly] = check_traces(records, history)
    assert anomaly.kind == "empty_isr_ack"
    assert anomaly.ops == (1,)  # acks=1 promises nothing about the ISR


def test_an_isr_emptied_while_a_send_was_in_flight_proves_nothing() -> None:
    """The broker may have answered before the ISR emptied: the client only heard later."""
    records = [*clean_failover(), elected(4.0, -1, 2, (), "broker_fenced")]
    assert check_traces(records, [send(0, 4.05)]) == []


class ForgetsVotes(RaftNode):
    """Broken: grants a vote without writing it to quorum-state first, so a voter that
    crashes right after voting can vote again in the same epoch."""

    def _persist(self, state: ElectionState, why: str) -> None:
        if why != "grants a vote":
            super()._persist(state, why)


def simulated_trace(seed: int, factory: type[RaftNode]) -> list[dict[str, object]]:
    """The trace lines of a seeded crash storm of three voters in Raft's simulator,
    every life of every node, through the real encoder."""
    tracers: list[RecordingTracer] = []

    def tracer_for(node: int) -> RecordingTracer:
        tracers.append(RecordingTracer(node))
        return tracers[-1]

    Simulation(
        storm_scenario(seed, 3), seed, node_factory=factory, tracer_for=tracer_for
    ).run()
    return [line(e, ts, t.node) for t in tracers for ts, e in t.records]


STORM_SEED = 8
"""A storm in which ``ForgetsVotes`` elects two leaders in one epoch (the simulator's
own invariant says so too)."""


def test_a_raft_crash_storm_shows_one_active_controller_per_epoch() -> None:
    records = simulated_trace(STORM_SEED, RaftNode)
    epochs = {
        r["epoch"]
        for r in records
        if r["event"] == "state_change" and r["new"] == "Leader"
    }
    assert len(epochs) > 1  # the storm moved leadership: there was something to check
    assert check_traces(records) == []


def test_a_voter_that_forgets_its_vote_makes_two_active_controllers() -> None:
    [anomaly] = check_traces(simulated_trace(STORM_SEED, ForgetsVotes))
    assert anomaly.kind == "two_controllers"
    assert anomaly.detail.endswith("were the active controller at raft epoch 2")
