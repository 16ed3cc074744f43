"""The purgatory: requests that wait for something to happen (seed 000, "延时操作").

Some requests cannot be answered when they arrive: a produce with ``acks=all`` waits
until the high watermark passes its batches, a fetch with ``fetch.min.bytes`` waits until
that much data is there. Kafka parks such a request as a *delayed operation* in a
*purgatory* and completes it in one of two ways:

- something it watches changes (new data, a moved high watermark): whoever made the
  change calls :meth:`DelayedOperationPurgatory.check_and_complete` with the *watch key*
  (the partition), and each operation watching it checks again (``try_complete``);
- its deadline passes: :meth:`DelayedOperationPurgatory.expire` completes it anyway
  (``on_expiration``, then ``on_complete``, which prepares the answer with what is there
  or a timeout error).

Completion happens exactly once, whichever comes first. Both ways return the operations
they completed, as values: an operation prepares its answer in ``on_complete`` and the
caller (the ReplicaManager) hands it on; nothing here calls back into a shell. This module
is a core: it keeps no clock (``now`` is passed in), so the broker's trio shell sleeps
until :meth:`~DelayedOperationPurgatory.next_deadline` and tests move time by hand.
Kafka uses a hierarchical timing wheel for the deadlines; a heap
(:class:`minikafka.common.Deadlines`) does the same job here at the scale of one process.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

import attrs

from minikafka.common import Deadlines


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
        """Prepare the answer to the request; called exactly once."""

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
    _deadlines: Deadlines[Op] = attrs.field(init=False, factory=Deadlines)
    """Every operation still waiting, by deadline (completed ones are cancelled)."""
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
        self._deadlines.schedule(operation, operation.deadline)
        return False

    def check_and_complete(self, key: Hashable) -> list[Op]:
        """Let every operation watching ``key`` check again; those it completed."""
        if key in self._checking:
            # Called from inside a completion run by the check of this key below (an
            # answer prepared there changed the state again: a read that took a log dir
            # offline). That check goes round once more instead.
            self._checking[key] = True
            return []
        completed: list[Op] = []
        try:
            while watching := self._watchers.pop(key, None):
                self._checking[key] = False
                try:
                    for operation in watching:
                        # Skip those completed through another key or by expiration.
                        if not operation.completed and operation.try_complete():
                            completed.append(operation)
                finally:
                    # Operations parked under the key meanwhile went into a fresh list.
                    parked = self._watchers.pop(key, [])
                    for op in watching:
                        if op.completed:  # its deadline no longer matters
                            self._deadlines.cancel(op)
                    still = [op for op in (*watching, *parked) if not op.completed]
                    if still:
                        self._watchers[key] = still
                if not self._checking[key]:
                    break
        finally:
            self._checking.pop(key, None)
        return completed

    def expire(self, now: float) -> list[Op]:
        """Complete every operation whose deadline has passed; those it completed."""
        expired: list[Op] = []
        for operation in self._deadlines.pop_due(now):
            if operation.completed:
                continue
            operation.on_expiration()
            if operation.force_complete():
                expired.append(operation)
        self._purge_completed()
        return expired

    def next_deadline(self) -> float | None:
        """The earliest deadline of an operation still waiting (None: nothing waits)."""
        return self._deadlines.next_deadline()

    def has_watchers(self, key: Hashable) -> bool:
        """Whether any operation watches ``key`` (completed ones not yet purged count),
        or a check of ``key`` is under way (it must hear of the change: see
        :meth:`check_and_complete`): a check for a key nobody watches can be skipped."""
        if not self._watchers and not self._checking:
            return False  # most often nothing waits at all: not even the key's hash
        return key in self._watchers or key in self._checking

    def watched(self, key: Hashable) -> int:
        """How many operations still wait on ``key`` (Kafka's ``watched`` metric)."""
        return sum(not op.completed for op in self._watchers.get(key, ()))

    @property
    def delayed(self) -> int:
        """How many operations still wait (Kafka's ``PurgatorySize``)."""
        return len(self._deadlines)

    def _purge_completed(self) -> None:
        # Operations completed through one key stay in the lists of their other keys
        # until someone checks those keys; sweep them when the lists grow (Kafka's
        # purgeInterval does the same).
        if (
            sum(len(ops) for ops in self._watchers.values())
            <= 2 * len(self._deadlines) + 64
        ):
            return
        for key in list(self._watchers):
            alive = [op for op in self._watchers[key] if not op.completed]
            if alive:
                self._watchers[key] = alive
            else:
                del self._watchers[key]
