"""Committed offsets follow the log's consistency model (Kafka's CoordinatorRuntime).

A write's records are replayed into its ``__consumer_offsets`` partition's timeline as
the write is made, so the next request is decided on them; OffsetFetch reads as of the
last committed write, so a client never sees an offset the log could still lose; a
failed write reverts the partition to before it; loading a partition replays its records
the same way and commits them. Each test drives the core by hand: a write is reported
committed or failed only when the test says so.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    CoordinatorWrite,
    GroupConfig,
    GroupCoordinator,
    OffsetCommitRequest,
    OffsetCommitResponse,
    partition_for,
)
from minikafka.coordination.group._group_requests import DeletableGroupResult
from minikafka.coordination.testing import serving_coordinator

E = ErrorCode
T0 = 1_700_000_000.0
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
CONFIG = GroupConfig(group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=3)


def fresh() -> GroupCoordinator:
    return serving_coordinator(CONFIG, random.Random(0), T0)


def commit(
    coordinator: GroupCoordinator, offsets: dict[TopicPartition, int], group: str = "g"
) -> CoordinatorWrite:
    """A standalone commit (generation -1, no member); the write it asks for."""
    request = OffsetCommitRequest(
        group,
        -1,
        "",
        tuple((tp, CommittedOffset(o)) for tp, o in offsets.items()),
    )
    result = coordinator.commit_offsets(1, request, T0)
    assert result.replies == ()  # answered only once the write is reported
    (write,) = result.records
    return write


def report(
    coordinator: GroupCoordinator, write: CoordinatorWrite, error: ErrorCode = E.none
) -> list[ErrorCode]:
    """Report ``write`` as the shell would; the errors its OffsetCommit is answered."""
    result = coordinator.complete_write(write.write_id, error, T0)
    (reply,) = result.replies
    assert isinstance(reply.response, OffsetCommitResponse)
    return [e for _, e in reply.response.errors]


def deletion_answer(
    coordinator: GroupCoordinator, write: CoordinatorWrite, error: ErrorCode = E.none
) -> ErrorCode:
    """Report a DeleteGroups' tombstones as the shell would; the error it is answered."""
    (reply,) = coordinator.complete_write(write.write_id, error, T0).replies
    assert isinstance(reply.response, DeletableGroupResult)
    assert reply.response.group_id == "g"
    return reply.response.error_code


def fetched(coordinator: GroupCoordinator, group: str = "g") -> dict[str, int]:
    """What OffsetFetch tells a client: partition -> offset."""
    answer = coordinator.fetch_offsets(group, None)
    assert answer.error_code is E.none
    return {str(tp): c.offset for tp, c in answer.offsets if c is not None}


def written(coordinator: GroupCoordinator, group: str = "g") -> dict[str, int]:
    """The offsets as written so far, committed or not: what the next write is decided on."""
    offsets = coordinator.manager.current_offsets(group)
    return {str(tp): v.offset for tp, v in offsets.items()}


def test_an_uncommitted_commit_is_not_visible_to_offset_fetch() -> None:
    # Guarantee: OffsetFetch reads at the last committed write; a commit whose records
    # are written but not committed is not shown, though it is already the state the
    # next write is decided on.
    c = fresh()
    commit(c, {TP0: 5})
    assert fetched(c) == {}
    assert written(c) == {"t-0": 5}


def test_a_commit_becomes_visible_when_its_write_is_committed() -> None:
    # Guarantee: the answer and the visibility come together, when the write commits.
    c = fresh()
    write = commit(c, {TP0: 5, TP1: 6})
    assert report(c, write) == [E.none, E.none]
    assert fetched(c) == {"t-0": 5, "t-1": 6}


def test_a_second_commit_is_decided_on_the_first_before_it_commits() -> None:
    # Guarantee: a write's records are replayed at once, so a deletion right after an
    # uncommitted commit writes a tombstone for its offset too, and once both are
    # committed the log and the state agree that nothing is left.
    c = fresh()
    first = commit(c, {TP0: 5})
    deleted = c.delete_group(2, "g", T0)
    assert deleted.replies == ()  # answered once its tombstones are committed
    (tombstones,) = deleted.records
    assert len(tombstones.records) == 2  # the offset's and the group's
    assert written(c) == {}
    assert fetched(c) == {}
    report(c, first)
    assert fetched(c) == {"t-0": 5}  # the log's committed part: the tombstone is not
    assert deletion_answer(c, tombstones) is E.none
    assert fetched(c) == {}
    assert written(c) == {}


