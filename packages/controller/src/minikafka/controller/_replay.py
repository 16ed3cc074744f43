"""Committed metadata records, replayed into the controller and into the next image.

Every node keeps two copies of the metadata state: the controller's timeline structures
(what it decides on) and the ``MetadataImage`` (what brokers and subscribers read). A
committed record goes into both, by one of these paths, each here as a function that
returns the ``MetadataDelta`` for the server to publish (None when nothing moved):

- on the active controller, its own records once they commit (:func:`replay_appends`):
  the controller replayed them when it decided them, so only the image takes them;
- at start and on a standby, what the Raft node reports (Kafka's
  ``QuorumMetaLogListener``): a snapshot, its own or fetched from the leader
  (:func:`replay_snapshot`, ``handleLoadSnapshot``), and committed entries
  (:func:`replay_entries`, ``handleCommit``);
- on a controller about to lead, what committed that it lacks, from its own log
  (:func:`replay_log`): what it reverted when it renounced, though it committed.

:func:`load_metadata` reads a quorum's newest snapshot and committed log after it in one
go, as a broker's ``MetadataLoader`` builds its image.

A committed record that cannot be replayed, or a snapshot that cannot be applied, means
this node's state is no longer the log's: that is fatal (Kafka's "Unable to apply ...
record on standby controller"), a one-line ``FatalFaultError`` that ends the process.

No trio here: the functions take what they replay and return the delta.
"""

from __future__ import annotations

import collections

from minikafka.raft import Entry, Snapshot

from ._controller import AppendRecords, QuorumController
from ._event_faults import fatal_fault
from ._image import MetadataDelta, MetadataImage
from ._metadata_log import MetadataQuorum, decode_metadata_records, read_committed
from ._records import decode_record


def load_metadata(
    quorum: MetadataQuorum,
    controller: QuorumController | None = None,
    now: float = 0.0,
    *,
    end_offset: int | None = None,
) -> MetadataImage:
    """Replay the newest snapshot and the committed log after it (up to ``end_offset``
    if given, not the quorum's high watermark: a lone voter before it runs reads its
    whole log, which its election commits, there being no other voter to differ).

    Returns the image; if ``controller`` is given it replays the same records at ``now``
    (the time its trace events carry), so a restarted controller knows exactly what the
    image says.
    """
    delta = MetadataDelta(MetadataImage())
    snapshot = quorum.latest_snapshot()
    if snapshot is not None:
        snapshot_id, records = snapshot
        for record in records:
            delta.replay(record)
        delta.offset = snapshot_id.end_offset - 1
        if controller is not None:
            controller.load_snapshot(records, snapshot_id.end_offset - 1, now)
    start = delta.offset + 1
    batches = (
        quorum.read_committed(start)
        if end_offset is None
        else read_committed(quorum.log, start, end_offset)
    )
    for batch in batches:
        for offset, record in batch.records:
            delta.replay(record, offset)
        if controller is not None:
            controller.replay_committed(
                (r for _, r in batch.records), batch.last_offset, now
            )
    return delta.apply()


def replay_appends(
    controller: QuorumController,
    image: MetadataImage,
    appends: collections.deque[AppendRecords],
    offset: int,
) -> MetadataDelta | None:
    """The active controller's appends committed up to ``offset``, taken off the front
    of ``appends`` and replayed into a delta of ``image`` (``controller`` names the node
    in a fatal fault)."""
    delta = MetadataDelta(image)
    while appends and appends[0].last_offset <= offset:
        append = appends.popleft()
        try:
            for i, record in enumerate(append.records):
                delta.replay(record, append.base_offset + i)
        except Exception as exc:
            raise fatal_fault(
                controller.config.node_id,
                f"replaying the committed records from offset {append.base_offset}",
                exc,
            ) from exc
    return None if delta.offset == image.offset else delta


def replay_entries(
    controller: QuorumController,
    image: MetadataImage,
    entries: tuple[Entry, ...],
    now: float,
) -> MetadataDelta | None:
    """A standby controller replays what the leader committed, as a broker does. A
    committed record that cannot be replayed is fatal (Kafka's "Unable to apply ...
    record on standby controller"): this node's state is no longer the log's."""
    if not entries:
        return None
    first = entries[0].offset
    try:
        records = [(e.offset, decode_record(e.data)) for e in entries]
        controller.replay_committed((r for _, r in records), records[-1][0], now)
        delta = MetadataDelta(image)
        for offset, record in records:
            delta.replay(record, offset)
    except Exception as exc:
        raise fatal_fault(
            controller.config.node_id,
            f"replaying the committed records from offset {first}",
            exc,
        ) from exc
    return delta


def replay_snapshot(
    controller: QuorumController, snapshot: Snapshot, now: float
) -> MetadataDelta:
    """A whole new image, as a delta from nothing: a subscriber cannot see what it
    dropped (none subscribes on a controller-only node). A snapshot that cannot be
    applied is fatal, as a record that cannot be replayed."""
    snapshot_id = snapshot.id
    try:
        records = [r for _, r in decode_metadata_records(snapshot.payload)]
        offset = snapshot_id.end_offset - 1
        controller.load_snapshot(records, offset, now)
        delta = MetadataDelta(MetadataImage())
        for record in records:
            delta.replay(record)
        delta.offset = offset
    except Exception as exc:
        raise fatal_fault(
            controller.config.node_id,
            f"applying the snapshot that ends at offset {snapshot_id.end_offset} "
            f"(epoch {snapshot_id.epoch})",
            exc,
        ) from exc
    return delta


def replay_log(
    controller: QuorumController,
    image: MetadataImage,
    quorum: MetadataQuorum,
    now: float,
) -> MetadataDelta | None:
    """A controller about to lead: replay what has committed that it has not, from its
    own log (the leader's log holds every committed record), as a standby replays the
    leader's records: what it reverted when it renounced after a fault, though the
    records had committed. Fatal if a record cannot be replayed."""
    # The controller and the image are both at the last commit, unless the event that
    # failed moved one and not the other: each takes what it has not seen.
    controller_from = controller.last_committed_offset + 1
    image_from = image.offset + 1
    start = min(controller_from, image_from)
    delta = MetadataDelta(image)
    try:
        for batch in quorum.read_committed(start):
            unseen = [r for o, r in batch.records if o >= controller_from]
            if unseen:
                controller.replay_committed(unseen, batch.last_offset, now)
            for offset, record in batch.records:
                if offset >= image_from:
                    delta.replay(record, offset)
    except Exception as exc:
        raise fatal_fault(
            controller.config.node_id,
            f"replaying the committed metadata log from offset {start}",
            exc,
        ) from exc
    return None if delta.offset == image.offset else delta
