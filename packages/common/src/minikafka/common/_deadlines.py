"""The timers of a core: a heap of deadlines, so ``next_deadline()`` never rescans.

A sans-IO core has timeouts (a member's session, a delayed operation's expiry, a broker's
heartbeat) but no clock. Its shell asks ``next_deadline()``, sleeps until then, and calls
``on_timer(now)``. Answering that by looking at every member or operation is O(n) per tick;
a heap makes it O(log n) per change and O(1) per question, as Kafka's ``Timer`` (a
hierarchical timing wheel) does for its purgatories.

A key rescheduled or cancelled leaves its old entry in the heap; the entry is recognised as
stale (its time no longer matches the key's) and skipped when it reaches the top. This is
the standard lazy-deletion heap: cancelling costs nothing, and the heap holds at most one
stale entry per reschedule until it is popped.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Deadlines(Generic[K]):
    """When each key is due; the earliest first."""

    def __init__(self) -> None:
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        # ties broken by scheduling order, deterministic
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def schedule(self, key: K, when: float) -> None:
        """``key`` is due at ``when`` (replacing any earlier schedule of it)."""
        self._due[key] = when
        heapq.heappush(self._heap, (when, next(self._order), key))

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)

    def due_at(self, key: K) -> float | None:
        return self._due.get(key)

    def next_deadline(self) -> float | None:
        """The earliest time any key is due, or None when nothing is scheduled."""
        if not self._due:
            # Nothing scheduled (most often, asked after every call of a core): every
            # entry left is stale.
            if self._heap:
                self._heap.clear()
            return None
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def peek(self) -> tuple[float, K] | None:
        """The earliest ``(time, key)`` without unscheduling it, or None."""
        self._drop_stale()
        if not self._heap:
            return None
        when, _, key = self._heap[0]
        return when, key

    def pop_due(self, now: float) -> list[K]:
        """Every key due at or before ``now``, earliest first; they are unscheduled."""
        due: list[K] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return due
            _, _, key = heapq.heappop(self._heap)
            del self._due[key]
            due.append(key)

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            when, _, key = heap[0]
            if self._due.get(key) == when:
                return
            heapq.heappop(heap)
