"""Trace events of the quorum (KIP-595): state changes, votes, the high watermark,
truncations, resignations and snapshot transfers, so a reader can put an election's
timeline together from the traces of its voters.

``ts`` is the node's ``now``: virtual time in the simulator, the trio clock in a shell.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = [
    "HighWatermarkAdvanced",
    "LogTruncated",
    "SnapshotInstalled",
    "StateChanged",
    "VoteAnswered",
]


@register_event
@attrs.frozen
class StateChanged(TraceEvent):
    """A node moved from one state of the table in ``_states.py`` to another.
    ``leaderless_for`` is, on becoming Leader, how long the quorum had no leader as this
    node saw it (from losing its previous leader or starting); -1 otherwise."""

    COMPONENT: ClassVar[str] = "raft"
    EVENT: ClassVar[str] = "state_change"

    node_id: int
    old: str
    new: str
    epoch: int
    leader_id: int
    reason: str
    leaderless_for: float


@register_event
@attrs.frozen
class VoteAnswered(TraceEvent):
    """A voter answered a Vote request (``pre_vote``: KIP-996's, which changes nothing)."""

    COMPONENT: ClassVar[str] = "raft"
    EVENT: ClassVar[str] = "vote"

    node_id: int
    candidate_id: int
    candidate_epoch: int
    pre_vote: bool
    granted: bool
    reason: str


@register_event
@attrs.frozen
class HighWatermarkAdvanced(TraceEvent):
    COMPONENT: ClassVar[str] = "raft"
    EVENT: ClassVar[str] = "hw_advance"

    node_id: int
    epoch: int
    old: int
    new: int


@register_event
@attrs.frozen
class LogTruncated(TraceEvent):
    """A follower removed the entries its leader's log does not have (divergence)."""

    COMPONENT: ClassVar[str] = "raft"
    EVENT: ClassVar[str] = "truncate"

    node_id: int
    epoch: int
    old_end_offset: int
    new_end_offset: int


@register_event
@attrs.frozen
class SnapshotInstalled(TraceEvent):
    """A node replaced its log by a snapshot fetched from the leader (KIP-630)."""

    COMPONENT: ClassVar[str] = "raft"
    EVENT: ClassVar[str] = "snapshot_installed"

    node_id: int
    epoch: int
    end_offset: int
    snapshot_epoch: int
    size: int
