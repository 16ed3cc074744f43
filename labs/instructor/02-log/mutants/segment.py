"""Wrong on purpose: a segment's read scan, roll decision and recovery, each function
wrong in one way.

Each is minikafka's ``LogSegment`` method with one knob of :func:`translate`,
:func:`roll`, :func:`age` or :func:`rescan` turned; mutants.toml switches one function
in at a time.
"""

from __future__ import annotations

from minikafka.log._batch import CorruptRecordError, RecordBatchHeader
from minikafka.log._index import MAX_RELATIVE_OFFSET
from minikafka.log._segment import LogSegment
from minikafka.log._segment_read import scan_batches

# --- the read scan --------------------------------------------------------------------


def translate(
    self: LogSegment,
    offset: int,
    start_position: int = 0,
    *,
    by_base: bool = False,
    last_past_end: bool = False,
) -> tuple[int, RecordBatchHeader] | None:
    """minikafka's scan from the index entry, unless a knob says otherwise."""
    _, indexed = self.offset_index.lookup(offset)
    last = None
    for position, header in scan_batches(
        self.file, max(indexed, start_position), self.size, verify_crc=False
    ):
        last = position, header
        if (header.base_offset if by_base else header.last_offset) >= offset:
            return position, header
    return last if last_past_end else None


def by_base_offset(
    self: LogSegment, offset: int, start_position: int = 0
) -> tuple[int, RecordBatchHeader] | None:
    """Finds the first batch *starting* at or after the offset: an offset in the middle
    of a batch is read from the next one."""
    return translate(self, offset, start_position, by_base=True)


def last_batch_past_end(
    self: LogSegment, offset: int, start_position: int = 0
) -> tuple[int, RecordBatchHeader] | None:
    """An offset past the segment's last one gets the last batch, not None."""
    return translate(self, offset, start_position, last_past_end=True)


# --- the roll -------------------------------------------------------------------------


def roll(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
    *,
    size: bool = True,
    exact_fit_rolls: bool = False,
    ms: bool = True,
    exact_age_rolls: bool = False,
    offset_index: bool = True,
    time_index: bool = True,
    overflow: bool = True,
    overflow_name: str = "relative offset overflow",
) -> str | None:
    """minikafka's reasons to roll, unless a knob says otherwise."""
    config = self.config
    room = config.segment_bytes - batch_bytes
    if (
        size
        and self.size > 0
        and (self.size >= room if exact_fit_rolls else self.size > room)
    ):
        return "segment.bytes"
    age = self._time_waited_for_roll(now_ms, max_timestamp)
    too_old = (
        age >= config.max_segment_ms if exact_age_rolls else age > config.max_segment_ms
    )
    if ms and self.size > 0 and too_old:
        return "segment.ms"
    if offset_index and self.offset_index.full:
        return "offset index full"
    if time_index and self.time_index.full:
        return "time index full"
    if overflow and last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
        return overflow_name
    return None


