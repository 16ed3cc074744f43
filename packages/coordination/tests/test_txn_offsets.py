"""Transactional offset commits (KIP-98's TxnOffsetCommit, KIP-447's member checks and
require_stable), as Kafka's GroupCoordinator and GroupMetadataManager keep them.

A TxnOffsetCommit's offsets are written in the producer's transactional batch and are
*pending* for that producer: OffsetFetch does not show them until the transaction's
COMMIT marker reaches the group's ``__consumer_offsets`` partition
(``complete_transaction``), and an ABORT drops them. A load replays the same: pending
until the marker, pending still when the marker has not come. Each test drives the core
by hand, reporting writes when it says so; the last ones run the trio shell.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator

import attrs
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import (
    CommittedOffset,
    CoordinatorWrite,
    GroupConfig,
    GroupCoordinator,
    GroupCoordinatorShell,
    GroupMetadata,
    GroupState,
    LoadedRecord,
    MemberMetadata,
    OffsetCommitRequest,
    OffsetValue,
    StoredRecord,
    TxnMarkerRecord,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitWritten,
    TxnOffsetsCompleted,
    TxnStoredRecord,
    partition_for,
)
from minikafka.coordination.group._group_requests import DeletableGroupResult
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace.testing import RecordingTracer

E = ErrorCode
T0 = 1_700_000_000.0
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
CONFIG = GroupConfig(group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=3)
PARTITION = partition_for("g", 3)
PID, EPOCH = 4000, 2


def fresh(tracer: RecordingTracer | None = None) -> GroupCoordinator:
    return serving_coordinator(CONFIG, random.Random(0), T0, tracer)


def txn_request(
    offsets: dict[TopicPartition, int],
    *,
    producer_id: int = PID,
    generation_id: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
    metadata: str = "",
) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        "txn-app",
        "g",
        producer_id,
        EPOCH,
        generation_id,
        member_id,
        group_instance_id,
        tuple((tp, CommittedOffset(o, metadata=metadata)) for tp, o in offsets.items()),
    )


def txn_commit(
    c: GroupCoordinator, offsets: dict[TopicPartition, int], producer_id: int = PID
) -> CoordinatorWrite:
    """A TxnOffsetCommit accepted: the write it asks for (not reported yet)."""
    result = c.txn_commit_offsets(
        request_id=7, now=T0, request=txn_request(offsets, producer_id=producer_id)
    )
    assert result.replies == ()  # answered once the write is reported
    (write,) = result.records
    return write


def plain_commit(
    c: GroupCoordinator, offsets: dict[TopicPartition, int]
) -> CoordinatorWrite:
    request = OffsetCommitRequest(
        "g", -1, "", tuple((tp, CommittedOffset(o)) for tp, o in offsets.items())
    )
    (write,) = c.commit_offsets(1, request, T0).records
    return write


def report(
    c: GroupCoordinator, write: CoordinatorWrite, error: ErrorCode = E.none
) -> list[ErrorCode]:
    """Report ``write`` as the shell would; the errors its request is answered."""
    (reply,) = c.complete_write(write.write_id, error, T0).replies
    response = reply.response
    assert hasattr(response, "errors")
    return [e for _, e in response.errors]


def refused(c: GroupCoordinator, request: TxnOffsetCommitRequest) -> list[ErrorCode]:
    """A TxnOffsetCommit answered at once (nothing written): its errors."""
    result = c.txn_commit_offsets(request_id=3, now=T0, request=request)
    assert result.records == ()
    (reply,) = result.replies
    assert isinstance(reply.response, TxnOffsetCommitResponse)
    return [e for _, e in reply.response.errors]


def fetched(c: GroupCoordinator, require_stable: bool = False) -> dict[str, object]:
    """What OffsetFetch tells a client for TP0 and TP1: an offset, or an error's name."""
    answer = c.fetch_offsets("g", [TP0, TP1], require_stable=require_stable)
    assert answer.error_code is E.none
    out: dict[str, object] = {}
    for tp, committed in answer.offsets:
        error = answer.partition_error(tp)
        if error is not E.none:
            assert committed is None  # offset -1 on the wire
            out[str(tp)] = error.name
        elif committed is not None:
            out[str(tp)] = committed.offset
    return out


