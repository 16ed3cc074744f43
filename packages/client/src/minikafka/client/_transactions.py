"""The producer's side of transactions (KIP-98, KIP-447): Kafka's ``TransactionManager``.

A transactional producer (``transactional.id`` set) writes to several partitions, and
commits a consumer group's offsets, all or nothing. This core keeps the transaction's
state and decides which request the producer makes next; it sends nothing itself:

- ``init_transactions``: FindCoordinator (key type 1, the transactional id) for the
  transaction coordinator, then InitProducerId with the transactional id and
  ``transaction.timeout.ms``: the coordinator ends (aborts) what an earlier producer of
  the same id left open and bumps the epoch, which fences that producer for good;
- a record for a partition not yet in the transaction makes the partition *new*: an
  AddPartitionsToTxn must be answered before the Sender sends a batch to it (the
  broker refuses a transactional batch for a partition the coordinator does not know
  to be in the transaction, and the coordinator must know where to write markers);
- ``send_offsets_to_transaction``: AddOffsetsToTxn (the group's ``__consumer_offsets``
  partition joins the transaction), then TxnOffsetCommit to the *group* coordinator,
  with the consumer's generation, member id and group instance id so a zombie member's
  commit is refused (KIP-447);
- ``commit``/``abort``: EndTxn, once every batch of the transaction is answered; an
  abort after a batch that had taken its sequence numbers failed ends with another
  InitProducerId naming the current id and epoch, which bumps the epoch (KIP-360): the
  partition's sequences start again instead of staying behind a gap.

The states and the moves between them are one table, :data:`TRANSITIONS`, checked on
every move; an illegal one raises (h11's ``_state.py`` style). A failed send inside a
transaction moves to ABORTABLE_ERROR (only an abort is possible then); a fenced
producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) or a refused transactional id moves
to FATAL_ERROR (the producer can only be closed). Coordinator errors are retried, with
a new FindCoordinator where the coordinator moved, after ``retry.backoff.ms``.

A core: every call that may depend on time takes ``now``; :meth:`on_timer` returns the
one request to make now (one transactional request in flight at a time, as in Kafka),
:meth:`next_deadline` when a backed-off request may go, and the replies of a result
are :class:`TxnCompleted`: an API call's outcome, by the operation id it returned.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Mapping
from typing import Never, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition

from ._message import STATE, KafkaError, KafkaException
from ._txn_plans import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    AddOffsetsToTxnPlan,
    AddPartitionsToTxnPlan,
    ConsumerGroupMetadata,
    EndTxnPlan,
    FindCoordinatorPlan,
    InitProducerIdPlan,
    TxnAnswer,
    TxnCompleted,
    TxnOffsetCommitPlan,
    TxnPlan,
)


class TransactionState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING_TRANSACTION = "committing_transaction"
    ABORTING_TRANSACTION = "aborting_transaction"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"


_S = TransactionState
TRANSITIONS: Mapping[TransactionState, frozenset[TransactionState]] = {
    _S.UNINITIALIZED: frozenset({_S.INITIALIZING, _S.FATAL_ERROR}),
    _S.INITIALIZING: frozenset({_S.READY, _S.FATAL_ERROR}),
    _S.READY: frozenset({_S.IN_TRANSACTION, _S.FATAL_ERROR}),
    _S.IN_TRANSACTION: frozenset(
        {
            _S.COMMITTING_TRANSACTION,
            _S.ABORTING_TRANSACTION,
            _S.ABORTABLE_ERROR,
            _S.FATAL_ERROR,
        }
    ),
    # A batch or the EndTxn itself may fail while committing: then only abort is left.
    _S.COMMITTING_TRANSACTION: frozenset(
        {_S.READY, _S.ABORTABLE_ERROR, _S.FATAL_ERROR}
    ),
    # An abort after a batch failed bumps the epoch (KIP-360): INITIALIZING again.
    _S.ABORTING_TRANSACTION: frozenset({_S.READY, _S.INITIALIZING, _S.FATAL_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.ABORTING_TRANSACTION, _S.FATAL_ERROR}),
    _S.FATAL_ERROR: frozenset(),
}
"""From each state, the states it may move to (Kafka's ``State.isTransitionValid``)."""

FENCED = frozenset(
    {
        ErrorCode.producer_fenced,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.transactional_id_authorization_failed,
        ErrorCode.unsupported_version,
    }
)
"""Errors after which the producer can do nothing but close (FATAL_ERROR): another
producer took the transactional id (a higher epoch), the id is not this client's to
use, or the broker cannot speak these requests."""
_COORDINATOR_MOVED = frozenset(
    {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}
)
_RETRY = frozenset(
    {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.concurrent_transactions,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.operation_not_attempted,
        ErrorCode.request_timed_out,
    }
)


TxnResult: TypeAlias = CoreResult[Never, TxnCompleted, TxnPlan]


@attrs.frozen
class _Step:
    operation: int
    kind: str  # "init", "add_offsets", "commit_offsets", "end"
    group: ConsumerGroupMetadata | None = None
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    commit: bool = False


# --- the core -------------------------------------------------------------------------


@attrs.define
class TransactionManager:
    transactional_id: str
    transaction_timeout_ms: int
    retry_backoff_ms: int
    state: TransactionState = TransactionState.UNINITIALIZED
    producer_id: int = -1
    producer_epoch: int = -1
    last_error: KafkaError | None = None
    # FindCoordinator's answers: (key type, key) -> node id
    _coordinators: dict[tuple[int, str], int] = attrs.field(factory=dict)
    _new_partitions: set[TopicPartition] = attrs.field(factory=set)
    _pending_partitions: set[TopicPartition] = attrs.field(factory=set)
    _partitions: set[TopicPartition] = attrs.field(factory=set)
    _started: bool = False  # the coordinator knows of this transaction
    # A batch that had its sequence failed: the partition's sequences have a gap that
    # only a new epoch closes, so the abort ends with InitProducerId (KIP-360).
    _epoch_bump_required: bool = False
    # what is left to do, in order: the API call's operation id, the step ("init",
    # "add_offsets", "commit_offsets", "end") and what the step needs
    _steps: collections.deque[_Step] = attrs.field(factory=collections.deque)
    _in_flight: TxnPlan | None = None
    _held: bool = False  # the EndTxn waits for the batches: a Sender answer wakes it
    _retry_at: float = 0.0
    _next_operation: int = 0
    _operation: int | None = None  # the API call waiting on the current steps
    # outcomes decided by a call that returns no result (a batch failed): given with
    # the next result
    _late: list[TxnCompleted] = attrs.field(factory=list)

    # --- moves ----------------------------------------------------------------------

    def _move(self, to: TransactionState) -> None:
        if to not in TRANSITIONS[self.state]:
            raise KafkaException(
                KafkaError(
                    STATE,
                    f"transactional id {self.transactional_id}: cannot move from "
                    f"{self.state.name} to {to.name}",
                )
            )
        self.state = to

    def _refuse_in_error(self) -> None:
        if self.state is TransactionState.FATAL_ERROR and self.last_error is not None:
            raise KafkaException(self.last_error)

    def _new_operation(self) -> int:
        self._next_operation += 1
        self._operation = self._next_operation
        return self._operation

    # --- the API's calls --------------------------------------------------------------

    def init_transactions(self) -> int:
        """Get a producer id and epoch for the transactional id: an operation id."""
        self._refuse_in_error()
        if self.state is TransactionState.INITIALIZING and self._operation is not None:
            return self._operation  # called again after a timeout: the same wait
        self._move(TransactionState.INITIALIZING)
        operation = self._new_operation()
        self._steps.append(_Step(operation, "init"))
        return operation

    def begin_transaction(self) -> None:
        self._refuse_in_error()
        self._move(TransactionState.IN_TRANSACTION)

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """A record for ``tp`` was appended in the transaction: add the partition to it
        first. Raises unless a transaction is open."""
        if self.state is not TransactionState.IN_TRANSACTION:
            self._refuse_in_error()
            if self.state is TransactionState.ABORTABLE_ERROR and self.last_error:
                raise KafkaException(self.last_error)
            raise KafkaException(
                KafkaError(STATE, f"no transaction is open ({self.state.name})")
            )
        if tp not in self._partitions and tp not in self._pending_partitions:
            self._new_partitions.add(tp)

    def is_send_allowed(self, tp: TopicPartition) -> bool:
        """The Sender may send ``tp``'s transactional batch: the coordinator has it."""
        return tp in self._partitions

    def send_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        group: ConsumerGroupMetadata,
    ) -> int:
        """AddOffsetsToTxn, then TxnOffsetCommit: an operation id."""
        if self.state is not TransactionState.IN_TRANSACTION:
            self._refuse_in_error()
            if self.state is TransactionState.ABORTABLE_ERROR and self.last_error:
                raise KafkaException(self.last_error)
            raise KafkaException(
                KafkaError(STATE, f"no transaction is open ({self.state.name})")
            )
        if self._operation is not None:
            raise KafkaException(KafkaError(STATE, "an earlier call is still waiting"))
        operation = self._new_operation()
        self._steps.append(
            _Step(operation, "add_offsets", group, tuple(sorted(offsets.items())))
        )
        return operation

    def begin_commit(self) -> int:
        """Commit once every batch is answered: an operation id. Raises the abortable
        error if the transaction can only be aborted."""
        self._refuse_in_error()
        if (
            self.state is TransactionState.COMMITTING_TRANSACTION
            and self._operation is not None
        ):
            return self._operation
        if self.state is TransactionState.ABORTABLE_ERROR and self.last_error:
            raise KafkaException(_requires_abort(self.last_error))
        self._move(TransactionState.COMMITTING_TRANSACTION)
        return self._end(commit=True)

    def begin_abort(self) -> int:
        """Abort once the batches in flight are answered (the caller has dropped those
        not sent): an operation id."""
        self._refuse_in_error()
        if (
            self.state is TransactionState.ABORTING_TRANSACTION
            and self._operation is not None
        ):
            return self._operation
        self._move(TransactionState.ABORTING_TRANSACTION)
        # What was still to be sent for the transaction is dropped with it.
        self._steps.clear()
        self._new_partitions.clear()
        if self._operation is not None:  # a send_offsets given up on by its caller
            self._complete(
                self._operation, KafkaError(STATE, "the transaction aborted")
            )
        return self._end(commit=False)

    def _end(self, commit: bool) -> int:
        operation = self._new_operation()
        self._steps.append(_Step(operation, "end", commit=commit))
        return operation

    # --- what the Sender tells it -------------------------------------------------------

    def on_batch_failed(self, error: KafkaError, sequenced: bool) -> None:
        """A batch of the transaction failed for good: the transaction can only be
        aborted (or, fenced, nothing more can be done). ``sequenced``: the batch had
        taken its sequence numbers (it was sent)."""
        self._epoch_bump_required |= sequenced
        if error.code() in FENCED:
            self._fatal(error)
        elif self.state in (
            TransactionState.IN_TRANSACTION,
            TransactionState.COMMITTING_TRANSACTION,
        ):
            self._abortable(error)

    # --- requests -----------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When the next request may go (a backoff); None while one is in flight or
        nothing is to be done."""
        if (
            self._in_flight is not None
            or self._held
            or self.state is TransactionState.FATAL_ERROR
            or not (self._steps or self._new_partitions)
        ):
            return None
        return self._retry_at

    def on_timer(self, now: float, batches_pending: bool) -> TxnResult:
        """The request to make now, if any: one at a time. ``batches_pending``: the
        Sender still has batches queued or in flight (EndTxn waits for them)."""
        done = self._take_late()
        self._held = False
        if self._in_flight is not None or now < self._retry_at:
            return CoreResult(replies=tuple(done))
        plan = self._next_plan(batches_pending, done)
        self._in_flight = plan
        return CoreResult(replies=tuple(done), messages=() if plan is None else (plan,))

    def _coordinator(self, key_type: int, key: str) -> int | None:
        return self._coordinators.get((key_type, key))

    def _txn_node(self) -> int | FindCoordinatorPlan:
        node = self._coordinator(TRANSACTION_KEY_TYPE, self.transactional_id)
        if node is None:
            return FindCoordinatorPlan(self.transactional_id, TRANSACTION_KEY_TYPE)
        return node

    def _next_plan(
        self, batches_pending: bool, done: list[TxnCompleted]
    ) -> TxnPlan | None:
        if self.state is TransactionState.FATAL_ERROR:
            return None
        node = self._txn_node()
        if isinstance(node, FindCoordinatorPlan):
            return node if (self._steps or self._new_partitions) else None
        tid, pid, epoch = self.transactional_id, self.producer_id, self.producer_epoch
        if self._steps and self._steps[0].kind == "init":
            return InitProducerIdPlan(
                node, tid, self.transaction_timeout_ms, pid, epoch
            )
        # Partitions first: the Sender is waiting to send them, and EndTxn must come
        # after every AddPartitionsToTxn of the transaction.
        if self._new_partitions and self.state is not _S.ABORTING_TRANSACTION:
            self._pending_partitions = set(self._new_partitions)
            self._new_partitions.clear()
            return AddPartitionsToTxnPlan(
                node, tid, pid, epoch, tuple(sorted(self._pending_partitions))
            )
        if not self._steps:
            return None
        step = self._steps[0]
        if step.group is not None and step.kind == "add_offsets":
            return AddOffsetsToTxnPlan(node, tid, pid, epoch, step.group.group_id)
        if step.group is not None and step.kind == "commit_offsets":
            group_id = step.group.group_id
            group_node = self._coordinator(GROUP_KEY_TYPE, group_id)
            if group_node is None:
                return FindCoordinatorPlan(group_id, GROUP_KEY_TYPE)
            return TxnOffsetCommitPlan(
                group_node, tid, pid, epoch, step.group, step.offsets
            )
        # EndTxn: after every batch of the transaction is answered
        if batches_pending:
            self._held = True
            return None
        if not (self._started or self._partitions):
            # Nothing reached the coordinator: there is nothing for it to end.
            self._steps.popleft()
            self._finish_end(step.operation)
            done += self._take_late()
            return None
        return EndTxnPlan(node, tid, pid, epoch, committed=step.commit)

    def on_response(self, plan: TxnPlan, answer: TxnAnswer, now: float) -> TxnResult:
        """``plan``'s answer: the next steps, and the operations it completes."""
        self._in_flight = None
        error = answer.error
        if self.state is TransactionState.FATAL_ERROR:
            return CoreResult(replies=tuple(self._take_late()))
        if error in FENCED:
            self._fatal(KafkaError(error, answer.message))
        elif error in _COORDINATOR_MOVED or (
            isinstance(plan, FindCoordinatorPlan) and error != ErrorCode.none
        ):
            self._forget_coordinator(plan)
            self._retry(plan, now)
        elif error in _RETRY:
            self._retry(plan, now)
        else:
            self._on_answer(plan, answer)
        return CoreResult(replies=tuple(self._take_late()))

    def _on_answer(self, plan: TxnPlan, answer: TxnAnswer) -> None:
        if isinstance(plan, FindCoordinatorPlan):
            self._coordinators[plan.key_type, plan.key] = answer.node_id
        elif isinstance(plan, InitProducerIdPlan):
            self._on_init(answer)
        elif isinstance(plan, AddPartitionsToTxnPlan):
            self._on_add_partitions(answer)
        elif isinstance(plan, AddOffsetsToTxnPlan):
            self._on_add_offsets(answer)
        elif isinstance(plan, TxnOffsetCommitPlan):
            self._on_txn_offset_commit(answer)
        else:
            self._on_end_txn(answer)

    def on_request_failed(self, plan: TxnPlan, now: float) -> TxnResult:
        """No answer (the connection failed, the request timed out): look for the
        coordinator again and retry."""
        self._in_flight = None
        self._forget_coordinator(plan)
        self._retry(plan, now)
        return CoreResult(replies=tuple(self._take_late()))

    # --- answers, one kind each ---------------------------------------------------------

    def _pop_step(self, kind: str) -> _Step | None:
        """The step an answer is for; None when it was dropped meanwhile (an abort)."""
        if self._steps and self._steps[0].kind == kind:
            return self._steps.popleft()
        return None

    def _on_init(self, answer: TxnAnswer) -> None:
        step = self._pop_step("init")
        if step is None:
            return
        if answer.error != ErrorCode.none:
            self._fatal(KafkaError(answer.error, answer.message))
            return
        self.producer_id, self.producer_epoch = (
            answer.producer_id,
            answer.producer_epoch,
        )
        self._move(TransactionState.READY)
        self._complete(step.operation)

    def _on_add_partitions(self, answer: TxnAnswer) -> None:
        added, self._pending_partitions = self._pending_partitions, set()
        if answer.error != ErrorCode.none:
            # TOPIC_AUTHORIZATION_FAILED and the like: the transaction cannot commit.
            self._abortable(KafkaError(answer.error, answer.message))
            return
        self._partitions |= added
        self._started = True

    def _on_add_offsets(self, answer: TxnAnswer) -> None:
        if answer.error == ErrorCode.none:
            self._started = True  # the coordinator has it, even if aborted meanwhile
        step = self._pop_step("add_offsets")
        if step is None:
            return
        if answer.error != ErrorCode.none:
            self._abortable(KafkaError(answer.error, answer.message))
            return
        self._started = True
        self._steps.appendleft(attrs.evolve(step, kind="commit_offsets"))

    def _on_txn_offset_commit(self, answer: TxnAnswer) -> None:
        step = self._pop_step("commit_offsets")
        if step is None:
            return
        if answer.error != ErrorCode.none:
            # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID: this member
            # no longer owns the partitions; its offsets must not commit.
            self._abortable(KafkaError(answer.error, answer.message))
            return
        self._complete(step.operation)

    def _on_end_txn(self, answer: TxnAnswer) -> None:
        step = self._pop_step("end")
        if step is None:
            return
        if answer.error != ErrorCode.none:
            # INVALID_TXN_STATE and the like: the coordinator and this producer no
            # longer agree on the transaction; nothing safe is left to do.
            self._fatal(KafkaError(answer.error, answer.message))
            return
        if not step.commit and self._epoch_bump_required:
            self._epoch_bump_required = False
            self._clear_transaction()
            self._move(TransactionState.INITIALIZING)
            self._steps.appendleft(_Step(step.operation, "init"))
            return
        self._finish_end(step.operation)

    def _finish_end(self, operation: int) -> None:
        self._move(TransactionState.READY)
        self._clear_transaction()
        self._complete(operation)

    def _clear_transaction(self) -> None:
        self._partitions.clear()
        self._pending_partitions.clear()
        self._started = False
        self.last_error = None

    def _complete(self, operation: int, error: KafkaError | None = None) -> None:
        if self._operation == operation:
            self._operation = None
        self._late.append(TxnCompleted(operation, error))

    def _take_late(self) -> list[TxnCompleted]:
        late, self._late = self._late, []
        return late

    # --- errors and retries -------------------------------------------------------------

    def _retry(self, plan: TxnPlan, now: float) -> None:
        if isinstance(plan, AddPartitionsToTxnPlan):
            # asked again with any partition that arrived meanwhile
            self._new_partitions |= self._pending_partitions
            self._pending_partitions = set()
        self._retry_at = now + self.retry_backoff_ms / 1000

    def _forget_coordinator(self, plan: TxnPlan) -> None:
        if isinstance(plan, FindCoordinatorPlan):
            return
        if isinstance(plan, TxnOffsetCommitPlan):
            self._coordinators.pop((GROUP_KEY_TYPE, plan.group.group_id), None)
        else:
            self._coordinators.pop((TRANSACTION_KEY_TYPE, self.transactional_id), None)

    def _abortable(self, error: KafkaError) -> None:
        """Only an abort is possible now: what was left to do is dropped, and the call
        waiting for it fails. An abort under way already goes on."""
        if self.state is TransactionState.ABORTING_TRANSACTION:
            return
        if self.state is not TransactionState.ABORTABLE_ERROR:
            self._move(TransactionState.ABORTABLE_ERROR)
        self.last_error = _requires_abort(error)
        self._drop_steps()

    def _fatal(self, error: KafkaError) -> None:
        if self.state is TransactionState.FATAL_ERROR:
            return  # the first fatal error is the one every call raises
        self._move(TransactionState.FATAL_ERROR)
        self.last_error = KafkaError(error.code(), error.str(), fatal=True)
        self._drop_steps()

    def _drop_steps(self) -> None:
        self._steps.clear()
        self._new_partitions.clear()
        if self._operation is not None:
            self._complete(self._operation, self.last_error)


def _requires_abort(error: KafkaError) -> KafkaError:
    return KafkaError(error.code(), error.str(), txn_requires_abort=True)
