"""Snapshots (KIP-630): the state machine's state up to an offset, kept so that the log
below it may go, and copied whole to a fetcher whose log is behind that offset (the
leader answers its fetch with the snapshot's id instead of entries). The leader serves
the snapshot in chunks (FetchSnapshot); the fetcher asks for each chunk from where its
copy ends, installs the snapshot once it has all of it, and hands it to the state
machine once the high watermark covers it (:class:`~._result.LoadSnapshot`)."""

from __future__ import annotations

from ._base import RaftNodeBase
from ._events import SnapshotInstalled
from ._leader import snapshot_chunk
from ._log import Snapshot, SnapshotId
from ._messages import Errors, FetchSnapshotRequest, FetchSnapshotResponse
from ._states import State


class SnapshotTransfer(RaftNodeBase):
    """Taking a snapshot, serving it as the leader, copying it as a follower."""

    def create_snapshot(self, end_offset: int, payload: bytes) -> SnapshotId:
        """Keep the state machine's state after every entry below ``end_offset`` (which it
        has applied, so it is committed) as a snapshot; the log below may go."""
        if end_offset > self._applied:
            raise ValueError(
                f"offset {end_offset} is past what was applied ({self._applied})"
            )
        epoch = self._epoch_of(end_offset - 1)
        snapshot = Snapshot(SnapshotId(end_offset, epoch), payload)
        self.log.create_snapshot(snapshot)
        return snapshot.id

    def _epoch_of(self, offset: int) -> int:
        if offset < 0:
            return 0
        if offset >= self.log.start_offset:
            return self.log.read(offset, 1)[0].epoch
        snapshot = self.log.latest_snapshot()
        if snapshot is None or snapshot.id.end_offset != offset + 1:
            raise ValueError(
                f"offset {offset} is below the log start {self.log.start_offset}"
            )
        return snapshot.id.epoch

    def _handle_fetch_snapshot(
        self, request: FetchSnapshotRequest
    ) -> FetchSnapshotResponse:
        if self.state is not State.LEADER or request.current_leader_epoch != self.epoch:
            return FetchSnapshotResponse(
                Errors.NOT_LEADER_OR_FOLLOWER, self.epoch, self._known_leader
            )
        snapshot = self.log.latest_snapshot()
        chunk = snapshot_chunk(
            snapshot,
            request.snapshot_id,
            request.position,
            self.config.snapshot_chunk_bytes,
        )
        if isinstance(chunk, str) or snapshot is None:
            return FetchSnapshotResponse(Errors[str(chunk)], self.epoch, self.node_id)
        size = len(snapshot.payload)
        return FetchSnapshotResponse(
            Errors.NONE,
            self.epoch,
            self.node_id,
            snapshot.id,
            size,
            request.position,
            chunk,
        )

    def _fetch_snapshot_request(self) -> FetchSnapshotRequest | None:
        download = self._download
        if download is None:
            return None
        # The next chunk: from where the copy ends.
        return FetchSnapshotRequest(
            self.node_id, self.epoch, download.id, len(download.data)
        )

    def _handle_fetch_snapshot_response(
        self, source: int, response: FetchSnapshotResponse, now: float
    ) -> None:
        self._observe_epoch(response.leader_epoch, response.leader_id, now)
        download = self._download
        if (
            self.state is not State.FOLLOWER
            or source != self.leader_id
            or download is None
        ):
            return
        if response.error is not Errors.NONE:
            self._download = None  # the leader has another snapshot now: fetch again
            return
        if response.snapshot_id != download.id or response.position != len(
            download.data
        ):
            return
        self._heard_from_leader(now)
        download.data += response.unaligned_records
        if len(download.data) < response.size:
            return
        snapshot = Snapshot(download.id, bytes(download.data))
        self._download = None
        self.log.install_snapshot(snapshot)
        self._pending_snapshot = snapshot
        self._applied = 0
        if self.tracer.enabled:
            event = SnapshotInstalled(
                self.node_id,
                self.epoch,
                snapshot.id.end_offset,
                snapshot.id.epoch,
                response.size,
            )
            self.tracer.emit(event, ts=now)
        self._advance_hw(snapshot.id.end_offset, now)
