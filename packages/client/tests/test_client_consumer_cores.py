"""The consumer's cores without a network: the Fetcher's reading of record sets and
errors, and the coordinator's side of eager and cooperative rebalances, in virtual time."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from minikafka.client import (
    ClientMetadata,
    ConsumerConfig,
    ConsumerCoordinator,
    FetchedPartition,
    Fetcher,
    FetchPlan,
    ListOffsetsPlan,
    MemberState,
    OffsetsForLeaderEpochPlan,
    SubscriptionState,
    TopicInfo,
)
from minikafka.client._fetcher import records_from
from minikafka.common import TopicPartition
from minikafka.coordination import Assignment, decode_subscription, encode_assignment
from minikafka.coordination.member import (
    FindCoordinator,
    Heartbeat,
    JoinGroup,
    JoinMember,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)
from minikafka.log import (
    CorruptRecordError,
    EndTxnMarker,
    Record,
    build_batch,
    end_txn_marker_batch,
    make_records,
)
from minikafka.net import Node

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def batch(first: int, count: int, *, control: bool = False) -> bytes:
    records = make_records(
        [(None, f"v{first + i}".encode()) for i in range(count)],
        first_offset=first,
        timestamp_ms=0,
    )
    return build_batch(records, is_control=control)


def values(records: list[Record]) -> list[bytes | None]:
    return [r.value for r in records]


def offsets(runs: list[tuple[TopicPartition, list[Record]]]) -> list[int]:
    return [r.offset for _, run in runs for r in run]


def test_a_record_set_is_read_from_the_position_and_a_cut_batch_waits() -> None:
    data = batch(0, 3) + batch(3, 3) + batch(6, 2)[:-5]  # the last one cut off
    records, _, after = records_from(data, 4, None, verify_crc=True)
    assert values(records) == [b"v4", b"v5"]  # 3 is before the position
    assert after == 6  # the cut-off batch is fetched again from its start


def test_control_batches_move_the_position_and_read_committed_stops_at_the_lso() -> (
    None
):
    data = batch(0, 2) + batch(2, 1, control=True) + batch(3, 2)
    records, _, after = records_from(data, 0, None, verify_crc=True)
    assert values(records) == [b"v0", b"v1", b"v3", b"v4"]
    assert after == 5
    records, _, after = records_from(data, 0, 3, verify_crc=True)
    assert values(records) == [b"v0", b"v1"]
    assert after == 3


def fetcher(**config: object) -> Fetcher:
    c = ConsumerConfig.from_dict({"bootstrap.servers": "h:1", **config})
    metadata = ClientMetadata((Node(-1, "h", 1),))
    metadata.nodes = {1: Node(1, "h", 1), 2: Node(2, "h", 2)}
    metadata.topics["t"] = TopicInfo(0, (1, 2))
    subscriptions = SubscriptionState(c.auto_offset_reset)
    subscriptions.assign_manually([TP0, TP1])
    return Fetcher(c, subscriptions, metadata)


def fetches(f: Fetcher) -> list[FetchPlan]:
    """The Fetch requests of ``prepare()``'s result (its messages)."""
    plans = f.prepare().messages
    assert all(isinstance(p, FetchPlan) for p in plans)
    return [p for p in plans if isinstance(p, FetchPlan)]


def test_one_fetch_per_leader_reading_ahead_one_fetch_per_partition() -> None:
    f = fetcher(**{"max.poll.records": 2})
    f.subscriptions.seek(TP0, 0)
    f.subscriptions.seek(TP1, 0)
    plans = fetches(f)
    assert [(p.node, [tp for tp, *_ in p.partitions]) for p in plans] == [
        (1, [TP0]),
        (2, [TP1]),
    ]
    assert fetches(f) == []  # both leaders have a fetch in flight
    f.on_response(plans[0], {TP0: FetchedPartition(ErrorCode.none, 9, 9, batch(0, 3))})
    # TP0's records wait to be handed out, and the next ones are fetched meanwhile,
    # from where these end.
    [ahead] = fetches(f)
    assert ahead.partitions == ((TP0, 3, 1_048_576),)
    f.on_response(ahead, {TP0: FetchedPartition(ErrorCode.none, 9, 9, batch(3, 2))})
    assert fetches(f) == []  # two fetches' worth waits: no further read ahead
    assert offsets(f.take(2)) == [0, 1]
    assert f.subscriptions.position(TP0) == 2
    assert offsets(f.take(5)) == [2, 3, 4]
    assert f.subscriptions.position(TP0) == 5
    [again] = fetches(f)
    assert again.partitions == ((TP0, 5, 1_048_576),)