def no_segment_bytes(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """Never rolls for size."""
    return roll(self, batch_bytes, max_timestamp, last_offset, now_ms, size=False)


def exact_fit_rolls(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """A batch that would fill the segment exactly rolls it."""
    return roll(
        self, batch_bytes, max_timestamp, last_offset, now_ms, exact_fit_rolls=True
    )


def no_segment_ms(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """Never rolls for age."""
    return roll(self, batch_bytes, max_timestamp, last_offset, now_ms, ms=False)


def exact_age_rolls(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """A segment exactly segment.ms old rolls."""
    return roll(
        self, batch_bytes, max_timestamp, last_offset, now_ms, exact_age_rolls=True
    )


def no_offset_index_full(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """A full offset index does not roll."""
    return roll(
        self, batch_bytes, max_timestamp, last_offset, now_ms, offset_index=False
    )


def no_time_index_full(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """A full time index does not roll."""
    return roll(self, batch_bytes, max_timestamp, last_offset, now_ms, time_index=False)


def no_overflow(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """Offsets too far from the base offset do not roll."""
    return roll(self, batch_bytes, max_timestamp, last_offset, now_ms, overflow=False)


def overflow_named_otherwise(
    self: LogSegment,
    batch_bytes: int,
    max_timestamp: int,
    last_offset: int,
    now_ms: int,
) -> str | None:
    """The overflow rolls under another name, so the new segment starts at the log end."""
    return roll(
        self,
        batch_bytes,
        max_timestamp,
        last_offset,
        now_ms,
        overflow_name="offset overflow",
    )


def age(
    self: LogSegment,
    now_ms: int,
    max_timestamp: int,
    *,
    records: bool = True,
    newest: bool = False,
    clock_without_timestamps: bool = True,
) -> int:
    """minikafka's segment age, unless a knob says otherwise."""
    first = self.max_timestamp_so_far if newest else self.rolling_based_timestamp
    if records and first is not None and (first >= 0 or not clock_without_timestamps):
        return max_timestamp - first
    return now_ms - self.created_ms


def ages_by_clock(self: LogSegment, now_ms: int, max_timestamp: int) -> int:
    """Ages every segment by the broker's clock, from its creation."""
    return age(self, now_ms, max_timestamp, records=False)


def ages_from_newest(self: LogSegment, now_ms: int, max_timestamp: int) -> int:
    """Measures from the segment's newest record, not from its first batch."""
    return age(self, now_ms, max_timestamp, newest=True)


def never_clock(self: LogSegment, now_ms: int, max_timestamp: int) -> int:
    """Uses record time even when the first batch has none (-1)."""
    return age(self, now_ms, max_timestamp, clock_without_timestamps=False)


# --- recovery -------------------------------------------------------------------------


def rescan(
    self: LogSegment,
    *,
    crc: bool = True,
    order: bool = True,
    reset_index: bool = True,
    cut: bool = True,
    new_size: bool = True,
) -> int:
    """minikafka's recovery of one segment, unless a knob says otherwise."""
    if reset_index:
        self.offset_index.reset()
        self.time_index.reset()
    self._forget_tail(known=True)
    self.max_timestamp_so_far = -1
    self.offset_of_max_timestamp_so_far = -1
    self.rolling_based_timestamp = None
    self._bytes_since_last_index_entry = 0
    self.next_offset = self.base_offset
    valid = 0
    try:
        for position, header in scan_batches(self.file, 0, self.size, verify_crc=crc):
            if order and (
                header.base_offset < self.next_offset
                or header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET
            ):
                raise CorruptRecordError("out of order", position)
            if not reset_index:
                self._bytes_since_last_index_entry = 0  # the old entries are kept
            self._on_batch(position, header)
            valid = position + header.size
    except CorruptRecordError:
        pass
    truncated = self.size - valid
    if truncated and cut:
        self.file.truncate(valid)
        if new_size:
            self.size = valid
    self.on_become_inactive()
    return truncated


def one_batch_too_many(self: LogSegment) -> int:
    """After a cut, cuts the last good batch too."""
    truncated = rescan(self)
    last = None
    for _, header in self.batches():
        last = header
    if truncated and last is not None:
        truncated += self.truncate_to(last.base_offset)
    return truncated


def no_crc(self: LogSegment) -> int:
    """Checks lengths and offsets but not the CRC: a corrupt batch is kept."""
    return rescan(self, crc=False)


def keeps_torn_tail(self: LogSegment) -> int:
    """Finds the first bad batch but does not cut the file there."""
    return rescan(self, cut=False)


def no_offset_order(self: LogSegment) -> int:
    """Keeps a batch whose offsets go back."""
    return rescan(self, order=False)


def stale_index(self: LogSegment) -> int:
    """Keeps the index it had, entries past the cut included, and adds none."""
    return rescan(self, reset_index=False)


def forgets_new_size(self: LogSegment) -> int:
    """Cuts the file but keeps counting the bytes it cut as the segment's."""
    return rescan(self, new_size=False)
