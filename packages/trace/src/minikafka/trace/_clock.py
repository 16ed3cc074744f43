"""The time base of a process's cores: a monotonic clock read in seconds since the epoch.

A core takes ``now`` as an argument and stamps its trace events with it, so ``now`` has to
mean what a trace's ``ts`` means (seconds since the epoch: the labs line the events of
several nodes up with what their clients saw), and must not jump as the time of day may
(a purgatory's deadline or a follower's lag is a difference of two ``now``). An
:class:`EpochClock` is both: the shell's own clock (``trio.current_time`` under trio, so a
test's ``MockClock`` moves it; ``time.monotonic`` in a thread) moved by one offset to the
wall clock, taken once, at its first reading. A shell reads it once per call into its
core, and converts the core's deadlines back to its own clock to sleep until them.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class EpochClock:
    """``source()`` moved to the epoch: the cores' ``now`` and their events' ``ts``.

    The offset is taken at the first reading, not when the clock is made, so a shell
    may make its clock over ``trio.current_time`` before trio runs.
    """

    __slots__ = ("_offset", "source")

    def __init__(self, source: Callable[[], float]) -> None:
        self.source = source
        self._offset: float | None = None

    @property
    def offset(self) -> float:
        if self._offset is None:
            # The one wall-clock read: from here on it moves only as ``source`` does.
            self._offset = time.time() - self.source()
        return self._offset

    def __call__(self) -> float:
        return self.source() + self.offset

    def to_source(self, t: float) -> float:
        """``t`` (a core's deadline, on this clock) on the source's clock, to sleep
        until (``trio.move_on_at``)."""
        return t - self.offset
