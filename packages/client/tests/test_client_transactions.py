"""The TransactionManager core (KIP-98, KIP-447), driven by hand: no broker, no clock.

Every move of the transition table is made through the API and the answers that cause
it, every move the table does not list is refused, and each request comes in Kafka's
order: FindCoordinator, InitProducerId, AddPartitionsToTxn before a partition's first
batch, AddOffsetsToTxn then TxnOffsetCommit to the group's coordinator, EndTxn once the
batches are answered. Retriable errors wait ``retry.backoff.ms`` (read from
``next_deadline``, never slept).
"""

from __future__ import annotations

import itertools

import pytest
from kio.schema.errors import ErrorCode

from minikafka.client import (
    TRANSITIONS,
    AddOffsetsToTxnPlan,
    AddPartitionsToTxnPlan,
    ClientMetadata,
    ConsumerGroupMetadata,
    EndTxnPlan,
    FindCoordinatorPlan,
    InitProducerIdPlan,
    KafkaError,
    KafkaException,
    PendingRecord,
    ProducerConfig,
    RecordAccumulator,
    Sender,
    TopicInfo,
    TransactionManager,
    TransactionState,
    TxnAnswer,
    TxnOffsetCommitPlan,
    TxnPlan,
)
from minikafka.client._message import PURGE_QUEUE, STATE
from minikafka.common import TopicPartition
from minikafka.log import read_batch_header
from minikafka.net import Node

S = TransactionState
TID = "copier"
TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)
GROUP = ConsumerGroupMetadata("readers", 7, "member-1", "instance-1")
OK = TxnAnswer(ErrorCode.none)


def _state(tm: TransactionManager) -> TransactionState:
    """The state now (read through a call: each call into the core may move it)."""
    return tm.state


def _manager() -> TransactionManager:
    return TransactionManager(TID, 60_000, retry_backoff_ms=100)


def _next(tm: TransactionManager, now: float = 0.0, pending: bool = False) -> TxnPlan:
    [plan] = tm.on_timer(now, pending).messages
    return plan


def _idle(tm: TransactionManager, now: float = 0.0, pending: bool = False) -> None:
    assert tm.on_timer(now, pending).messages == ()


def _answer(
    tm: TransactionManager, plan: TxnPlan, answer: TxnAnswer = OK, now: float = 0.0
) -> list[tuple[int, KafkaError | None]]:
    return [(c.operation, c.error) for c in tm.on_response(plan, answer, now).replies]


def _ready(tm: TransactionManager | None = None) -> TransactionManager:
    """A manager past init_transactions: coordinator 3, producer id 42 epoch 0."""
    tm = tm or _manager()
    operation = tm.init_transactions()
    find = _next(tm)
    assert find == FindCoordinatorPlan(TID, 1)
    assert _answer(tm, find, TxnAnswer(ErrorCode.none, node_id=3)) == []
    init = _next(tm)
    assert init == InitProducerIdPlan(3, TID, 60_000)
    done = _answer(
        tm, init, TxnAnswer(ErrorCode.none, producer_id=42, producer_epoch=0)
    )
    assert done == [(operation, None)]
    assert _state(tm) is S.READY
    assert (tm.producer_id, tm.producer_epoch) == (42, 0)
    return tm


def _in_transaction(*partitions: TopicPartition) -> TransactionManager:
    tm = _ready()
    tm.begin_transaction()
    for tp in partitions:
        tm.maybe_add_partition(tp)
    if partitions:
        add = _next(tm)
        assert add == AddPartitionsToTxnPlan(3, TID, 42, 0, tuple(sorted(partitions)))
        _answer(tm, add)
    return tm


# --- the table --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"), list(itertools.product(TransactionState, repeat=2))
)
def test_every_move_outside_the_table_is_refused(
    source: TransactionState, target: TransactionState
) -> None:
    tm = _manager()
    tm.state = source
    if target in TRANSITIONS[source]:
        tm._move(target)
        assert tm.state is target
    else:
        with pytest.raises(KafkaException) as raised:
            tm._move(target)
        assert raised.value.args[0].code() == STATE
        assert tm.state is source


