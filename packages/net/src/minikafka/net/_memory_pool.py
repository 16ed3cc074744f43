"""The MemoryPool requests are read into: ``queued.max.request.bytes`` (KIP-72).

``queued.max.requests`` bounds how many requests wait for a handler, but not their
size: 500 produce requests of 100 MB each is 50 GB. KIP-72 gives the broker a pool of
``queued.max.request.bytes``; a Processor takes a request's bytes from it as soon as the
size prefix is read, before reading the body, and gives them back once a handler is
done with the request. While the pool is empty Processors read no new requests: the
connections stay open, nothing is dropped, and TCP's flow control pushes back on the
clients, exactly as when the RequestChannel is full.

Kafka's ``SimpleMemoryPool`` is built non-strict for this: an allocation succeeds while
*any* byte is free, so the pool may be overdrawn by less than one request. With Kafka's
rule that the pool is at least ``socket.request.max.bytes`` (checked in ``NetConfig``)
every request the broker accepts at all can be read: a big request waits until the pool
has room, it is never refused for being bigger than what is left.

The default (-1) is Kafka's ``MemoryPool.NONE``: no pool, and no cost on the read path.
"""

from __future__ import annotations

import attrs
import trio


@attrs.define(eq=False)
class MemoryPool:
    """``size`` bytes for requests read but not yet handled, shared by all Processors."""

    size: int
    _available: int = attrs.field(init=False)
    peak_used: int = attrs.field(init=False, default=0)
    """The most ever taken at once (the test's and the operator's check of the bound)."""
    _freed: trio.Event = attrs.field(init=False, factory=trio.Event)

    def __attrs_post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"a memory pool needs a positive size, not {self.size}")
        self._available = self.size

    @property
    def used(self) -> int:
        return self.size - self._available

    @property
    def available(self) -> int:
        """Bytes left; negative while overdrawn by the last request let in."""
        return self._available

    @property
    def out_of_memory(self) -> bool:
        return self._available <= 0

    def try_allocate(self, nbytes: int) -> bool:
        """Take ``nbytes`` if any byte is free (non-strict, as Kafka builds its pool)."""
        if self._available <= 0:
            return False
        self._available -= nbytes
        self.peak_used = max(self.peak_used, self.size - self._available)
        return True

    def release(self, nbytes: int) -> None:
        was_out = self._available <= 0
        self._available += nbytes
        if was_out and self._available > 0:
            # Wake every Processor connection waiting for memory; each tries again and
            # those that lose the race wait for the next release.
            self._freed.set()
            self._freed = trio.Event()

    async def wait_for_memory(self) -> None:
        """Return once some memory is free (at once if some is)."""
        if self._available > 0:
            await trio.lowlevel.checkpoint()
            return
        await self._freed.wait()
