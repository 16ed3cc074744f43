"""The ISR changes a leader proposes (KIP-497): which replicas are in sync is the
controller's to decide, so the leader only proposes, with AlterPartition.

A follower that has not caught up for ``replica.lag.time.max.ms`` is proposed out
(:meth:`IsrChanges.maybe_shrink_isr`, run by the isr-expiration task); one that has
reached the high watermark in the current leader epoch is proposed back in (on its
fetch, :meth:`IsrChanges._maybe_expand_isr`). One proposal is in flight at a time, built
on the partition epoch the leader knows, so a proposal made on stale information is
refused. While it is in flight the leader counts the *maximal* ISR for the high
watermark (the committed one plus any replica being added, a replica being removed
still counted), so no acknowledged write rests on fewer replicas than the controller
may decide. The controller's answer (:meth:`IsrChanges.on_isr_change_answer`) makes the
new ISR this leader's, drops the proposal only when the controller says it applied
nothing, and otherwise leaves it pending until the metadata replaces it: an answer can
follow a commit the leader has not heard of yet (the added replica elected leader in the
same step, when it completed a reassignment), and a leader that stopped counting that
replica would acknowledge writes the new leader never had.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from ._events import IsrChanged, IsrChangeProposed
from ._isr import (
    ISR_CHANGE_NOT_APPLIED,
    IsrChangeProposal,
    PendingIsrChange,
    ReplicaState,
)
from ._partition_base import PartitionBase


@attrs.define(eq=False)
class IsrChanges(PartitionBase):
    """A leader's proposals to shrink or expand the ISR, and the controller's answers."""

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the HW is computed over: the committed ISR, plus a replica whose
        addition is in flight (a removal in flight still counts the replica)."""
        pending = self.pending_isr_change
        return self.isr if pending is None else pending.maximal_isr

    def maybe_shrink_isr(self, now: float, max_lag: float) -> bool:
        """Propose dropping every follower not caught up within ``max_lag`` seconds
        (``replica.lag.time.max.ms``); True if a proposal was made."""
        if not self.is_leader or self.pending_isr_change is not None:
            return False
        out_of_sync = {
            b
            for b in self.isr
            if b != self.local_broker_id
            and (r := self.remote_replicas.get(b)) is not None
            and now - r.last_caught_up_time > max_lag
        }
        if not out_of_sync:
            return False
        # Until the controller agrees, the slow followers still count for the HW: the
        # shrink is not real before it commits (the maximal ISR stays the old one).
        self._propose(self.isr - out_of_sync, maximal=self.isr)
        if self.tracer.enabled:
            leaving = tuple(sorted(out_of_sync))
            lags = tuple(
                (now - self.remote_replicas[b].last_caught_up_time) * 1000
                for b in leaving
            )
            self._trace_proposal("shrink", leaving, lags, now)
        return True

    def _maybe_expand_isr(self, replica: ReplicaState, now: float) -> None:
        """Propose adding a follower back once it has caught up to the HW, in this epoch."""
        if not self.is_leader or self.pending_isr_change is not None:
            return
        if replica.broker_id in self.isr or replica.broker_id not in self.replicas:
            return
        start = self.leader_epoch_start_offset
        caught_up = replica.log_end_offset >= self.log.high_watermark and (
            start is not None and replica.log_end_offset >= start
        )
        if caught_up:
            grown = self.isr | {replica.broker_id}
            self._propose(grown, maximal=grown)
            if self.tracer.enabled:
                self._trace_proposal("expand", (replica.broker_id,), (0.0,), now)

    def _trace_proposal(
        self,
        kind: str,
        replicas: tuple[int, ...],
        lag_ms: tuple[float, ...],
        now: float,
    ) -> None:
        pending = self.pending_isr_change
        assert pending is not None
        tp = self.topic_partition
        self.tracer.emit(
            IsrChangeProposed(
                tp.topic,
                tp.partition,
                kind,
                self.leader_epoch,
                self.partition_epoch,
                tuple(sorted(self.isr)),
                pending.proposal.new_isr,
                replicas,
                lag_ms,
                self.log.high_watermark,
            ),
            now,
        )

    def _propose(self, new_isr: frozenset[int], *, maximal: frozenset[int]) -> None:
        proposal = IsrChangeProposal(
            self.topic_partition,
            self.topic_id,
            self.leader_epoch,
            tuple(sorted(new_isr)),
            self.partition_epoch,
        )
        self.pending_isr_change = PendingIsrChange(proposal, maximal)

    def take_isr_change(self) -> IsrChangeProposal | None:
        """The proposal to send now, if one waits unsent (each is sent once): the
        ReplicaManager takes it in the call that made it, as its result's message."""
        pending = self.pending_isr_change
        if pending is None or pending.sent:
            return None
        pending.sent = True
        return pending.proposal

    def on_isr_change_answer(
        self,
        error_code: ErrorCode,
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
        now: float,
    ) -> bool:
        """The controller's answer to the proposal in flight; True if the HW moved
        (Kafka's ``Partition.handleAlterPartitionUpdate`` and
        ``handleAlterPartitionError``).

        Accepted on this leader epoch, at the partition epoch we know or a newer one:
        the new ISR and partition epoch are this leader's now. Refused with
        ``OPERATION_NOT_ATTEMPTED`` or ``INELIGIBLE_REPLICA`` (the controller applied
        nothing, on the partition epoch we know): back to the committed ISR. Any other
        answer may come after the controller applied the proposal (a success naming
        another leader epoch, ``NEW_LEADER_ELECTED`` when the same step completed a
        reassignment and moved the leadership, a fence): the proposal stays pending,
        its maximal ISR counted, until the metadata replaces it."""
        pending = self.pending_isr_change
        if pending is None:
            return False
        if error_code is ErrorCode.none:
            if (
                leader_epoch != self.leader_epoch
                or partition_epoch < self.partition_epoch
            ):
                return False
            self.pending_isr_change = None
            self._commit_isr(frozenset(isr), partition_epoch, now)
        elif error_code in ISR_CHANGE_NOT_APPLIED:
            self.pending_isr_change = None
        else:
            return False
        return self.maybe_increment_leader_hw(now)

    def _commit_isr(
        self, isr: frozenset[int], partition_epoch: int, now: float
    ) -> None:
        previous = self.isr
        self.isr = isr
        self.partition_epoch = partition_epoch
        if self.tracer.enabled:
            tp = self.topic_partition
            self.tracer.emit(
                IsrChanged(
                    tp.topic,
                    tp.partition,
                    self.leader_epoch,
                    self.partition_epoch,
                    tuple(sorted(previous)),
                    tuple(sorted(self.isr)),
                ),
                now,
            )
