"""Lab 2: a segment's read scan, its roll decision and its crash recovery (the Log
chapter). Each function is a method of minikafka's ``LogSegment`` (its first argument,
``self``), switched in by ``make lab 2 EX=lookup`` (``translate_by_scan``), ``EX=roll``
(``should_roll``, ``time_waited_for_roll``) and ``EX=recovery`` (``recover``, with
``recover_log`` in ``loader.py``).

What a segment has that you may use:

- ``self.base_offset``, ``self.config`` (a ``LogConfig``: ``segment_bytes``,
  ``max_segment_ms`` (``segment.ms``), ``index_interval_bytes``), ``self.created_ms``;
- ``self.size``: the bytes of the ``.log`` file the segment counts as its own;
  ``self.file``: that file (``file.truncate(n)`` cuts it to ``n`` bytes);
- ``self.next_offset``: one past its last offset;
- ``self.offset_index`` and ``self.time_index``: ``lookup``, ``full``, ``reset()``
  (drop every entry), ``len()``;
- ``self.rolling_based_timestamp``: the max timestamp of its first batch (None while
  it is empty); ``self.max_timestamp_so_far`` and
  ``self.offset_of_max_timestamp_so_far``;
- ``self._on_batch(position, header)``: accounts for one batch at ``position``: moves
  ``next_offset``, the timestamps and ``rolling_based_timestamp``, and adds the index
  entries once more than ``index.interval.bytes`` were added since the last one (it
  counts them in ``self._bytes_since_last_index_entry``);
- ``self._forget_tail(known=True)``: the unindexed tail (a cache of the batches after
  the last index entry) is empty and is rebuilt by ``_on_batch``;
- ``self.on_become_inactive()``: the last time-index entry of a finished segment.

And from minikafka, imported below: ``scan_batches(file, start, end, verify_crc=...)``
yields ``(position, header)`` for every batch in ``[start, end)`` of a file, and raises
``CorruptRecordError`` at the first batch that is torn (declares more bytes than
remain), has a bad length or magic, or (with ``verify_crc``) a bad CRC-32C;
``MAX_RELATIVE_OFFSET`` (2**31 - 1) is the furthest an offset may be from its segment's
base offset, since index entries hold it in 32 bits. A ``RecordBatchHeader`` has
``base_offset``, ``last_offset``, ``next_offset``, ``max_timestamp`` and ``size``.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.log._batch import CorruptRecordError, RecordBatchHeader
from minikafka.log._index import MAX_RELATIVE_OFFSET
from minikafka.log._segment import LogSegment
from minikafka.log._segment_read import scan_batches

FILE = "labs/02-log/segment.py"

__all__ = [
    "MAX_RELATIVE_OFFSET",
    "CorruptRecordError",
    "recover",
    "scan_batches",
    "should_roll",
    "time_waited_for_roll",
    "translate_by_scan",
]


# --- exercise lookup: from the index entry to the batch -------------------------------


def translate_by_scan(
    self: LogSegment, offset: int, start_position: int = 0
) -> tuple[int, RecordBatchHeader] | None:
    """``LogSegment._translate_by_scan``: the first batch whose last offset is at or
    after ``offset``, as ``(position, header)``; None when the segment has none.

    Ask the offset index where to start (your ``lookup``), never before
    ``start_position`` (a caller that already knows a batch boundary at or before the
    target), then read batch headers forward (no CRC: only the headers are needed).
    """
    raise ExerciseNotDone("translate_by_scan", "index lookup, then scan_batches", FILE)


# --- exercise roll: when the active segment must roll ---------------------------------


def should_roll(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """``LogSegment.should_roll``: why an append of ``batch_bytes`` bytes, whose
    records' largest timestamp is ``max_timestamp`` and whose last offset is
    ``last_offset``, must go to a new segment, or None (Kafka's
    ``LogSegment.shouldRoll``).

    Return the first reason that holds, with these names (the log rolls at the log end
    for every reason but the last, which starts the new segment at the batch itself):

    - ``"segment.bytes"``: the segment holds data and the batch would take it over
      ``segment.bytes`` (a batch that fits exactly does not roll; a batch larger than
      ``segment.bytes`` goes alone into an empty segment);
    - ``"segment.ms"``: the segment holds data and has waited longer than ``segment.ms``
      (``time_waited_for_roll``; exactly ``segment.ms`` does not roll);
    - ``"offset index full"`` and ``"time index full"``: either index has no room;
    - ``"relative offset overflow"``: ``last_offset`` is too far from the base offset.
    """
    raise ExerciseNotDone("should_roll", "Kafka's reasons, in order", FILE)


def time_waited_for_roll(self: LogSegment, now_ms: int, max_timestamp: int) -> int:
    """``LogSegment._time_waited_for_roll``: the segment's age, in milliseconds, when a
    batch with largest timestamp ``max_timestamp`` arrives at ``now_ms``.

    Kafka measures it with the records' own timestamps, from the segment's first batch
    (``rolling_based_timestamp``), so a follower writing a week of old records in a
    minute rolls where the leader did; only a segment whose first batch has no
    timestamp (negative) is aged by the broker's clock, from when it was created.
    """
    raise ExerciseNotDone("time_waited_for_roll", "record time, else the clock", FILE)


# --- exercise recovery: cutting a torn tail -------------------------------------------


def recover(self: LogSegment) -> int:
    """``LogSegment.recover``: rescan every batch of the segment with its CRC, rebuild
    both indexes from scratch, and cut the file at the first batch that is torn,
    corrupt, or does not continue the offsets (its base offset is below the segment's
    ``next_offset`` so far, or its last offset is beyond ``MAX_RELATIVE_OFFSET`` of the
    base). Returns how many bytes were cut (0 when every batch is whole and valid).

    Start from nothing: no index entry, no timestamp, no first batch
    (``rolling_based_timestamp`` None), ``next_offset`` at the base offset, no bytes
    since the last index entry, the unindexed tail known and empty. Account for every
    good batch with ``_on_batch``. Keep exactly the batches before the first bad one,
    and finish as a segment that is no longer written to (``on_become_inactive``): the
    segments after it may be gone, and the log rolls a new one if it must.
    """
    raise ExerciseNotDone("recover", "reset, scan with CRCs, cut", FILE)