def test_a_seek_drops_what_was_read_ahead() -> None:
    f = fetcher()
    f.subscriptions.seek(TP0, 0)
    [plan] = [p for p in fetches(f) if p.node == 1]
    f.subscriptions.seek(TP0, 100)  # while the fetch from 0 is out
    f.on_response(plan, {TP0: FetchedPartition(ErrorCode.none, 9, 9, batch(0, 3))})
    assert f.take(10) == []
    [plan] = [p for p in fetches(f) if p.node == 1]
    assert plan.partitions[0][1] == 100


def test_out_of_range_resets_by_auto_offset_reset_or_is_reported() -> None:
    f = fetcher(**{"auto.offset.reset": "earliest"})
    f.subscriptions.seek(TP0, 50)
    [plan] = [p for p in fetches(f) if p.node == 1]
    f.on_response(plan, {TP0: FetchedPartition(ErrorCode.offset_out_of_range)})
    # ListOffsets for the earliest offset
    assert f.prepare_resets().messages == (ListOffsetsPlan(1, ((TP0, -2),)),)
    f.on_reset(1, {TP0: (ErrorCode.none, 7)})
    assert f.subscriptions.position(TP0) == 7
    strict = fetcher(**{"auto.offset.reset": "none"})
    strict.subscriptions.seek(TP0, 50)
    [plan] = [p for p in fetches(strict) if p.node == 1]
    answered = strict.on_response(
        plan, {TP0: FetchedPartition(ErrorCode.offset_out_of_range)}
    )
    assert [e.name() for e in answered.replies] == ["OFFSET_OUT_OF_RANGE"]


def test_a_moved_leader_refreshes_the_metadata() -> None:
    f = fetcher()
    f.subscriptions.seek(TP0, 0)
    f.metadata.update_due(0.0)
    f.metadata._needs_update = False
    [plan] = [p for p in fetches(f) if p.node == 1]
    answered = f.on_response(
        plan, {TP0: FetchedPartition(ErrorCode.not_leader_or_follower)}
    )
    assert f.metadata.update_due(0.0)
    assert answered.replies == ()


# --- the coordinator ---------------------------------------------------------------


def coordinator(strategy: str) -> ConsumerCoordinator:
    config = ConsumerConfig.from_dict(
        {
            "bootstrap.servers": "h:1",
            "group.id": "g",
            "partition.assignment.strategy": strategy,
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 1_000,
        }
    )
    metadata = ClientMetadata((Node(-1, "h", 1),))
    metadata.nodes = {1: Node(1, "h", 1)}
    metadata.topics["t"] = TopicInfo(0, (1, 1, 1, 1))
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["t"])
    c = ConsumerCoordinator(config, subscriptions, metadata, "g")
    [find] = c.on_timer(0.0).messages
    assert isinstance(find, FindCoordinator)
    c.on_find_coordinator(ErrorCode.none, 1, 0.0)
    return c


def join_as_leader(
    c: ConsumerCoordinator, now: float, other: bytes | None = None
) -> JoinGroup:
    [join] = [r for r in c.on_timer(now).messages if isinstance(r, JoinGroup)]
    members = [
        JoinMember(
            "me", None, dict(join.protocols)[c.config.partition_assignment_strategy[0]]
        )
    ]
    if other is not None:
        members.append(JoinMember("zz-other", None, other))
    [sync] = c.on_join(
        ErrorCode.none,
        c.generation_id + 1,
        join.protocols[0][0],
        "me",
        "me",
        members,
        now,
    ).messages
    assert isinstance(sync, SyncGroup)
    mine = dict(sync.assignments)["me"]
    c.on_sync(ErrorCode.none, mine, now)
    return join


def test_kip_394_a_new_member_joins_again_with_the_id_it_was_given() -> None:
    c = coordinator("range")
    [join] = c.on_timer(0.0).messages
    assert isinstance(join, JoinGroup)
    assert join.member_id == ""
    assert not c.on_join(ErrorCode.member_id_required, -1, None, "", "m-1", [], 0.0)
    [again] = c.on_timer(0.0).messages
    assert isinstance(again, JoinGroup)
    assert again.member_id == "m-1"


