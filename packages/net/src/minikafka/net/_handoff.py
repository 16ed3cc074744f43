"""The Reactor's queues: a FIFO between the tasks of one trio run.

Seed 000's queues are ``java.util.concurrent`` queues between threads: the
RequestChannel's ``ArrayBlockingQueue`` (bounded by ``queued.max.requests``) and each
Processor's ``LinkedBlockingDeque`` of responses. Here every request crosses two of them
(a connection puts it into the RequestChannel, a handler's answer goes into its
Processor's response queue), and a connection's task waits on a third, of one slot,
while its Processor owns the connection (``_connection.py``).

trio's memory channels would do, and did. But each request is cheap enough that their
generality shows: taking from an empty channel raises and catches ``trio.WouldBlock``
twice (in ``receive_nowait``, then again inside ``receive``) and checkpoints before it
parks, and each exception allocates. A :class:`HandOff` keeps only what the Reactor uses
of a memory channel: items in a deque under a bound, the tasks waiting to take and to
put (an item put while a task waits to take goes straight to that task, as in a memory
channel), and ``close``. Putting into a queue with room and taking from one with items
never yield to the scheduler: requests queued together are handled together. Waking a
waiting task is still a trip through trio's scheduler; only the bookkeeping around it is
smaller.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class HandOff(Generic[T]):
    """A queue of at most ``capacity`` items (``math.inf``: unbounded) for one trio run."""

    __slots__ = ("_capacity", "_closed", "_items", "_putters", "_takers")

    def __init__(self, capacity: float) -> None:
        self._capacity = capacity
        self._items: deque[T] = deque()
        # Waiting tasks, in arrival order, each with its box: a taker's box receives the
        # item put for it; a putter's holds its item until a taker moves it in.
        self._takers: dict[trio.lowlevel.Task, list[T]] = {}
        self._putters: dict[trio.lowlevel.Task, list[T]] = {}
        self._closed = False

    def __len__(self) -> int:
        """Items waiting to be taken (not those handed straight to a waiting task)."""
        return len(self._items)

    @property
    def waiting_putters(self) -> int:
        """Tasks waiting to put because the queue is full."""
        return len(self._putters)

    @property
    def closed(self) -> bool:
        return self._closed

    def put_nowait(self, item: T) -> bool:
        """Queue ``item`` if there is room or a task waiting for it; False if full.

        Raises ``trio.ClosedResourceError`` once the queue is closed."""
        if self._closed:
            raise trio.ClosedResourceError("the queue is closed")
        if self._takers:
            task = next(iter(self._takers))
            self._takers.pop(task).append(item)
            trio.lowlevel.reschedule(task)
            return True
        if len(self._items) < self._capacity:
            self._items.append(item)
            return True
        return False

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting while the queue is full (no yield if there is room)."""
        if self.put_nowait(item):
            return
        task = trio.lowlevel.current_task()
        box = [item]
        self._putters[task] = box

        def abort(_: object) -> trio.lowlevel.Abort:
            del self._putters[task]
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        if box:  # woken by close(), not by a taker moving the item in
            raise trio.ClosedResourceError("the queue is closed")

    async def take(self) -> T:
        """The oldest item, waiting for one if there is none (no yield if there is).

        Raises ``trio.EndOfChannel`` once the queue is closed and empty."""
        if self._items:
            item = self._items.popleft()
            if self._putters:  # room now: the longest waiting putter's item goes in
                task = next(iter(self._putters))
                self._items.append(self._putters.pop(task).pop())
                trio.lowlevel.reschedule(task)
            return item
        if self._putters:  # a capacity of 0: the item passes from hand to hand
            task = next(iter(self._putters))
            item = self._putters.pop(task).pop()
            trio.lowlevel.reschedule(task)
            return item
        if self._closed:
            raise trio.EndOfChannel
        task = trio.lowlevel.current_task()
        box: list[T] = []
        self._takers[task] = box

        def abort(_: object) -> trio.lowlevel.Abort:
            del self._takers[task]
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        if not box:  # woken by close()
            raise trio.EndOfChannel
        return box[0]

    def close(self) -> None:
        """No more puts; takers drain what is queued, then get ``trio.EndOfChannel``;
        tasks waiting to put get ``trio.ClosedResourceError``."""
        self._closed = True
        waiting = [*self._takers, *self._putters]
        self._takers.clear()
        self._putters.clear()
        for task in waiting:
            trio.lowlevel.reschedule(task)
