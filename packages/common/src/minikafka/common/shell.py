"""The shell runtime: what every core's trio shell does the same way (ARCHITECTURE.md,
"Cores and shells").

A core returns its work as a ``CoreResult`` and says when it next wants the time
(``next_deadline()``); its shell (the group coordinator's, the controller's,
replication's, the Raft quorum's) owns the clock and the tasks. Three things every such
shell does, here once:

- :class:`Waiters`, request correlation: a request handler takes a fresh id, calls the
  core with it, and waits for the reply with that id, which may come from a later call
  (another member's JoinGroup, a commit, a timer);
- :class:`Wakeup`, sleeping to the next deadline: one task sleeps until the core's next
  deadline or until an input arrives (``set()``), whichever comes first, and looks at
  the core again;
- :func:`run_timers`, the loop of that task: when a deadline is due it calls the
  core's ``on_timer`` (through the shell, which carries the result out), and pauses
  after a round that failed, so a bug is not a busy loop.

This is the one module of ``minikafka.common`` that imports trio: the rest is values.
It reads no clock itself: each shell passes its own (the group coordinator's is the
wall clock, whose timestamps go into records; the controller's is trio's).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Generic, NoReturn, TypeVar

import attrs
import trio

__all__ = ["Waiters", "Wakeup", "run_timers"]

V = TypeVar("V")


@attrs.define(eq=False)
class _Waiter(Generic[V]):
    event: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    value: V | None = None


@attrs.define(eq=False)
class Waiters(Generic[V]):
    """The requests a shell has handed its core and not yet answered, by id.

    ``open()`` gives a request its id; whoever learns the answer (the task that carries
    out a result, the one that reports a commit) calls ``answer(id, value)``; the
    request's task ``await wait(id)``. An answer for an id nobody waits for any more
    (its connection went away, the request was refused) is dropped.
    """

    _waiting: dict[int, _Waiter[V]] = attrs.field(init=False, factory=dict)
    _next_id: int = attrs.field(init=False, default=0)

    def open(self) -> int:
        """A fresh request id, with a waiter for its answer."""
        self._next_id += 1
        self._waiting[self._next_id] = _Waiter()
        return self._next_id

    def answer(self, request_id: int, value: V) -> bool:
        """Give request ``request_id`` its answer (the first one counts); False if
        nobody waits for it."""
        waiter = self._waiting.get(request_id)
        if waiter is None or waiter.answered:
            return False
        waiter.answered, waiter.value = True, value
        waiter.event.set()
        return True

    def answered(self, request_id: int) -> bool:
        waiter = self._waiting.get(request_id)
        return waiter is not None and waiter.answered

    async def wait(self, request_id: int) -> V:
        """The answer of request ``request_id``, when it comes; the id is closed after,
        or if the wait is cancelled."""
        waiter = self._waiting[request_id]
        try:
            await waiter.event.wait()
        finally:
            self._waiting.pop(request_id, None)
        return waiter.value  # type: ignore[return-value]  # set with answered

    def unanswered(self) -> list[int]:
        """The ids still waiting for an answer, oldest first (to refuse them all when
        the shell stops)."""
        return [i for i, waiter in self._waiting.items() if not waiter.answered]

    def close(self, request_id: int) -> None:
        """Nobody waits for ``request_id`` any more."""
        self._waiting.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._waiting


@attrs.define(eq=False)
class Wakeup:
    """An input arrived: the shell's timer task looks at its core again.

    ``set()`` may be called any number of times between two looks; each
    :meth:`sleep_until` ends at the first of them (or at the deadline) and arms again.
    """

    _event: trio.Event = attrs.field(init=False, factory=trio.Event)

    def set(self) -> None:
        self._event.set()

    async def sleep_until(
        self, deadline: float | None, clock: Callable[[], float]
    ) -> None:
        """Until ``deadline`` on ``clock`` (None: no deadline) or the next ``set()``."""
        timeout = math.inf if deadline is None else max(0.0, deadline - clock())
        with trio.move_on_after(timeout):
            await self._event.wait()
        self._event = trio.Event()


async def run_timers(
    next_deadline: Callable[[], float | None],
    on_due: Callable[[float], bool],
    clock: Callable[[], float],
    wakeup: Wakeup,
    *,
    retry_after: float,
) -> NoReturn:
    """Sleep to the core's next deadline, or until ``wakeup`` is set; when a deadline
    is due at ``now``, call ``on_due(now)``, which fires the core's timers and carries
    the result out. It returns False when the round failed (the shell has logged it):
    the timers still due fire again after ``retry_after`` seconds, not at once."""
    while True:
        await wakeup.sleep_until(next_deadline(), clock)
        now = clock()
        deadline = next_deadline()
        if deadline is None or deadline > now:
            continue
        if not on_due(now):
            await trio.sleep(retry_after)
