"""The follower's side of replication (KIP-595's Fetch, KIP-630's FetchSnapshot): it
fetches from its log's end with the epoch of its last entry, appends what the leader
sends, truncates to the leader's diverging epoch when their logs disagree (never below
its high watermark) and fetches again, or starts copying the leader's snapshot."""

from __future__ import annotations

from ._base import RaftNodeBase, SnapshotDownload
from ._events import LogTruncated
from ._messages import DivergingEpoch, Errors, FetchRequest, FetchResponse
from ._states import RaftStateError, State


class FollowerFetch(RaftNodeBase):
    """What a follower (or an observer) asks the leader for, and what it does with the
    answer."""

    def _fetch_request(self) -> FetchRequest:
        # From the log's end, naming the epoch of the entry before it: the leader checks
        # that its own log holds that epoch up to there.
        return FetchRequest(
            self.node_id, self.epoch, self.log.end_offset, self.log.last_epoch
        )

    def _handle_fetch_response(
        self, source: int, response: FetchResponse, now: float
    ) -> None:
        self._observe_epoch(response.leader_epoch, response.leader_id, now)
        if response.error is not Errors.NONE:
            # Not (or no longer) the leader: ask again after the backoff, not at once.
            self._requests.failed(source, now)
            return
        if self.state is not State.FOLLOWER or source != self.leader_id:
            return
        self._heard_from_leader(now)
        if response.diverging_epoch is not None:
            self._truncate_to_diverging(response.diverging_epoch, now)
        elif response.snapshot_id is not None:
            self._download = SnapshotDownload(response.snapshot_id, bytearray())
        elif response.records:
            if response.records[0].offset != self.log.end_offset:
                return  # not the entries asked for (a duplicate); fetch again
            self.log.append(response.records)
            # A follower reports in its next fetch that it has these: make it true.
            self.log.flush()
        if response.snapshot_id is None and response.diverging_epoch is None:
            self._advance_hw(min(response.high_watermark, self.log.end_offset), now)

    def _truncate_to_diverging(self, diverging: DivergingEpoch, now: float) -> None:
        mine = self.log.end_offset_for_epoch(diverging.epoch)
        target = min(diverging.end_offset, mine.end_offset)
        if target < self.high_watermark:
            raise RaftStateError(
                f"node {self.node_id} would truncate to {target}, below its high "
                "watermark "
                f"{self.high_watermark}: committed entries would be lost"
            )
        old = self.log.end_offset
        self.log.truncate_to(target)
        if self.tracer.enabled:
            self.tracer.emit(
                LogTruncated(self.node_id, self.epoch, old, target), ts=now
            )