def complete(c: GroupCoordinator, commit: bool, producer_id: int = PID) -> None:
    result = c.complete_transaction(producer_id, [PARTITION], commit, T0)
    assert result.records == ()
    assert result.replies == ()


# --- the write -------------------------------------------------------------------------------


def test_the_write_carries_the_producer_and_a_plain_commit_does_not() -> None:
    # Guarantee: a TxnOffsetCommit's records are appended as a transactional batch of
    # its producer (id, epoch), so that the marker can commit or abort them; every
    # other write stays a plain batch.
    c = fresh()
    write = txn_commit(c, {TP0: 5})
    assert write.producer == (PID, EPOCH)
    assert write.partition == PARTITION
    assert plain_commit(c, {TP1: 3}).producer is None


def test_pending_offsets_are_invisible_until_the_commit_marker() -> None:
    # Guarantee: an accepted TxnOffsetCommit is answered once its write is committed,
    # but OffsetFetch keeps showing the committed offset until the COMMIT marker; then
    # the transaction's offset is the committed one.
    c = fresh()
    report(c, plain_commit(c, {TP0: 1}))
    write = txn_commit(c, {TP0: 5, TP1: 6})
    assert fetched(c) == {"t-0": 1}
    assert report(c, write) == [E.none, E.none]
    assert fetched(c) == {"t-0": 1}
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 5, "t-1": 6}
    assert fetched(c, require_stable=True) == {"t-0": 5, "t-1": 6}


def test_an_abort_marker_drops_the_pending_offsets() -> None:
    # Guarantee: after an ABORT the transaction's offsets are gone, the committed ones
    # untouched, and a later COMMIT of the same producer finds nothing to commit.
    c = fresh()
    report(c, plain_commit(c, {TP0: 1}))
    report(c, txn_commit(c, {TP0: 5, TP1: 6}))
    complete(c, commit=False)
    assert fetched(c, require_stable=True) == {"t-0": 1}
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 1}


def test_require_stable_answers_unstable_offset_commit_while_pending() -> None:
    # Guarantee (KIP-447): with require_stable, a partition with a pending transactional
    # offset is UNSTABLE_OFFSET_COMMIT with no offset, the others answered as usual;
    # without it the committed offset is shown.
    c = fresh()
    report(c, plain_commit(c, {TP0: 1, TP1: 2}))
    report(c, txn_commit(c, {TP0: 5}))
    assert fetched(c, require_stable=True) == {
        "t-0": "unstable_offset_commit",
        "t-1": 2,
    }
    assert fetched(c) == {"t-0": 1, "t-1": 2}
    # pending already while its write is in flight
    txn_commit(c, {TP1: 9}, producer_id=PID + 1)
    assert fetched(c, require_stable=True) == {
        "t-0": "unstable_offset_commit",
        "t-1": "unstable_offset_commit",
    }


def test_a_marker_only_completes_its_own_producer() -> None:
    # Guarantee: two open transactions committing to the same group are kept apart:
    # one producer's marker leaves the other's offsets pending.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}, producer_id=1))
    report(c, txn_commit(c, {TP1: 6}, producer_id=2))
    complete(c, commit=True, producer_id=1)
    assert fetched(c, require_stable=True) == {
        "t-0": 5,
        "t-1": "unstable_offset_commit",
    }


def test_a_marker_for_another_partition_leaves_the_group_pending() -> None:
    # Guarantee: a marker completes only the partitions it was written to; one for a
    # partition this coordinator does not serve changes nothing and writes nothing.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}))
    other = (PARTITION + 1) % 3
    assert c.complete_transaction(PID, [other], True, T0).records == ()
    c.unload_partition(other)
    assert c.complete_transaction(PID, [other], True, T0).records == ()
    assert fetched(c, require_stable=True) == {"t-0": "unstable_offset_commit"}


# --- ordering against plain commits -----------------------------------------------------------


