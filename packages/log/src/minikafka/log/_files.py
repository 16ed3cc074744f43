"""A bounded pool of open file descriptors, shared by every log of a LogManager.

Each segment is three files (``.log``, ``.index``, ``.timeindex``). Holding all of them
open, as the first version did, made the number of partitions a broker can host a third
of its ``RLIMIT_NOFILE``: one CreateTopics of a few thousand partitions exhausted the
descriptors, and because the topic was already in the metadata log every restart died the
same way. Kafka (KAFKA-7283, lazily opened index files) and most storage engines answer by
opening files on use; here a :class:`FilePool` keeps at most ``capacity`` descriptors open,
least recently used first out. The active segment of a partition being written is simply
the most recently used file; an idle partition holds none.

Three rules keep a descriptor number from ever meaning the wrong file:

- every use *pins* the descriptor for the length of one system call (or one ``sendfile``
  of a fetch response, see :meth:`PooledFile.pin`); eviction skips pinned descriptors, so
  no thread can have a descriptor closed (and its number reused by another file) under it;
- a file is reopened by its *current* path: a rename (``.cleaned`` -> ``.swap`` -> live,
  live -> ``.deleted``) goes through :meth:`PooledFile.rename`, which updates the path under
  the pool's lock, so a reopen follows the file, not its old name;
- a reopen never creates: ``O_CREAT`` is only for the first open, so a file removed behind
  the log's back is an error, never a silently empty new file.

Files are opened ``O_APPEND``, so an evicted and reopened segment keeps appending at its
end, which is where the segment's own ``size`` says it ends.

The pool is an object, not module state: several brokers may live in one process (tests,
the simulator), each with its own LogManager and pool. A lock makes it safe for the
flusher's worker thread (``trio.to_thread``) to fsync while the event loop appends.
"""

from __future__ import annotations

import logging
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path

_logger = logging.getLogger(__name__)

MIN_CAPACITY = 16
"""Below this a pool would thrash on a single partition's few segments."""

STANDALONE_CAPACITY = 64
"""The pool of a Log opened on its own (tools, tests, the metadata log): a handful of
segments are in use at once, and it must leave the limit to the LogManager's pool."""


class ClosedFileError(OSError):
    """The file was closed for good (its segment deleted or its log closed)."""


