"""Lab 2, exercise ``lookup`` (first half): the sparse offset index's binary search
(the Log chapter, "Offsets are not positions").

A segment's offset index holds one entry per ``index.interval.bytes`` of appended data:
the *last* offset of a batch and the batch's byte position in the ``.log`` file. The
entries are in two parallel arrays, both increasing:

- ``self._keys[i]``: the entry's offset (absolute, not relative to the segment);
- ``self._values[i]``: the position of the batch whose last offset that is;
- ``self.base_offset``: the segment's first offset (its file name).

:func:`lookup` is ``OffsetIndex.lookup``, switched in by ``make lab 2 EX=lookup``
(``self`` is minikafka's ``OffsetIndex``). The read that uses it, the scan forward from
the position it returns, is ``translate_by_scan`` in ``segment.py``.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.log._index import OffsetIndex

FILE = "labs/02-log/index.py"

__all__ = ["lookup"]


def lookup(self: OffsetIndex, target_offset: int) -> tuple[int, int]:
    """The entry ``(offset, position)`` with the greatest offset at or below
    ``target_offset``; ``(self.base_offset, 0)`` when every entry is above it (or there
    is none): a scan from the segment's start cannot miss the target.

    A binary search, O(log n): a fetch does one per request, on indexes of up to
    ``segment.index.bytes / 8`` entries.
    """
    raise ExerciseNotDone("lookup", "binary search self._keys", FILE)
