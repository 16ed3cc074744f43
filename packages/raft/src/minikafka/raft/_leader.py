"""What only a leader keeps, and the answers it computes from its log (Kafka's
``LeaderState``; KIP-595's Fetch validation, KIP-630's FetchSnapshot).

The leader knows, for every voter and observer, the offset of its last fetch (it has
every entry below) and when that fetch came; from those it computes the offset a
majority of voters has, when check-quorum must make it resign, and in which order the
voters should succeed it. Fetches that found nothing new wait here (a long poll).

It also says which voters to announce itself to again (KIP-996's BeginQuorumEpoch
timer): every half fetch timeout, each voter that has not fetched for that long is sent
BeginQuorumEpoch once more. A voter that lost touch may have moved to a higher epoch (an
election of its own that failed); its answer names that epoch and the leader steps down
to it, so the next election brings the voter back (the others refuse its pre-votes
while they hear from the leader, so it could never come back on its own).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ._describe import QuorumInfo, ReplicaInfo
from ._log import RaftLog, Snapshot, SnapshotId
from ._messages import DivergingEpoch, Envelope, FetchRequest


@attrs.define
class ReplicaProgress:
    """The offset a replica last fetched from (it has everything below), when, and when
    it last fetched from the leader's log end (it had everything the leader had)."""

    end_offset: int = 0
    last_fetch: float | None = None
    last_caught_up: float | None = None


@attrs.define
class LeaderState:
    node_id: int
    epoch_start_offset: (
        int  # the first offset of this leader's epoch: its LeaderChange entry
    )
    voters: dict[int, ReplicaProgress]
    observers: dict[int, ReplicaProgress] = attrs.Factory(dict)
    # voters that have not answered BeginQuorumEpoch
    unannounced: set[int] = attrs.Factory(set)
    # replica -> (fetch, expiry)
    parked: dict[int, tuple[Envelope, float]] = attrs.Factory(dict)
    # when to look again for voters to announce this epoch to (Kafka's
    # beginQuorumEpochTimer); None until the first look
    announce_deadline: float | None = None

    @classmethod
    def begin(
        cls, node_id: int, voters: Iterable[int], epoch_start_offset: int, now: float
    ) -> LeaderState:
        voters = tuple(voters)
        return cls(
            node_id,
            epoch_start_offset,
            # Every voter starts as fetched from just now: check-quorum gives each one
            # its full timeout from the election.
            {v: ReplicaProgress(last_fetch=now) for v in voters},
            unannounced={v for v in voters if v != node_id},
        )

    def record_fetch(
        self, replica_id: int, fetch_offset: int, leader_end_offset: int, now: float
    ) -> bool:
        """A fetch from ``replica_id`` arrived; True if the replica is a voter."""
        is_voter = replica_id in self.voters
        progress = (self.voters if is_voter else self.observers).setdefault(
            replica_id, ReplicaProgress()
        )
        progress.end_offset = fetch_offset
        progress.last_fetch = now
        if fetch_offset >= leader_end_offset:
            progress.last_caught_up = now
        self.unannounced.discard(replica_id)
        return is_voter

    def announce_again(self, now: float, timeout: float) -> None:
        """The voters that have not fetched for ``timeout`` are to be sent
        BeginQuorumEpoch again (Kafka's ``needToSendBeginQuorumRequests``); look again
        ``timeout`` from now."""
        self.unannounced |= {
            v
            for v, p in self.voters.items()
            if v != self.node_id and now - (p.last_fetch or 0.0) >= timeout
        }
        self.announce_deadline = now + timeout

    def majority_end_offset(self, own_flushed_end: int) -> int:
        """The highest offset a majority of voters has everything below; the leader
        counts only what it has flushed."""
        offsets = sorted(
            (
                own_flushed_end if voter == self.node_id else progress.end_offset
                for voter, progress in self.voters.items()
            ),
            reverse=True,
        )
        return offsets[len(offsets) // 2]

    def check_quorum_deadline(self, fetch_timeout: float) -> float:
        """When the leader must resign unless more voters fetch: 1.5 fetch timeouts
        after the last fetch of the least recent member of the most recent majority."""
        others = sorted(
            (p.last_fetch or 0.0 for v, p in self.voters.items() if v != self.node_id),
            reverse=True,
        )
        needed = len(self.voters) // 2  # besides the leader
        if needed == 0:
            return float("inf")
        return others[needed - 1] + 1.5 * fetch_timeout

    def preferred_successors(self) -> tuple[int, ...]:
        """The other voters, the ones whose logs reach furthest first (EndQuorumEpoch)."""
        others = [v for v in self.voters if v != self.node_id]
        return tuple(sorted(others, key=lambda v: -self.voters[v].end_offset))

    def describe(
        self, epoch: int, high_watermark: int, own_end: int, now: float
    ) -> QuorumInfo:
        """DescribeQuorum's answer: every replica's progress, the leader's own as of now."""
        voters = [
            ReplicaInfo(v, own_end, now, now)
            if v == self.node_id
            else ReplicaInfo(v, p.end_offset, p.last_fetch, p.last_caught_up)
            for v, p in sorted(self.voters.items())
        ]
        observers = [
            ReplicaInfo(o, p.end_offset, p.last_fetch, p.last_caught_up)
            for o, p in sorted(self.observers.items())
        ]
        return QuorumInfo(
            self.node_id, epoch, high_watermark, tuple(voters), tuple(observers)
        )

    def take_parked(self) -> list[Envelope]:
        parked, self.parked = self.parked, {}
        return [request for request, _ in parked.values()]


def check_fetch_position(
    log: RaftLog, request: FetchRequest
) -> DivergingEpoch | SnapshotId | None:
    """None if the fetcher's log agrees with the leader's up to its fetch offset; else
    what puts it right: a snapshot to copy (it asks below the log start), or where its
    last epoch ends in the leader's log (the logs diverge)."""
    snapshot = log.latest_snapshot()
    if request.fetch_offset < log.start_offset and snapshot is not None:
        return snapshot.id
    if request.fetch_offset == 0 and request.last_fetched_epoch == 0:
        return None
    end = log.end_offset_for_epoch(request.last_fetched_epoch)
    if (
        end.epoch == request.last_fetched_epoch
        and request.fetch_offset <= end.end_offset
    ):
        return None
    if end.end_offset < log.start_offset and snapshot is not None:
        return snapshot.id  # they part below what the log still holds
    return DivergingEpoch(end.epoch, end.end_offset)


def snapshot_chunk(
    snapshot: Snapshot | None, wanted: SnapshotId, position: int, chunk_bytes: int
) -> bytes | str:
    """FetchSnapshot's bytes from ``position``, or the name of the error to answer."""
    if snapshot is None or snapshot.id != wanted:
        return "SNAPSHOT_NOT_FOUND"
    if not 0 <= position <= len(snapshot.payload):
        return "POSITION_OUT_OF_RANGE"
    return snapshot.payload[position : position + chunk_bytes]
