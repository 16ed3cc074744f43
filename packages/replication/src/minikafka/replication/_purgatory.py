"""The purgatory: requests that wait for something to happen (seed 000, "延时操作").

Some requests cannot be answered when they arrive: a produce with ``acks=all`` waits
until the high watermark passes its batches, a fetch with ``fetch.min.bytes`` waits until
that much data is there. Kafka parks such a request as a *delayed operation* in a
*purgatory* and completes it in one of two ways:

- something it watches changes (new data, a moved high watermark): whoever made the
  change calls :meth:`DelayedOperationPurgatory.check_and_complete` with the *watch key*
  (the partition), and each operation watching it checks again (``try_complete``);
- its deadline passes: the expiration reaper completes it anyway (``on_expiration``,
  then ``on_complete``, which answers with what is there or a timeout error).

Completion happens exactly once, whichever comes first. This module is a core: it keeps
no clock (``now`` is passed in), so the broker's trio shell runs the reaper and tests
move time by hand. Kafka uses a hierarchical timing wheel for the deadlines; a heap does
the same job here at the scale of one Python process.
"""

from __future__ import annotations

import abc
import heapq
import itertools
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

import attrs


@attrs.define(eq=False)
class DelayedOperation(abc.ABC):
    """One parked request. Subclasses say when it can complete and how it answers."""

    deadline: float
    completed: bool = attrs.field(init=False, default=False)

    @abc.abstractmethod
    def try_complete(self) -> bool:
        """Complete now if the condition holds (by calling :meth:`force_complete`)."""

    @abc.abstractmethod
    def on_complete(self) -> None:
        """Answer the request; called exactly once."""

    def on_expiration(self) -> None:  # noqa: B027 - optional hook, most operations need none
        """Called before :meth:`on_complete` when the deadline, not the condition, ended it."""

    def force_complete(self) -> bool:
        """Complete unless already completed; True if this call did it."""
        if self.completed:
            return False
        self.completed = True
        self.on_complete()
        return True


Op = TypeVar("Op", bound=DelayedOperation)


@attrs.define(eq=False)
class DelayedOperationPurgatory(Generic[Op]):
    """Watch lists by key plus the deadlines of every operation still waiting."""

    name: str
    _watchers: dict[Hashable, list[Op]] = attrs.field(init=False, factory=dict)
    _deadlines: list[tuple[float, int, Op]] = attrs.field(init=False, factory=list)
    _sequence: itertools.count[int] = attrs.field(init=False, factory=itertools.count)
    _checking: dict[Hashable, bool] = attrs.field(init=False, factory=dict)
    """Keys being checked now -> whether they were checked again meanwhile."""

    def try_complete_else_watch(self, operation: Op, keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if it can; otherwise park it under every key.

        Kafka checks a second time after adding the watches, because another thread may
        have changed the state in between. One trio thread changes state only between
        awaits, so one check before watching is enough here.
        """
        if operation.try_complete():
            return True
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        heapq.heappush(self._deadlines, (operation.deadline, next(self._sequence), operation))
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Let every operation watching ``key`` check again; the number it completed."""
        if key in self._checking:
            # Called from inside an answer given by the check of this key below (the
            # answer caused the next request at once: a consumer fetching again, a
            # producer's next batch). That check goes round once more instead.
            self._checking[key] = True
            return 0
        completed = 0
        try:
            while watching := self._watchers.pop(key, None):
                self._checking[key] = False
                try:
                    for operation in watching:
                        # Skip those completed through another key or by expiration.
                        if not operation.completed and operation.try_complete():
                            completed += 1
                finally:
                    # Operations parked under the key meanwhile went into a fresh list.
                    parked = self._watchers.pop(key, [])
                    still = [op for op in (*watching, *parked) if not op.completed]
                    if still:
                        self._watchers[key] = still
                if not self._checking[key]:
                    break
        finally:
            self._checking.pop(key, None)
        return completed

    def expire(self, now: float) -> int:
        """Complete every operation whose deadline has passed; how many that was."""
        expired = 0
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, operation = heapq.heappop(self._deadlines)
            if operation.completed:
                continue
            operation.on_expiration()
            if operation.force_complete():
                expired += 1
        self._purge_completed()
        return expired

    def next_deadline(self) -> float | None:
        """The earliest deadline of an operation still waiting (None: nothing waits)."""
        while self._deadlines and self._deadlines[0][2].completed:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def watched(self, key: Hashable) -> int:
        """How many operations still wait on ``key`` (Kafka's ``watched`` metric)."""
        return sum(not op.completed for op in self._watchers.get(key, ()))

    @property
    def delayed(self) -> int:
        """How many operations still wait (Kafka's ``PurgatorySize``)."""
        return sum(not op.completed for _, _, op in self._deadlines)

    def _purge_completed(self) -> None:
        # Operations completed through one key stay in the lists of their other keys
        # until someone checks those keys; sweep them when the lists grow (Kafka's
        # purgeInterval does the same).
        if sum(len(ops) for ops in self._watchers.values()) <= 2 * len(self._deadlines) + 64:
            return
        for key in list(self._watchers):
            alive = [op for op in self._watchers[key] if not op.completed]
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