def open_files_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` of this process (a large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


def default_capacity(limit: int | None = None) -> int:
    """How many descriptors a LogManager's pool may hold: half the soft limit.

    The other half is for what is not a segment: client sockets (one per connection,
    plus the listeners), checkpoint writes, the metadata log, trace files, the
    interpreter's own files, and descriptors pinned beyond the capacity while a fetch
    response is being sent or an fsync runs.
    """
    return max(MIN_CAPACITY, (open_files_limit() if limit is None else limit) // 2)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; returns (old soft, new soft).

    The JVM does this at start-up for every Kafka broker (HotSpot's ``-XX:+MaxFDLimit``,
    on by default): the soft limit a login shell gives (often 1024) is far below what a
    broker with thousands of partitions and connections needs, and the hard limit is what
    the administrator allows. Failing to raise it is not fatal: the pool sizes itself from
    whatever the limit is.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or (
        soft != resource.RLIM_INFINITY and soft < hard
    ):
        target = hard
        if hard == resource.RLIM_INFINITY:
            # Linux refuses a soft limit above fs.nr_open even when the hard one is
            # unlimited; this is its default.
            target = 1 << 20
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            _logger.warning(
                "cannot raise the open files limit from %d to %d: %s", soft, target, exc
            )
            return soft, soft
        return soft, target
    return soft, soft


class FilePool:
    """At most ``capacity`` open descriptors, least recently used closed first."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = max(
            MIN_CAPACITY, default_capacity() if capacity is None else capacity
        )
        self._lock = threading.Lock()
        # Files holding a descriptor, least recently used first.
        self._lru: OrderedDict[PooledFile, None] = OrderedDict()
        # descriptors opened, first opens and reopens (for metrics, tests)
        self.opens = 0
        self.evictions = 0

    def file(self, path: Path, *, create: bool = True) -> PooledFile:
        """A file of the pool, opened ``O_RDWR | O_APPEND`` now (to create it, or to fail
        now if it cannot be opened) and kept open until the pool needs the room."""
        pooled = PooledFile(self, path)
        pooled._open(os.O_CREAT if create else 0)
        return pooled

    @property
    def open_count(self) -> int:
        """Descriptors held by the pool (pinned ones beyond the capacity included)."""
        with self._lock:
            return len(self._lru)

    def _make_room(self) -> None:
        """Close least recently used, unpinned descriptors until one more fits
        (locked)."""
        excess = len(self._lru) - self.capacity + 1
        if excess <= 0:
            return
        # Chosen from the front only as far as needed: copying the whole pool per open
        # made opening thousands of files quadratic once the pool was full.
        victims: list[PooledFile] = []
        for candidate in self._lru:
            if len(victims) == excess:
                break
            if not candidate._pins:  # a pinned one is in use on some thread right now
                victims.append(candidate)
        for victim in victims:
            del self._lru[victim]
            os.close(victim._fd)
            victim._fd = -1
            self.evictions += 1
        # Everything is pinned: go over capacity for now; the next open evicts again.


class PooledFile:
    """One file whose descriptor the pool may close when idle and reopen on next use."""

    __slots__ = ("_closed", "_fd", "_pins", "path", "pool")

    def __init__(self, pool: FilePool, path: Path) -> None:
        self.pool = pool
        self.path = path
        self._fd = -1
        self._pins = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"PooledFile({str(self.path)!r}, fd={self._fd})"

    def _open(self, extra_flags: int) -> None:
        pool = self.pool
        with pool._lock:
            pool._make_room()
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | extra_flags, 0o644)
            pool._lru[self] = None
            pool.opens += 1

    # --- pinning: the one way to get a descriptor --------------------------------------

    def pin(self) -> int:
        """An open descriptor of this file, which stays open until :meth:`unpin`.

        Reopens the file (by its current path, without ``O_CREAT``) if the pool had closed
        it. The network layer pins a segment for the ``sendfile`` of a fetch response
        (``minikafka.common.FileRegion``); a segment deleted meanwhile makes this raise
        (ClosedFileError or FileNotFoundError), which closes that one connection.
        """
        pool = self.pool
        with pool._lock:
            if self._closed:
                raise ClosedFileError(f"{self.path} is closed")
            if self._fd < 0:
                pool._make_room()
                self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
                pool.opens += 1
                pool._lru[self] = None
            else:
                pool._lru.move_to_end(self)
            self._pins += 1
            return self._fd

    def unpin(self) -> None:
        with self.pool._lock:
            self._pins -= 1
            if self._closed and self._pins == 0 and self._fd >= 0:
                os.close(self._fd)  # closed for good while pinned: the last user closes
                self._fd = -1

    # --- the operations the log needs, each pinned for its system call ---------------

    def pread(self, size: int, position: int) -> bytes:
        fd = self.pin()
        try:
            return os.pread(fd, size, position)
        finally:
            self.unpin()

    def write(self, data: memoryview | bytes) -> int:
        """One ``write`` at the end of the file (``O_APPEND``); may be short."""
        fd = self.pin()
        try:
            return os.write(fd, data)
        finally:
            self.unpin()

    def truncate(self, size: int) -> None:
        fd = self.pin()
        try:
            os.ftruncate(fd, size)
        finally:
            self.unpin()

    def stat(self) -> os.stat_result:
        fd = self.pin()
        try:
            return os.fstat(fd)
        finally:
            self.unpin()

    def fsync(self) -> None:
        """Make the file's data durable, whether or not its descriptor was evicted.

        On Linux fsync flushes the *inode's* dirty pages, whichever descriptor wrote
        them, so an fsync on a freshly reopened descriptor makes durable the writes made
        through one the pool has since closed. A writeback error nobody has seen yet is
        reported to the next descriptor that asks, a new one included (Linux 4.16+, the
        kernel's errseq); so a failed writeback is not lost by the eviction either.
        """
        fd = self.pin()
        try:
            os.fsync(fd)
        finally:
            self.unpin()

    # --- naming and closing -------------------------------------------------------------

    def rename(self, target: Path) -> None:
        """Rename the file; a later reopen uses the new name (under the lock, so a reopen
        on another thread sees either the old name with the old file or the new one)."""
        with self.pool._lock:
            os.rename(self.path, target)
            self.path = target

    def close(self) -> None:
        """Close for good: the descriptor now (or when its last pin goes), no reopen.

        Idempotent, and never closes a number twice: a closed descriptor's number can be
        reused at once by another file.
        """
        pool = self.pool
        with pool._lock:
            if self._closed:
                return
            self._closed = True
            if self._fd >= 0:
                pool._lru.pop(self, None)
                if self._pins == 0:
                    os.close(self._fd)
                    self._fd = -1

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def is_open(self) -> bool:
        """Whether a descriptor is open right now (tests and metrics)."""
        return self._fd >= 0
