"""Loading a partition directory at start-up, and recovering it after a crash.

What a crash can leave behind, and what loading does about it (Kafka's LogLoader):

- ``.deleted`` files: segments retention or compaction had already removed: delete them.
- ``.cleaned`` files: a compaction that had not finished writing: delete them; the old
  segments are intact.
- ``.swap`` files: a compaction that had finished writing and was swapping its result in:
  finish the swap (delete the old segments the swap replaces, rename ``.swap`` to live).
  The swap's ``.txnindex``, if the crash came between its file renames, goes with its
  log (it cannot be rebuilt below the recovery point); its other indexes are rebuilt.
- a torn or corrupt tail: without the clean-shutdown marker, every segment from the one
  holding the recovery point on is rescanned batch by batch with its CRC; the first bad
  batch and everything after it (later segments included) is cut, and indexes are
  rebuilt. What remains is exactly a prefix of what was appended.

Loading opens each segment's files through the log's descriptor pool (:mod:`._files`),
which closes the least recently used as it goes: a broker whose logs hold more segments
than it may keep open still loads them all, one after the other.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from ._batch import CorruptRecordError
from ._config import LogConfig
from ._files import FilePool
from ._names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_from_file_name,
    segment_file_name,
)
from ._segment import LogSegment


@attrs.frozen
class LoadedSegments:
    segments: list[LogSegment]
    recovered_segments: int
    truncated_bytes: int


def load_segments(
    dir: Path,
    config: LogConfig,
    now: int,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    files: FilePool,
) -> LoadedSegments:
    _keep_swapped_txn_indexes(dir)
    _remove_unfinished_files(dir)
    _complete_swaps(dir, config, now, files)
    segments = _open_live_segments(dir, config, now, had_clean_shutdown, files)
    try:
        recovered = truncated = 0
        if not had_clean_shutdown and segments:
            recovered, truncated = _recover(segments, recovery_point)
        if not segments:
            segments.append(
                LogSegment.open(dir, log_start_offset, config, now, files=files)
            )
    except BaseException:
        for segment in segments:  # a log that fails to load keeps no descriptor
            segment.close_handlers()
        raise
    return LoadedSegments(segments, recovered, truncated)


def _keep_swapped_txn_indexes(dir: Path) -> None:
    """A swap's ``.txnindex`` left behind by a crash between the renames of its files
    (the ``.log`` goes first) joins its log: ``.cleaned`` -> ``.swap`` beside a
    ``.log.swap``, ``.swap`` -> live beside the live ``.log`` it was swapped in with.
    Unlike the offset and time indexes it is not rebuilt from a segment below the
    recovery point, and its entries are the aborted transactions whose marker stays."""
    for swap_log in dir.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}"):
        base = offset_from_file_name(swap_log.name)
        txn_index = dir / segment_file_name(base, TXN_INDEX_SUFFIX)
        cleaned = txn_index.with_name(txn_index.name + CLEANED_SUFFIX)
        if cleaned.exists():
            cleaned.rename(txn_index.with_name(txn_index.name + SWAP_SUFFIX))
    for swapped in dir.glob(f"*{TXN_INDEX_SUFFIX}{SWAP_SUFFIX}"):
        base = offset_from_file_name(swapped.name)
        if (dir / segment_file_name(base, LOG_SUFFIX + SWAP_SUFFIX)).exists():
            continue  # the swap is finished below, this file with it
        if (dir / segment_file_name(base, LOG_SUFFIX)).exists():
            swapped.rename(dir / segment_file_name(base, TXN_INDEX_SUFFIX))


def _remove_unfinished_files(dir: Path) -> None:
    for path in dir.iterdir():
        if path.name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX)):
            path.unlink()


def _complete_swaps(dir: Path, config: LogConfig, now: int, files: FilePool) -> None:
    """Finish a compaction's swap: its ``.log.swap`` file is the proof it was
    complete."""
    for swap_log in sorted(dir.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
        base = offset_from_file_name(swap_log.name)
        swap = LogSegment.open(dir, base, config, now, suffix=SWAP_SUFFIX, files=files)
        for live in dir.glob(f"*{LOG_SUFFIX}"):
            if (
                base
                <= offset_from_file_name(live.name)
                < max(swap.next_offset, base + 1)
            ):
                _unlink_segment_files(dir, offset_from_file_name(live.name), "")
        swap.change_suffix("")
        swap.close()
    # Index .swap files whose log file was already renamed: the live index is rebuilt.
    for stray in dir.glob(f"*{SWAP_SUFFIX}"):
        stray.unlink()


def _unlink_segment_files(dir: Path, base_offset: int, suffix: str) -> None:
    for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        (dir / (segment_file_name(base_offset, kind) + suffix)).unlink(missing_ok=True)


def _open_live_segments(
    dir: Path, config: LogConfig, now: int, had_clean_shutdown: bool, files: FilePool
) -> list[LogSegment]:
    bases = sorted(offset_from_file_name(p.name) for p in dir.glob(f"*{LOG_SUFFIX}"))
    indexes = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
    for index in (path for kind in indexes for path in dir.glob(f"*{kind}")):
        if offset_from_file_name(index.name) not in bases:
            index.unlink()  # an index without its log is useless
    segments: list[LogSegment] = []
    try:
        for base in bases:
            try:
                segment = LogSegment.open(dir, base, config, now, files=files)
            except CorruptRecordError:
                if had_clean_shutdown:
                    raise
                # Finding the end of a damaged segment failed; recovery below rescans it.
                segment = LogSegment.open(
                    dir, base, config, now, trust_end=False, files=files
                )
            segments.append(segment)
    except BaseException:
        for opened in segments:
            opened.close_handlers()
        raise
    return segments


def _recover(segments: list[LogSegment], recovery_point: int) -> tuple[int, int]:
    """Rescan from the segment holding the recovery point; cut at the first bad
    batch."""
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = i
    recovered = 0
    for i in range(first, len(segments)):
        truncated = segments[i].recover()
        recovered += 1
        expected = segments[i].next_offset
        if truncated or (
            i + 1 < len(segments) and segments[i + 1].base_offset != expected
        ):
            # Nothing after a bad batch can be trusted to continue the log, nor a
            # segment that does not start where this one ends: the tail between them was
            # lost (a roll starts the next segment at the log end, and compaction keeps
            # each segment's end with an empty batch).
            for doomed in segments[i + 1 :]:
                truncated += doomed.size
                doomed.close_handlers()
                doomed.delete_files()
            del segments[i + 1 :]
            return recovered, truncated
    return recovered, 0
