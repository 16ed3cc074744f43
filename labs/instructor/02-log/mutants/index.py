"""Wrong on purpose: the offset index's lookup, each function wrong in one way.

Each is minikafka's ``OffsetIndex.lookup`` with one knob of :func:`lookup` turned;
mutants.toml switches one function in at a time.
"""

from __future__ import annotations

import bisect

from minikafka.log._index import OffsetIndex


def lookup(
    self: OffsetIndex,
    target_offset: int,
    *,
    step: int = 0,
    strictly_below: bool = False,
    first_when_none: bool = False,
) -> tuple[int, int]:
    """minikafka's floor search, unless a knob says otherwise."""
    keys = self._keys
    if strictly_below:
        i = bisect.bisect_left(keys, target_offset) - 1
    else:
        i = bisect.bisect_right(keys, target_offset) - 1
    i = min(i + step, len(keys) - 1)
    if i < 0:
        if first_when_none and keys:
            return keys[0], self._values[0]
        return self.base_offset, 0
    return keys[i], self._values[i]


def next_entry(self: OffsetIndex, target_offset: int) -> tuple[int, int]:
    """One entry too far: the first entry above the target (the last if none is)."""
    return lookup(self, target_offset, step=1)


def strictly_below(self: OffsetIndex, target_offset: int) -> tuple[int, int]:
    """An entry equal to the target is passed over for the one before it."""
    return lookup(self, target_offset, strictly_below=True)


def first_entry_when_none_below(
    self: OffsetIndex, target_offset: int
) -> tuple[int, int]:
    """A target below every entry gets the first entry, not the segment's start."""
    return lookup(self, target_offset, first_when_none=True)
