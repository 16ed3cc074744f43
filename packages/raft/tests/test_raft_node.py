"""RaftNode's rules one at a time, driven by hand: every message delivered in order, the
clock moved by the test. What the simulator checks at random, this checks by name."""

from __future__ import annotations

import pytest

from minikafka.raft import (
    TRANSITIONS,
    ElectionState,
    Entry,
    Envelope,
    Errors,
    MemoryLog,
    MemoryStateStore,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    State,
)
from minikafka.raft._messages import (
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from minikafka.raft.testing import Wire

CONFIG = RaftConfig()


def test_a_single_voter_elects_itself_and_commits_what_it_appends() -> None:
    wire = Wire(1)
    node = wire.nodes[1]
    assert node.state is State.LEADER
    assert node.epoch == 1
    _, output = node.append([b"a", b"b"], 0.0)
    # Offset 0 is the LeaderChange control entry; the state machine sees only data.
    assert [e.data for e in output.committed] == [b"a", b"b"]
    assert node.high_watermark == 3


def test_three_voters_elect_one_leader_and_replicate_to_everyone() -> None:
    wire = Wire(3, observers=1)
    wire.run_until(3.0)
    leader = wire.leader()
    _, output = leader.append([b"x"], 3.0)
    wire.take(leader.node_id, output)
    wire.run_until(4.0, start=3.0)
    # Committed once a majority has it; every voter and the observer apply it.
    assert all(wire.committed[n] == [b"x"] for n in wire.nodes)
    assert wire.nodes[4].state is State.FOLLOWER
    assert wire.nodes[4].leader_id == leader.node_id
    assert all(n.epoch == leader.epoch for n in wire.nodes.values())


def test_entries_appended_together_are_fetched_and_committed_whole() -> None:
    """One append is one unit (a controller operation): a fetch never ends inside it,
    although it holds more entries than a fetch returns, so no follower's log, and no
    high watermark, ever stops in its middle."""
    wire = Wire(3)
    wire.run_until(3.0)
    leader = wire.leader()
    unit = [b"op-%d" % i for i in range(CONFIG.fetch_max_entries + 50)]
    start = leader.log.end_offset
    last, output = leader.append(unit, 3.0)
    assert last == start + len(unit) - 1
    assert [e.continued for e in leader.log.read(start, 1)] == [True] * (
        len(unit) - 1
    ) + [False]
    wire.take(leader.node_id, output)
    seen_hw = {leader.high_watermark}
    for step in range(1, 41):  # a second: the followers' held fetches bring them the HW
        wire.tick(3.0 + step * 0.025)
        seen_hw |= {n.high_watermark for n in wire.nodes.values()}
    assert all(hw <= start or hw == last + 1 for hw in seen_hw), sorted(seen_hw)
    assert all(wire.committed[n] == unit for n in wire.nodes)


def test_a_vote_is_written_down_before_it_is_answered_and_given_once_per_epoch() -> (
    None
):
    log, store = MemoryLog(), MemoryStateStore()
    voter = RaftNode(1, [1, 2, 3], log, store, 0.0)
    ask = VoteRequest(
        candidate_epoch=5, candidate_id=2, last_offset_epoch=0, last_offset=0
    )
    output = voter.receive(Envelope(2, 1, 7, ask), 0.0)
    (reply,) = output.messages
    assert isinstance(reply.message, VoteResponse)
    assert reply.message.vote_granted
    assert store.state == ElectionState(5, None, 2)  # durable before the answer left
    rival = VoteRequest(
        candidate_epoch=5, candidate_id=3, last_offset_epoch=0, last_offset=0
    )
    (reply,) = voter.receive(Envelope(3, 1, 8, rival), 0.0).messages
    assert isinstance(reply.message, VoteResponse)
    assert not reply.message.vote_granted
    assert reply.message.reason == "already voted for 2 in epoch 5"
    # After a crash, the vote is remembered.
    again = RaftNode(1, [1, 2, 3], log, store, 1.0)
    assert again.state is State.VOTED
    assert again.voted_id == 2
    (reply,) = again.receive(Envelope(3, 1, 9, rival), 1.0).messages
    assert isinstance(reply.message, VoteResponse)
    assert not reply.message.vote_granted


def test_a_voter_refuses_a_candidate_whose_log_is_behind_its_own() -> None:
    log = MemoryLog()
    log.append([Entry(0, 1, b""), Entry(1, 2, b"")])
    voter = RaftNode(1, [1, 2, 3], log, MemoryStateStore(), 0.0)
    for last_epoch, last_offset, granted in (
        (1, 9, False),
        (2, 1, False),
        (2, 2, True),
    ):
        ask = VoteRequest(3, 2, last_offset_epoch=last_epoch, last_offset=last_offset)
        (reply,) = voter.receive(Envelope(2, 1, last_offset, ask), 0.0).messages
        assert isinstance(reply.message, VoteResponse)
        assert reply.message.vote_granted is granted, (last_epoch, last_offset)


def test_a_pre_vote_changes_nothing_and_is_refused_while_the_leader_is_heard() -> None:
    store = MemoryStateStore()
    voter = RaftNode(1, [1, 2, 3], MemoryLog(), store, 0.0)
    voter.receive(
        Envelope(3, 1, 1, BeginQuorumEpochRequest(leader_epoch=4, leader_id=3)), 0.0
    )
    assert voter.state is State.FOLLOWER
    writes = store.writes
    pre = VoteRequest(5, 2, 0, 0, pre_vote=True)
    (reply,) = voter.receive(Envelope(2, 1, 2, pre), 1.0).messages
    assert isinstance(reply.message, VoteResponse)
    assert not reply.message.vote_granted
    assert reply.message.reason == "this voter still hears from leader 3"
    # Once the leader has been silent for a fetch timeout, the pre-vote is granted,
    # and still nothing moved: no epoch, no write.
    (reply,) = voter.receive(
        Envelope(2, 1, 3, pre), 0.0 + CONFIG.fetch_timeout
    ).messages
    assert isinstance(reply.message, VoteResponse)
    assert reply.message.vote_granted
    assert voter.epoch == 4
    assert store.writes == writes


def test_a_follower_truncates_what_its_new_leader_never_had() -> None:
    wire = Wire(3)
    wire.run_until(3.0)
    leader = wire.leader()
    _, output = leader.append([b"a"], 3.0)
    wire.take(leader.node_id, output)
    wire.run_until(3.5, start=3.0)
    # The leader is cut off and writes alone; the others elect a new leader.
    old = leader.node_id
    wire.cut = {old}
    for value in (b"lost1", b"lost2"):
        _, output = leader.append([value], 3.5)
    wire.run_until(12.0, start=3.5)
    new = [
        n for n in wire.nodes.values() if n.state is State.LEADER and n.node_id != old
    ]
    assert len(new) == 1
    assert new[0].epoch > leader.epoch
    _, output = new[0].append([b"b"], 12.0)
    wire.take(new[0].node_id, output)
    wire.cut = set()
    wire.run_until(16.0, start=12.0)
    # The old leader came back as a follower and dropped what it wrote alone.
    assert wire.nodes[old].state is State.FOLLOWER
    data = [e.data for e in wire.logs[old].read(0, 100) if not e.control]
    assert data == [b"a", b"b"]
    assert wire.committed[old] == [b"a", b"b"]


def test_the_high_watermark_waits_for_an_entry_of_the_leaders_own_epoch() -> None:
    # Voter 1 holds an entry of epoch 1 that voter 2 lacks; 1 becomes leader of epoch 2.
    log = MemoryLog()
    log.append([Entry(0, 1, b"old")])
    log.flush()
    store = MemoryStateStore()
    store.write(ElectionState(1, None, None))
    leader = RaftNode(
        1, [1, 2, 3], log, store, 0.0, config=RaftConfig(fetch_max_entries=1)
    )
    leader.handle_timer(5.0)  # Prospective
    for voter in (2, 3):
        pre = VoteResponse(Errors.NONE, 1, None, True, pre_vote=True)
        leader._requests.forget()
        leader._handle_response(voter, pre, 5.0)
    leader._requests.forget()
    leader._handle_response(2, VoteResponse(Errors.NONE, 2, None, True), 5.0)
    assert leader.state is State.LEADER
    assert leader.epoch == 2
    # Voter 2 fetches the old entry only (one entry a fetch): a majority has offset 1,
    # which covers only epoch 1's entry; the leader's epoch starts at 1. Not committed.
    fetch = FetchRequest(
        replica_id=2, current_leader_epoch=2, fetch_offset=0, last_fetched_epoch=0
    )
    leader.receive(Envelope(2, 1, 1, fetch), 5.1)
    fetch = FetchRequest(
        replica_id=2, current_leader_epoch=2, fetch_offset=1, last_fetched_epoch=1
    )
    output = leader.receive(Envelope(2, 1, 2, fetch), 5.2)
    assert leader.high_watermark == 0
    (reply,) = output.messages
    assert isinstance(reply.message, FetchResponse)
    assert reply.message.high_watermark == 0
    # Once voter 2 has the LeaderChange entry of epoch 2, both entries commit together.
    fetch = FetchRequest(
        replica_id=2, current_leader_epoch=2, fetch_offset=2, last_fetched_epoch=2
    )
    output = leader.receive(Envelope(2, 1, 3, fetch), 5.3)
    assert leader.high_watermark == 2
    assert [e.data for e in output.committed] == [b"old"]


def test_a_leader_no_majority_fetches_from_resigns_within_one_and_a_half_fetch_timeouts() -> (
    None
):
    wire = Wire(3)
    wire.run_until(3.0)
    leader = wire.leader()
    wire.cut = {n for n in wire.nodes if n != leader.node_id}
    wire.run_until(3.0 + 1.5 * CONFIG.fetch_timeout + 0.1, start=3.0)
    assert leader.state is State.RESIGNED
    with pytest.raises(NotLeaderError):
        leader.append([b"late"], 7.0)


def test_a_graceful_resignation_hands_over_to_the_most_complete_follower_first() -> (
    None
):
    wire = Wire(3)
    wire.run_until(3.0)
    leader = wire.leader()
    epoch = leader.epoch
    wire.take(leader.node_id, leader.resign(3.0))
    assert leader.state is State.RESIGNED
    wire.settle(3.0)
    # The first preferred successor stands after a few milliseconds, not a timeout.
    wire.run_until(3.05, step=0.01, start=3.0)
    new = wire.leader()
    assert new.node_id != leader.node_id
    assert new.epoch == epoch + 1


def test_every_state_change_of_a_run_is_in_the_table() -> None:
    from minikafka.raft._events import StateChanged
    from minikafka.trace.testing import RecordingTracer

    tracer = RecordingTracer()
    log, store = MemoryLog(), MemoryStateStore()
    node = RaftNode(1, [1, 2, 3], log, store, 0.0, tracer=tracer)
    node.handle_timer(5.0)
    node.receive(Envelope(2, 1, 1, VoteRequest(3, 2, 0, 0)), 5.1)
    node.receive(Envelope(2, 1, 2, BeginQuorumEpochRequest(3, 2)), 5.2)
    moves = [(e.old, e.new) for e in tracer.events if isinstance(e, StateChanged)]
    assert moves == [
        ("Unattached", "Prospective"),
        ("Prospective", "Unattached"),
        ("Unattached", "Voted"),
        ("Voted", "Follower"),
    ]
    table = {(a.value, b.value) for a, b in TRANSITIONS}
    assert set(moves) <= table


def test_an_observer_never_votes_and_finds_the_leader_by_asking_any_voter() -> None:
    wire = Wire(3, observers=1)
    wire.run_until(4.0)
    observer = wire.nodes[4]
    assert observer.state is State.FOLLOWER
    assert not observer.is_voter
    (reply,) = observer.receive(
        Envelope(2, 4, 1, VoteRequest(9, 2, 5, 5)), 4.0
    ).messages
    assert isinstance(reply.message, VoteResponse)
    assert not reply.message.vote_granted


def test_a_snapshot_must_cover_applied_entries_and_not_go_back() -> None:
    wire = Wire(1)
    node = wire.nodes[1]
    node.append([b"a", b"b", b"c"], 0.0)
    assert node.applied_offset == 4
    with pytest.raises(ValueError, match="past what was applied"):
        node.create_snapshot(5, b"")
    assert node.create_snapshot(3, b"state").end_offset == 3
    with pytest.raises(ValueError, match="below the log start"):
        node.create_snapshot(1, b"older")