def test_eager_revokes_everything_before_joining_and_waits_for_the_callback() -> None:
    c = coordinator("range")
    join_as_leader(c, 0.0)
    assert [e.kind for e in c.events] == ["assign"]
    assert len(c.subscriptions.assignment) == 4
    c.events.clear()
    c.events_done()
    # The heartbeat is due after heartbeat.interval.ms, and says: rebalance.
    assert c.on_timer(0.5).messages == (
        OffsetFetch("g", (TP0, TP1, TopicPartition("t", 2), TopicPartition("t", 3))),
    )
    [heartbeat] = c.on_timer(1.0).messages
    assert isinstance(heartbeat, Heartbeat)
    c.on_heartbeat(ErrorCode.rebalance_in_progress, 1.0)
    assert (
        c.on_timer(1.0).messages == ()
    )  # on_revoke must run first, with the partitions still held
    assert [(e.kind, len(e.partitions)) for e in c.events] == [("revoke", 4)]
    assert c.state is MemberState.PREPARING
    assert len(c.subscriptions.assignment) == 4
    c.events.clear()
    c.events_done()
    assert c.subscriptions.assignment == {}
    [join] = c.on_timer(1.0).messages
    assert isinstance(join, JoinGroup)
    assert decode_subscription(dict(join.protocols)["range"]).owned_partitions == ()


def test_cooperative_keeps_partitions_while_rejoining_and_revokes_only_what_moves() -> (
    None
):
    c = coordinator("cooperative-sticky")
    join_as_leader(c, 0.0)
    c.events.clear()
    c.events_done()
    c.request_rejoin()
    [join] = [
        r for r in c.on_timer(2.0).messages if isinstance(r, JoinGroup)
    ]  # no revocation first
    owned = decode_subscription(
        dict(join.protocols)["cooperative-sticky"]
    ).owned_partitions
    assert len(owned) == 4
    # The new plan (as a leader elsewhere computed it) takes two partitions away.
    c.on_join(ErrorCode.none, 2, "cooperative-sticky", "other", "me", [], 2.0)
    c.on_sync(ErrorCode.none, encode_assignment(Assignment([TP0, TP1])), 2.0)
    assert [(e.kind, e.partitions) for e in c.events] == [
        ("revoke", (TopicPartition("t", 2), TopicPartition("t", 3))),
        ("assign", ()),
    ]
    # the revoked partitions are handed out by a second rebalance
    assert c.rejoin_needed
    c.events.clear()
    c.events_done()
    assert set(c.subscriptions.assignment) == {TP0, TP1}


def test_an_unknown_member_loses_its_partitions_and_commits_carry_the_generation() -> (
    None
):
    c = coordinator("range")
    join_as_leader(c, 0.0)
    c.events.clear()
    c.events_done()
    commit = c.commit({TP0: 10}, 0.1)
    assert isinstance(commit, OffsetCommit)
    assert (commit.generation_id, commit.member_id) == (0, "me")
    c.on_heartbeat(ErrorCode.none, 0.2)
    c.on_timer(1.0)
    c.on_heartbeat(ErrorCode.unknown_member_id, 1.0)
    assert [(e.kind, len(e.partitions)) for e in c.events] == [("lost", 4)]
    assert c.subscriptions.assignment == {}
    assert (c.member_id, c.generation_id) == ("", -1)


