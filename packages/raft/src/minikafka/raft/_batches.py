"""Raft entries as Kafka record batches: one batch a unit (the entries appended together,
one controller operation's records), the batch's partition leader epoch the entries'
epoch (KIP-595's ``__cluster_metadata`` is an ordinary Kafka log). Read back, every
record of a batch but the last is ``continued``.

The same bytes go to disk (:mod:`._file_log`) and on the wire (Fetch, :mod:`._fetch_wire`),
so a broker that fetches the metadata log appends what a voter stores, byte for byte. A
control entry is a control batch holding one LeaderChange record (key: version 0, type
2; value: Kafka's ``LeaderChangeMessage``), as Kafka writes it; a reader of the metadata
records skips control batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from minikafka.log import Record, build_batch, iter_decoded_batches

from ._log import Entry

# version 0, LEADER_CHANGE
LEADER_CHANGE_KEY = (0).to_bytes(2, "big") + (2).to_bytes(2, "big")


def _voters(ids: Iterable[int]) -> bytes:
    # A compact array (its length plus one, an unsigned varint: under 128 voters, one
    # byte) of Voter structs: the id, then no tagged fields.
    ordered = sorted(ids)
    assert len(ordered) < 127
    return bytes([len(ordered) + 1]) + b"".join(
        v.to_bytes(4, "big", signed=True) + b"\x00" for v in ordered
    )


def encode_leader_change(
    leader_id: int, voters: Iterable[int], granting: Iterable[int]
) -> bytes:
    """The value of a LeaderChange record: Kafka's ``LeaderChangeMessage`` v0 (flexible:
    version, leader id, the epoch's voters, those who voted for the leader, then no
    tagged fields), which Kafka's tools decode from the metadata log."""
    return (
        (0).to_bytes(2, "big")
        + leader_id.to_bytes(4, "big", signed=True)
        + _voters(voters)
        + _voters(granting)
        + b"\x00"
    )


def units(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    """``entries`` cut into units: each ends with an entry that is not ``continued``
    (a read that stopped inside one yields that part as a unit of its own)."""
    unit: list[Entry] = []
    for entry in entries:
        unit.append(entry)
        if not entry.continued:
            yield unit
            unit = []
    if unit:
        yield unit


def unit_batch(unit: list[Entry]) -> bytes:
    """One unit as one record batch, in its entries' epoch."""
    first = unit[0]
    key = LEADER_CHANGE_KEY if first.control else None
    return bytes(
        build_batch(
            [Record(e.offset, 0, key, e.data) for e in unit],
            partition_leader_epoch=first.epoch,
            is_control=first.control,
        )
    )


def encode_entries(entries: Iterable[Entry]) -> bytes:
    return b"".join(unit_batch(unit) for unit in units(entries))


def decode_entries(data: bytes, start: int = 0) -> list[Entry]:
    """The entries in ``data`` (whole batches) from offset ``start``; raises on a bad CRC."""
    return [
        Entry(
            record.offset,
            header.partition_leader_epoch,
            record.value or b"",
            header.is_control,
            continued=record.offset < header.last_offset,
        )
        for _, header, records in iter_decoded_batches(data)
        for record in records
        if record.offset >= start
    ]