def test_a_failed_write_is_reverted() -> None:
    # Guarantee: a write that fails leaves no trace in the state: neither what a client
    # is shown nor what the next write is decided on.
    c = fresh()
    report(c, commit(c, {TP0: 5}))
    write = commit(c, {TP0: 7, TP1: 1})
    assert written(c) == {"t-0": 7, "t-1": 1}
    assert report(c, write, E.not_leader_or_follower) == [E.not_coordinator] * 2
    assert fetched(c) == {"t-0": 5}
    assert written(c) == {"t-0": 5}


def test_a_commit_made_on_top_of_a_failed_one_keeps_its_own_offsets() -> None:
    # Guarantee: a write made after one that later fails is still on its way to the
    # log: the revert takes only the failed write out, and the later one is shown once
    # it commits.
    c = fresh()
    failing = commit(c, {TP0: 7})
    later = commit(c, {TP1: 3})
    assert written(c) == {"t-0": 7, "t-1": 3}
    report(c, failing, E.request_timed_out)
    assert written(c) == {"t-1": 3}
    assert fetched(c) == {}
    assert report(c, later) == [E.none]
    assert fetched(c) == {"t-1": 3}


def test_a_later_failure_leaves_an_earlier_commit() -> None:
    c = fresh()
    earlier = commit(c, {TP0: 7})
    failing = commit(c, {TP0: 9})
    report(c, failing, E.not_enough_replicas)
    assert written(c) == {"t-0": 7}
    report(c, earlier)
    assert fetched(c) == {"t-0": 7}


def test_a_write_committed_by_a_later_one_stays_whatever_its_own_report() -> None:
    # Guarantee: a log commits a prefix: once a later write is committed, an earlier
    # one is too, even if its own report (a timeout) comes later and says it failed;
    # its client is told the error, but the offset is what the log holds.
    c = fresh()
    earlier = commit(c, {TP0: 7})
    later = commit(c, {TP1: 3})
    report(c, later)
    assert fetched(c) == {"t-0": 7, "t-1": 3}
    assert report(c, earlier, E.request_timed_out) == [E.coordinator_not_available]
    assert fetched(c) == {"t-0": 7, "t-1": 3}


def test_a_failed_deletion_brings_the_group_and_its_offsets_back() -> None:
    # Guarantee: the deletion's tombstones are not in the log, so the group is served
    # again as a load would restore it: Empty, with its offsets.
    c = fresh()
    report(c, commit(c, {TP0: 5}))
    (tombstones,) = c.delete_group(2, "g", T0).records
    assert c.group("g") is None
    c.complete_write(tombstones.write_id, E.not_leader_or_follower, T0)
    assert fetched(c) == {"t-0": 5}
    group = c.group("g")
    assert group is not None
    assert group.state.value == "Empty"


def test_delete_groups_is_answered_only_when_its_tombstones_commit() -> None:
    # Guarantee: a client told a group is deleted can no longer read its offsets (Kafka's
    # deleteGroups is a write operation): until the tombstones commit there is no
    # answer, and OffsetFetch still shows the offsets the log holds.
    c = fresh()
    report(c, commit(c, {TP0: 5}))
    deleted = c.delete_group(2, "g", T0)
    assert deleted.replies == ()
    (tombstones,) = deleted.records
    assert fetched(c) == {"t-0": 5}
    assert deletion_answer(c, tombstones) is E.none
    assert fetched(c) == {}
    assert c.group("g") is None


def test_a_failed_deletion_is_answered_its_mapped_error_and_changes_nothing() -> None:
    # Guarantee: a deletion whose tombstones fail is answered the failed write's error as
    # a client should see it (NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR, a timeout:
    # COORDINATOR_NOT_AVAILABLE, too large: UNKNOWN_SERVER_ERROR), never NONE, and the
    # group and its offsets are back as they were.
    for error, answered in [
        (E.not_leader_or_follower, E.not_coordinator),
        (E.request_timed_out, E.coordinator_not_available),
        (E.message_too_large, E.unknown_server_error),
    ]:
        c = fresh()
        report(c, commit(c, {TP0: 5, TP1: 6}))
        (tombstones,) = c.delete_group(2, "g", T0).records
        assert deletion_answer(c, tombstones, error) is answered
        assert fetched(c) == written(c) == {"t-0": 5, "t-1": 6}
        group = c.group("g")
        assert group is not None
        assert group.state.value == "Empty"