def test_a_plain_commit_written_after_the_transactional_one_wins() -> None:
    # Guarantee (Kafka's olderThan): a committed transaction replaces an offset only
    # with one written after it; a plain commit made while the transaction was open
    # is newer in the log and stays.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}))
    report(c, plain_commit(c, {TP0: 8}))
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 8}


def test_a_transactional_commit_written_after_a_plain_one_replaces_it() -> None:
    # Guarantee: the other way round, the transaction's offset is the newer record.
    c = fresh()
    report(c, plain_commit(c, {TP0: 8}))
    report(c, txn_commit(c, {TP0: 5}))
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 5}


# --- the checks ----------------------------------------------------------------------------


def member_group(c: GroupCoordinator) -> GroupMetadata:
    """Group "g", CompletingRebalance in generation 3, with static member m1 (i1)."""
    group = GroupMetadata("g", GroupState.COMPLETING_REBALANCE, 3, "consumer", "range")
    group.add(
        MemberMetadata(
            "m1", "i1", "client", "/h", 30_000, 10_000, "consumer", (("range", b""),)
        )
    )
    c.manager.groups["g"] = group
    return group


def test_an_unknown_group_is_created_empty() -> None:
    # Guarantee (Kafka's handleTxnCommitOffsets): a TxnOffsetCommit to a group the
    # coordinator does not know creates it, Empty.
    c = fresh()
    txn_commit(c, {TP0: 5})
    group = c.group("g")
    assert group is not None
    assert group.state is GroupState.EMPTY


def test_the_member_checks_are_kafkas_transactional_ones() -> None:
    # Guarantee (KIP-447, Kafka's validateOffsetCommit with isTransactional): a fenced
    # instance id, an unknown member id and a stale generation are refused for every
    # partition; a current member is accepted even mid-rebalance, and so is a request
    # that names neither member nor generation (v0-2).
    c = fresh()
    member_group(c)
    tps = {TP0: 5, TP1: 6}
    assert (
        refused(c, txn_request(tps, member_id="old", group_instance_id="i1"))
        == [E.fenced_instance_id] * 2
    )
    assert refused(c, txn_request(tps, member_id="ghost")) == [E.unknown_member_id] * 2
    assert (
        refused(c, txn_request(tps, member_id="m1", generation_id=2))
        == [E.illegal_generation] * 2
    )
    accepted = c.txn_commit_offsets(
        request_id=1, now=T0, request=txn_request(tps, member_id="m1", generation_id=3)
    )
    assert accepted.replies == ()
    assert len(accepted.records) == 1
    anonymous = c.txn_commit_offsets(request_id=2, now=T0, request=txn_request(tps))
    assert anonymous.replies == ()
    assert len(anonymous.records) == 1


def test_too_large_metadata_is_refused_per_partition() -> None:
    # Guarantee: metadata over offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE
    # for that partition; when no partition is left nothing is written.
    c = fresh()
    big = "x" * (CONFIG.offset_metadata_max_bytes + 1)
    assert refused(c, txn_request({TP0: 5}, metadata=big)) == [
        E.offset_metadata_too_large
    ]


def test_a_group_not_served_here_is_not_coordinator() -> None:
    # Guarantee: as for OffsetCommit, a partition this broker does not lead answers
    # NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
    c = fresh()
    c.unload_partition(PARTITION)
    assert refused(c, txn_request({TP0: 5})) == [E.not_coordinator]
    c.begin_loading(PARTITION)
    assert refused(c, txn_request({TP0: 5})) == [E.coordinator_load_in_progress]


# --- failures and reverts ------------------------------------------------------------------


def test_a_failed_write_drops_the_pending_offsets_and_answers_the_mapped_error() -> (
    None
):
    # Guarantee (failPendingTxnOffsetCommit): a write that does not reach the log leaves
    # nothing pending, the request is answered as an OffsetCommit would be
    # (NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR), and a later COMMIT changes nothing.
    c = fresh()
    report(c, plain_commit(c, {TP0: 1}))
    write = txn_commit(c, {TP0: 5})
    assert report(c, write, E.not_leader_or_follower) == [E.not_coordinator]
    assert fetched(c, require_stable=True) == {"t-0": 1}
    assert c.manager.pending_partitions("g") == set()
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 1}


