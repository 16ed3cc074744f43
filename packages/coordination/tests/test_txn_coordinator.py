"""The transaction coordinator's requests, as a core driven by hand: each move's record
is appended, then reported committed (or failed) with ``complete_write``; markers are
reported written with ``markers_written``. Every check states the rule of Kafka's
TransactionCoordinator it holds."""

from __future__ import annotations

import itertools

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.transaction import (
    TransactionCoordinator,
    TransactionState,
    TransactionStateManager,
    TxnConfig,
    TxnMarkers,
    TxnRecord,
    TxnReply,
    TxnResult,
    TxnStateChanged,
    read_key,
    read_value,
)
from minikafka.trace.testing import RecordingTracer

S = TransactionState
OUT = frozenset({TopicPartition("out", 0), TopicPartition("out", 1)})


@pytest.fixture
def coordinator() -> TransactionCoordinator:
    manager = TransactionStateManager(num_partitions=1)
    manager.load_partition(0, [])
    ids = itertools.count(1000)
    return TransactionCoordinator(manager, lambda: next(ids), TxnConfig(60_000))


def written(
    coordinator: TransactionCoordinator, result: TxnResult, now: int = 0
) -> TxnResult:
    """Report the result's record committed; what that answers."""
    [record] = result.records
    assert record.partition == 0
    return coordinator.complete_write(read_key(record.key), ErrorCode.none, now)


def init(
    coordinator: TransactionCoordinator, expected: tuple[int, int] | None = None
) -> TxnReply:
    result = coordinator.init_producer_id(1, "tx", 30_000, expected, now=5)
    if not result.records:
        [reply] = result.replies
        return reply
    assert not result.replies  # answered only once the record is committed
    [reply] = written(coordinator, result).replies
    return reply


def open_transaction(coordinator: TransactionCoordinator, pid: int, epoch: int) -> None:
    result = coordinator.add_partitions_to_txn(2, "tx", pid, epoch, OUT, now=10)
    assert written(coordinator, result).replies == (TxnReply(2, ErrorCode.none),)


def test_a_new_transactional_id_gets_a_producer_id_at_epoch_0_once_written(
    coordinator: TransactionCoordinator,
) -> None:
    result = coordinator.init_producer_id(1, "tx", 30_000, None, now=5)
    [record] = result.records
    assert read_key(record.key) == "tx"
    stored = read_value(record.value or b"")
    assert (stored.state, stored.producer_id, stored.producer_epoch) == (
        S.EMPTY,
        1000,
        0,
    )
    assert not result.replies
    assert written(coordinator, result).replies == (
        TxnReply(1, ErrorCode.none, 1000, 0),
    )
    # The next InitProducerId bumps the epoch, fencing the previous producer.
    assert init(coordinator) == TxnReply(1, ErrorCode.none, 1000, 1)


def test_bad_requests_are_refused_before_anything_is_written(
    coordinator: TransactionCoordinator,
) -> None:
    for transactional_id, timeout, error in (
        ("", 30_000, ErrorCode.invalid_request),
        ("tx", 0, ErrorCode.invalid_transaction_timeout),
        ("tx", 60_001, ErrorCode.invalid_transaction_timeout),  # over the maximum
    ):
        result = coordinator.init_producer_id(1, transactional_id, timeout, None, now=5)
        assert result == TxnResult(replies=(TxnReply(1, error),))


def test_one_move_at_a_time(coordinator: TransactionCoordinator) -> None:
    # Guarantee: while a record of the id is being written, its other requests are
    # answered CONCURRENT_TRANSACTIONS and write nothing.
    pending = coordinator.init_producer_id(1, "tx", 30_000, None, now=5)
    again = coordinator.init_producer_id(2, "tx", 30_000, None, now=6)
    assert again == TxnResult(replies=(TxnReply(2, ErrorCode.concurrent_transactions),))
    written(coordinator, pending)


