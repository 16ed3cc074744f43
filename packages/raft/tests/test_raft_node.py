"""RaftNode's rules one at a time, driven by hand: every message delivered in order, the
clock moved by the test. What the simulator checks at random, this checks by name."""

from __future__ import annotations

import pytest

from minikafka.raft import (
    TRANSITIONS,
    Committed,
    ElectionState,
    Entry,
    Envelope,
    Errors,
    MemoryLog,
    MemoryStateStore,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    RaftResult,
    RaftStateError,
    Snapshot,
    SnapshotId,
    State,
)
from minikafka.raft._leader import check_fetch_position
from minikafka.raft._messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DivergingEpoch,
    FetchRequest,
    FetchResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from minikafka.raft.testing import Wire

CONFIG = RaftConfig()


def committed(result: RaftResult) -> list[bytes]:
    """The data of the entries a call handed the state machine as committed."""
    return [
        e.data for r in result.replies if isinstance(r, Committed) for e in r.entries
    ]


def test_a_single_voter_elects_itself_and_commits_what_it_appends() -> None:
    wire = Wire(1)
    node = wire.nodes[1]
    assert node.state is State.LEADER
    assert node.epoch == 1
    output = node.append([b"a", b"b"], 0.0)
    # Offset 0 is the LeaderChange control entry; the state machine sees only data.
    assert committed(output) == [b"a", b"b"]
    assert node.high_watermark == 3


def test_three_voters_elect_one_leader_and_replicate_to_everyone() -> None:
    wire = Wire(3, observers=1)
    wire.run_until(3.0)
    leader = wire.leader()
    output = leader.append([b"x"], 3.0)
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
    output = leader.append(unit, 3.0)
    last = leader.log.end_offset - 1
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
    pre = VoteRequest(4, 2, 0, 0, pre_vote=True)  # a prospective of the same epoch
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
    output = leader.append([b"a"], 3.0)
    wire.take(leader.node_id, output)
    wire.run_until(3.5, start=3.0)
    # The leader is cut off and writes alone; the others elect a new leader.
    old = leader.node_id
    wire.cut = {old}
    for value in (b"lost1", b"lost2"):
        output = leader.append([value], 3.5)
    wire.run_until(12.0, start=3.5)
    new = [
        n for n in wire.nodes.values() if n.state is State.LEADER and n.node_id != old
    ]
    assert len(new) == 1
    assert new[0].epoch > leader.epoch
    output = new[0].append([b"b"], 12.0)
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
    leader.on_timer(5.0)  # Prospective
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
    assert committed(output) == [b"old"]


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


def test_a_leader_announces_itself_again_to_a_silent_voter_and_yields_to_its_epoch() -> (
    None
):
    """KIP-996: the leader sends BeginQuorumEpoch again, every half fetch timeout, to
    each voter that has not fetched for half a fetch timeout; a voter left at a higher
    epoch (a lost election of its own) answers with it, and the leader steps down to it,
    so a new election lets that voter back in."""
    node = RaftNode(1, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    elect(node, 5.0)
    for voter in (2, 3):  # both follow it: a fetch is as good as an answer
        fetch(node, voter, 1, 1, 5.0)
    half = CONFIG.fetch_timeout / 2
    # Voter 3 falls silent; voter 2 fetches all along (the quorum holds).
    again: dict[int, Envelope] = {}
    now = 5.0
    while not again and now < 5.0 + 4 * half:
        deadline = node.next_deadline()
        assert deadline is not None
        now = max(now + 0.01, deadline)
        fetch(node, 2, 1, 1, now)
        again = requests_to(node.on_timer(now), BeginQuorumEpochRequest)
    assert node.state is State.LEADER
    assert set(again) == {3}, "only the voter that has not fetched is asked again"
    assert 5.0 + half <= now <= 5.0 + 2 * half + 0.02
    fenced = BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, 2, None)
    answer(node, again[3], fenced, now)
    assert (state(node), node.epoch) == (State.UNATTACHED, 2)


