"""The leader's defence against hanging transactions (KIP-890 part 1): a transactional
batch whose producer has no transaction open in the partition is appended only with the
guard of the coordinator's yes, as Kafka's UnifiedLog checks it (virtual time: the log's
clock is a ManualClock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common import TopicPartition
from minikafka.log import (
    NO_VERIFICATION_NEEDED,
    AppendOrigin,
    InvalidTxnStateError,
    Log,
    LogConfig,
    LogManager,
    OutOfOrderSequenceError,
    maybe_start_transaction_verification,
)
from minikafka.log._manager import PRODUCER_ID_EXPIRATION_MS
from minikafka.log.testing import ManualClock, txn_batch, value_batch

PID, OTHER = 7, 8


def open_log(dir: Path, clock: ManualClock | None = None) -> Log:
    return Log.open(
        dir / "topic-0",
        LogConfig(segment_bytes=10_000),
        had_clean_shutdown=True,
        high_watermark=0,
        clock=clock or ManualClock(),
    )


def test_an_unverified_first_transactional_batch_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    # Guarantee: with verification in force, a transactional batch of a producer with
    # no transaction open here and no guard is INVALID_TXN_STATE, and the log is
    # unchanged; without verification (None) it is appended as before KIP-890.
    log = open_log(tmp_path)
    with pytest.raises(InvalidTxnStateError) as refused:
        log.append_as_leader(
            txn_batch(PID, 0, 0), 0, verification_guard=NO_VERIFICATION_NEEDED
        )
    assert refused.value.error_code.name == "invalid_txn_state"
    assert log.log_end_offset == 0
    assert not log.ongoing_txns.is_open(PID)
    log.append_as_leader(txn_batch(PID, 0, 0), 0)  # verification off
    assert log.log_end_offset == 1


def test_the_guard_of_the_coordinators_yes_lets_the_batch_in_once(
    tmp_path: Path,
) -> None:
    # Guarantee: the guard handed out when verification starts lets the batch in; the
    # append clears it, and the producer's next batches need none while its
    # transaction is open; a non-transactional batch never needs one.
    log = open_log(tmp_path)
    guard = maybe_start_transaction_verification(log, PID, 0, 0)
    assert guard is not NO_VERIFICATION_NEEDED
    assert maybe_start_transaction_verification(log, PID, 0, 0) is guard  # one question
    log.append_as_leader(txn_batch(PID, 0, 0), 0, verification_guard=guard)
    assert log.ongoing_txns.verifications.guard(PID) is NO_VERIFICATION_NEEDED
    assert maybe_start_transaction_verification(log, PID, 1, 0) is (
        NO_VERIFICATION_NEEDED
    )
    log.append_as_leader(
        txn_batch(PID, 0, 1), 0, verification_guard=NO_VERIFICATION_NEEDED
    )
    log.append_as_leader(value_batch(1), 0, verification_guard=NO_VERIFICATION_NEEDED)
    assert log.log_end_offset == 3


def test_a_stale_yes_after_a_marker_does_not_open_a_transaction(
    tmp_path: Path,
) -> None:
    # Guarantee (the ABA case of Kafka's comment): a guard handed out before the
    # producer's transaction ended here is worthless after its marker; the
    # producer's next transaction must be verified afresh.
    log = open_log(tmp_path)
    first = maybe_start_transaction_verification(log, PID, 0, 0)
    log.append_as_leader(txn_batch(PID, 0, 0), 0, verification_guard=first)
    stale = maybe_start_transaction_verification(log, OTHER, 0, 0)
    log.append_txn_marker(OTHER, 0, False, 0, leader_epoch=0)  # OTHER's abort
    log.append_txn_marker(PID, 0, False, 0, leader_epoch=0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn_batch(OTHER, 0, 0), 0, verification_guard=stale)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn_batch(PID, 0, 1), 0, verification_guard=first)
    fresh = maybe_start_transaction_verification(log, PID, 1, 0)
    assert fresh is not first
    log.append_as_leader(txn_batch(PID, 0, 1), 0, verification_guard=fresh)
    assert log.ongoing_txns.is_open(PID)


def test_another_producers_guard_does_not_verify(tmp_path: Path) -> None:
    # Guarantee: a guard is one producer's: presenting another's is refused.
    log = open_log(tmp_path)
    maybe_start_transaction_verification(log, PID, 0, 0)
    other = maybe_start_transaction_verification(log, OTHER, 0, 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn_batch(PID, 0, 0), 0, verification_guard=other)
    assert log.log_end_offset == 0


def test_a_later_sequence_may_not_overtake_the_lowest_being_verified(
    tmp_path: Path,
) -> None:
    # Guarantee: while a verification is under way, a client's batch with a higher
    # sequence than the lowest seen is OUT_OF_ORDER_SEQUENCE (its earlier batch must
    # go first); a lower sequence of the same epoch becomes the one waited for, and a
    # newer epoch restarts it. A coordinator's batch has no sequence of its own and
    # is not held to it.
    log = open_log(tmp_path)
    guard = maybe_start_transaction_verification(log, PID, 5, 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(txn_batch(PID, 0, 6), 0, verification_guard=guard)
    assert maybe_start_transaction_verification(log, PID, 3, 0) is guard
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(txn_batch(PID, 0, 5), 0, verification_guard=guard)
    maybe_start_transaction_verification(log, PID, 0, 1)  # a bumped epoch: from 0
    log.append_as_leader(txn_batch(PID, 1, 0), 0, verification_guard=guard)
    assert log.log_end_offset == 1
    offsets_guard = maybe_start_transaction_verification(log, OTHER, -1, 0)
    log.append_as_leader(
        txn_batch(OTHER, 0, 0),
        0,
        origin=AppendOrigin.COORDINATOR,
        verification_guard=offsets_guard,
    )
    assert log.log_end_offset == 2


def test_an_unverified_batch_is_invalid_txn_state_before_any_sequence_check(
    tmp_path: Path,
) -> None:
    # Guarantee (Kafka's order in analyzeAndValidateProducerState): a transactional
    # batch with no transaction open here and without the guard of a verification is
    # INVALID_TXN_STATE even when its sequence is above the lowest being verified; the
    # sequence is checked (OUT_OF_ORDER_SEQUENCE) only for a batch that presents it.
    log = open_log(tmp_path)
    guard = maybe_start_transaction_verification(log, PID, 0, 0)
    other = maybe_start_transaction_verification(log, OTHER, 0, 0)
    for presented in (NO_VERIFICATION_NEEDED, other):
        with pytest.raises(InvalidTxnStateError):
            log.append_as_leader(txn_batch(PID, 0, 3), 0, verification_guard=presented)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(txn_batch(PID, 0, 3), 0, verification_guard=guard)
    assert log.log_end_offset == 0


def test_verifications_never_answered_expire(tmp_path: Path) -> None:
    # Guarantee: a question never answered is forgotten after the expiration time
    # (Kafka's producer.id.expiration.ms), not kept for ever.
    clock = ManualClock()
    log = open_log(tmp_path, clock)
    maybe_start_transaction_verification(log, PID, 0, 0)
    clock.advance(1_000)
    maybe_start_transaction_verification(log, OTHER, 0, 0)
    log.ongoing_txns.verifications.remove_expired(clock.now_ms, 1_000)
    assert log.ongoing_txns.verifications.guard(PID) is NO_VERIFICATION_NEEDED
    assert log.ongoing_txns.verifications.guard(OTHER) is not NO_VERIFICATION_NEEDED
    assert len(log.ongoing_txns.verifications) == 1


def test_the_retention_pass_forgets_verifications_a_day_old(tmp_path: Path) -> None:
    # Guarantee: the LogManager's periodic pass drops verification state older than
    # Kafka's producer.id.expiration.ms default, and keeps younger state.
    clock = ManualClock()
    manager = LogManager.startup([tmp_path / "data"], clock=clock)
    log = manager.get_or_create_log(TopicPartition("t", 0), LogConfig())
    maybe_start_transaction_verification(log, PID, 0, 0)
    manager.cleanup_logs()
    assert log.ongoing_txns.verifications.guard(PID) is not NO_VERIFICATION_NEEDED
    clock.advance(PRODUCER_ID_EXPIRATION_MS)
    manager.cleanup_logs()
    assert log.ongoing_txns.verifications.guard(PID) is NO_VERIFICATION_NEEDED
