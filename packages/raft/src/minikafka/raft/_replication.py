"""The leader's side of replication (KIP-595's Fetch): it checks each fetch against its
log (a diverging epoch, or a snapshot, when the fetcher's log disagrees), records how far
each replica has fetched, holds fetches with nothing new (a long poll), and moves the
high watermark to what a majority of voters has, once that covers an entry of its own
epoch."""

from __future__ import annotations

from collections.abc import Sequence

from ._base import RaftNodeBase
from ._leader import LeaderState, check_fetch_position
from ._log import Entry
from ._messages import DivergingEpoch, Envelope, Errors, FetchRequest, FetchResponse
from ._result import RaftResult


class LeaderReplication(RaftNodeBase):
    """The leader's answer to a fetch, the followers' progress, the high watermark."""

    def _answer_fetch(self, envelope: Envelope, now: float, *, park: bool) -> None:
        request = envelope.message
        assert isinstance(request, FetchRequest)
        leader = self._leader
        if leader is None:
            error = Errors.NOT_LEADER_OR_FOLLOWER
            if request.current_leader_epoch > self.epoch:
                error = Errors.UNKNOWN_LEADER_EPOCH
            self._reply(envelope, FetchResponse(error, self.epoch, self._known_leader))
            return
        if request.current_leader_epoch != self.epoch:
            error = Errors.FENCED_LEADER_EPOCH
            if request.current_leader_epoch > self.epoch:
                error = Errors.UNKNOWN_LEADER_EPOCH
            self._reply(envelope, FetchResponse(error, self.epoch, self.node_id))
            return
        correction = check_fetch_position(self.log, request)
        if isinstance(correction, DivergingEpoch):
            response = FetchResponse(
                Errors.NONE,
                self.epoch,
                self.node_id,
                self.high_watermark,
                diverging_epoch=correction,
            )
        elif correction is not None:
            response = FetchResponse(
                Errors.NONE,
                self.epoch,
                self.node_id,
                self.high_watermark,
                snapshot_id=correction,
            )
        else:
            # A fetch that just arrived (not one held until now) says where the replica is.
            fetched = (
                request.replica_id,
                request.fetch_offset,
                self.log.end_offset,
                now,
            )
            if park and leader.record_fetch(*fetched):
                self._maybe_advance_leader_hw(now)
            records = self.log.read(request.fetch_offset, self.config.fetch_max_entries)
            if not records and park and request.fetch_offset >= self.log.end_offset:
                # Nothing new: hold the fetch until there is (a long poll).
                leader.parked[request.replica_id] = (
                    envelope,
                    now + self.config.fetch_max_wait,
                )
                return
            response = FetchResponse(
                Errors.NONE,
                self.epoch,
                self.node_id,
                self.high_watermark,
                tuple(records),
            )
        self._reply(envelope, response)

    def _append_as_leader(self, entries: Sequence[Entry], now: float) -> None:
        self.log.append(entries)
        # The leader counts itself as having only what is on its disk.
        self.log.flush()
        self._maybe_advance_leader_hw(now)
        self._wake_parked(now)

    def on_log_flushed(self, now: float) -> RaftResult:
        """The log's flushed end moved apart from an append (a shell that flushes the
        leader's log in a worker thread, as Kafka's ``flushLeaderLog``): the leader counts
        what is now on its disk toward the high watermark."""
        if self._leader is not None:
            self._maybe_advance_leader_hw(now)
        return self._result(now)

    def _maybe_advance_leader_hw(self, now: float) -> None:
        leader = self._leader
        assert leader is not None
        majority_has = leader.majority_end_offset(self.log.flushed_end_offset)
        if self._may_commit(majority_has, leader) and self._advance_hw(
            majority_has, now
        ):
            self._wake_parked(now)

    def _may_commit(self, offset: int, leader: LeaderState) -> bool:
        """Raft's commitment rule: an offset counts as committed only once it covers an
        entry of the leader's own epoch. An entry of an earlier epoch on a majority
        could still be replaced by a voter whose log ends in a later epoch and wins an
        election (the Raft paper's figure 8)."""
        return offset > leader.epoch_start_offset

    def _wake_parked(self, now: float) -> None:
        if self._leader is not None:
            for request in self._leader.take_parked():
                self._answer_fetch(request, now, park=False)
