"""What the Raft quorum's shell (:mod:`._raft_shell`) does its I/O through: the transport
to the other voters (none for a lone voter), and the Raft log whose leader flushes in a
worker thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import trio
from kio.static.protocol import RequestPayload

from minikafka.log import LogConfig
from minikafka.raft import FileRaftLog, Snapshot


class QuorumTransport(Protocol):
    """How requests reach the other voters' controller listeners."""

    async def send(self, destination: int, body: RequestPayload) -> object:
        """Send ``body`` to voter ``destination`` and return its answer; raises
        ConnectionError if it cannot be reached or the connection breaks."""
        ...

    def disconnect(self, destination: int) -> None:
        """Drop the connection (a request was given up: its late answer must not be
        read as the next one's)."""
        ...


class NoOtherVoters:
    """The transport of a quorum of one voter: there is nobody to send to (the node
    never sends a request to itself)."""

    async def send(self, destination: int, body: RequestPayload) -> object:
        raise ConnectionError(f"{destination} is not a voter of a quorum of one")

    def disconnect(self, destination: int) -> None:
        pass


class LeaderFlushedLog(FileRaftLog):
    """The Raft log whose leader flushes in a worker thread (Kafka's Raft thread flushes
    the leader's log apart from the controller's event thread): the node's ``flush`` as
    the leader only asks for one, and :class:`RaftNodeShell`'s flusher fsyncs everything
    appended so far off the event loop, then tells the node (``on_log_flushed``), which
    counts only what is on disk toward the high watermark. Requests decided meanwhile are
    appended behind the fsync and committed by the next one, a group commit. A follower's
    flush stays synchronous: its next fetch says it has the entries. The state
    machine's snapshots are written off the event loop too."""

    def __init__(
        self, directory: Path, config: LogConfig, leading: Callable[[], bool]
    ) -> None:
        super().__init__(directory, config)
        self.leading = leading
        self.flush_wanted = trio.Event()
        self.pending_snapshot: Snapshot | None = None

    def flush(self) -> None:
        if self.leading():
            self.flush_wanted.set()
        else:
            super().flush()

    def create_snapshot(self, snapshot: Snapshot) -> None:
        """Only taken note of: :meth:`RaftNodeShell.create_snapshot` writes the file in a
        worker thread, then drops the log below it (``snapshot_written``)."""
        self.pending_snapshot = snapshot