def test_a_pre_vote_from_a_higher_epoch_moves_the_leader_up_to_it() -> None:
    """KIP-996 as Kafka's handleVoteRequest has it: a pre-vote names the prospective's
    own epoch, so one from a higher epoch comes from a voter really in it (stranded by
    an election it lost); whoever receives it, the leader too, moves to that epoch, and
    the next election takes the stranded voter back."""
    node = RaftNode(1, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    elect(node, 5.0)
    assert node.epoch == 1
    pre = VoteRequest(2, 3, 1, 1, pre_vote=True)
    answers = requests_to(node.receive(Envelope(3, 1, 7, pre), 5.1), VoteResponse)
    assert (state(node), node.epoch) == (State.UNATTACHED, 2)
    response = answers[3].message
    assert isinstance(response, VoteResponse)
    # It answers from the new epoch, and grants: its log is no longer than 3's.
    assert (response.leader_epoch, response.vote_granted) == (2, True)


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
    node.on_timer(5.0)
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


# -- each rule the Raft lab asks for, by name ------------------------------------------


def answer(node: RaftNode, request: Envelope, reply: Message, now: float) -> RaftResult:
    """Deliver ``reply`` to ``node`` as the answer to its ``request``."""
    back = Envelope(request.destination, request.source, request.correlation_id, reply)
    return node.receive(back, now)


def requests_to(output: RaftResult, kind: type) -> dict[int, Envelope]:
    return {e.destination: e for e in output.messages if isinstance(e.message, kind)}


def elect(node: RaftNode, now: float, voters: tuple[int, ...] = (2,)) -> None:
    """Make ``node`` the leader of the next epoch, ``voters`` granting both rounds."""
    asks = requests_to(node.on_timer(now), VoteRequest)
    for voter in voters:
        grant = VoteResponse(Errors.NONE, node.epoch, None, True, pre_vote=True)
        output = answer(node, asks[voter], grant, now)
    asks = requests_to(output, VoteRequest)
    for voter in voters:
        if node.state is State.CANDIDATE:
            answer(
                node,
                asks[voter],
                VoteResponse(Errors.NONE, node.epoch, None, True),
                now,
            )
    assert node.state is State.LEADER


def state(node: RaftNode) -> State:
    """The node's state now (a call, so a type checker does not narrow it for good)."""
    return node.state


def fetch(
    node: RaftNode, replica: int, offset: int, epoch: int, now: float
) -> RaftResult:
    request = FetchRequest(replica, node.epoch, offset, epoch)
    return node.receive(Envelope(replica, node.node_id, offset, request), now)


def test_a_candidate_leads_only_with_the_votes_of_a_majority() -> None:
    node = RaftNode(1, [1, 2, 3, 4, 5], MemoryLog(), MemoryStateStore(), 0.0)
    asks = requests_to(node.on_timer(5.0), VoteRequest)
    assert state(node) is State.PROSPECTIVE
    assert set(asks) == {2, 3, 4, 5}
    # The pre-vote names its current epoch; only a Candidate enters the next.
    assert {a.message for a in asks.values()} == {VoteRequest(0, 1, 0, 0, True)}
    pre = VoteResponse(Errors.NONE, 0, None, True, pre_vote=True)
    answer(node, asks[2], pre, 5.0)
    assert state(node) is State.PROSPECTIVE  # two of five
    output = answer(node, asks[3], pre, 5.0)
    assert state(node) is State.CANDIDATE  # three of five: the next epoch, its own vote
    assert (node.epoch, node.voted_id) == (1, 1)
    asks = requests_to(output, VoteRequest)
    assert {a.message for a in asks.values()} == {VoteRequest(1, 1, 0, 0)}
    grant = VoteResponse(Errors.NONE, 1, None, True)
    answer(node, asks[2], grant, 5.1)
    assert state(node) is State.CANDIDATE  # itself and 2: two of five
    answer(node, asks[4], VoteResponse(Errors.NONE, 1, None, False), 5.1)
    assert state(node) is State.CANDIDATE
    answer(node, asks[3], grant, 5.1)
    assert state(node) is State.LEADER
    # Its first act: an entry of its own epoch (LeaderChange), already on its disk.
    assert [(e.offset, e.epoch, e.control) for e in node.log.read(0, 9)] == [
        (0, 1, True)
    ]
    assert node.log.flushed_end_offset == 1


def test_figure_8_an_old_entry_on_a_majority_is_not_committed_by_counting() -> None:
    """The Raft paper's figure 8. Voter 1 led epoch 2 and wrote x at offset 1 that no one
    copied; voter 3 led epoch 3 and wrote y at offset 1. Voter 1 wins epoch 4 and copies
    x to voter 2: a majority holds x, but x is not committed, because voter 3 (last epoch
    3) can still win epoch 5 with voter 2's vote and replace it with y."""
    base = Entry(0, 1, b"a")
    logs = {1: [base, Entry(1, 2, b"x")], 2: [base], 3: [base, Entry(1, 3, b"y")]}
    memory = {}
    for voter, entries in logs.items():
        memory[voter] = MemoryLog()
        memory[voter].append(entries)
        memory[voter].flush()
    store = MemoryStateStore()
    store.write(ElectionState(3, None, None))
    config = RaftConfig(fetch_max_entries=1)
    leader = RaftNode(1, [1, 2, 3], memory[1], store, 0.0, config=config)
    elect(leader, 5.0)
    assert leader.epoch == 4
    assert leader.log.end_offset == 3  # a, x, and its LeaderChange entry at 2
    fetch(leader, 2, 1, 1, 5.1)  # voter 2 fetches x
    output = fetch(leader, 2, 2, 2, 5.2)  # voter 2 has x: a majority has offsets 0-1
    assert leader.high_watermark == 0
    assert committed(output) == []
    # Why it must not count: voter 2 (last epoch 2) would vote for voter 3 (last 3).
    voter2 = RaftNode(2, [1, 2, 3], memory[2], MemoryStateStore(), 0.0)
    memory[2].append([Entry(1, 2, b"x")])
    ask = VoteRequest(5, 3, last_offset_epoch=3, last_offset=2)
    (reply,) = voter2.receive(Envelope(3, 2, 1, ask), 9.0).messages
    assert isinstance(reply.message, VoteResponse)
    assert reply.message.vote_granted
    # Once voter 2 has the entry of epoch 4, x commits with it.
    output = fetch(leader, 2, 3, 4, 5.3)
    assert leader.high_watermark == 3
    assert committed(output) == [b"a", b"x"]


def test_observers_never_count_toward_the_high_watermark() -> None:
    leader = RaftNode(1, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    elect(leader, 5.0)
    for observer in (4, 5):
        fetch(leader, observer, 1, 1, 5.1)
    fetch(leader, 2, 0, 0, 5.1)  # a voter's fetch: the leader counts again
    assert leader.high_watermark == 0  # the leader and two observers have offset 0
    fetch(leader, 2, 1, 1, 5.2)
    assert leader.high_watermark == 1


def test_a_leader_refuses_a_fetch_of_another_epoch() -> None:
    leader = RaftNode(1, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    elect(leader, 5.0)
    for epoch, error in (
        (0, Errors.FENCED_LEADER_EPOCH),
        (2, Errors.UNKNOWN_LEADER_EPOCH),
    ):
        request = FetchRequest(2, epoch, 0, 0)
        (reply,) = leader.receive(Envelope(2, 1, 1, request), 5.1).messages
        assert isinstance(reply.message, FetchResponse)
        assert reply.message.error is error
        assert reply.message.records == ()
    follower = RaftNode(2, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    (reply,) = follower.receive(
        Envelope(3, 2, 1, FetchRequest(3, 0, 0, 0)), 0.1
    ).messages
    assert isinstance(reply.message, FetchResponse)
    assert reply.message.error is Errors.NOT_LEADER_OR_FOLLOWER


def test_the_leader_answers_where_a_fetchers_epoch_ends_in_its_log() -> None:
    log = MemoryLog()
    epochs = [1, 1, 2, 2, 4]
    log.append([Entry(i, e, b"") for i, e in enumerate(epochs)])
    for offset, last_epoch, expected in (
        (0, 0, None),  # an empty log agrees with any
        (2, 1, None),
        (5, 4, None),
        (4, 2, None),
        (3, 1, DivergingEpoch(1, 2)),  # epoch 1 ends at 2 here
        (4, 3, DivergingEpoch(2, 4)),  # no epoch 3 here: epoch 2 ends at 4
        (7, 4, DivergingEpoch(4, 5)),  # past the leader's end
    ):
        request = FetchRequest(2, 4, offset, last_epoch)
        assert check_fetch_position(log, request) == expected, (offset, last_epoch)
    log.flush()
    log.create_snapshot(Snapshot(SnapshotId(3, 2), b"state"))
    assert check_fetch_position(log, FetchRequest(2, 4, 1, 1)) == SnapshotId(3, 2)
    assert check_fetch_position(log, FetchRequest(2, 4, 3, 1)) == SnapshotId(3, 2)


def follower_of(
    leader: int, epochs: list[int], epoch: int
) -> tuple[RaftNode, Envelope]:
    """A follower of ``leader`` in ``epoch`` whose log holds entries of ``epochs``, and
    the fetch it sends first."""
    log = MemoryLog()
    log.append([Entry(i, e, b"%d" % i) for i, e in enumerate(epochs)])
    log.flush()
    store = MemoryStateStore()
    store.write(ElectionState(epoch, leader, None))
    node = RaftNode(2, [1, 2, 3], log, store, 0.0)
    (request,) = node.on_timer(0.0).messages
    return node, request


def test_a_follower_fetches_from_its_log_end_naming_its_last_epoch() -> None:
    node, request = follower_of(1, [1, 1, 3], 5)
    assert node.state is State.FOLLOWER
    assert request.destination == 1
    assert request.message == FetchRequest(2, 5, 3, 3)
    _, request = follower_of(1, [], 5)
    assert request.message == FetchRequest(2, 5, 0, 0)


def test_a_follower_takes_what_it_is_sent_and_the_high_watermark_up_to_its_log_end() -> (
    None
):
    node, request = follower_of(1, [1], 2)
    records = (Entry(1, 2, b"b"), Entry(2, 2, b"c"))
    output = answer(node, request, FetchResponse(Errors.NONE, 2, 1, 9, records), 0.1)
    assert node.log.end_offset == node.log.flushed_end_offset == 3
    assert node.high_watermark == 3  # not 9: it has only three entries
    assert committed(output) == [b"0", b"b", b"c"]
    (again,) = output.messages
    assert again.message == FetchRequest(2, 2, 3, 2)


def test_a_follower_truncates_to_where_its_epochs_agree_and_fetches_again() -> None:
    # Its log: epochs 1, 1, 3, 3; the leader's has no epoch 3 and says epoch 2 ends at
    # 5 in its log. This log's epoch 2 (the largest up to 2: epoch 1) ends at 2.
    node, request = follower_of(1, [1, 1, 3, 3], 5)
    assert request.message == FetchRequest(2, 5, 4, 3)
    diverging = FetchResponse(
        Errors.NONE, 5, 1, 0, diverging_epoch=DivergingEpoch(2, 5)
    )
    output = answer(node, request, diverging, 0.1)
    assert node.log.end_offset == 2
    (again,) = output.messages
    assert again.message == FetchRequest(2, 5, 2, 1)
    # The leader's end for the epoch is the smaller: truncate there.
    node, request = follower_of(1, [1, 1, 1, 1], 5)
    diverging = FetchResponse(
        Errors.NONE, 5, 1, 0, diverging_epoch=DivergingEpoch(1, 3)
    )
    answer(node, request, diverging, 0.1)
    assert node.log.end_offset == 3


def test_a_follower_refuses_to_truncate_below_its_high_watermark() -> None:
    node, request = follower_of(1, [1, 1, 1], 2)
    output = answer(node, request, FetchResponse(Errors.NONE, 2, 1, 3), 0.1)
    assert node.high_watermark == 3
    (request,) = output.messages
    wrong = FetchResponse(Errors.NONE, 2, 1, 3, diverging_epoch=DivergingEpoch(1, 1))
    with pytest.raises(RaftStateError, match="below its high watermark"):
        answer(node, request, wrong, 0.2)
    assert node.log.end_offset == 3


def test_a_pre_vote_round_that_runs_out_goes_back_to_the_leader_it_knows() -> None:
    """KIP-996 as Kafka's pollProspective has it: a voter that lost its leader asks for
    pre-votes, and when the round runs out while it still knows that leader, it follows
    it again and fetches. Chaos seed 174's controller 2, cut off and then reachable
    again, asked again and again instead; its leader, never fetched from, resigned."""
    node = RaftNode(1, [1, 2, 3], MemoryLog(), MemoryStateStore(), 0.0)
    node.receive(Envelope(2, 1, 0, BeginQuorumEpochRequest(1, 2)), 0.1)
    assert (state(node), node.leader_id) == (State.FOLLOWER, 2)
    lost = 0.1 + CONFIG.fetch_timeout
    node.on_timer(lost)
    assert (state(node), node.leader_id) == (State.PROSPECTIVE, 2)
    # No voter answers the pre-votes: the round (1 to 2 election timeouts) runs out.
    output = node.on_timer(lost + 2 * CONFIG.election_timeout)
    assert (state(node), node.epoch, node.leader_id) == (State.FOLLOWER, 1, 2)
    assert set(requests_to(output, FetchRequest)) == {2}