def test_a_commit_while_the_member_rejoins_fails_with_rebalance_in_progress() -> None:
    # Kafka's ConsumerCoordinator.sendOffsetCommitRequest: a commit while a JoinGroup is
    # in flight is failed at once, not sent behind the JoinGroup on the coordinator's
    # connection, where its request.timeout.ms would close the connection (and fail
    # the JoinGroup, which may wait the whole rebalance timeout) before the answer.
    c = coordinator("cooperative-sticky")
    join_as_leader(c, 0.0)
    c.events.clear()
    c.events_done()
    c.request_rejoin()
    assert any(isinstance(r, JoinGroup) for r in c.on_timer(2.0).messages)
    assert c.state is MemberState.JOINING
    commit = c.commit({TP0: 10}, 2.1)
    assert commit is not None
    assert not any(isinstance(r, OffsetCommit) for r in c.on_timer(2.2).messages)
    assert c.commit_results == {commit.commit_id: ErrorCode.rebalance_in_progress}
    assert c.rejoin_needed is False  # the rebalance under way is the only one
    # Once the member is stable again, its commits go out.
    c.on_join(ErrorCode.none, 2, "cooperative-sticky", "other", "me", [], 3.0)
    c.on_sync(ErrorCode.none, encode_assignment(Assignment([TP0])), 3.0)
    again = c.commit({TP0: 10}, 3.1)
    assert again in c.on_timer(3.2).messages


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_the_leader_assigns_with_the_chosen_assignor(strategy: str) -> None:
    c = coordinator(strategy)
    [join] = [r for r in c.on_timer(0.0).messages if isinstance(r, JoinGroup)]
    mine = dict(join.protocols)[strategy]
    [sync] = c.on_join(
        ErrorCode.none,
        1,
        strategy,
        "me",
        "me",
        [JoinMember("me", None, mine), JoinMember("you", None, mine)],
        0.0,
    ).messages
    assert isinstance(sync, SyncGroup)
    assert sorted(member for member, _ in sync.assignments) == ["me", "you"]


def test_a_member_whose_application_stops_polling_leaves_and_comes_back() -> None:
    """max.poll.interval.ms: a member whose application has not polled for that long
    leaves the group (its partitions lost), and joins again at the next poll."""
    c = coordinator("range")
    c.app_polled(0.0)
    join_as_leader(c, 0.0)
    c.events.clear()
    c.events_done()
    interval = c.config.max_poll_interval_ms / 1000
    c.on_heartbeat(ErrorCode.none, 0.0)
    assert not any(isinstance(r, LeaveGroup) for r in c.on_timer(interval - 1).messages)
    c.on_heartbeat(ErrorCode.none, interval - 1)
    [leave] = c.on_timer(interval + 1).messages
    assert isinstance(leave, LeaveGroup)
    assert leave.member_id == "me"
    assert [(e.kind, len(e.partitions)) for e in c.events] == [("lost", 4)]
    c.events.clear()
    c.events_done()
    assert (
        c.on_timer(interval + 2).messages == ()
    )  # no rejoin while the application is away
    c.app_polled(interval + 3)
    assert any(isinstance(r, JoinGroup) for r in c.on_timer(interval + 3).messages)


def epoch_batch(first: int, count: int, epoch: int) -> bytes:
    records = make_records(
        [(None, f"v{first + i}".encode()) for i in range(count)],
        first_offset=first,
        timestamp_ms=0,
    )
    return build_batch(records, partition_leader_epoch=epoch)


@pytest.mark.parametrize(
    ("end_offset", "position_after"),
    [(10, 6), (4, 4)],  # the new leader has all of epoch 3, or lost offsets 4 and 5
)
def test_kip_320_a_position_is_checked_against_a_new_leader(
    end_offset: int, position_after: int
) -> None:
    f = fetcher(**{"auto.offset.reset": "earliest"})
    f.metadata.topics["t"] = TopicInfo(0, (1, 2), (3, 3))
    f.subscriptions.seek(TP0, 0)
    [plan] = fetches(f)
    assert plan.leader_epochs == (3,)  # sent, so a stale leader can refuse the fetch
    f.on_response(
        plan, {TP0: FetchedPartition(ErrorCode.none, 6, 6, epoch_batch(0, 6, 3))}
    )
    assert offsets(f.take(10)) == [0, 1, 2, 3, 4, 5]
    # The leader moves (epoch 4): no fetch until the position is validated.
    f.metadata.topics["t"] = TopicInfo(0, (2, 2), (4, 3))
    assert f.prepare_validations().messages == (
        OffsetsForLeaderEpochPlan(2, ((TP0, 4, 3),)),
    )
    assert all(tp != TP0 for p in fetches(f) for tp, *_ in p.partitions)
    f.on_validation(2, {TP0: (ErrorCode.none, 3, end_offset)})
    assert f.subscriptions.position(TP0) == position_after
    plans = [p for p in fetches(f) if p.node == 2 and p.partitions[0][0] == TP0]
    assert [p.partitions[0][1] for p in plans] == [position_after]


