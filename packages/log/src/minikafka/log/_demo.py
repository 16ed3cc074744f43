"""``python -m minikafka.log demo``: write a small log that rolls segments, and walk through it.

Deterministic (a fixed clock, no randomness), so the book and the tests can show its
output; afterwards the reader runs ``dump`` and ``verify`` on the directory it wrote.
"""

from __future__ import annotations

import shutil
import stat
import struct
import tempfile
from pathlib import Path
from typing import TextIO

from ._batch import (
    CompressionType,
    CorruptRecordError,
    RecordBatchHeader,
    read_batch_header,
)
from ._config import LogConfig
from ._list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from ._log import Log
from ._names import LOG_SUFFIX, segment_file_name
from ._records import build_batch, make_records
from ._tool import PathError, dump_segment
from .testing import ManualClock

DEMO_PARTITION = "demo-0"
DEMO_START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z, the clock of every demo batch
DEMO_BATCHES = 300
DEMO_TICK_MS = 10  # between two batches
# Small enough that a few hundred batches of ~150 bytes roll a dozen segments and give each
# segment's offset index several entries.
DEMO_CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=512)
_ITEMS = ("apple", "pear", "plum", "fig", "kiwi")


def demo_batch(i: int, timestamp_ms: int) -> bytes:
    """Producer batch ``i`` of the demo: 1-3 keyed records, codecs taking turns."""
    pairs: list[tuple[bytes | None, bytes | None]] = [
        (
            f"user-{(3 * i + j) % 16:02d}".encode(),
            f'{{"order":{i},"line":{j},"item":"{_ITEMS[(i + j) % len(_ITEMS)]}"}}'.encode(),
        )
        for j in range(1 + i % 3)
    ]
    if i % 50 == 2:
        # keyless and binary: shown as hex
        pairs.append((None, struct.pack(">qd", i, i / 7)))
    codec = CompressionType(i % len(CompressionType))
    return build_batch(
        make_records(pairs, timestamp_ms=timestamp_ms), compression=codec
    )


def write_demo_log(dir: Path) -> Log:
    """The demo's log in ``dir`` (named ``<topic>-<partition>``), left open."""
    clock = ManualClock(DEMO_START_MS)
    log = Log.open(dir, DEMO_CONFIG, clock=clock)
    for i in range(DEMO_BATCHES):
        # A leader change halfway: batches carry epoch 1 from there, and the
        # leader-epoch-checkpoint file gains a second entry.
        epoch = 0 if i < DEMO_BATCHES // 2 else 1
        log.append_as_leader(bytearray(demo_batch(i, clock.now_ms)), epoch)
        clock.advance(DEMO_TICK_MS)
    return log


