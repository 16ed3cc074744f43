"""Producer-state snapshots (``.snapshot`` files, KIP-98 and KIP-360).

A log rebuilds its producers' state (:mod:`._producer_state`) by reading batch headers;
from the log's start that can be a long read. Kafka writes the state down at every
segment roll and at a clean shutdown, in ``<offset>.snapshot`` (the state as of that
offset), and recovery starts from the latest snapshot and reads only the batches after
it. One entry per producer, for its last batch only (a retry of an older batch after a
restart is answered as a sequence error, which the producer handles):

- ``version:int16`` (1) and ``crc:uint32``, a CRC-32C of everything after it;
- ``entries``: an int32 count, then per producer ``producerId:int64``, ``epoch:int16``,
  ``lastSequence:int32``, ``lastOffset:int64``, ``offsetDelta:int32`` (the last batch's
  last offset minus its first), ``timestamp:int64``, ``coordinatorEpoch:int32`` (of the
  last transaction marker, -1 if none) and ``currentTxnFirstOffset:int64`` (-1: no
  transaction open).

This module reads and writes Kafka's files; :mod:`._producer_snapshots` says when the
Log writes, reads and removes them.
"""

from __future__ import annotations

import struct

import attrs
from crc32c import crc32c

__all__ = [
    "CorruptSnapshotError",
    "ProducerSnapshotEntry",
    "read_snapshot",
    "snapshot_bytes",
]

VERSION = 1
_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotError(ValueError):
    """A snapshot that cannot be trusted: recovery reads the log instead."""


@attrs.frozen
class ProducerSnapshotEntry:
    """One producer as a snapshot keeps it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def snapshot_bytes(entries: list[ProducerSnapshotEntry]) -> bytes:
    """A snapshot file's bytes, in ``entries``' order."""
    body = _COUNT.pack(len(entries)) + b"".join(
        _ENTRY.pack(*attrs.astuple(entry)) for entry in entries
    )
    return _HEADER.pack(VERSION, crc32c(body)) + body


def read_snapshot(data: bytes) -> list[ProducerSnapshotEntry]:
    """A snapshot file's entries; CorruptSnapshotError for a wrong version, CRC or
    length."""
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"a snapshot of {len(data)} bytes")
    version, crc = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(f"a snapshot of version {version}")
    body = data[_HEADER.size :]
    if crc32c(body) != crc:
        raise CorruptSnapshotError("the snapshot's CRC does not match its entries")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"a snapshot of {count} entries in {len(body)} bytes"
        )
    return [
        ProducerSnapshotEntry(*fields)
        for fields in _ENTRY.iter_unpack(body[_COUNT.size :])
    ]