def test_kip_320_truncation_without_a_reset_policy_is_reported() -> None:
    f = fetcher(**{"auto.offset.reset": "none"})
    f.metadata.topics["t"] = TopicInfo(0, (1, 2), (3, 3))
    f.subscriptions.seek(TP0, 0)
    [plan] = fetches(f)
    f.on_response(
        plan, {TP0: FetchedPartition(ErrorCode.none, 6, 6, epoch_batch(0, 6, 3))}
    )
    f.take(10)
    f.metadata.topics["t"] = TopicInfo(0, (2, 2), (4, 3))
    f.prepare_validations()
    checked = f.on_validation(2, {TP0: (ErrorCode.none, 3, 2)})
    assert [e.name() for e in checked.replies] == ["OFFSET_OUT_OF_RANGE"]
    assert f.subscriptions.position(TP0) == 6  # left for the application to decide


def test_records_from_skips_before_the_position_and_stops_at_a_cut_batch() -> None:
    """A fetched record set: records before the position are skipped, a control batch
    moves the position on, a batch cut off at the end is fetched again, a corrupt one is
    refused."""
    first = build_batch(make_records([(None, b"a"), (b"k", b"b")], timestamp_ms=1))
    control = build_batch([Record(2, 1, None, b"\x00\x00\x00\x00")], is_control=True)
    third = build_batch(make_records([(None, b"c")], first_offset=3, timestamp_ms=1))
    fourth = build_batch(make_records([(None, b"d")], first_offset=4, timestamp_ms=1))
    data = first + control + third + fourth[:-5]
    records, _, position = records_from(data, 1, None, verify_crc=True)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (1, b"k", b"b"),
        (3, None, b"c"),
    ]
    assert position == 4  # the cut-off batch at offset 4 is fetched again
    assert records_from(b"", 7, None, verify_crc=True)[::2] == ([], 7)
    assert records_from(data[:10], 0, None, verify_crc=True)[::2] == ([], 0)
    corrupt = bytearray(first)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        records_from(bytes(corrupt), 0, None, verify_crc=True)


# --- read_committed: aborted transactions (KIP-98) -----------------------------------


def _txn_batch(pid: int, offsets: range, *, transactional: bool = True) -> bytes:
    records = [Record(o, 0, None, b"%d" % o) for o in offsets]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=offsets[0] if pid >= 0 else -1,
        is_transactional=transactional,
    )


def _marker(pid: int, offset: int, commit: bool) -> bytes:
    return end_txn_marker_batch(
        EndTxnMarker(commit, 0),
        producer_id=pid,
        producer_epoch=0,
        timestamp=0,
        base_offset=offset,
    )


# pid 1's first transaction aborted, pid 2's committed, pid 1's second committed,
# then a record outside any transaction
TXN_LOG = b"".join(
    [
        _txn_batch(1, range(2)),
        _txn_batch(2, range(2, 4)),
        _marker(1, 4, commit=False),
        _marker(2, 5, commit=True),
        _txn_batch(1, range(6, 8)),
        _marker(1, 8, commit=True),
        _txn_batch(-1, range(9, 10), transactional=False),
    ]
)


def _offsets(records: list[Record]) -> list[int]:
    return [r.offset for r in records]


def test_read_committed_skips_aborted_transactions_until_their_marker() -> None:
    records, _, after = records_from(TXN_LOG, 0, 10, True, [(1, 0)])
    assert _offsets(records) == [2, 3, 6, 7, 9]
    assert after == 10
    # read_uncommitted: everything but the markers
    records, _, after = records_from(TXN_LOG, 0, None, True, [(1, 0)])
    assert _offsets(records) == [0, 1, 2, 3, 6, 7, 9]


def test_an_aborted_transaction_starts_at_its_first_offset() -> None:
    # pid 1's *second* transaction is the aborted one: its first stays readable
    records, _, _ = records_from(TXN_LOG, 0, 10, True, [(1, 6)])
    assert _offsets(records) == [0, 1, 2, 3, 9]
    # the order the broker lists them in does not matter
    records, _, _ = records_from(TXN_LOG, 0, 10, True, [(1, 6), (2, 2)])
    assert _offsets(records) == [0, 1, 9]


def test_an_aborted_transaction_before_the_position_still_counts() -> None:
    records, _, after = records_from(TXN_LOG, 1, 10, True, [(1, 0)])
    assert _offsets(records) == [2, 3, 6, 7, 9]
    assert after == 10
    # the last stable offset still stops read_committed
    records, _, after = records_from(TXN_LOG, 0, 6, True, [(1, 0)])
    assert (_offsets(records), after) == ([2, 3], 6)