def test_a_revert_of_an_earlier_write_replays_the_pending_offsets_and_the_marker() -> (
    None
):
    # Guarantee: pending offsets and markers live on the partition's timeline: when a
    # write made before them fails, the revert takes out that write only; the
    # transaction's offset and its marker are replayed on top, and become visible once
    # everything before the marker is settled.
    c = fresh()
    earlier = plain_commit(c, {TP1: 3})
    txn = txn_commit(c, {TP0: 5})
    complete(c, commit=True)
    assert fetched(c) == {}  # the marker waits for the writes before it
    report(c, earlier, E.request_timed_out)
    assert fetched(c) == {}
    report(c, txn)
    assert fetched(c) == {"t-0": 5}
    assert c.manager.current_offsets("g").keys() == {TP0}


# --- loading ------------------------------------------------------------------------------


def offset_record(offset: int, tp: TopicPartition = TP0) -> StoredRecord:
    (record,) = GroupCoordinator().manager.offset_records(
        "g", [(tp, OffsetValue(offset, "", int(T0 * 1000)))]
    )
    return record


def txn_record(
    offset: int, tp: TopicPartition = TP0, pid: int = PID
) -> TxnStoredRecord:
    key, value = offset_record(offset, tp)
    return TxnStoredRecord(pid, key, value)


def loaded(records: Iterable[LoadedRecord]) -> GroupCoordinator:
    c = GroupCoordinator(CONFIG, random.Random(0))
    for partition in range(3):
        c.begin_loading(partition)
        c.load_partition(partition, records if partition == PARTITION else [], T0)
    return c


def test_a_load_commits_the_offsets_of_a_committed_transaction() -> None:
    # Guarantee (Kafka's loader): a transactional batch's offsets followed by its
    # producer's COMMIT marker are committed, unless a plain record for the partition
    # was written between them (olderThan by log position).
    c = loaded(
        [
            offset_record(1),
            txn_record(5),
            txn_record(6, TP1),
            offset_record(9, TP1),  # after the transaction's record: it stays
            TxnMarkerRecord(PID, commit=True),
        ]
    )
    assert fetched(c, require_stable=True) == {"t-0": 5, "t-1": 9}


def test_a_load_drops_the_offsets_of_an_aborted_transaction() -> None:
    # Guarantee: a transactional batch followed by its producer's ABORT marker leaves
    # nothing pending and the committed offset as it was.
    c = loaded([offset_record(1), txn_record(5), TxnMarkerRecord(PID, commit=False)])
    assert fetched(c, require_stable=True) == {"t-0": 1}


def test_a_load_keeps_an_open_transactions_offsets_pending() -> None:
    # Guarantee: offsets whose marker is not in the log yet stay pending after the
    # load (a group with nothing else is restored Empty) and are completed by the
    # marker when it comes.
    c = loaded([txn_record(5)])
    group = c.group("g")
    assert group is not None
    assert group.state is GroupState.EMPTY
    assert fetched(c) == {}
    assert fetched(c, require_stable=True) == {"t-0": "unstable_offset_commit"}
    complete(c, commit=True)
    assert fetched(c) == {"t-0": 5}


def test_what_was_written_loads_back_the_same() -> None:
    # Guarantee: the records the coordinator writes (a transactional batch, then the
    # marker the broker appends) replay into the same state on the next leader.
    c = fresh()
    topic = InMemoryOffsetsTopic()
    request = txn_request({TP0: 5, TP1: 6})
    topic.carry_out(c, c.txn_commit_offsets(request_id=1, now=T0, request=request), T0)
    open_ = loaded(topic.partitions[PARTITION])
    assert fetched(open_, require_stable=True) == {
        "t-0": "unstable_offset_commit",
        "t-1": "unstable_offset_commit",
    }
    topic.write_marker(c, PID, [PARTITION], True, T0)
    assert (
        fetched(loaded(topic.partitions[PARTITION]))
        == fetched(c)
        == {
            "t-0": 5,
            "t-1": 6,
        }
    )


