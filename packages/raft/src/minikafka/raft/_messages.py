"""The messages of KRaft's Raft (KIP-595, KIP-630, KIP-996), as values.

Each class carries the fields of the Kafka request or response of the same name that the
protocol needs (field names follow Kafka's schemas: ``candidate_epoch``,
``last_offset_epoch``, ``diverging_epoch``...). The core sends and receives these; a
shell turns them into Kafka's wire format, and the simulator passes them as they are.
Every message travels in an :class:`Envelope` with the correlation id of the request
it belongs to, so a duplicated or late response is recognised and ignored.
"""

from __future__ import annotations

import enum

import attrs

from ._log import Entry, SnapshotId


class Errors(enum.IntEnum):
    """Kafka's error codes that the quorum answers with."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    NOT_LEADER_OR_FOLLOWER = 6
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    INCONSISTENT_VOTER_SET = 78
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99


@attrs.frozen
class VoteRequest:
    """A candidate (or, with ``pre_vote``, a prospective candidate: KIP-996) asks for a
    vote in ``candidate_epoch``, describing its log by its last entry."""

    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int  # the candidate's log end offset
    pre_vote: bool = False


@attrs.frozen
class VoteResponse:
    error: Errors
    leader_epoch: int  # the voter's epoch
    leader_id: int | None  # the leader the voter knows in that epoch
    vote_granted: bool
    pre_vote: bool = False
    reason: str = ""  # why a vote was refused: for traces and the book, not on the wire


@attrs.frozen
class BeginQuorumEpochRequest:
    """A new leader announces itself to the voters."""

    leader_epoch: int
    leader_id: int


@attrs.frozen
class BeginQuorumEpochResponse:
    error: Errors
    leader_epoch: int
    leader_id: int | None


@attrs.frozen
class EndQuorumEpochRequest:
    """A leader steps down gracefully; ``preferred_successors`` lists the voters by how
    far their logs reach, the most complete first, so they stand in that order."""

    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]


@attrs.frozen
class EndQuorumEpochResponse:
    error: Errors
    leader_epoch: int
    leader_id: int | None


@attrs.frozen
class DivergingEpoch:
    """The leader's log and the fetcher's part at ``end_offset``, the end of ``epoch``
    in the leader's log: the fetcher truncates there and fetches again."""

    epoch: int
    end_offset: int


@attrs.frozen
class FetchRequest:
    """A follower (a voter) or an observer asks for entries from ``fetch_offset``;
    ``last_fetched_epoch`` is the epoch of the entry just before it, which lets the leader
    check that the two logs agree up to there."""

    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@attrs.frozen
class FetchResponse:
    error: Errors
    leader_epoch: int
    leader_id: int | None
    high_watermark: int = -1
    records: tuple[Entry, ...] = ()
    diverging_epoch: DivergingEpoch | None = None
    snapshot_id: SnapshotId | None = None  # fetch this snapshot first (KIP-630)


@attrs.frozen
class FetchSnapshotRequest:
    replica_id: int
    current_leader_epoch: int
    snapshot_id: SnapshotId
    position: int


@attrs.frozen
class FetchSnapshotResponse:
    error: Errors
    leader_epoch: int
    leader_id: int | None
    snapshot_id: SnapshotId | None = None
    size: int = 0
    position: int = 0
    unaligned_records: bytes = b""


Request = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)
Response = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)
Message = Request | Response


@attrs.frozen
class Envelope:
    """A message on its way: from ``source`` to ``destination``; a response carries its
    request's ``correlation_id``."""

    source: int
    destination: int
    correlation_id: int
    message: Message

    @property
    def is_request(self) -> bool:
        return isinstance(self.message, Request)