def test_a_failed_write_changes_nothing_and_maps_the_error(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: a record the log refused leaves the cache as it was and the requester
    # gets Kafka's mapping (a lost partition leader: NOT_COORDINATOR).
    init(coordinator)
    result = coordinator.init_producer_id(1, "tx", 30_000, None, now=5)
    failed = coordinator.complete_write("tx", ErrorCode.not_leader_or_follower, now=6)
    assert failed.replies == (TxnReply(1, ErrorCode.not_coordinator),)
    assert result.records
    assert init(coordinator) == TxnReply(1, ErrorCode.none, 1000, 1)


def test_a_transaction_commits_then_markers_complete_it(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: EndTxn(commit) is answered once PrepareCommit is written; then the
    # commit markers go to every partition added, and once written, CompleteCommit.
    reply = init(coordinator)
    pid, epoch = reply.producer_id, reply.producer_epoch
    open_transaction(coordinator, pid, epoch)
    ended = coordinator.end_txn(3, "tx", pid, epoch, commit=True, now=20)
    assert read_value(ended.records[0].value or b"").state is S.PREPARE_COMMIT
    after = written(coordinator, ended)
    assert after.replies == (TxnReply(3, ErrorCode.none),)
    assert after.messages == (TxnMarkers("tx", pid, epoch, True, OUT, 0),)
    completed = coordinator.markers_written("tx", 0, now=30)
    assert read_value(completed.records[0].value or b"").state is S.COMPLETE_COMMIT
    written(coordinator, completed)
    # A retried commit is answered NONE; an abort now is in the wrong state.
    retry = coordinator.end_txn(4, "tx", pid, epoch, commit=True, now=31)
    assert retry.replies == (TxnReply(4, ErrorCode.none),)
    wrong = coordinator.end_txn(5, "tx", pid, epoch, commit=False, now=31)
    assert wrong.replies == (TxnReply(5, ErrorCode.invalid_txn_state),)


def test_requests_of_another_producer_are_refused(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: a producer id the id does not have is INVALID_PRODUCER_ID_MAPPING; an
    # older epoch of the right one is PRODUCER_FENCED.
    reply = init(coordinator)
    init(coordinator)  # epoch 1 now
    for pid, epoch, error in (
        (reply.producer_id + 1, 1, ErrorCode.invalid_producer_id_mapping),
        (reply.producer_id, 0, ErrorCode.producer_fenced),
    ):
        result = coordinator.add_partitions_to_txn(2, "tx", pid, epoch, OUT, now=10)
        assert result == TxnResult(replies=(TxnReply(2, error),))


def test_a_new_producer_fences_and_aborts_the_open_transaction(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee (KIP-98's zombie fencing): InitProducerId while a transaction is open
    # bumps the epoch, writes its abort with the bumped epoch and answers
    # CONCURRENT_TRANSACTIONS; the old producer's requests are then PRODUCER_FENCED; once
    # the abort markers are written, the retried InitProducerId gets the epoch after.
    reply = init(coordinator)
    pid, epoch = reply.producer_id, reply.producer_epoch
    open_transaction(coordinator, pid, epoch)
    result = coordinator.init_producer_id(9, "tx", 30_000, None, now=40)
    assert result.replies == (TxnReply(9, ErrorCode.concurrent_transactions),)
    stored = read_value(result.records[0].value or b"")
    assert (stored.state, stored.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    assert written(coordinator, result).messages == (
        TxnMarkers("tx", pid, epoch + 1, False, OUT, 0),
    )
    zombie = coordinator.end_txn(3, "tx", pid, epoch, commit=True, now=41)
    assert zombie.replies == (TxnReply(3, ErrorCode.producer_fenced),)
    written(coordinator, coordinator.markers_written("tx", 0, now=42))
    assert init(coordinator) == TxnReply(1, ErrorCode.none, pid, epoch + 2)


def test_time_aborts_a_forgotten_transaction_and_expires_an_idle_id(
    coordinator: TransactionCoordinator,
) -> None:
    reply = init(coordinator)
    open_transaction(coordinator, reply.producer_id, reply.producer_epoch)
    assert coordinator.abort_timed_out(now=10 + 30_000) == TxnResult()  # not yet
    aborting = coordinator.abort_timed_out(now=10 + 30_001)
    assert read_value(aborting.records[0].value or b"").state is S.PREPARE_ABORT
    written(coordinator, aborting)
    written(coordinator, coordinator.markers_written("tx", 0, now=30_020))
    day = 86_400_000
    tombstones = coordinator.expire_transactional_ids(now=30_020 + 7 * day)
    [record] = tombstones.records
    assert (read_key(record.key), record.value) == ("tx", None)
    written(coordinator, tombstones)
    assert coordinator.manager.get("tx") is None


def test_a_transaction_at_the_last_epoch_is_aborted_without_a_bump(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: an open transaction whose producer is at epoch 32767 (none left to
    # fence with) is still aborted when it times out, under that epoch.
    reply = init(coordinator)
    open_transaction(coordinator, reply.producer_id, reply.producer_epoch)
    meta = coordinator.manager.get("tx")
    assert meta is not None
    meta.producer_epoch = 2**15 - 1
    aborting = coordinator.abort_timed_out(now=10 + 30_001)
    stored = read_value(aborting.records[0].value or b"")
    assert (stored.state, stored.producer_epoch) == (S.PREPARE_ABORT, 2**15 - 1)


def test_a_new_coordinator_resends_the_markers_of_an_ended_transaction() -> None:
    # Guarantee: a broker that becomes the leader of the id's partition finds the
    # transaction in PrepareCommit and sends its markers again, stamped with its own
    # coordinator epoch; markers reported under an older epoch complete nothing.
    first = TransactionCoordinator(
        TransactionStateManager(num_partitions=1), lambda: 1000, TxnConfig(60_000)
    )
    first.manager.load_partition(0, [], coordinator_epoch=3)
    reply = init(first)
    pid, epoch = reply.producer_id, reply.producer_epoch
    records: list[TxnRecord] = []
    result = first.add_partitions_to_txn(2, "tx", pid, epoch, OUT, now=10)
    records += result.records
    written(first, result)
    ended = first.end_txn(3, "tx", pid, epoch, commit=True, now=20)
    records += ended.records
    successor = TransactionCoordinator(
        TransactionStateManager(num_partitions=1), lambda: 2000, TxnConfig(60_000)
    )
    loaded = successor.load_partition(0, 4, [(r.key, r.value) for r in records], now=30)
    assert loaded.messages == (TxnMarkers("tx", pid, epoch, True, OUT, 4),)
    assert successor.markers_written("tx", 3, now=31) == TxnResult()
    completed = successor.markers_written("tx", 4, now=31)
    assert read_value(completed.records[0].value or b"").state is S.COMPLETE_COMMIT


def test_losing_the_partition_answers_a_waiting_request_not_coordinator(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: a request whose record was still being written when leadership of
    # the id's partition moved is answered NOT_COORDINATOR (the client finds the new
    # coordinator and retries), and the id is no longer served here.
    pending = coordinator.init_producer_id(1, "tx", 30_000, None, now=5)
    assert pending.records
    assert not pending.replies
    assert coordinator.unload_partition(0).replies == (
        TxnReply(1, ErrorCode.not_coordinator),
    )
    again = coordinator.init_producer_id(2, "tx", 30_000, None, now=6)
    assert again.replies == (TxnReply(2, ErrorCode.not_coordinator),)


def test_each_committed_move_of_a_transaction_is_traced_at_its_time() -> None:
    # Guarantee: every move whose record is committed is one txn.state_change event,
    # along an edge of the table, stamped with the time the core was given (s).
    tracer = RecordingTracer()
    manager = TransactionStateManager(num_partitions=1)
    manager.load_partition(0, [])
    coordinator = TransactionCoordinator(
        manager, lambda: 1000, TxnConfig(60_000), tracer=tracer
    )
    reply = init(coordinator)
    open_transaction(coordinator, reply.producer_id, reply.producer_epoch)
    ended = coordinator.end_txn(
        3, "tx", reply.producer_id, reply.producer_epoch, commit=False, now=20
    )
    written(coordinator, ended, now=20_000)
    moves = [
        (e.previous_state, e.state, ts)
        for ts, e in tracer.records
        if isinstance(e, TxnStateChanged)
    ]
    assert moves == [
        ("Empty", "Empty", 0.0),
        ("Empty", "Ongoing", 0.0),
        ("Ongoing", "PrepareAbort", 20.0),
    ]


def test_a_completion_whose_record_fails_is_written_again_after_a_backoff(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: once the markers are written nobody asks again, so a CompleteCommit
    # whose write fails (too few in-sync replicas of __transaction_state) is not
    # forgotten: the coordinator writes it again after retry_backoff_ms, and the id is
    # served again once it is committed (Kafka's txnLogAppendRetryQueue).
    reply = init(coordinator)
    pid, epoch = reply.producer_id, reply.producer_epoch
    open_transaction(coordinator, pid, epoch)
    written(coordinator, coordinator.end_txn(3, "tx", pid, epoch, commit=True, now=20))
    coordinator.markers_written("tx", 0, now=30)
    assert coordinator.complete_write("tx", ErrorCode.not_enough_replicas, 31) == (
        TxnResult()
    )
    assert coordinator.next_deadline() == 131
    again = coordinator.on_timer(131)
    [record] = again.records
    assert read_value(record.value or b"").state is S.COMPLETE_COMMIT
    written(coordinator, again, now=132)
    begun = coordinator.add_partitions_to_txn(4, "tx", pid, epoch, OUT, now=133)
    assert begun.records  # CompleteCommit is in: a new transaction may begin


def test_a_late_report_of_an_earlier_write_completes_nothing(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee: a write answered NOT_COORDINATOR when its partition was unloaded may
    # still be reported by the log later; by then the partition may be loaded again
    # and the id have a new write on its way. The late report (an earlier write id)
    # leaves the new write waiting for its own record.
    first = coordinator.init_producer_id(1, "tx", 30_000, None, now=5)
    [stale] = first.records
    coordinator.unload_partition(0)
    coordinator.manager.load_partition(0, [], coordinator_epoch=1)
    second = coordinator.init_producer_id(2, "tx", 30_000, None, now=6)
    [current] = second.records
    assert current.write_id != stale.write_id
    late = coordinator.complete_write("tx", ErrorCode.none, 7, stale.write_id)
    assert late == TxnResult()
    done = coordinator.complete_write("tx", ErrorCode.none, 8, current.write_id)
    assert [r.request_id for r in done.replies] == [2]


def test_verify_only_says_which_partitions_are_in_the_transaction_writing_nothing(
    coordinator: TransactionCoordinator,
) -> None:
    # Guarantee (KIP-890 part 1, Kafka's handleVerifyPartitionsInTransaction): a
    # partition added is NONE, one not added TRANSACTION_ABORTABLE, the producer is
    # checked as for an add (unknown id, other producer, stale epoch), an ending
    # transaction is CONCURRENT_TRANSACTIONS; a verification never writes or adds.
    reply = init(coordinator)
    pid, epoch = reply.producer_id, reply.producer_epoch
    extra = TopicPartition("out", 7)
    asked = OUT | {extra}
    before = coordinator.verify_partitions_in_txn("tx", pid, epoch, asked)
    assert before == dict.fromkeys(asked, ErrorCode.transaction_abortable)
    open_transaction(coordinator, pid, epoch)
    verified = coordinator.verify_partitions_in_txn("tx", pid, epoch, asked)
    assert verified == {
        **dict.fromkeys(OUT, ErrorCode.none),
        extra: ErrorCode.transaction_abortable,
    }
    assert coordinator.verify_partitions_in_txn("tx", pid, epoch, asked) == verified
    refusals = {
        ("unknown", pid, epoch): ErrorCode.invalid_producer_id_mapping,
        ("tx", pid + 1, epoch): ErrorCode.invalid_producer_id_mapping,
        ("tx", pid, epoch - 1): ErrorCode.producer_fenced,
        ("", pid, epoch): ErrorCode.invalid_request,
    }
    for (txn_id, p, e), error in refusals.items():
        answer = coordinator.verify_partitions_in_txn(txn_id, p, e, OUT)
        assert answer == dict.fromkeys(OUT, error)
    ended = coordinator.end_txn(3, "tx", pid, epoch, commit=False, now=20)
    written(coordinator, ended)
    ending = coordinator.verify_partitions_in_txn("tx", pid, epoch, OUT)
    assert ending == dict.fromkeys(OUT, ErrorCode.concurrent_transactions)