def test_fatal_error_is_the_only_state_without_a_way_out() -> None:
    assert [s for s, targets in TRANSITIONS.items() if not targets] == [S.FATAL_ERROR]
    assert all(S.FATAL_ERROR in TRANSITIONS[s] for s in S if s is not S.FATAL_ERROR)


# --- the legal moves, each made by what causes it -----------------------------------


def test_init_then_commit_moves_through_ready_and_committing() -> None:
    tm = _in_transaction(TP0, TP1)  # UNINITIALIZED -> INITIALIZING -> READY -> IN_TX
    assert _state(tm) is S.IN_TRANSACTION
    assert tm.is_send_allowed(TP0)
    operation = tm.begin_commit()
    assert _state(tm) is S.COMMITTING_TRANSACTION
    _idle(tm, pending=True)  # EndTxn waits for the batches
    assert tm.next_deadline() is None  # until the Sender's answers wake the shell
    end = _next(tm)
    assert end == EndTxnPlan(3, TID, 42, 0, committed=True)
    assert _answer(tm, end) == [(operation, None)]
    assert _state(tm) is S.READY
    assert not tm.is_send_allowed(TP0)  # the next transaction adds it again


def test_abort_moves_through_aborting_to_ready() -> None:
    tm = _in_transaction(TP0)
    operation = tm.begin_abort()
    assert _state(tm) is S.ABORTING_TRANSACTION
    end = _next(tm)
    assert end == EndTxnPlan(3, TID, 42, 0, committed=False)
    assert _answer(tm, end) == [(operation, None)]
    assert _state(tm) is S.READY


def test_an_empty_transaction_ends_without_endtxn() -> None:
    tm = _in_transaction()
    operation = tm.begin_commit()
    assert [c.operation for c in tm.on_timer(0.0, False).replies] == [operation]
    assert _state(tm) is S.READY


def test_a_failed_batch_leaves_only_abort() -> None:
    tm = _in_transaction(TP0)
    tm.on_batch_failed(KafkaError(ErrorCode.message_too_large), sequenced=False)
    assert _state(tm) is S.ABORTABLE_ERROR
    with pytest.raises(KafkaException) as raised:
        tm.begin_commit()
    error = raised.value.args[0]
    assert error.code() == ErrorCode.message_too_large
    assert error.txn_requires_abort()
    assert not error.fatal()
    with pytest.raises(KafkaException):
        tm.maybe_add_partition(TP1)
    operation = tm.begin_abort()  # ABORTABLE_ERROR -> ABORTING_TRANSACTION
    assert _answer(tm, _next(tm)) == [(operation, None)]
    assert _state(tm) is S.READY


