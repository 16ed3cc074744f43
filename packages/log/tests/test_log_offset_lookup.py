"""Finding an offset in a segment: the sparse index's floor entry, then a forward scan.

Random batches (sizes, record counts, compression) go into logs with random
``index.interval.bytes``; every offset the log holds must then be found, through the
index, in the batch that holds it, and every index entry must name a batch boundary.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import (
    CompressionType,
    Log,
    LogConfig,
    RecordBatchHeader,
    build_batch,
    make_records,
)
from minikafka.log.testing import ManualClock

batches = st.lists(
    st.tuples(
        st.integers(1, 6),  # records
        st.integers(0, 400),  # value bytes
        st.sampled_from([CompressionType.NONE, CompressionType.GZIP]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(appends=batches, interval=st.integers(0, 1500), segment_kib=st.integers(1, 8))
def test_every_offset_is_found_in_the_batch_that_holds_it(
    appends: list[tuple[int, int, CompressionType]], interval: int, segment_kib: int
) -> None:
    config = LogConfig(segment_bytes=segment_kib * 1024, index_interval_bytes=interval)
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "t-0", config, clock=ManualClock())
        for count, size, codec in appends:
            records = make_records([(b"k", b"v" * size)] * count, timestamp_ms=1000)
            log.append_as_leader(bytearray(build_batch(records, compression=codec)), 0)
        for segment in log.segments:
            layout = list(segment.batches())
            by_position = dict(layout)
            entries = segment.offset_index.entries()
            for offset, position in entries:  # each entry: a batch's last offset
                assert by_position[position].last_offset == offset
            for _, header in layout:
                for offset in range(header.base_offset, header.last_offset + 1):
                    below = [e for e in entries if e[0] <= offset]
                    floor = below[-1] if below else (segment.base_offset, 0)
                    assert segment.offset_index.lookup(offset) == floor
                    for start in (0, floor[1]):
                        found = segment._translate_by_scan(offset, start)
                        assert found is not None
                        assert found[1].base_offset == header.base_offset
                    fetched = log.read(offset, 1).records
                    assert fetched is not None
                    assert fetched.position == by_position_of(layout, offset)
            # Past the segment's last offset there is nothing to find.
            assert segment._translate_by_scan(segment.next_offset) is None
        log.close()


def by_position_of(layout: list[tuple[int, RecordBatchHeader]], offset: int) -> int:
    """The position of the batch holding ``offset`` (a linear search: the model)."""
    for position, header in layout:
        if header.base_offset <= offset <= header.last_offset:
            return position
    raise AssertionError(f"no batch holds offset {offset}")