def demo(out: TextIO, dir: Path | None = None, *, keep: bool = False) -> int:
    """Write the demo log under ``dir`` (a temporary directory by default) and tour it."""
    root = (
        dir if dir is not None else Path(tempfile.mkdtemp(prefix="minikafka-log-demo-"))
    )
    partition = root / DEMO_PARTITION
    if root.exists() and not root.is_dir():
        raise PathError(f"{root}: not a directory")
    if partition.exists() and any(partition.iterdir()):
        raise PathError(
            f"{partition}: already holds files; the demo writes a fresh log"
        )
    log = write_demo_log(partition)
    try:
        log.flush()  # what a clean shutdown does, so the files are complete on disk
        print(
            f"Appended {DEMO_BATCHES} batches to {partition} with segment.bytes="
            f"{DEMO_CONFIG.segment_bytes} and index.interval.bytes="
            f"{DEMO_CONFIG.index_interval_bytes}:",
            file=out,
        )
        for path in sorted(partition.iterdir()):
            st = path.stat()
            print(
                f"  {stat.filemode(st.st_mode)} {st.st_size:>6} {path.name}", file=out
            )
        epochs = ", ".join(
            f"epoch {e.epoch} from offset {e.start_offset}"
            for e in log.leader_epoch_cache.entries
        )
        print(
            f"\nlog start offset {log.log_start_offset}, log end offset {log.log_end_offset}, "
            f"{len(log.segments)} segments ({log.active_segment.log_path.name} is active); "
            f"leader epochs: {epochs}",
            file=out,
        )
        _show_read(log, log.log_end_offset // 2 + 1, 600, out)
        _show_timestamp_lookups(log, DEMO_START_MS + 200 * DEMO_TICK_MS + 5, out)
    finally:
        log.close()
    print(
        "\nThe first batches of the first segment (dump --deep, stopped after 3):",
        file=out,
    )
    dump_segment(
        partition / segment_file_name(0, LOG_SUFFIX), out, deep=True, max_batches=3
    )
    if dir is None and not keep:
        shutil.rmtree(root)
        print(
            f"\nRemoved {root}; pass --keep or --dir DIR to keep the files.", file=out
        )
        return 0
    print(
        f"\nNext:\n"
        f"  python -m minikafka.log dump {partition}            every batch of every segment\n"
        f"  python -m minikafka.log dump {partition} --deep     and every record\n"
        f"  python -m minikafka.log dump {partition} --index    and the indexes\n"
        f"  python -m minikafka.log verify {partition}          check every CRC and offset",
        file=out,
    )
    return 0


def _show_read(log: Log, offset: int, max_bytes: int, out: TextIO) -> None:
    """Log.read step by step: segment, index entry, header scan, the file slice."""
    segment = [s for s in log.segments if s.base_offset <= offset][-1]
    entry_offset, entry_position = segment.offset_index.lookup(offset)
    fetched = log.read(offset, max_bytes)
    region = fetched.records
    assert region is not None, f"offset {offset} is below the log end: there is data"
    print(f"\nread(offset={offset}, max_bytes={max_bytes}), as a fetch does:", file=out)
    print(
        f"  segment {segment.log_path.name}: the last base offset <= {offset}", file=out
    )
    print(
        f"  its offset index: the last entry at or below {offset} is "
        f"offset {entry_offset} -> position {entry_position}",
        file=out,
    )
    print(
        f"  scanning batch headers from there: offset {offset} is in the batch at "
        f"position {region.position}",
        file=out,
    )
    print(
        f"  -> FileSlice({region.path.name}, position={region.position}, "
        f"length={region.length}), sent to the socket with sendfile()",
        file=out,
    )
    data = region.read_bytes()
    headers: list[RecordBatchHeader] = []
    position = 0
    while True:
        try:
            header = read_batch_header(data, position)
        except CorruptRecordError:
            break  # the slice ends inside this batch (or exactly at a batch boundary)
        headers.append(header)
        position += header.size
    rest = len(data) - position
    print(
        f"  it holds {len(headers)} whole batches (offsets {headers[0].base_offset}.."
        f"{headers[-1].last_offset})"
        + (
            f" and the first {rest} bytes of the next: the consumer drops that partial "
            "batch and fetches it again"
            if rest
            else ""
        ),
        file=out,
    )


def _show_timestamp_lookups(log: Log, timestamp: int, out: TextIO) -> None:
    """ListOffsets by time: the time index, then batch headers' maxTimestamp."""
    print("\nListOffsets:", file=out)
    for label, target in (
        (f"timestamp {timestamp}", timestamp),
        ("EARLIEST (-2)", EARLIEST_TIMESTAMP),
        ("LATEST (-1)", LATEST_TIMESTAMP),
        ("MAX_TIMESTAMP (-3)", MAX_TIMESTAMP),
    ):
        found = log.fetch_offset_by_timestamp(target)
        answer = (
            "none"
            if found is None
            else f"offset {found.offset} (timestamp {found.timestamp}, "
            f"leader epoch {found.leader_epoch})"
        )
        print(f"  {label:<26} -> {answer}", file=out)