def test_a_batch_failing_while_committing_fails_the_commit() -> None:
    tm = _in_transaction(TP0)
    operation = tm.begin_commit()
    _idle(tm, pending=True)
    tm.on_batch_failed(KafkaError(ErrorCode.record_list_too_large), sequenced=True)
    assert _state(tm) is S.ABORTABLE_ERROR  # COMMITTING -> ABORTABLE_ERROR
    [completed] = tm.on_timer(0.0, False).replies
    assert completed.operation == operation
    assert completed.error is not None
    assert completed.error.txn_requires_abort()
    # The abort ends with a new epoch: the failed batch left a gap in its sequences.
    abort = tm.begin_abort()
    _answer(tm, _next(tm))
    assert _state(tm) is S.INITIALIZING  # ABORTING_TRANSACTION -> INITIALIZING
    bump = _next(tm)
    assert bump == InitProducerIdPlan(3, TID, 60_000, producer_id=42, producer_epoch=0)
    done = _answer(
        tm, bump, TxnAnswer(ErrorCode.none, producer_id=42, producer_epoch=1)
    )
    assert done == [(abort, None)]
    assert (_state(tm), tm.producer_epoch) == (S.READY, 1)


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.producer_fenced,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.transactional_id_authorization_failed,
    ],
)
def test_fenced_or_refused_is_fatal_from_every_state(code: ErrorCode) -> None:
    # UNINITIALIZED/INITIALIZING: the answer to FindCoordinator or InitProducerId
    tm = _manager()
    operation = tm.init_transactions()
    find = _next(tm)
    done = _answer(tm, find, TxnAnswer(code))
    assert _state(tm) is S.FATAL_ERROR
    assert [op for op, _ in done] == [operation]
    # READY: a late batch answer
    tm = _ready()
    tm.on_batch_failed(KafkaError(code), sequenced=True)
    assert _state(tm) is S.FATAL_ERROR
    # IN_TRANSACTION: AddPartitionsToTxn
    tm = _ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    _answer(tm, _next(tm), TxnAnswer(code))
    assert _state(tm) is S.FATAL_ERROR
    # COMMITTING and ABORTING: EndTxn
    for commit in (True, False):
        tm = _in_transaction(TP0)
        operation = tm.begin_commit() if commit else tm.begin_abort()
        done = _answer(tm, _next(tm), TxnAnswer(code))
        assert _state(tm) is S.FATAL_ERROR
        assert [op for op, _ in done] == [operation]
    # ABORTABLE_ERROR
    tm = _in_transaction(TP0)
    tm.on_batch_failed(KafkaError(ErrorCode.message_too_large), sequenced=False)
    tm.on_batch_failed(KafkaError(code), sequenced=True)
    assert _state(tm) is S.FATAL_ERROR
    # and then every call raises the fatal error
    for call in (tm.begin_transaction, tm.begin_commit, tm.begin_abort):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value.args[0].code() == code
        assert raised.value.args[0].fatal()
    _idle(tm)


# --- calls the state does not allow -------------------------------------------------


def test_calls_out_of_order_are_refused() -> None:
    tm = _manager()
    for call in (tm.begin_transaction, tm.begin_commit, tm.begin_abort):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value.args[0].code() == STATE
    with pytest.raises(KafkaException):
        tm.maybe_add_partition(TP0)  # no transaction: produce() refused
    tm = _ready()
    with pytest.raises(KafkaException):
        tm.init_transactions()  # once
    with pytest.raises(KafkaException):
        tm.maybe_add_partition(TP0)
    with pytest.raises(KafkaException):
        tm.send_offsets({TP0: 1}, GROUP)
    tm.begin_transaction()
    with pytest.raises(KafkaException):
        tm.begin_transaction()
    tm.begin_commit()
    with pytest.raises(KafkaException):
        tm.maybe_add_partition(TP0)  # nothing joins a transaction being committed
    with pytest.raises(KafkaException):
        tm.begin_abort()
    assert _state(tm) is S.COMMITTING_TRANSACTION


# --- requests and retries -------------------------------------------------------------


def test_a_partition_is_added_before_its_first_batch() -> None:
    tm = _ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP1)
    tm.maybe_add_partition(TP0)
    assert not tm.is_send_allowed(TP0)
    add = _next(tm)
    assert isinstance(add, AddPartitionsToTxnPlan)
    assert add.partitions == (TP0, TP1)
    tm.maybe_add_partition(TP0)  # already asked: not asked twice
    _idle(tm)  # one request at a time
    assert not tm.is_send_allowed(TP0)
    _answer(tm, add)
    assert tm.is_send_allowed(TP0)
    assert tm.is_send_allowed(TP1)
    _idle(tm)


