"""The Log keeps transactions (KIP-98): the last stable offset, markers, the
``.txnindex`` of each segment and read_committed reads, as Kafka's UnifiedLog does."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.log import (
    LATEST_TIMESTAMP,
    AbortedTxn,
    AbortedTxnServed,
    EndTxnMarker,
    FetchIsolation,
    InvalidProducerEpochError,
    InvalidRecordError,
    LastStableOffsetMoved,
    Log,
    LogConfig,
    TimestampAndOffset,
    TransactionCoordinatorFencedError,
    TxnMarkerWritten,
    build_batch,
    clean,
    end_txn_marker_batch,
    make_records,
    read_batch_header,
)
from minikafka.log.testing import ManualClock, keyed_batch, txn_batch, value_batch
from minikafka.trace.testing import RecordingTracer

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)
PID, OTHER = 7, 8


def open_log(
    dir: Path, *, had_clean_shutdown: bool = True, high_watermark: int = 0
) -> Log:
    return Log.open(
        dir / "topic-0",
        CONFIG,
        had_clean_shutdown=had_clean_shutdown,
        high_watermark=high_watermark,
        clock=ManualClock(),
    )


def txn_index_path(log: Log, base_offset: int, suffix: str = "") -> Path:
    return log.dir / f"{base_offset:020d}.txnindex{suffix}"


def test_an_open_transaction_holds_the_lso_until_its_marker_is_below_the_hw(
    tmp_path: Path,
) -> None:
    # Guarantee: the LSO is the first offset of the oldest undecided transaction; a
    # marker decides it, but only once the marker is replicated (below the HW) may the
    # LSO pass it; with nothing undecided the LSO is the HW.
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(2), leader_epoch=0)  # offsets 0-1
    log.append_as_leader(txn_batch(PID, 0, 0, count=3), leader_epoch=0)  # 2-4
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 2
    marker = log.append_txn_marker(PID, 0, True, 0, leader_epoch=0)
    assert marker.first_offset == 5
    log.update_high_watermark(5)  # the marker itself is not replicated yet
    assert log.last_stable_offset == 2
    log.maybe_increment_high_watermark(6)
    assert log.last_stable_offset == 6 == log.high_watermark


def test_a_client_may_not_append_a_control_batch(tmp_path: Path) -> None:
    # Guarantee: a producer's request carrying a control batch is refused (Kafka's
    # LogValidator for origin CLIENT) and nothing is written.
    log = open_log(tmp_path)
    forged = end_txn_marker_batch(
        EndTxnMarker(True, 0), producer_id=PID, producer_epoch=0, timestamp=0
    )
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(bytearray(forged), leader_epoch=0)
    assert log.log_end_offset == 0


def test_a_marker_from_a_fenced_epoch_writes_nothing(tmp_path: Path) -> None:
    # Guarantee: a marker of an older producer epoch is INVALID_PRODUCER_EPOCH and one
    # from an older coordinator epoch TRANSACTION_COORDINATOR_FENCED, both raised
    # before anything reaches the log; the transaction stays open.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 3, 0), leader_epoch=0)
    log.append_txn_marker(PID, 3, True, coordinator_epoch=5, leader_epoch=0)
    log.append_as_leader(txn_batch(PID, 3, 1), leader_epoch=0)  # offset 2
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        log.append_txn_marker(PID, 2, True, coordinator_epoch=5, leader_epoch=0)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_txn_marker(PID, 3, True, coordinator_epoch=4, leader_epoch=0)
    assert log.log_end_offset == end
    log.update_high_watermark(end)
    assert log.last_stable_offset == 2


def test_a_marker_is_a_control_batch_of_the_producer_with_the_leader_epoch(
    tmp_path: Path,
) -> None:
    # Guarantee: the marker is one control record under the producer's id and epoch,
    # stamped with the leader epoch (which the epoch cache learns); it keeps the
    # producer's epoch and sequence, so the next transaction continues the sequence.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=1)
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=4)
    *_, header = list(log.batches())[-1]
    assert header.is_control
    assert header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (PID, 0)
    assert header.partition_leader_epoch == 4
    assert log.leader_epoch_cache.latest_epoch == 4
    entry = log.producer_state.last_entry(PID)
    assert entry is not None
    assert entry.last_seq == 1
    log.append_as_leader(txn_batch(PID, 0, 2), leader_epoch=4)  # no sequence error


def test_an_abort_is_indexed_in_the_txnindex_of_its_segment(tmp_path: Path) -> None:
    # Guarantee: an aborted transaction becomes an entry (producer, first offset,
    # marker offset, the LSO after it) of the .txnindex of the segment holding the
    # marker, created with that first entry; a commit adds none.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    log.append_as_leader(txn_batch(OTHER, 0, 0), leader_epoch=0)  # 2
    log.append_txn_marker(PID, 0, True, 0, leader_epoch=0)  # 3
    assert not txn_index_path(log, 0).exists()
    log.append_as_leader(txn_batch(PID, 0, 2), leader_epoch=0)  # 4
    abort = log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)
    segment = log.active_segment
    assert segment.txn_index is not None
    # OTHER's transaction, open since 2, is the LSO the abort left.
    assert segment.txn_index.entries() == [AbortedTxn(PID, 4, abort.first_offset, 2)]
    assert txn_index_path(log, segment.base_offset).stat().st_size == 34


def test_a_follower_keeps_the_same_transactions_as_its_leader(tmp_path: Path) -> None:
    # Guarantee: markers fetched by a follower end the same transactions and write the
    # same .txnindex entries as on the leader (Kafka analyses a follower's batches the
    # same way), so a follower that becomes leader answers read_committed alike.
    leader = open_log(tmp_path / "a")
    leader.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)
    leader.append_as_leader(txn_batch(OTHER, 0, 0), leader_epoch=0)
    leader.append_txn_marker(PID, 0, False, 0, leader_epoch=0)
    fetched = leader.read(0, 1 << 20)
    assert fetched.records is not None
    follower = open_log(tmp_path / "b")
    follower.append_as_follower(fetched.records.read_bytes())
    for log in (leader, follower):
        log.update_high_watermark(log.log_end_offset)
    assert follower.last_stable_offset == leader.last_stable_offset == 2
    assert follower.active_segment.txn_index is not None
    assert leader.active_segment.txn_index is not None
    assert (
        follower.active_segment.txn_index.entries()
        == leader.active_segment.txn_index.entries()
    )
    with pytest.raises(TransactionCoordinatorFencedError):
        follower.append_txn_marker(OTHER, 0, True, -2, leader_epoch=1)


def test_truncating_a_marker_reopens_its_transaction(tmp_path: Path) -> None:
    # Guarantee: a truncation that removes a marker removes its .txnindex entry and
    # reopens its transaction, which holds the LSO again.
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(1), leader_epoch=0)  # 0
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 1-2
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 3
    log.append_as_leader(value_batch(1), leader_epoch=0)  # 4
    assert log.active_segment.txn_index is not None
    log.truncate_to(3)
    assert log.active_segment.txn_index.entries() == []
    assert txn_index_path(log, log.active_segment.base_offset).stat().st_size == 0
    log.update_high_watermark(3)
    assert log.last_stable_offset == 1
    log.truncate_fully_and_start_at(10)
    assert log.last_stable_offset == 10


def test_read_committed_stops_at_the_lso_and_lists_the_aborted_transactions(
    tmp_path: Path,
) -> None:
    # Guarantee: a TXN_COMMITTED read ends at the LSO and carries every aborted
    # transaction its records overlap; read_uncommitted reads are unchanged (no list).
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 2
    log.append_as_leader(value_batch(1), leader_epoch=0)  # 3
    log.append_as_leader(txn_batch(OTHER, 0, 0), leader_epoch=0)  # 4: open
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 4
    committed = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert committed.aborted_transactions == (AbortedTxn(PID, 0, 2, 3),)
    assert committed.records is not None
    data = committed.records.read_bytes()
    offsets = []
    position = 0
    while position < len(data):
        last = read_batch_header(data, position)
        offsets.append(last.base_offset)
        position += last.size
    assert offsets == [0, 2, 3]  # nothing at or past the LSO
    uncommitted = log.read(0, 1 << 20, max_offset=log.high_watermark)
    assert uncommitted.aborted_transactions is None
    assert uncommitted.records is not None
    assert uncommitted.records.length > len(data)
    past = log.read(3, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert past.aborted_transactions == ()  # the abort ended before offset 3
    empty = log.read(4, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert empty.records is None
    assert empty.aborted_transactions == ()


def test_read_committed_collects_aborts_across_segments_until_one_is_complete(
    tmp_path: Path,
) -> None:
    # Guarantee: the search goes on to later segments (a transaction's abort may be in
    # a later segment than its records) and stops at the first entry whose LSO
    # reaches the bound, as Kafka's collectAbortedTransactions does.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    for _ in range(6):
        log.append_as_leader(value_batch(1, 300), leader_epoch=0)
    assert len(log.segments) > 1
    abort = log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)
    log.append_as_leader(value_batch(1, 10), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    first_segment_only = log.read(0, 100, isolation=FetchIsolation.TXN_COMMITTED)
    assert first_segment_only.aborted_transactions == (
        AbortedTxn(PID, 0, abort.first_offset, abort.first_offset + 1),
    )
    inside = log.read(2, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert inside.aborted_transactions == first_segment_only.aborted_transactions
    after = log.read(
        abort.first_offset + 1, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED
    )
    assert after.records is not None
    assert after.aborted_transactions == ()  # the aborted range ends before it


def test_high_watermark_isolation_reads_to_the_hw(tmp_path: Path) -> None:
    # Guarantee: HIGH_WATERMARK ends a read at the HW, LOG_END at the log end, as a
    # max_offset of either did before.
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(2), leader_epoch=0)
    log.append_as_leader(value_batch(2), leader_epoch=0)
    log.update_high_watermark(2)
    hw = log.read(0, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK)
    end = log.read(0, 1 << 20, isolation=FetchIsolation.LOG_END)
    assert hw == log.read(0, 1 << 20, max_offset=2)
    assert end == log.read(0, 1 << 20)
    assert hw.size < end.size


def test_the_txnindex_follows_its_segment_to_deletion(tmp_path: Path) -> None:
    # Guarantee: retention renames a segment's .txnindex to .deleted with its other
    # files, and the purge removes it.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0), leader_epoch=0)
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)
    log.roll()
    log.append_as_leader(value_batch(1), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert txn_index_path(log, 0).exists()
    log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments() == 1
    assert not txn_index_path(log, 0).exists()
    assert txn_index_path(log, 0, ".deleted").exists()
    log.purge_deleted_segments(log.clock() + CONFIG.file_delete_delay_ms)
    assert not txn_index_path(log, 0, ".deleted").exists()


def test_recovery_rebuilds_the_txnindex_of_rescanned_segments(tmp_path: Path) -> None:
    # Guarantee: after an unclean shutdown, the segments recovery rescans get their
    # .txnindex written again from the markers (a lost or stale file is made whole),
    # and the open transactions come back with the producer state.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 2
    log.append_as_leader(txn_batch(OTHER, 0, 0), leader_epoch=0)  # 3: open
    assert log.active_segment.txn_index is not None
    expected = log.active_segment.txn_index.entries()
    log.close()
    path = txn_index_path(log, 0)
    path.write_bytes(b"\x00" * 34)  # a stale entry the markers do not say
    reopened = open_log(tmp_path, had_clean_shutdown=False, high_watermark=4)
    assert reopened.active_segment.txn_index is not None
    assert reopened.active_segment.txn_index.entries() == expected
    assert reopened.last_stable_offset == 3
    reopened.close()
    path.unlink()  # lost altogether
    again = open_log(tmp_path, had_clean_shutdown=False, high_watermark=4)
    assert again.active_segment.txn_index is not None
    assert again.active_segment.txn_index.entries() == expected


def test_list_offsets_latest_is_where_each_isolation_stops(tmp_path: Path) -> None:
    # Guarantee: ListOffsets' latest offset (-1) is the LSO for read_committed, the HW
    # for read_uncommitted, and the log end without an isolation (Kafka's
    # lastFetchableOffset).
    log = open_log(tmp_path)
    log.append_as_leader(value_batch(2, 10), leader_epoch=2)  # 0-1
    log.append_as_leader(txn_batch(PID, 0, 0), leader_epoch=2)  # 2: open
    log.append_as_leader(value_batch(1, 10), leader_epoch=2)  # 3
    log.update_high_watermark(3)
    latest = LATEST_TIMESTAMP
    committed = log.fetch_offset_by_timestamp(latest, FetchIsolation.TXN_COMMITTED)
    uncommitted = log.fetch_offset_by_timestamp(latest, FetchIsolation.HIGH_WATERMARK)
    plain = log.fetch_offset_by_timestamp(latest)
    assert committed == TimestampAndOffset(-1, 2, 2)
    assert uncommitted == TimestampAndOffset(-1, 3, 2)
    assert plain is not None
    assert plain.offset == 4


def test_markers_and_lso_moves_are_traced_on_the_log_clock(tmp_path: Path) -> None:
    # Guarantee: each marker (leader's or follower's) is a txn_marker event and each
    # move of the LSO an lso_moved event, stamped with the log's clock; an LSO that
    # only follows the HW with no transaction is not traced.
    clock = ManualClock()
    tracer = RecordingTracer()
    log = Log.open(tmp_path / "topic-0", CONFIG, clock=clock, tracer=tracer)
    log.append_as_leader(value_batch(1, 10), leader_epoch=0)  # 0
    log.update_high_watermark(1)
    log.append_as_leader(txn_batch(PID, 0, 0), leader_epoch=0)  # 1
    log.update_high_watermark(2)  # the open transaction holds the LSO at 1
    clock.advance(1_000)
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 2
    log.update_high_watermark(3)
    assert tracer.of_type(TxnMarkerWritten) == [
        TxnMarkerWritten("topic", 0, PID, False, 2)
    ]
    assert tracer.of_type(LastStableOffsetMoved) == [
        LastStableOffsetMoved("topic", 0, 1, 3)
    ]
    stamps = [ts for ts, e in tracer.records if isinstance(e, TxnMarkerWritten)]
    assert stamps == [clock.now_ms / 1000]


def test_each_aborted_range_a_read_committed_read_lists_is_traced(
    tmp_path: Path,
) -> None:
    # Guarantee: a read_committed read that lists aborted transactions emits one
    # aborted_txn_served event per range, with the read's start offset, stamped with
    # the log's clock; a read_uncommitted read, or one that lists none, emits nothing.
    clock = ManualClock()
    tracer = RecordingTracer()
    log = Log.open(tmp_path / "topic-0", CONFIG, clock=clock, tracer=tracer)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 2
    log.append_as_leader(txn_batch(PID + 1, 0, 0), leader_epoch=0)  # 3
    log.append_txn_marker(PID + 1, 0, False, 0, leader_epoch=0)  # 4
    log.append_as_leader(value_batch(1), leader_epoch=0)  # 5
    log.update_high_watermark(log.log_end_offset)
    clock.advance(2_000)
    log.read(0, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK)
    assert tracer.of_type(AbortedTxnServed) == []
    log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert tracer.of_type(AbortedTxnServed) == [
        AbortedTxnServed("topic", 0, 0, PID, 0, 2),
        AbortedTxnServed("topic", 0, 0, PID + 1, 3, 4),
    ]
    stamps = {ts for ts, e in tracer.records if isinstance(e, AbortedTxnServed)}
    assert stamps == {clock.now_ms / 1000}
    log.read(5, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)  # past both aborts
    assert len(tracer.of_type(AbortedTxnServed)) == 2


def test_compaction_keeps_the_aborted_transactions_and_stops_at_the_lso(
    tmp_path: Path,
) -> None:
    # Guarantee: the cleaned segment indexes every aborted transaction the segments it
    # replaces did (their markers are kept), and nothing from an undecided transaction
    # on is cleaned (Kafka's first unstable offset bounds the cleaner).
    config = LogConfig(
        segment_bytes=700,
        index_interval_bytes=100,
        cleanup_policy=frozenset({"compact"}),
        file_delete_delay_ms=0,
    )
    clock = ManualClock()
    log = Log.open(tmp_path / "topic-0", config, clock=clock)

    def keyed_txn(producer_id: int) -> bytearray:
        records = make_records([(b"k", b"v")], timestamp_ms=clock())
        return bytearray(
            build_batch(
                records,
                producer_id=producer_id,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            )
        )

    log.append_as_leader(keyed_txn(PID), leader_epoch=0)  # 0
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 1
    for i in range(30):
        log.append_as_leader(keyed_batch([(b"k", b"%d" % i)]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    entries = [e for s in log.segments if s.txn_index for e in s.txn_index.entries()]
    assert entries == [AbortedTxn(PID, 0, 1, 2)]
    assert clean(log, 0, clock()) is not None
    first = log.segments[0]
    assert first.txn_index is not None
    assert first.txn_index.entries() == entries
    committed = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert committed.aborted_transactions == tuple(entries)

    other = Log.open(tmp_path / "topic-1", config, clock=clock)
    other.append_as_leader(keyed_txn(OTHER), leader_epoch=0)  # 0: stays open
    for i in range(30):
        other.append_as_leader(keyed_batch([(b"k", b"%d" % i)]), leader_epoch=0)
    other.update_high_watermark(other.log_end_offset)
    assert other.last_stable_offset == 0
    assert clean(other, 0, clock()) is None  # nothing below the LSO


def test_the_lso_never_falls_below_the_log_start(tmp_path: Path) -> None:
    # Guarantee: when DeleteRecords moves the log start past an open transaction's
    # first offset, the LSO is the log start (Kafka's first unstable offset is never
    # below it), so read_committed reads from the log start still make progress.
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=3), leader_epoch=0)  # 0-2, open
    log.append_as_leader(value_batch(2, 10), leader_epoch=0)  # 3-4
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0
    log.maybe_increment_log_start_offset(2)
    assert log.last_stable_offset == 2


def test_the_offset_index_bounds_a_read_as_kafka_does(tmp_path: Path) -> None:
    # Guarantee: the upper bound of a read's search for aborted transactions is the
    # offset of the first index entry at or past the read's end (Kafka's
    # fetchUpperBoundOffset), None past the last entry.
    log = open_log(tmp_path)
    for _ in range(6):
        log.append_as_leader(value_batch(1, 60), leader_epoch=0)
    index = log.active_segment.offset_index
    entries = index.entries()
    assert len(entries) >= 2
    (first_offset, first_position), (second_offset, _) = entries[:2]
    assert index.fetch_upper_bound_offset(first_position) == first_offset
    assert index.fetch_upper_bound_offset(first_position + 1) == second_offset
    assert index.fetch_upper_bound_offset(log.active_segment.size + 1) is None


def test_a_damaged_txnindex_is_rewritten_even_after_a_clean_shutdown(
    tmp_path: Path,
) -> None:
    # Guarantee: a .txnindex that fails its check (a torn entry), or whose segment is
    # rescanned because its offset index is gone, is rewritten from the markers at
    # opening, although the clean shutdown's snapshot is past it (Kafka rebuilds an
    # index that fails its sanity check the same way).
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(PID, 0, 0, count=2), leader_epoch=0)  # 0-1
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)  # 2
    log.append_as_leader(value_batch(2, 10), leader_epoch=0)  # 3-4
    assert log.active_segment.txn_index is not None
    expected = log.active_segment.txn_index.entries()
    log.close()
    path = txn_index_path(log, 0)
    path.write_bytes(path.read_bytes()[:-1])  # torn
    again = open_log(tmp_path)
    assert again.active_segment.txn_index is not None
    assert again.active_segment.txn_index.entries() == expected
    assert path.stat().st_size == 34
    again.close()
    (log.dir / f"{0:020d}.index").unlink()  # the segment is rescanned
    third = open_log(tmp_path)
    assert third.active_segment.txn_index is not None
    assert third.active_segment.txn_index.entries() == expected


def test_only_the_stale_txnindex_is_rewritten(tmp_path: Path) -> None:
    # Guarantee: when an older segment's .txnindex is damaged, it alone is rewritten;
    # the later segments' indexes, which the replay passes over, keep their entries
    # once (never appended twice).
    log = open_log(tmp_path)
    for producer in (PID, OTHER, 9):
        log.append_as_leader(txn_batch(producer, 0, 0), leader_epoch=0)
        log.append_txn_marker(producer, 0, False, 0, leader_epoch=0)
        log.roll()
    with_entries = [s for s in log.segments if s.txn_index is not None]
    assert len(with_entries) == 3
    expected = [s.txn_index.entries() for s in with_entries if s.txn_index]
    log.close()
    first = txn_index_path(log, 0)
    first.write_bytes(first.read_bytes()[:-1])  # torn
    again = open_log(tmp_path)
    indexes = [s.txn_index for s in again.segments if s.txn_index is not None]
    assert [index.entries() for index in indexes] == expected
