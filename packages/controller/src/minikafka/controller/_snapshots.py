"""SnapshotGenerator: the controller writes its image as a snapshot now and then (KIP-630).

A start replays the newest snapshot and the committed log after it (``load_metadata``);
so that the log to replay does not grow without end, the image is written as a snapshot
from time to time, and the log before it may be deleted.

Kafka writes them with ``SnapshotGenerator``, one of the image's publishers: after each
new image it counts the bytes of log written since the last snapshot, and once they
reach ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB) it writes the image,
one snapshot at a time, off the thread that publishes. Here the same:
:meth:`SnapshotGenerator.maybe_start` runs after every publish, and the writing is a
task in the server's nursery that encodes and writes in a worker thread, so the event
loop never waits for it. The Raft log keeps it as ``<end offset>-<epoch>.checkpoint``
(``RaftNodeShell.create_snapshot``, which writes the file in a worker thread too) and drops
the log below it, so that a follower or a
broker far behind fetches the snapshot instead.

A snapshot that fails is not the controller's failure (Kafka's snapshot generator has a
non-fatal fault handler): it only shortens the next start's replay, so it is logged, and
tried again once as much log has accumulated again.
"""

from __future__ import annotations

import logging

import attrs
import trio

from minikafka.common import FatalFaultError

from ._config import ControllerConfig
from ._image import MetadataImage
from ._metadata_log import encode_snapshot
from ._raft_shell import RaftNodeShell

_logger = logging.getLogger("minikafka.controller")


@attrs.define(eq=False)
class SnapshotGenerator:
    """Writes the image as a snapshot of ``quorum`` each time enough log has
    accumulated."""

    config: ControllerConfig
    quorum: RaftNodeShell
    # log size at the last snapshot
    _snapshot_size: int = attrs.field(init=False, default=0)
    _snapshotting: bool = attrs.field(init=False, default=False)
    # Set while no snapshot is being written; a new one each time a snapshot starts.
    _snapshot_done: trio.Event = attrs.field(init=False, factory=trio.Event)

    def __attrs_post_init__(self) -> None:
        self._snapshot_done.set()

    def maybe_start(self, image: MetadataImage, nursery: trio.Nursery | None) -> None:
        """After ``image`` was published: write it in ``nursery`` (None: the server is
        not running) if enough log came since the last snapshot and none is being
        written."""
        threshold = self.config.metadata_log_max_record_bytes_between_snapshots
        if self._snapshotting or nursery is None:
            return
        if self.quorum.log_size - self._snapshot_size < threshold:
            return
        self._snapshotting = True
        self._snapshot_done = trio.Event()
        nursery.start_soon(self._write_snapshot, image)

    async def _write_snapshot(self, image: MetadataImage) -> None:
        try:
            records = list(image.records())
            # The Raft log keeps the snapshot (and drops the log below it); the payload
            # is the image's records in one batch.
            payload = await trio.to_thread.run_sync(encode_snapshot, records)
            await self.quorum.create_snapshot(image.offset + 1, payload)
        except (OSError, ValueError) as exc:
            # A snapshot only shortens the next start's replay: try again after as much
            # log again, rather than fail the controller over it.
            _logger.warning("writing a metadata snapshot failed: %s", exc)
        except FatalFaultError:
            raise
        except Exception as exc:
            # The same, for a fault nobody foresaw (Kafka's snapshot generator logs it
            # and goes on); with its traceback, since it is a bug.
            _logger.error(
                "Encountered non-fatal fault: writing a metadata snapshot at offset %d "
                "failed",
                image.offset,
                exc_info=exc,
            )
        self._snapshot_size = self.quorum.log_size
        self._snapshotting = False
        self._snapshot_done.set()

    async def wait_written(self) -> None:
        """Until no snapshot is being written (at once if none is)."""
        await self._snapshot_done.wait()
