"""What a leader tracks of its followers, and the ISR changes it proposes (seed 000,
KIP-497): each follower's log end offset and when it was last caught up (the measure
``replica.lag.time.max.ms`` is compared with), an AlterPartition proposal, the
controller's answer, and the proposal in flight with the maximal ISR counted meanwhile.
Plain values; the decisions are :class:`~minikafka.replication.Partition`'s.
"""

from __future__ import annotations

import uuid

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition


@attrs.define(eq=False)
class ReplicaState:
    """What the leader knows of one follower (Kafka's ``Replica``)."""

    broker_id: int
    log_end_offset: int = -1  # unknown until the follower's first fetch
    last_caught_up_time: float = 0.0
    # The leader's LEO and the time at the follower's previous fetch: a follower that
    # reaches where the leader was then was caught up then (Kafka's
    # lastFetchLeaderLogEndOffset), so steady fetching under steady produce counts.
    last_fetch_leader_log_end_offset: int = -1
    last_fetch_time: float = 0.0
    log_start_offset: int = -1
    """The follower's log start offset as its last fetch said (-1: not said yet)."""

    def update_fetch_state(
        self, fetch_offset: int, leader_log_end_offset: int, now: float
    ) -> None:
        """Kafka's ``Replica.updateFetchStateOrThrow``: the follower has all below
        ``fetch_offset``; when was it last caught up?"""
        if fetch_offset >= leader_log_end_offset:
            self.last_caught_up_time = max(self.last_caught_up_time, now)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time = max(
                self.last_caught_up_time, self.last_fetch_time
            )
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_log_end_offset
        self.last_fetch_time = now


@attrs.frozen
class IsrChangeProposal:
    """An AlterPartition the leader wants sent to the controller (KIP-497)."""

    topic_partition: TopicPartition
    topic_id: uuid.UUID
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    """The partition epoch the proposal builds on: the controller refuses it if stale."""


@attrs.frozen
class IsrChangeAnswer:
    """The controller's answer to one proposal: the partition's state if accepted."""

    topic_partition: TopicPartition
    error_code: ErrorCode
    isr: tuple[int, ...] = ()
    leader_epoch: int = -1
    partition_epoch: int = -1


ISR_CHANGE_NOT_APPLIED = frozenset(
    {ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica}
)
"""The refusals that say the controller applied nothing, on the partition epoch the
leader knows (no past or future controller can have applied it either): the only
answers after which the leader may go back to its committed ISR."""

ISR_CHANGE_AWAITS_METADATA = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_id,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.invalid_update_version,
        ErrorCode.invalid_request,
        ErrorCode.new_leader_elected,
    }
)
"""The refusals after which the leader's view is stale: the proposal stays pending
(the controller may have applied it, or a newer state) until the metadata replaces it."""


def isr_change_retried(error_code: ErrorCode) -> bool:
    """Whether an answer is sent again after the backoff, the proposal still pending:
    any error Kafka's ``Partition.handleAlterPartitionError`` does not name (the
    controller unreachable or moving, a stale broker epoch, a server error)."""
    return (
        error_code is not ErrorCode.none
        and error_code not in ISR_CHANGE_NOT_APPLIED
        and error_code not in ISR_CHANGE_AWAITS_METADATA
    )


@attrs.define(eq=False)
class PendingIsrChange:
    """A proposal not yet answered, and the ISR the leader counts meanwhile."""

    proposal: IsrChangeProposal
    maximal_isr: frozenset[int]
    sent: bool = False
