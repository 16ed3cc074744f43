"""Trace events of replication (ARCHITECTURE.md, "Traces and labs"; seed 000's replication
vocabulary).

What a reader needs to see how durable and how fresh a partition is: when this replica
became leader or follower and at which epoch; when the leader proposed an ISR change and
why (how long each follower had not caught up); when the ISR the controller gave the
leader changed; when a follower cut a tail its new leader never had; when the high
watermark moved (records become visible to consumers and ``acks=all`` writes may be
answered); and how long requests waited in a purgatory for that to happen.

Each is stamped with the ``now`` the core was given: the shell's clock moved to the
epoch (``minikafka.trace.EpochClock``), so a ``ts`` here lines up with other nodes'
events and with what clients saw, and a duration is a difference of two ``now``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = [
    "BecameFollower",
    "BecameLeader",
    "DelayedOperationCompleted",
    "FollowerAppended",
    "FollowerFetched",
    "FollowerTruncated",
    "HighWatermarkAdvanced",
    "IsrChangeProposed",
    "IsrChanged",
]


@register_event
@attrs.frozen
class HighWatermarkAdvanced(TraceEvent):
    """The leader moved a partition's HW up, from ``previous`` to ``high_watermark``
    (the smallest log end offset among the ISR)."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "hw_advance"

    topic: str
    partition: int
    previous: int
    high_watermark: int
    leader_epoch: int


@register_event
@attrs.frozen
class DelayedOperationCompleted(TraceEvent):
    """A request that waited in a purgatory was answered.

    ``kind`` is ``produce`` (an ``acks=all`` DelayedProduce) or ``fetch`` (a long-polling
    DelayedFetch); ``outcome`` is ``completed`` (what it waited for happened, or the
    partition changed under it) or ``expired`` (its deadline passed, or the broker was
    stopping). ``waited_ms`` runs from parking to answering on the shell's clock (the
    ``now`` of the calls that parked and answered it);
    ``partitions`` is the number of partitions the answer covers. Operations answered at
    once, without waiting, are not traced.
    """

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "delayed_op"

    kind: str
    outcome: str
    waited_ms: float
    partitions: int


@register_event
@attrs.frozen
class BecameLeader(TraceEvent):
    """This broker leads the partition from ``leader_epoch`` on, which starts at
    ``log_end_offset`` (KIP-101)."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "become_leader"

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_end_offset: int


@register_event
@attrs.frozen
class BecameFollower(TraceEvent):
    """This broker follows ``leader`` from ``leader_epoch`` on."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "become_follower"

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int


@register_event
@attrs.frozen
class IsrChanged(TraceEvent):
    """The leader applied a new ISR from the controller within its leader epoch (the ISR
    shrank or expanded at a new ``partition_epoch``)."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "isr_change"

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    previous_isr: tuple[int, ...]
    isr: tuple[int, ...]


@register_event
@attrs.frozen
class IsrChangeProposed(TraceEvent):
    """The leader asked the controller (AlterPartition, KIP-497) to ``shrink`` or
    ``expand`` the ISR to ``proposed_isr``. ``replicas`` are the followers leaving or
    joining, ``lag_ms`` how long each had not been caught up (for a shrink: more than
    ``replica.lag.time.max.ms``; for an expansion: 0, it just caught up to the HW)."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "isr_propose"

    topic: str
    partition: int
    kind: str
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    proposed_isr: tuple[int, ...]
    replicas: tuple[int, ...]
    lag_ms: tuple[float, ...]
    high_watermark: int


@register_event
@attrs.frozen
class FollowerTruncated(TraceEvent):
    """A follower cut its log from ``log_end_offset`` back to ``truncated_to``, where
    its log and its leader's agree (KIP-101/KIP-279: the records after were never
    committed)."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "follower_truncate"

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    log_end_offset: int
    truncated_to: int


@register_event
@attrs.frozen
class FollowerFetched(TraceEvent):
    """The leader took a follower's fetch at ``fetch_offset`` (it has everything below):
    ``lag`` records behind the leader's log end, last caught up ``caught_up_ms_ago``
    (what ``replica.lag.time.max.ms`` is compared with). One per follower fetch: the
    series a lab reads each follower's lag from. ``high_watermark`` is the one the fetch
    found; an ``hw_advance`` it causes follows it."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "follower_fetch"

    topic: str
    partition: int
    follower: int
    fetch_offset: int
    log_end_offset: int
    high_watermark: int
    lag: int
    caught_up_ms_ago: float


@register_event
@attrs.frozen
class FollowerAppended(TraceEvent):
    """A follower appended what its leader's Fetch answer brought: its log end moved
    from ``fetch_offset`` to ``log_end_offset`` (``bytes`` of batches). The follower's
    side of a fetch round, emitted by its fetcher once the round's appends are done:
    ``fetch_ms`` ran from sending the Fetch to having its answer (the wait at the
    leader, the wire, the decoding), ``append_ms`` from the answer to the end of the
    round's appends. The fetcher sends its next Fetch, carrying the new log end, right
    after; the leader's ``follower_fetch`` for ``log_end_offset`` is that fetch
    arriving. One per partition that advanced: an empty answer is not traced."""

    COMPONENT: ClassVar[str] = "replication"
    EVENT: ClassVar[str] = "follower_append"

    topic: str
    partition: int
    leader: int
    fetch_offset: int
    log_end_offset: int
    bytes: int
    fetch_ms: float
    append_ms: float