# --- expiry, deletion, unloading ------------------------------------------------------------


def test_a_pending_offset_holds_off_expiry_of_its_partition_and_group() -> None:
    # Guarantee (Kafka's cleanupExpiredOffsets): an offset an open transaction will
    # replace does not expire, and a group waiting on a transaction is not deleted.
    c = fresh()
    report(c, plain_commit(c, {TP0: 1, TP1: 2}))
    report(c, txn_commit(c, {TP0: 5}))
    later = T0 + CONFIG.offsets_retention_minutes * 60 + 3600
    result = c.on_timer(later)
    (write,) = result.records
    c.complete_write(write.write_id, E.none, later)
    assert c.manager.committed_offsets("g").keys() == {TP0}
    assert c.group("g") is not None


def test_delete_groups_takes_the_pending_offsets_with_the_group() -> None:
    # Guarantee (Kafka's deleteAllOffsets): DeleteGroups of an Empty group is not held
    # up by an open transaction; its tombstones remove the pending offsets too, so a
    # later COMMIT marker brings nothing back.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}))
    (tombstones,) = c.delete_group(2, "g", T0).records
    assert len(tombstones.records) == 2  # the pending offset's and the group's
    (reply,) = c.complete_write(tombstones.write_id, E.none, T0).replies
    assert reply.response == DeletableGroupResult("g", E.none)
    complete(c, commit=True)
    assert c.manager.committed_offsets("g") == {}


def test_offset_delete_takes_a_pending_offset_too() -> None:
    # Guarantee (a tombstone removes the partition's pending offsets, Kafka's
    # OffsetMetadataManager.replay): OffsetDelete of a partition with only a pending
    # offset writes its tombstone, and the transaction's COMMIT then brings nothing.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}))
    (tombstone,) = c.delete_offsets(2, "g", [TP0], T0).records
    c.complete_write(tombstone.write_id, E.none, T0)
    assert c.manager.pending_partitions("g") == set()
    complete(c, commit=True)
    assert fetched(c, require_stable=True) == {}


def test_unloading_a_partition_drops_its_pending_offsets() -> None:
    # Guarantee: a partition this broker stops leading takes its pending offsets with
    # it; the next leader replays them from the log.
    c = fresh()
    report(c, txn_commit(c, {TP0: 5}))
    c.unload_partition(PARTITION)
    c.begin_loading(PARTITION)
    c.load_partition(PARTITION, [], T0)
    assert c.manager.pending_partitions("g") == set()


# --- tracing ---------------------------------------------------------------------------------


def test_the_commit_and_the_completion_are_traced() -> None:
    # Guarantee: a transactional commit and a marker that completes it each leave an
    # event, stamped with the core's time.
    tracer = RecordingTracer()
    c = fresh(tracer)
    report(c, txn_commit(c, {TP0: 5, TP1: 6}))
    complete(c, commit=False)
    kinds = (TxnOffsetCommitWritten, TxnOffsetsCompleted)
    assert [(ts, e) for ts, e in tracer.records if isinstance(e, kinds)] == [
        (T0, TxnOffsetCommitWritten("g", "txn-app", PID, EPOCH, 2)),
        (T0, TxnOffsetsCompleted("g", PID, False, 2)),
    ]


# --- the shell -------------------------------------------------------------------------------


@attrs.define(eq=False)
class TransactionalTopic:
    """The port, in memory: each write committed at once, its producer kept."""

    appended: list[tuple[int, list[StoredRecord]]] = attrs.field(factory=list)
    producers: list[tuple[int, int] | None] = attrs.field(factory=list)

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
        producer: tuple[int, int] | None = None,
    ) -> None:
        self.producers.append(producer)
        self.appended.append((partition, list(records)))
        on_committed(E.none)

    def read(self, partition: int) -> Iterator[LoadedRecord]:
        return iter([])


