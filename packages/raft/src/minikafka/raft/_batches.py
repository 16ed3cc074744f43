"""Raft entries as Kafka record batches: one batch an entry, the batch's partition leader
epoch the entry's epoch (KIP-595's ``__cluster_metadata`` is an ordinary Kafka log).

The same bytes go to disk (:mod:`._file_log`) and on the wire (Fetch, :mod:`._fetch_wire`),
so a broker that fetches the metadata log appends what a voter stores, byte for byte. A
control entry is a control batch holding one LeaderChange record (key: version 0, type
2), as Kafka writes it; a reader of the metadata records skips control batches.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.log import Record, build_batch, iter_decoded_batches

from ._log import Entry

LEADER_CHANGE_KEY = (0).to_bytes(2, "big") + (2).to_bytes(2, "big")  # version 0, LEADER_CHANGE


def entry_batch(entry: Entry) -> bytes:
    key = LEADER_CHANGE_KEY if entry.control else None
    return bytes(
        build_batch(
            [Record(entry.offset, 0, key, entry.data)],
            partition_leader_epoch=entry.epoch,
            is_control=entry.control,
        )
    )


def encode_entries(entries: Iterable[Entry]) -> bytes:
    return b"".join(entry_batch(entry) for entry in entries)


def decode_entries(data: bytes, start: int = 0) -> list[Entry]:
    """The entries in ``data`` (whole batches) from offset ``start``; raises on a bad CRC."""
    return [
        Entry(record.offset, header.partition_leader_epoch, record.value or b"", header.is_control)
        for _, header, records in iter_decoded_batches(data)
        for record in records
        if record.offset >= start
    ]
