"""Idempotent producers (KIP-98): duplicates, sequences, epochs, and the state across restarts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import (
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    InvalidProducerEpochError,
    InvalidRecordError,
    Log,
    LogAppendInfo,
    LogConfig,
    OutOfOrderSequenceError,
    ProducerStateManager,
    RecordBatchHeader,
    clean,
)
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)

MAX_SEQUENCE = 2**31 - 1
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def open_log(
    dir: Path, config: LogConfig = CONFIG, *, had_clean_shutdown: bool = False
) -> Log:
    return Log.open(
        dir / "topic-0",
        config,
        had_clean_shutdown=had_clean_shutdown,
        clock=ManualClock(),
    )


def produce(producer_id: int, epoch: int, sequence: int, count: int = 1) -> bytes:
    """An idempotent producer's batch as it goes on the wire, and again when retried.

    Each record's value names its producer, epoch and sequence, so a record appended
    twice shows in the log.
    """
    values = [
        (None, b"%d/%d/%d" % (producer_id, epoch, (sequence + i) % 2**31))
        for i in range(count)
    ]
    return bytes(
        keyed_batch(
            values,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
    )


def send(log: Log, batch: bytes) -> LogAppendInfo:
    # The leader writes offsets into the buffer it is given: each send gets a fresh copy
    # of the producer's bytes, as a retry on the wire would.
    return log.append_as_leader(bytearray(batch), leader_epoch=0)


def crash(log: Log) -> None:
    """An unclean shutdown: drop the descriptors, flush and write nothing more."""
    for segment in log.segments:
        segment.close_handlers()


# --- duplicates ------------------------------------------------------------------------


def test_a_retry_of_each_of_the_last_five_batches_is_answered_with_its_offsets(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    send(log, bytes(value_batch(3)))  # offsets and sequences differ
    batches = [produce(1, 0, 2 * i, count=2) for i in range(7)]
    originals = [send(log, batch) for batch in batches]
    assert [info.first_offset for info in originals] == [3, 5, 7, 9, 11, 13, 15]
    records = read_all_records(log)

    for batch, original in list(zip(batches, originals, strict=True))[
        -NUM_BATCHES_TO_RETAIN:
    ]:
        answer = send(log, batch)
        assert answer.duplicate
        assert (answer.first_offset, answer.last_offset) == (
            original.first_offset,
            original.last_offset,
        )
        assert answer.max_timestamp == original.max_timestamp
        assert answer.valid_bytes == 0
        # As Kafka 4.1 answers a retry, even on a CreateTime topic (the differential
        # corpus compares them): the original's max timestamp as its append time.
        assert answer.log_append_time == original.max_timestamp
        assert not answer.empty
    assert log.log_end_offset == 17
    assert read_all_records(log) == records


def test_a_retry_older_than_the_last_five_batches_is_out_of_order(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    batches = [produce(1, 0, i) for i in range(NUM_BATCHES_TO_RETAIN + 1)]
    for batch in batches:
        send(log, batch)
    with pytest.raises(OutOfOrderSequenceError) as caught:
        send(log, batches[0])  # the sixth-oldest: forgotten
    assert caught.value.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == NUM_BATCHES_TO_RETAIN + 1
    assert send(log, batches[1]).duplicate  # the fifth-oldest is still known


def test_a_duplicate_under_log_append_time_gets_the_original_append_time(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    log = Log.open(
        tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), clock=clock
    )
    batch = produce(1, 0, 0)
    original = send(log, batch)
    clock.advance(5000)
    answer = send(log, batch)
    assert answer.duplicate
    assert answer.log_append_time == original.log_append_time == clock.now_ms - 5000


# --- sequences and epochs ------------------------------------------------------------


def test_a_gap_in_the_sequence_is_refused_and_nothing_of_the_request_is_appended(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    send(log, produce(1, 0, 0, count=3))
    with pytest.raises(OutOfOrderSequenceError):
        send(log, produce(1, 0, 4))  # 3 is missing
    # A request of several batches: the last one's error refuses the whole request.
    request = (
        bytes(value_batch(2)) + produce(1, 0, 3) + produce(2, 0, 7) + produce(1, 0, 5)
    )
    with pytest.raises(OutOfOrderSequenceError) as caught:
        send(log, request)
    assert caught.value.position == len(request) - len(produce(1, 0, 5))
    assert log.log_end_offset == 3
    assert len(read_all_records(log)) == 3
    # Within a request, later batches follow the earlier ones.
    info = send(log, produce(1, 0, 3) + produce(1, 0, 4, count=2))
    assert (info.first_offset, info.last_offset, info.batch_count) == (3, 5, 2)


def test_a_new_epoch_must_start_at_sequence_zero(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    old = produce(1, 0, 0, count=3)
    send(log, old)
    with pytest.raises(OutOfOrderSequenceError):
        send(log, produce(1, 1, 3))  # a new epoch does not go on with the old sequence
    assert send(log, produce(1, 1, 0)).first_offset == 3
    assert send(log, produce(1, 1, 1)).first_offset == 4
    # The old epoch's batches are fenced, not duplicates, once the new epoch has written.
    with pytest.raises(InvalidProducerEpochError):
        send(log, old)
    assert log.log_end_offset == 5


def test_a_lower_epoch_is_fenced(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    send(log, produce(1, 5, 0))
    for sequence in (0, 1):
        with pytest.raises(InvalidProducerEpochError) as caught:
            send(log, produce(1, 4, sequence))
        assert caught.value.error_code == 47  # INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 1


def test_the_errors_are_invalid_record_errors_with_kafkas_codes() -> None:
    # The broker answers any InvalidRecordError with its error_code.
    assert issubclass(OutOfOrderSequenceError, InvalidRecordError)
    assert issubclass(InvalidProducerEpochError, InvalidRecordError)
    assert (
        OutOfOrderSequenceError.error_code,
        InvalidProducerEpochError.error_code,
    ) == (45, 47)


def test_a_producer_the_log_does_not_know_may_start_at_any_sequence(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    send(log, produce(1, 0, 0))
    assert send(log, produce(2, 3, 1234, count=2)).first_offset == 1  # KIP-360
    with pytest.raises(OutOfOrderSequenceError):
        send(log, produce(2, 3, 1237))
    assert send(log, produce(2, 3, 1236)).first_offset == 3


@pytest.mark.parametrize(
    ("first", "count", "after"), [(MAX_SEQUENCE - 1, 3, 1), (MAX_SEQUENCE, 1, 0)]
)
def test_sequences_wrap_from_2_31_minus_1_to_0(
    tmp_path: Path, first: int, count: int, after: int
) -> None:
    log = open_log(tmp_path)
    send(log, produce(1, 0, first - 1))
    wrapping = produce(1, 0, first, count=count)
    assert RecordBatchHeader.read(wrapping).last_sequence == (after - 1) % 2**31
    send(log, wrapping)
    assert send(log, wrapping).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        send(log, produce(1, 0, after + 1))
    assert send(log, produce(1, 0, after)).first_offset == 1 + count


def test_batches_without_a_producer_id_carry_no_state(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batch = bytes(value_batch(2))
    assert not send(log, batch).duplicate
    assert not send(log, batch).duplicate  # the same bytes again: appended again
    assert log.log_end_offset == 4
    assert log.producer_state.producers == {}
    assert log.producer_state.last_producer_offset == -1


def test_an_idempotent_batch_needs_a_sequence(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    with pytest.raises(InvalidRecordError) as caught:
        send(log, bytes(keyed_batch([(None, b"v")], producer_id=1, producer_epoch=0)))
    assert caught.value.error_code == 87  # INVALID_RECORD
    assert log.log_end_offset == 0


def test_a_producer_entry_keeps_the_last_five_batches() -> None:
    state = ProducerStateManager()
    for i in range(7):
        header = RecordBatchHeader.read(produce(1, 0, 2 * i, count=2))
        state.update(attrs.evolve(header, base_offset=10 * i))
    entry = state.last_entry(1)
    assert entry is not None
    assert [batch.first_seq for batch in entry.batch_metadata] == [4, 6, 8, 10, 12]
    assert (entry.last_seq, entry.last_data_offset, state.last_producer_offset) == (
        13,
        61,
        61,
    )
    state.update(attrs.evolve(RecordBatchHeader.read(produce(1, 1, 0)), base_offset=70))
    assert [batch.first_offset for batch in entry.batch_metadata] == [70]  # a new epoch


# --- the state across restarts, truncation, replication and compaction -----------------


def test_the_state_is_rebuilt_after_a_clean_restart(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = [produce(1, 0, i, count=2) for i in range(0, 16, 2)]
    second = [produce(2, 7, i) for i in range(3)]
    answers: dict[bytes, LogAppendInfo] = {}
    for i, batch in enumerate(first):
        answers[batch] = send(log, batch)
        if i < len(second):
            answers[second[i]] = send(log, second[i])
        else:
            send(log, bytes(value_batch(1)))  # a writer without idempotence in between
    log.flush()
    log.close()

    again = open_log(tmp_path, had_clean_shutdown=True)
    assert again.log_end_offset == log.log_end_offset
    # The close's snapshot keeps each producer's last batch only, as Kafka's does: a
    # retry of it is a duplicate, a retry of an older one a sequence error.
    assert again.replayed_from == log.log_end_offset
    for batch in [first[-1], second[-1]]:
        answer = send(again, batch)
        assert answer.duplicate
        assert answer.first_offset == answers[batch].first_offset
    for batch in [*first[-6:-1], *second[:-1]]:
        with pytest.raises(OutOfOrderSequenceError):
            send(again, batch)
    with pytest.raises(OutOfOrderSequenceError):
        send(again, produce(2, 7, 4))
    assert send(again, produce(2, 7, 3)).first_offset == log.log_end_offset


def test_the_state_after_an_unclean_shutdown_is_what_survived(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    kept = [send(log, produce(1, 0, i)) for i in range(3)]
    log.flush()
    torn = produce(1, 0, 3)
    send(log, torn)
    crash(log)
    path = log.active_segment.log_path
    os.truncate(path, os.path.getsize(path) - 5)  # the last write was torn

    again = open_log(tmp_path, LogConfig(), had_clean_shutdown=False)
    assert again.log_end_offset == 3
    # duplicate
    assert send(again, produce(1, 0, 2)).first_offset == kept[2].first_offset
    retried = send(again, torn)  # the producer's retry of what was lost is appended
    assert not retried.duplicate
    assert retried.first_offset == 3
    assert [r.value for r in read_all_records(again)] == [
        b"1/0/0",
        b"1/0/1",
        b"1/0/2",
        b"1/0/3",
    ]


def test_truncation_rebuilds_the_state(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batches = [produce(1, 0, i) for i in range(8)]
    for batch in batches:
        send(log, batch)
    assert log.truncate_to(4)
    # Batches 0..3 had left the five remembered; with 4..7 gone they are the last again.
    for offset, batch in enumerate(batches[:4]):
        answer = send(log, batch)
        assert (answer.duplicate, answer.first_offset) == (True, offset)
    with pytest.raises(OutOfOrderSequenceError):
        send(log, batches[5])
    answer = send(log, batches[4])
    assert (answer.duplicate, answer.first_offset) == (False, 4)


def test_truncation_above_every_producer_batch_keeps_the_state(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    send(log, produce(1, 0, 0))
    for _ in range(5):
        send(log, bytes(value_batch(1)))
    entry = log.producer_state.last_entry(1)
    assert log.truncate_to(3)
    assert log.producer_state.last_entry(1) is entry  # nothing rescanned
    assert send(log, produce(1, 0, 0)).duplicate


def test_truncating_fully_forgets_every_producer(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(3):
        send(log, produce(1, 0, i))
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {}
    assert send(log, produce(1, 0, 1)).first_offset == 100  # not a duplicate: gone


def test_a_follower_keeps_the_state_and_can_take_over(tmp_path: Path) -> None:
    leader = Log.open(tmp_path / "leader" / "topic-0", CONFIG, clock=ManualClock())
    follower = Log.open(tmp_path / "follower" / "topic-0", CONFIG, clock=ManualClock())
    batches = [produce(1, 0, i, count=2) for i in range(0, 12, 2)]
    originals = [send(leader, batch) for batch in batches]
    while follower.log_end_offset < leader.log_end_offset:
        fetched = leader.read(follower.log_end_offset, 10_000).records
        assert fetched is not None
        follower.append_as_follower(fetched.read_bytes())
    # The leader fails; the follower becomes leader and the producer retries its last batch.
    answer = send(follower, batches[-1])
    assert (answer.duplicate, answer.first_offset) == (True, originals[-1].first_offset)
    with pytest.raises(OutOfOrderSequenceError):
        send(follower, produce(1, 0, 13))
    assert send(follower, produce(1, 0, 12)).first_offset == leader.log_end_offset


def test_compaction_keeps_each_producers_last_batch(tmp_path: Path) -> None:
    config = LogConfig(
        segment_bytes=700, cleanup_policy=frozenset({"compact"}), file_delete_delay_ms=0
    )
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    send(
        log,
        bytes(
            keyed_batch(
                [(b"a", b"1")], producer_id=1, producer_epoch=0, base_sequence=0
            )
        ),
    )
    send(
        log,
        bytes(
            keyed_batch(
                [(b"b", b"2")], producer_id=1, producer_epoch=0, base_sequence=1
            )
        ),
    )
    # supersedes the producer's last record
    send(log, bytes(keyed_batch([(b"b", b"3")])))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert clean(log, 0, clock()) is not None
    assert [(r.offset, r.key) for r in read_all_records(log)] == [(0, b"a"), (2, b"b")]
    emptied = [header for _, _, header in log.batches() if header.base_offset == 1]
    assert [(h.record_count, h.producer_id, h.last_sequence) for h in emptied] == [
        (0, 1, 1)
    ]
    log.close()

    again = Log.open(tmp_path / "t-0", config, had_clean_shutdown=True, clock=clock)
    # Keyed: a compacted topic refuses records without a key before it looks at sequences.
    with pytest.raises(OutOfOrderSequenceError):
        send(
            again,
            bytes(
                keyed_batch(
                    [(b"c", b"4")], producer_id=1, producer_epoch=0, base_sequence=3
                )
            ),
        )
    retry = keyed_batch(
        [(b"c", b"4")], producer_id=1, producer_epoch=0, base_sequence=2
    )
    assert send(again, bytes(retry)).first_offset == 3


# --- the property -------------------------------------------------------------------------

PRODUCERS = 2
# (what, which producer, a number): send a new batch of 1 + n % 3 records; retry the
# (n % batches appended)-th last batch; bump the epoch; append 1 + n % 3 records without
# idempotence; restart, cleanly when n is even.
operations = st.lists(
    st.tuples(
        st.sampled_from(["send", "send", "retry", "retry", "bump", "plain", "restart"]),
        st.integers(0, PRODUCERS - 1),
        st.integers(0, 7),
    ),
    min_size=20,  # long enough for six batches of a producer, an epoch bump, a restart
    max_size=80,
)


@attrs.define
class ProducerModel:
    """A producer as the test drives it, and its batches the log has, in order."""

    epoch: int = 0
    next_sequence: int = 0
    # epoch, ...
    appended: list[tuple[int, bytes, LogAppendInfo]] = attrs.field(factory=list)
    # Where the last restart's replay began: a snapshot keeps only the last batch
    # below it, the replay every batch from it on.
    floor: int = 0

    def retained(self, back: int) -> bool:
        """Is the ``back``-th last batch still known to the log after the restarts?"""
        offsets = [info.first_offset for _, _, info in self.appended]
        first = offsets[-1 - back]
        below = [offset for offset in offsets if offset < self.floor]
        return first >= self.floor or (bool(below) and first == below[-1])


@settings(max_examples=100, deadline=None, derandomize=True)
@given(ops=operations)
def test_retries_never_append_a_batch_twice(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = open_log(Path(tmp))
        producers = [ProducerModel() for _ in range(PRODUCERS)]
        expected: list[bytes] = []  # every record's value, in offset order
        for kind, who, n in ops:
            producer = producers[who]
            if kind == "send":
                count = 1 + n % 3
                batch = produce(who, producer.epoch, producer.next_sequence, count)
                info = send(log, batch)
                assert (info.duplicate, info.first_offset) == (False, len(expected))
                producer.appended.append((producer.epoch, batch, info))
                expected += [
                    b"%d/%d/%d" % (who, producer.epoch, producer.next_sequence + i)
                    for i in range(count)
                ]
                producer.next_sequence += count
            elif kind == "retry" and producer.appended:
                back = n % len(producer.appended)  # 0: the last batch
                epoch, batch, original = producer.appended[-1 - back]
                log_epoch = producer.appended[-1][
                    0
                ]  # the epoch of its last batch in the log
                if epoch < log_epoch:
                    with pytest.raises(InvalidProducerEpochError):
                        send(log, batch)
                # the batches after it share its epoch
                elif back < NUM_BATCHES_TO_RETAIN and producer.retained(back):
                    answer = send(log, batch)
                    assert answer.duplicate
                    assert answer.first_offset == original.first_offset
                    assert answer.last_offset == original.last_offset
                else:
                    with pytest.raises(OutOfOrderSequenceError):
                        send(log, batch)
            elif kind == "bump":
                producer.epoch += 1
                producer.next_sequence = 0
            elif kind == "plain":
                count = 1 + n % 3
                assert send(log, bytes(value_batch(count))).first_offset == len(
                    expected
                )
                expected += [b"x" * 100] * count
            elif kind == "restart":
                log.flush()
                clean_shutdown = n % 2 == 0
                if clean_shutdown:
                    log.close()
                else:
                    crash(log)
                log = open_log(Path(tmp), had_clean_shutdown=clean_shutdown)
                for model in producers:
                    model.floor = log.replayed_from
        records = read_all_records(log)
        assert [r.offset for r in records] == list(range(len(expected)))
        assert [r.value for r in records] == expected
        idempotent = [r.value for r in records if r.value != b"x" * 100]
        assert len(idempotent) == len(set(idempotent))  # no batch twice
        log.close()


def test_a_coordinators_batches_are_checked_for_their_epoch_only(
    tmp_path: Path,
) -> None:
    # Guarantee (Kafka's AppendOrigin.COORDINATOR): the offsets a transaction commits
    # go in batches of the transaction's producer that always start at sequence 0, so
    # they are not held to the producer's sequence, and never taken for a retry; a
    # fenced epoch is still refused and nothing is written.
    log = open_log(tmp_path)
    for _ in range(3):
        info = log.append_as_leader(
            bytearray(produce(7, 2, 0)), 0, origin=AppendOrigin.COORDINATOR
        )
        assert not info.duplicate
    assert log.log_end_offset == 3
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(
            bytearray(produce(7, 1, 0)), 0, origin=AppendOrigin.COORDINATOR
        )
    assert log.log_end_offset == 3
    # A client's batch of the same producer at sequence 0 again is a retry.
    assert log.append_as_leader(bytearray(produce(7, 2, 0)), 0).duplicate
