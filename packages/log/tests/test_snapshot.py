"""Producer-state snapshots: entries read back as written; a damaged file is refused,
never half-read. (Byte for byte against Kafka's own: tests/reference/
test_producer_snapshot.py.)"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.log import (
    CorruptSnapshotError,
    ProducerSnapshotEntry,
    read_snapshot,
    snapshot_bytes,
)

entries = st.builds(
    ProducerSnapshotEntry,
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    last_sequence=st.integers(0, 2**31 - 1),
    last_offset=st.integers(0, 2**63 - 1),
    offset_delta=st.integers(0, 2**31 - 1),
    timestamp=st.integers(-1, 2**62),
    coordinator_epoch=st.integers(-1, 2**31 - 1),
    current_txn_first_offset=st.integers(-1, 2**62),
)


@given(st.lists(entries, max_size=20))
def test_entries_read_back_as_written(written: list[ProducerSnapshotEntry]) -> None:
    assert read_snapshot(snapshot_bytes(written)) == written


def test_a_damaged_snapshot_is_refused() -> None:
    good = snapshot_bytes([ProducerSnapshotEntry(7, 1, 9, 100, 4, 1_000)])
    damaged = {
        "version": b"\x00\x02" + good[2:],
        "CRC": good[:-1] + bytes([good[-1] ^ 1]),
        "bytes": good[:4],
        "entries": good[:-8],
    }
    assert len(damaged) == 4
    for data in damaged.values():
        with pytest.raises(CorruptSnapshotError):
            read_snapshot(data)  # the version, the CRC, a truncated header or entry


@given(st.binary(max_size=300))
def test_any_bytes_are_a_snapshot_or_refused_by_name(data: bytes) -> None:
    # Guarantee: recovery meets only CorruptSnapshotError in a damaged snapshot, and
    # then reads the log instead.
    with contextlib.suppress(CorruptSnapshotError):
        read_snapshot(data)
