"""Recovery after a crash: whatever the damage past the recovery point, a prefix survives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import (
    CompressionType,
    Log,
    LogConfig,
    LogRecovered,
    build_batch,
    iter_batches,
    make_records,
)
from minikafka.log.testing import (
    ManualClock,
    keyed_batch,
    read_all_records,
    value_batch,
)
from minikafka.trace.testing import RecordingTracer

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)

append = st.tuples(
    st.just("append"),
    st.integers(1, 5),  # records
    st.integers(0, 300),  # value bytes
    st.sampled_from([CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4]),
)
operations = st.lists(
    st.one_of(
        append,
        st.just(("roll", 0, 0, CompressionType.NONE)),
        st.just(("flush", 0, 0, CompressionType.NONE)),
    ),
    min_size=1,
    max_size=40,
)


def crash(log: Log) -> None:
    """A crash closes nothing cleanly: drop the file descriptors, write nothing more."""
    for segment in log.segments:
        segment.close_handlers()


def batches_on_disk(log: Log) -> list[bytes]:
    return [segment.read_batch(pos, header) for segment, pos, header in log.batches()]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(ops=operations, damage=st.data())
def test_recovery_keeps_exactly_a_prefix(
    ops: list[tuple[str, int, int, CompressionType]], damage: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dir = Path(tmp) / "t-0"
        log = Log.open(dir, CONFIG, clock=ManualClock())
        for kind, count, size, codec in ops:
            if kind == "append":
                records = make_records([(b"k", b"v" * size)] * count, timestamp_ms=1000)
                log.append_as_leader(
                    bytearray(build_batch(records, compression=codec)), 0
                )
            elif kind == "roll":
                log.roll()
            else:
                log.flush()
        appended = batches_on_disk(log)
        flushed = log.recovery_point

        # Damage only what was never fsynced: bytes after the recovery point.
        unflushed = [s for s in log.segments if s.next_offset > flushed] or [
            log.active_segment
        ]
        segment = damage.draw(st.sampled_from(unflushed))
        start = 0
        if segment.base_offset < flushed:
            found = segment.translate_offset(flushed)
            start = found[0] if found else segment.size
        path = segment.log_path
        if damage.draw(st.booleans(), label="truncate") or segment.size == start:
            cut = damage.draw(st.integers(start, segment.size), label="cut at")
            os.truncate(path, cut)
        else:
            at = damage.draw(st.integers(start, segment.size - 1), label="flip at")
            batch_start = max(p for p, _ in segment.batches() if p <= at)
            if at - batch_start < 8 or 12 <= at - batch_start < 16:
                # baseOffset and partitionLeaderEpoch are outside the CRC by design (the
                # leader rewrites them), so no check can see a flip there; flip magic.
                at = batch_start + 16
            if at < segment.size:
                with open(path, "r+b") as f:
                    f.seek(at)
                    byte = f.read(1)
                    f.seek(at)
                    f.write(bytes([byte[0] ^ 0x5A]))
        crash(log)

        tracer = RecordingTracer()
        again = Log.open(
            dir, CONFIG, recovery_point=flushed, clock=ManualClock(), tracer=tracer
        )
        survived = batches_on_disk(again)
        assert survived == appended[: len(survived)]
        assert again.log_end_offset >= flushed
        assert any(isinstance(e, LogRecovered) for e in tracer.events)
        for offset in range(again.log_start_offset, again.log_end_offset):
            fetched = again.read(offset, 1).records
            assert fetched is not None
            data = fetched.read_bytes()
            ((_, header),) = list(iter_batches(data))  # one whole, valid batch
            assert header.base_offset <= offset <= header.last_offset
        # The log goes on from where recovery left it.
        info = again.append_as_leader(value_batch(1), 0)
        assert info.first_offset == again.log_end_offset - 1
        crash(again)


def test_a_clean_shutdown_skips_recovery(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, clock=ManualClock())
    for _ in range(20):
        log.append_as_leader(value_batch(2), 0)
    log.flush()
    log.close()
    tracer = RecordingTracer()
    again = Log.open(
        tmp_path / "t-0",
        CONFIG,
        recovery_point=40,
        had_clean_shutdown=True,
        tracer=tracer,
    )
    assert again.log_end_offset == 40
    assert not [e for e in tracer.events if isinstance(e, LogRecovered)]


def test_a_torn_tail_is_cut_and_indexes_rebuilt(tmp_path: Path) -> None:
    log = Log.open(
        tmp_path / "t-0", LogConfig(index_interval_bytes=100), clock=ManualClock()
    )
    for _ in range(30):
        log.append_as_leader(keyed_batch([(b"k", b"v" * 50)]), 0)
    size = log.active_segment.size
    crash(log)
    os.truncate(log.active_segment.log_path, size - 7)
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"\x00garbage")
    again = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=100))
    assert again.log_end_offset == 29
    assert [r.offset for r in read_all_records(again)] == list(range(29))
    entries = again.active_segment.offset_index.entries()
    assert entries
    assert all(again.active_segment.translate_offset(o) for o, _ in entries)


def test_corruption_in_an_early_segment_drops_everything_after_it(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, clock=ManualClock())
    for _ in range(60):
        log.append_as_leader(value_batch(1, value_bytes=200), 0)
    assert len(log.segments) >= 3
    second = log.segments[1]
    crash(log)
    with open(second.log_path, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xff")
    again = Log.open(tmp_path / "t-0", CONFIG)
    assert len(again.segments) == 2
    assert again.log_end_offset < second.next_offset
    assert [r.offset for r in read_all_records(again)] == list(
        range(again.log_end_offset)
    )


def test_scans_cross_read_chunks_and_batches_larger_than_a_chunk(
    tmp_path: Path,
) -> None:
    config = LogConfig(max_message_bytes=4 * 1024 * 1024, index_interval_bytes=10**9)
    log = Log.open(tmp_path / "t-0", config, clock=ManualClock())
    for _ in range(3000):  # ~1.5 MiB of small batches: more than one 1 MiB scan chunk
        log.append_as_leader(value_batch(1, value_bytes=440), 0)
    # one 2 MiB batch
    log.append_as_leader(value_batch(1, value_bytes=2 * 1024 * 1024), 0)
    log.append_as_leader(value_batch(1), 0)
    assert log.active_segment.offset_index.entries() == []  # every lookup scans from 0
    for offset in (0, 2047, 2999, 3000, 3001):
        found = log.active_segment.translate_offset(offset)
        assert found is not None
        assert found[1].base_offset == offset
    crash(log)
    again = Log.open(tmp_path / "t-0", config)
    assert again.log_end_offset == 3002
    assert again.active_segment.size == log.active_segment.size