def shell_over(topic: TransactionalTopic) -> GroupCoordinatorShell:
    service = GroupCoordinatorShell(
        GroupCoordinator(CONFIG, random.Random(0)), topic, clock=lambda: T0
    )
    for partition in range(3):
        service.become_leader(partition)
    return service


def test_the_shell_appends_a_transactional_batch_and_completes_the_transaction() -> (
    None
):
    # Guarantee: the shell hands the write's producer to the port (none for a plain
    # write), answers the TxnOffsetCommit once committed, and complete_transaction makes
    # the offsets visible.
    async def main() -> None:
        topic = TransactionalTopic()
        service = shell_over(topic)
        response = await service.txn_commit_offsets(txn_request({TP0: 5}))
        assert response == TxnOffsetCommitResponse(((TP0, E.none),))
        assert topic.producers == [(PID, EPOCH)]
        assert (
            service.fetch_offsets("g", [TP0], require_stable=True).partition_error(TP0)
            is E.unstable_offset_commit
        )
        service.complete_transaction(PID, [PARTITION], commit=True)
        (entry,) = service.fetch_offsets("g", [TP0], require_stable=True).offsets
        assert entry[1] == CommittedOffset(5)
        request = OffsetCommitRequest("g", -1, "", ((TP0, CommittedOffset(1)),))
        assert (await service.commit_offsets(request)).errors == ((TP0, E.none),)
        assert topic.producers == [(PID, EPOCH), None]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


# --- the timeline against the log -------------------------------------------------------------

# Each step: a plain or a transactional commit (producer 1 or 2) of an offset to TP0 or
# TP1; a marker of producer 1 or 2 (commit or abort); or a report of the oldest
# unreported write (committed or failed).
_steps = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["plain", "txn1", "txn2"]),
            st.sampled_from([TP0, TP1]),
            st.integers(0, 99),
        ),
        st.tuples(st.sampled_from(["marker1", "marker2"]), st.booleans(), st.just(0)),
        st.tuples(st.just("report"), st.booleans(), st.just(0)),
    ),
    max_size=30,
)


def view(c: GroupCoordinator) -> tuple[dict[TopicPartition, int], set[TopicPartition]]:
    """The offsets as written so far and the partitions pending a transaction."""
    offsets = {tp: v.offset for tp, v in c.manager.current_offsets("g").items()}
    return offsets, c.manager.pending_partitions("g")


@settings(max_examples=80, deadline=None)
@given(_steps)
def test_pending_offsets_and_markers_are_the_fold_of_the_log(
    steps: list[tuple[str, object, int]],
) -> None:
    # Guarantee: whatever the order of transactional commits, plain commits, markers
    # and failed writes, the state the next request is decided on is what a load of
    # the log (every write not failed, and every marker, in the order they were
    # made) gives; once every write is reported, OffsetFetch shows it too.
    c = fresh()
    log: list[tuple[int, LoadedRecord]] = []  # (write id or 0 for a marker, record)
    in_flight: list[CoordinatorWrite] = []
    for kind, what, offset in steps:
        if kind == "report":
            if not in_flight:
                continue
            write = in_flight.pop(0)
            c.complete_write(
                write.write_id, E.none if what else E.kafka_storage_error, T0
            )
            if not what:
                log = [(w, r) for w, r in log if w != write.write_id]
        elif kind.startswith("marker"):
            producer_id = int(kind[-1])
            complete(c, bool(what), producer_id)
            log.append((0, TxnMarkerRecord(producer_id, bool(what))))
        else:
            assert isinstance(what, TopicPartition)
            if kind == "plain":
                write = plain_commit(c, {what: offset})
                log += [(write.write_id, record) for record in write.records]
            else:
                write = txn_commit(c, {what: offset}, producer_id=int(kind[-1]))
                log += [
                    (write.write_id, TxnStoredRecord(int(kind[-1]), key, value))
                    for key, value in write.records
                ]
            in_flight.append(write)
        assert view(c) == view(loaded(r for _, r in log))
    for write in in_flight:
        c.complete_write(write.write_id, E.none, T0)
    replayed = loaded(r for _, r in log)
    assert fetched(c, require_stable=True) == fetched(replayed, require_stable=True)