def test_offsets_go_to_the_group_coordinator_with_the_members_generation() -> None:
    tm = _in_transaction()
    operation = tm.send_offsets({TopicPartition("in", 0): 11}, GROUP)
    add = _next(tm)
    assert add == AddOffsetsToTxnPlan(3, TID, 42, 0, "readers")
    assert _answer(tm, add) == []
    find = _next(tm)
    assert find == FindCoordinatorPlan("readers", 0)
    _answer(tm, find, TxnAnswer(ErrorCode.none, node_id=5))
    commit = _next(tm)
    assert commit == TxnOffsetCommitPlan(
        5, TID, 42, 0, GROUP, ((TopicPartition("in", 0), 11),)
    )
    assert _answer(tm, commit) == [(operation, None)]
    # A transaction with only offsets still ends with EndTxn: the coordinator has it.
    tm.begin_commit()
    assert isinstance(_next(tm), EndTxnPlan)


def test_a_zombie_members_offsets_make_the_transaction_abortable() -> None:
    tm = _in_transaction()
    operation = tm.send_offsets({TopicPartition("in", 0): 11}, GROUP)
    _answer(tm, _next(tm))
    _answer(tm, _next(tm), TxnAnswer(ErrorCode.none, node_id=5))
    done = _answer(tm, _next(tm), TxnAnswer(ErrorCode.illegal_generation))
    assert [op for op, _ in done] == [operation]
    assert _state(tm) is S.ABORTABLE_ERROR


@pytest.mark.parametrize(
    "code",
    [ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress],
)
def test_retriable_errors_wait_the_backoff(code: ErrorCode) -> None:
    tm = _in_transaction(TP0)
    tm.begin_commit()
    end = _next(tm, now=10.0)
    _answer(tm, end, TxnAnswer(code), now=10.0)
    assert tm.next_deadline() == pytest.approx(10.1)
    _idle(tm, now=10.05)
    assert _next(tm, now=10.1) == end
    assert _state(tm) is S.COMMITTING_TRANSACTION


@pytest.mark.parametrize(
    "code", [ErrorCode.not_coordinator, ErrorCode.coordinator_not_available]
)
def test_a_moved_coordinator_is_found_again(code: ErrorCode) -> None:
    tm = _ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    add = _next(tm, now=1.0)
    _answer(tm, add, TxnAnswer(code), now=1.0)
    find = _next(tm, now=1.1)
    assert find == FindCoordinatorPlan(TID, 1)
    _answer(tm, find, TxnAnswer(ErrorCode.none, node_id=4), now=1.1)
    again = _next(tm, now=1.1)
    assert again == AddPartitionsToTxnPlan(4, TID, 42, 0, (TP0,))


def test_a_lost_answer_is_retried_at_a_new_coordinator_lookup() -> None:
    tm = _ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    add = _next(tm)
    tm.on_request_failed(add, now=0.0)
    assert _next(tm, now=0.1) == FindCoordinatorPlan(TID, 1)


# --- the Sender with a transaction manager -------------------------------------------


def test_the_sender_waits_for_the_partition_and_marks_the_batch() -> None:
    config = ProducerConfig.from_dict(
        {"bootstrap.servers": "127.0.0.1:9092", "transactional.id": TID}
    )
    accumulator = RecordAccumulator(16_384, 1 << 20, 0, 100)
    metadata = ClientMetadata((Node(-1, "127.0.0.1", 9092),))
    metadata.nodes = {1: Node(1, "127.0.0.1", 9001)}
    metadata.topics["out"] = TopicInfo(0, (1, 1))
    tm = _ready()
    sender = Sender(config, accumulator, metadata, transactions=tm)
    assert not sender.needs_producer_id()  # the transaction manager's InitProducerId
    sender.set_producer_id(tm.producer_id, tm.producer_epoch)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    accumulator.append(TP0, PendingRecord("out", None, b"v", (), 0), 0.0)
    assert sender.on_timer(1.0).messages == ()  # not added yet
    assert sender.next_deadline() is None
    assert sender.has_pending_batches()
    _answer(tm, _next(tm, pending=True))
    [plan] = sender.on_timer(1.0).messages
    [batch] = plan.batches
    header = read_batch_header(batch.build(config.compression_type), 0)
    assert header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (42, 0)
    # A failed batch makes the transaction abortable, the producer id stays.
    tm.begin_commit()
    sender.on_request_failed(plan, "gone", 2.0)
    sender.abort(KafkaError(PURGE_QUEUE, "aborted"), 2.0)
    assert _state(tm) is S.ABORTABLE_ERROR
    assert sender.producer_id == 42


