"""What every part of a partition replica shares: the controller's decision it obeys
(:class:`PartitionState`), the replica's state, and the refusal it answers with
(:class:`ReplicationError`).

:class:`~._partition.Partition` is made of parts, each a mechanism in a module of its
own, over :class:`PartitionBase`:

- :class:`~._partition.Partition` itself: becoming leader or follower, the leader's
  and the follower's write paths, and the high watermark (the smallest LEO in the ISR);
- :class:`~._isr_changes.IsrChanges`: the ISR changes a leader proposes to the
  controller (KIP-497) and the controller's answers;
- :class:`~._partition_reads.PartitionReads`: what a leader answers a reader: a
  fetch's records, ListOffsets (KIP-207's guard), OffsetsForLeaderEpoch (KIP-279),
  each after the asker's leader epoch is checked (KIP-320).

The parts meet through the fields below and one hook: an ISR change answered by the
controller may move the high watermark (:meth:`PartitionBase.maybe_increment_leader_hw`,
the Partition's).
"""

from __future__ import annotations

import abc
import uuid

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, TopicPartition
from minikafka.log import Log
from minikafka.trace import NullTracer, Tracer

from ._isr import PendingIsrChange, ReplicaState


class ReplicationError(ApiError):
    """A request this partition refuses, carrying the Kafka error code to answer with."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@attrs.frozen
class PartitionState:
    """What the controller decided for one partition (Kafka's LeaderAndIsrPartitionState).

    In KRaft mode the broker reads it from the metadata image; in ZooKeeper mode it comes
    in a LeaderAndIsr request. Either way the Partition only obeys it.
    """

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@attrs.define(eq=False)
class PartitionBase(abc.ABC):
    """One replica of a topic partition, without its mechanisms (the parts
    :class:`~._partition.Partition` is made of)."""

    topic_partition: TopicPartition
    topic_id: uuid.UUID
    local_broker_id: int
    log: Log
    min_insync_replicas: int = 1
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: frozenset[int] = frozenset()
    remote_replicas: dict[int, ReplicaState] = attrs.field(factory=dict)
    # the log end when this leadership began
    leader_epoch_start_offset: int | None = None
    pending_isr_change: PendingIsrChange | None = None
    offline_reason: str | None = None
    """Why the log is offline (its dir failed a write or fsync); None while it is usable.

    Kafka's ``HostedPartition.Offline``: until the broker restarts, every produce, fetch
    and ListOffsets on the partition is answered KAFKA_STORAGE_ERROR."""
    refused_by_disk: str | None = None
    """Why the leader's last append was refused by a full disk (the write undone, the
    partition left online); None once an append succeeds or the leadership changes.

    Meanwhile a producer's next batches, pipelined behind the refused one, are
    answered KAFKA_STORAGE_ERROR rather than OUT_OF_ORDER_SEQUENCE_NUMBER: Kafka's
    partition, offline after the failed write, answers them so, and a client that
    hears of a gap bumps its producer epoch and re-sends what it has not had
    acknowledged, duplicating records already written elsewhere."""
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True, repr=False)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    def mark_offline(self, reason: str) -> None:
        """The log's dir failed: refuse everything with KAFKA_STORAGE_ERROR until restart."""
        self.offline_reason = reason

    def _check_online(self) -> None:
        if self.offline_reason is not None:
            raise ReplicationError(
                ErrorCode.kafka_storage_error,
                f"{self.topic_partition} is offline on broker {self.local_broker_id}: "
                f"{self.offline_reason}",
            )

    # --- the hook the parts share ----------------------------------------------------

    @abc.abstractmethod
    def maybe_increment_leader_hw(self, now: float) -> bool:
        """Move the HW to the smallest LEO in the ISR; True if it moved."""
