"""The sparse offset and time indexes, alone and inside segments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import LogConfig, OffsetIndex, TimeIndex
from minikafka.log._index import CorruptIndexError


def test_offset_index_lookup_finds_the_floor_entry(tmp_path: Path) -> None:
    index = OffsetIndex.open(tmp_path / "0.index", 100, 1024)
    for offset, position in [(110, 400), (120, 800), (135, 1200)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)  # before every entry: the segment's start
    assert index.lookup(110) == (110, 400)
    assert index.lookup(134) == (120, 800)
    assert index.lookup(10**9) == (135, 1200)
    with pytest.raises(ValueError, match="not after"):
        index.append(135, 1300)
    index.truncate_to(120)
    assert index.entries() == [(110, 400)]
    index.close()
    reopened = OffsetIndex.open(tmp_path / "0.index", 100, 1024)
    assert reopened.entries() == [(110, 400)]
    assert (tmp_path / "0.index").stat().st_size == 8  # relative offset + position


def test_index_entries_are_relative_to_the_base_offset(tmp_path: Path) -> None:
    index = OffsetIndex.open(tmp_path / "i", 2**40, 1024)
    index.append(2**40 + 7, 99)
    assert (tmp_path / "i").read_bytes() == (7).to_bytes(4, "big") + (99).to_bytes(
        4, "big"
    )


def test_time_index_only_moves_forward(tmp_path: Path) -> None:
    index = TimeIndex.open(tmp_path / "0.timeindex", 0, 1200)
    index.maybe_append(1000, 0)
    index.maybe_append(900, 5)  # an older timestamp adds nothing
    index.maybe_append(2000, 10)
    assert index.entries() == [(1000, 0), (2000, 10)]
    assert index.lookup(500) == 0
    assert index.lookup(1999) == 0
    assert index.lookup(2000) == 10
    assert index.max_entries == 100
    index.truncate_to(10)
    assert index.entries() == [(1000, 0)]


def test_a_damaged_index_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.index").write_bytes(b"\x00" * 7)
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(tmp_path / "bad.index", 0, 1024)
    (tmp_path / "back.index").write_bytes(
        (5).to_bytes(4, "big")
        + (10).to_bytes(4, "big")
        + (3).to_bytes(4, "big")
        + bytes(4)
    )
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(tmp_path / "back.index", 0, 1024)


def test_full_index(tmp_path: Path) -> None:
    index = OffsetIndex.open(
        tmp_path / "i", 0, LogConfig(segment_index_bytes=16).segment_index_bytes
    )
    index.append(1, 0)
    assert not index.full
    index.append(2, 10)
    assert index.full


@settings(max_examples=50, deadline=None, derandomize=True)
@given(
    gaps=st.lists(
        st.tuples(st.integers(1, 50), st.integers(1, 5000)), min_size=1, max_size=60
    )
)
def test_lookup_matches_a_linear_scan(gaps: list[tuple[int, int]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        index = OffsetIndex.open(Path(tmp) / "i", 1000, 10**6)
        offset, position, entries = 1000, 0, []
        for offset_gap, position_gap in gaps:
            offset += offset_gap
            position += position_gap
            index.append(offset, position)
            entries.append((offset, position))
        for target in range(1000, offset + 5):
            below = [e for e in entries if e[0] <= target]
            assert index.lookup(target) == (below[-1] if below else (1000, 0))
        index.close()
