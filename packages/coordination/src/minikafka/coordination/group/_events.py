"""Trace events of the group coordinator (ARCHITECTURE.md, "Traces and labs"; seed 002 §§1-3).

A consumer group's life is a handful of moves of its state machine (seed 002 §1) and
the rebalances they make up: who joined, left or went silent, why a rebalance started,
how long the group stood still and what each member got in the end. These events are
what the labs read to answer "what did this rebalance cost, and who caused it", so
they carry the reason codes and the generation ids a reader can join on.

The coordinator is a core with a clock in seconds: every event is stamped with the
``now`` it was given, so a simulation on virtual time leaves virtual timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = [
    "GroupStateChanged",
    "MemberAssigned",
    "MemberAssignmentChanged",
    "MemberJoined",
    "MemberRemoved",
    "RebalanceCompleted",
    "RebalanceStarted",
    "TxnOffsetCommitWritten",
    "TxnOffsetsCompleted",
]


@register_event
@attrs.frozen
class GroupStateChanged(TraceEvent):
    """A group moved along an edge of ``GROUP_TRANSITIONS``; states are Kafka's names
    (``GroupState`` values). ``generation_id`` and ``members`` are those after the move
    (a join phase that ends has already started the new generation)."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "state_change"

    group_id: str
    previous_state: str
    state: str
    generation_id: int
    members: int


@register_event
@attrs.frozen
class RebalanceStarted(TraceEvent):
    """A group entered PreparingRebalance, leaving generation ``generation_id``.

    ``reason`` is one of:

    - ``member_joined``: a new member's JoinGroup (dynamic, or a static instance the
      group did not know);
    - ``member_rejoined``: a known member rejoined with changed protocols, or the leader
      rejoined a Stable group (how the cooperative follow-up rebalance starts);
    - ``static_member_replaced``: a static member came back under a new member id and
      the group must assign again (KIP-345);
    - ``member_left``: a LeaveGroup (of a member or of a pending member id);
    - ``session_timeout``: a member's session expired without a heartbeat;
    - ``new_member_join_timeout``: a new member's JoinGroup was not answered within
      ``NEW_MEMBER_JOIN_TIMEOUT_MS`` (its client may have given up);
    - ``pending_member_expired``: a member id handed out with MEMBER_ID_REQUIRED was
      never used within the session timeout (KIP-394);
    - ``group_max_size``: a member was evicted because ``group.max.size`` was lowered;
    - ``sync_timeout``: members did not send SyncGroup within the rebalance timeout;
    - ``write_failed``: the leader's assignment could not be written to
      ``__consumer_offsets``;
    - ``downgrade``: the group was a consumer group until its last consumer-protocol
      member left (KIP-848's online migration).

    ``member_id``/``client_id`` name the member whose action caused it (None when none,
    or no client id is known, as for a pending member id).
    """

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "rebalance_start"

    group_id: str
    generation_id: int
    reason: str
    member_id: str | None
    client_id: str | None
    members: int


@register_event
@attrs.frozen
class RebalanceCompleted(TraceEvent):
    """A group became Stable: the leader's assignment was stored and handed out.

    ``duration_ms`` runs from the group's last ``rebalance_start`` (0.0 if the
    coordinator never saw one, which a loaded group cannot reach). ``assignment_sizes``
    maps each member to the number of partitions the leader gave it: decoded with the
    consumer protocol when the group's protocol type is ``consumer``, 0 for a member the
    leader left out (empty bytes), -1 where the bytes cannot be decoded.
    """

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "rebalance_end"

    group_id: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    members: int
    duration_ms: float
    assignment_sizes: Mapping[str, int]


@register_event
@attrs.frozen
class MemberJoined(TraceEvent):
    """A JoinGroup was accepted from a member with a member id (a MEMBER_ID_REQUIRED
    bounce is not one); ``generation_id`` and ``state`` are the group's on arrival."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "member_join"

    group_id: str
    member_id: str
    client_id: str
    generation_id: int
    state: str


@register_event
@attrs.frozen
class MemberAssigned(TraceEvent):
    """A member's SyncGroup was answered with its assignment of ``partitions``
    partitions (-1 when it cannot be decoded as a consumer assignment)."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "member_sync"

    group_id: str
    member_id: str
    client_id: str
    generation_id: int
    partitions: int


@register_event
@attrs.frozen
class MemberAssignmentChanged(TraceEvent):
    """The partitions the coordinator counts as a member's changed, under either
    protocol (``group_type``: Kafka's ``classic`` or ``consumer``). A snapshot, not a
    difference: the member owns ``assigned_partitions`` and
    ``partitions_pending_revocation`` (``topic-partition`` names) from ``ts`` until its
    next event; a member that leaves or is fenced gets one with both empty.

    Consumer groups (KIP-848, Kafka's ``CurrentAssignmentBuilder``): emitted when a
    heartbeat moves the member's current assignment; ``member_epoch`` is its epoch after.
    A partition given to it is in ``assigned_partitions`` from the heartbeat answer that
    hands it over; one it must give back stays in ``partitions_pending_revocation``
    until it says it let go. Classic groups: the member's claim in its JoinGroup (the
    ``owned_partitions`` of its subscription, KIP-429; nothing for an eager member, which
    revoked everything first) and then the assignment its SyncGroup answer carries;
    ``member_epoch`` is the generation id."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "member_assignment"

    group_id: str
    group_type: str
    member_id: str
    client_id: str
    member_epoch: int
    assigned_partitions: tuple[str, ...]
    partitions_pending_revocation: tuple[str, ...]


@register_event
@attrs.frozen
class MemberRemoved(TraceEvent):
    """A member left the group. ``reason`` is one of ``left`` (LeaveGroup),
    ``session_timeout``, ``new_member_join_timeout``, ``join_timeout`` (a dynamic member
    that did not rejoin before the join phase ended), ``sync_timeout`` (did not send
    SyncGroup in time), ``replaced`` (a static member's old id, fenced by its new one) or
    ``group_max_size``."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "member_removed"

    group_id: str
    member_id: str
    client_id: str
    reason: str


@register_event
@attrs.frozen
class TxnOffsetCommitWritten(TraceEvent):
    """A TxnOffsetCommit (KIP-98) was accepted: ``partitions`` offsets written in the
    producer's transactional batch, pending until its transaction's marker (offsets
    refused for their metadata's size are not counted)."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "txn_offset_commit"

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: int


@register_event
@attrs.frozen
class TxnOffsetsCompleted(TraceEvent):
    """A transaction's marker reached the group's ``__consumer_offsets`` partition: its
    ``partitions`` pending offsets were committed (``commit``) or dropped. A committed
    one replaces the group's offset only if it was written after it, so fewer may
    show in OffsetFetch."""

    COMPONENT: ClassVar[str] = "group"
    EVENT: ClassVar[str] = "txn_offset_completion"

    group_id: str
    producer_id: int
    commit: bool
    partitions: int