def test_a_transactional_id_needs_idempotence() -> None:
    from minikafka.client import ConfigError

    base = {"bootstrap.servers": "127.0.0.1:9092", "transactional.id": TID}
    assert ProducerConfig.from_dict(base).transaction_timeout_ms == 60_000
    with pytest.raises(ConfigError, match=r"enable\.idempotence"):
        ProducerConfig.from_dict({**base, "enable.idempotence": "false"})
    with pytest.raises(ConfigError, match="acks"):
        ProducerConfig.from_dict({**base, "acks": "1"})
    with pytest.raises(ConfigError, match=r"max\.in\.flight"):
        ProducerConfig.from_dict({**base, "max.in.flight.requests.per.connection": "6"})
    with pytest.raises(ConfigError, match=r"transaction\.timeout\.ms"):
        ProducerConfig.from_dict({**base, "transaction.timeout.ms": "0"})


def test_a_second_fatal_error_keeps_the_first() -> None:
    tm = _in_transaction(TP0, TP1)
    tm.on_batch_failed(KafkaError(ErrorCode.invalid_producer_epoch), sequenced=True)
    tm.on_batch_failed(KafkaError(ErrorCode.producer_fenced), sequenced=True)
    assert _state(tm) is S.FATAL_ERROR
    assert tm.last_error is not None
    assert tm.last_error.code() == ErrorCode.invalid_producer_epoch


def test_an_error_answered_during_an_abort_does_not_stop_it() -> None:
    tm = _ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    add = _next(tm)
    operation = tm.begin_abort()
    tm.on_batch_failed(KafkaError(ErrorCode.message_too_large), sequenced=False)
    _answer(tm, add, TxnAnswer(ErrorCode.topic_authorization_failed))
    assert _state(tm) is S.ABORTING_TRANSACTION
    # nothing reached the coordinator: the abort ends without EndTxn
    assert [c.operation for c in tm.on_timer(0.0, False).replies] == [operation]
    assert _state(tm) is S.READY


# --- the wire -------------------------------------------------------------------------


def test_each_request_goes_in_the_version_a_client_sends_to_kafka() -> None:
    from kio.schema.txn_offset_commit.v4.request import TxnOffsetCommitRequest

    from minikafka.client._txn_wire import txn_request_body

    tp = TopicPartition("in", 0)
    versions = {
        type(txn_request_body(plan)).__name__: int(txn_request_body(plan).__version__)
        for plan in (
            FindCoordinatorPlan(TID, 1),
            InitProducerIdPlan(3, TID, 60_000),
            AddPartitionsToTxnPlan(3, TID, 42, 0, (TP0,)),
            AddOffsetsToTxnPlan(3, TID, 42, 0, "readers"),
            TxnOffsetCommitPlan(5, TID, 42, 0, GROUP, ((tp, 11),)),
            EndTxnPlan(3, TID, 42, 0, committed=True),
        )
    }
    # AddPartitionsToTxn v4+ is the brokers' own; EndTxn v5, TxnOffsetCommit v5 and
    # Produce v12 are transactions of version 2, which this producer does not speak.
    assert versions == {
        "FindCoordinatorRequest": 6,
        "InitProducerIdRequest": 5,
        "AddPartitionsToTxnRequest": 3,
        "AddOffsetsToTxnRequest": 4,
        "TxnOffsetCommitRequest": 4,
        "EndTxnRequest": 4,
    }
    commit = txn_request_body(TxnOffsetCommitPlan(5, TID, 42, 0, GROUP, ((tp, 11),)))
    assert isinstance(commit, TxnOffsetCommitRequest)
    assert (commit.generation_id, commit.member_id, commit.group_instance_id) == (
        7,
        "member-1",
        "instance-1",
    )