def test_a_refused_deletion_is_answered_at_once_without_a_write() -> None:
    # Guarantee: what is decided before any write is answered at once: an unknown
    # group, a group with members, a partition this coordinator does not serve.
    c = fresh()
    refused = c.delete_group(2, "nobody", T0)
    assert refused.records == ()
    (reply,) = refused.replies
    assert reply.request_id == 2
    assert reply.response == DeletableGroupResult("nobody", E.group_id_not_found)
    c.unload_partition(partition_for("g", CONFIG.offsets_topic_num_partitions))
    (reply,) = c.delete_group(3, "g", T0).replies
    assert reply.response == DeletableGroupResult("g", E.not_coordinator)


def test_loading_replays_the_records_and_commits_them() -> None:
    # Guarantee: a load's records are the committed state (OffsetFetch shows them at
    # once), and a failed write after the load reverts to exactly that state.
    c = fresh()
    log = [*commit(c, {TP0: 5, TP1: 6}).records, *commit(c, {TP0: 8}).records]
    partition = partition_for("g", 3)
    successor = GroupCoordinator(CONFIG, random.Random(1))
    successor.begin_loading(partition)
    assert successor.load_partition(partition, log, T0) == 1
    assert fetched(successor) == {"t-0": 8, "t-1": 6}
    report(successor, commit(successor, {TP0: 9}), E.not_leader_or_follower)
    assert fetched(successor) == written(successor) == {"t-0": 8, "t-1": 6}


def test_committed_writes_leave_no_snapshot_behind() -> None:
    # Guarantee: memory is bounded by the writes in flight: once everything is
    # committed only the snapshot at the committed write is kept.
    c = fresh()
    writes = [commit(c, {TP0: i}) for i in range(5)]
    shard = c.manager.shards[partition_for("g", 3)]
    assert len(shard.registry.epochs()) == 6  # the loaded state's and one per write
    for write in writes:
        report(c, write)
    assert shard.registry.epochs() == [writes[-1].write_id]


# Each step: commit an offset to TP0 or TP1, or report the oldest unreported write
# committed or failed.
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.sampled_from([TP0, TP1]), st.integers(0, 99)),
        st.tuples(st.just("report"), st.booleans(), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(_steps)
def test_the_state_is_the_fold_of_the_log(
    steps: list[tuple[str, object, int]],
) -> None:
    # Guarantee: with writes reported in the order they were made, OffsetFetch shows the
    # records of the committed writes applied in order, and the state the next write is
    # decided on adds those of the writes still in flight; a failed write is in neither.
    c = fresh()
    in_flight: list[tuple[CoordinatorWrite, TopicPartition, int]] = []
    committed: dict[str, int] = {}
    for kind, what, offset in steps:
        if kind == "commit":
            assert isinstance(what, TopicPartition)
            in_flight.append((commit(c, {what: offset}), what, offset))
        elif in_flight:
            write, tp, offset = in_flight.pop(0)
            report(c, write, E.none if what else E.not_enough_replicas)
            if what:
                committed[str(tp)] = offset
        pending = dict(committed)
        for _, tp, offset in in_flight:
            pending[str(tp)] = offset
        assert fetched(c) == committed
        assert written(c) == pending


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([TP0, TP1]), min_size=1, max_size=8),
    st.data(),
)
def test_reports_in_any_order_keep_the_log_and_the_state_in_step(
    partitions: list[TopicPartition], data: st.DataObject
) -> None:
    # Guarantee: whatever order the writes are reported in, OffsetFetch shows the
    # writes up to the newest committed one, in log order, less those that failed
    # while still above it; the written state adds every write not failed. (A log
    # commits a prefix: a failure reported for a write below the committed point came
    # too late to take it out.)
    c = fresh()
    writes = [commit(c, {tp: i}) for i, tp in enumerate(partitions)]
    order = data.draw(st.permutations(range(len(writes))))
    point = 0  # the newest write reported committed
    out: set[int] = set()
    for index in order:
        ok = data.draw(st.booleans())
        write = writes[index]
        report(c, write, E.none if ok else E.request_timed_out)
        if ok:
            point = max(point, write.write_id)
        elif write.write_id > point:
            out.add(write.write_id)
        expected: dict[str, int] = {}
        state: dict[str, int] = {}
        for i, (tp, w) in enumerate(zip(partitions, writes, strict=True)):
            if w.write_id in out:
                continue
            state[str(tp)] = i
            if w.write_id <= point:
                expected[str(tp)] = i
        assert fetched(c) == expected
        assert written(c) == state
