"""Recovery keeps exactly the whole valid batches before the damage, and the log goes on.

The property appends random batches (with rolls and flushes), then damages what was
never fsynced (a file cut at a random byte, or a random byte of a batch flipped), drops
the descriptors without a clean shutdown, and reopens. Recovery must keep *every* batch
before the first damaged one and nothing from it on (a longer log would hold a torn or
corrupt batch; a shorter one loses data recovery could have kept), rescan only the
segments from the one holding the recovery point, rebuild the offset index to the
entries the appends had made, find every offset through it, and take appends again
that survive the next crash.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import (
    CompressionType,
    CorruptRecordError,
    Log,
    LogConfig,
    LogRecovered,
    build_batch,
    make_records,
)
from minikafka.log.testing import ManualClock, value_batch
from minikafka.trace.testing import RecordingTracer

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.integers(1, 5),  # records
            st.integers(0, 300),  # value bytes
            st.sampled_from([CompressionType.NONE, CompressionType.GZIP]),
        ),
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


def on_disk(log: Log) -> list[tuple[int, bytes]]:
    """(segment base offset, batch bytes) of every batch, in order; a torn batch left
    in a segment (or bytes a segment counts that its file no longer has) fails."""
    try:
        return [
            (segment.base_offset, segment.read_batch(position, header))
            for segment, position, header in log.batches()
        ]
    except CorruptRecordError as exc:
        raise AssertionError(f"the log holds a batch that is not whole: {exc}") from exc


def reopen(dir: Path, recovery_point: int) -> tuple[Log, list[LogRecovered]]:
    tracer = RecordingTracer()
    try:
        log = Log.open(
            dir,
            CONFIG,
            recovery_point=recovery_point,
            clock=ManualClock(),
            tracer=tracer,
        )
    except CorruptRecordError as exc:  # recovery left a bad batch the open then read
        raise AssertionError(f"the recovered log holds a bad batch: {exc}") from exc
    return log, [e for e in tracer.events if isinstance(e, LogRecovered)]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(ops=operations, damage=st.data())
def test_recovery_keeps_every_whole_valid_batch_before_the_damage(
    ops: list[tuple[str, int, int, CompressionType]], damage: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dir = Path(tmp) / "t-0"
        log = Log.open(dir, CONFIG, clock=ManualClock())
        for kind, count, size, codec in ops:
            if kind == "append":
                records = make_records([(b"k", b"v" * size)] * count, timestamp_ms=1000)
                batch = bytearray(build_batch(records, compression=codec))
                log.append_as_leader(batch, 0)
            elif kind == "roll":
                log.roll()
            else:
                log.flush()
        flushed = log.recovery_point
        appended = on_disk(log)
        entries = {s.base_offset: s.offset_index.entries() for s in log.segments}
        layout = {s.base_offset: list(s.batches()) for s in log.segments}
        bases = [s.base_offset for s in log.segments]
        first_rescanned = max(
            (i for i, base in enumerate(bases) if base <= flushed), default=0
        )

        # Damage one segment past the recovery point, from the batch holding it on.
        candidates = [s for s in log.segments if s.next_offset > flushed and s.size]
        cut_segment, cut = log.active_segment, log.active_segment.size  # no damage
        if candidates:
            segment = damage.draw(st.sampled_from(candidates), label="segment")
            start = 0
            if segment.base_offset < flushed:
                found = segment.translate_offset(flushed)
                start = found[0] if found else segment.size
            if start < segment.size:
                cut_segment = segment
                if damage.draw(st.booleans(), label="cut the file"):
                    cut = damage.draw(st.integers(start, segment.size), label="cut at")
                    os.truncate(segment.log_path, cut)
                else:
                    at = damage.draw(st.integers(start, segment.size - 1), label="at")
                    cut = max(p for p, _ in layout[segment.base_offset] if p <= at)
                    if at - cut < 8 or 12 <= at - cut < 16:
                        # baseOffset and partitionLeaderEpoch are outside the CRC by
                        # design (the leader rewrites them): flip the magic byte instead.
                        at = cut + 16
                    with open(segment.log_path, "r+b") as f:
                        f.seek(at)
                        byte = f.read(1)
                        f.seek(at)
                        f.write(bytes([byte[0] ^ 0x5A]))
        damaged = cut < cut_segment.size
        cut_base = cut_segment.base_offset
        crash(log)

        # What must survive: every batch before the damaged segment, the whole batches
        # of it that end at or before the cut, and nothing after it.
        kept_in_cut = [
            position
            for position, header in layout[cut_base]
            if position + header.size <= cut
        ]
        expected = [batch for base, batch in appended if base < cut_base] + [
            batch for base, batch in appended if base == cut_base
        ][: len(kept_in_cut)]
        if not damaged:
            expected = [batch for _, batch in appended]

        again, recovered = reopen(dir, flushed)
        assert [batch for _, batch in on_disk(again)] == expected
        (event,) = recovered
        last = bases.index(cut_base) if damaged else len(bases) - 1
        assert event.segments_recovered == last - first_rescanned + 1
        end = again.log_end_offset
        assert end >= flushed
        for segment in again.segments:
            rebuilt = segment.offset_index.entries()
            assert rebuilt == [e for e in entries[segment.base_offset] if e[0] < end]
            for offset in range(segment.base_offset, segment.next_offset):
                found = segment.translate_offset(offset)
                assert found is not None
                assert found[1].base_offset <= offset <= found[1].last_offset

        # The log goes on from where recovery left it, and that survives a crash too.
        info = again.append_as_leader(value_batch(2), 0)
        assert info.first_offset == end
        grown = [batch for _, batch in on_disk(again)]
        crash(again)
        final, _ = reopen(dir, flushed)
        assert [batch for _, batch in on_disk(final)] == grown
        assert final.log_end_offset == end + 2
        final.close()


def test_a_batch_that_does_not_continue_the_offsets_is_cut(tmp_path: Path) -> None:
    """A batch's baseOffset is outside its CRC (the leader rewrites it): only the offset
    order tells that a batch which goes back does not belong after the ones before."""
    log = Log.open(tmp_path / "t-0", CONFIG, clock=ManualClock())
    for _ in range(6):
        log.append_as_leader(value_batch(2, value_bytes=50), 0)
    layout = list(log.active_segment.batches())
    kept = [log.active_segment.read_batch(p, h) for p, h in layout[:4]]
    position, _ = layout[4]
    crash(log)
    with open(log.active_segment.log_path, "r+b") as f:
        f.seek(position)  # baseOffset: offset 2 again, the second batch's
        f.write((2).to_bytes(8, "big"))
    again, (event,) = reopen(tmp_path / "t-0", 0)
    assert [batch for _, batch in on_disk(again)] == kept
    assert again.log_end_offset == 8
    assert event.truncated_bytes == 2 * layout[4][1].size
    again.close()


def test_after_a_cut_every_later_segment_is_dropped(tmp_path: Path) -> None:
    """Kafka's rule: once a segment held a bad tail, nothing after it is trusted, even a
    next segment that starts exactly where the cut one now ends (the bad bytes here are
    zeros after its last batch, as a file extended but never written leaves them)."""
    log = Log.open(tmp_path / "t-0", CONFIG, clock=ManualClock())
    for _ in range(30):
        log.append_as_leader(value_batch(1, value_bytes=200), 0)
    assert len(log.segments) >= 3
    first = log.segments[0]
    kept = [first.read_batch(p, h) for p, h in first.batches()]
    crash(log)
    with open(first.log_path, "ab") as f:
        f.write(bytes(100))
    again, (event,) = reopen(tmp_path / "t-0", 0)
    assert [batch for _, batch in on_disk(again)] == kept
    assert len(again.segments) == 1
    assert event.segments_recovered == 1
    again.close()
