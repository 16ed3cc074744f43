"""The JSON Lines tracer: one buffered, size-rotated writer per process (ARCHITECTURE.md, "Traces
and labs").

Tracing is meant to stay on in cluster runs, so ``emit`` does no file I/O of its own: it
encodes one line with its class's generated encoder (``_encode``: no dict, no generic JSON
walk) and appends it to a buffer. The buffer goes to disk when it outgrows
``buffer_bytes``, on ``flush()``, on ``close()``, at interpreter exit, and every
``flush_interval`` seconds from a thread of the tracer's own: a node killed with SIGKILL
runs no exit handler, and the fault labs read what a killed node did last, so a trace
loses at most that interval's events. Each line is

    {"ts":1718000000.123,"node":1,"component":"net","event":"request","api_key":18,...}
"""

from __future__ import annotations

import atexit
import os
import time
from pathlib import Path
from threading import Event, Lock, Thread
from types import TracebackType
from typing import BinaryIO

import attrs

from ._encode import Encoder
from ._event import TraceEvent, spec_for_class
from ._files import next_seq, trace_file_name
from ._tracer import TracerClosedError

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_BUFFER_BYTES = 64 * 1024
DEFAULT_FLUSH_INTERVAL = 0.2
"""Seconds a buffered line may wait for its write-out (what a SIGKILL can lose)."""

_now = time.time


def encode_line(event: TraceEvent, ts: float, node: int) -> str:
    """One trace line, newline included: the envelope, then the event's own fields.

    Written by the event class's generated encoder (``_encode``); byte for byte the same
    as :func:`reference_line`.
    """
    return spec_for_class(type(event)).encode(event, ts, node)


def reference_line(event: TraceEvent, ts: float, node: int) -> str:
    """The line by definition: the envelope and fields as a dict, through ``json``.

    What the writer did before its generated encoders, kept to hold the generated encoders to and to
    measure them against (bench/tracing.py).
    """
    return spec_for_class(type(event)).reference(event, ts, node)


@attrs.define(eq=False)
class JsonLinesTracer:
    """Writes trace events as JSON Lines into ``directory``; build it with :meth:`open`."""

    directory: Path
    node: int
    max_file_bytes: int
    buffer_bytes: int
    pid: int
    _seq: int
    _lock: Lock = attrs.field(init=False, factory=Lock)
    _buffer: list[str] = attrs.field(init=False, factory=list)
    _buffered_bytes: int = attrs.field(init=False, default=0)
    # Bytes given to the current file so far: written plus still in the buffer.
    _file_bytes: int = attrs.field(init=False, default=0)
    _file: BinaryIO | None = attrs.field(init=False, default=None)
    _closed: bool = attrs.field(init=False, default=False)
    # Each event class's generated line encoder (_encode), looked up once per tracer.
    _encoders: dict[type[TraceEvent], Encoder] = attrs.field(init=False, factory=dict)
    flush_interval: float | None = attrs.field(default=None, kw_only=True)
    _stop_flusher: Event = attrs.field(init=False, factory=Event)
    # A plain attribute, not a property: every traced call site reads it, and a
    # property call costs several times an attribute read.
    enabled: bool = attrs.field(init=False, default=True)

    @classmethod
    def open(
        cls,
        directory: Path,
        node: int,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        flush_interval: float | None = DEFAULT_FLUSH_INTERVAL,
    ) -> JsonLinesTracer:
        """A tracer writing ``trace-node<node>-<pid>-<seq>.jsonl`` files in ``directory``.

        The directory is created if missing; files appear on the first write-out. Rotation
        starts a new file when the next line would take the current one past
        ``max_file_bytes`` (a single longer line gets a file to itself). A thread
        writes out what is buffered every ``flush_interval`` seconds (None: no thread;
        the buffer goes out when full, on ``flush()`` and at exit only).
        """
        if max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be positive, got {max_file_bytes}")
        if buffer_bytes < 0:
            raise ValueError(f"buffer_bytes must not be negative, got {buffer_bytes}")
        if flush_interval is not None and flush_interval <= 0:
            raise ValueError(f"flush_interval must be positive, got {flush_interval}")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        tracer = cls(
            directory,
            node,
            max_file_bytes,
            buffer_bytes,
            pid,
            next_seq(directory, node, pid),
            flush_interval=flush_interval,
        )
        if flush_interval is not None:
            Thread(
                target=tracer._flush_periodically,
                name=f"trace-flush-node{node}",
                daemon=True,
            ).start()
        # Without this a broker stopped by Ctrl-C or sys.exit would lose its last buffer.
        atexit.register(tracer._flush_at_exit)
        return tracer

    @property
    def current_path(self) -> Path:
        """The file the buffered lines will go to (it may not exist yet)."""
        return self.directory / trace_file_name(self.node, self.pid, self._seq)

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        cls = type(event)
        encode = self._encoders.get(cls)
        if encode is None:
            # First event of this class here: its generated encoder, or the TypeError
            # naming the missing @register_event.
            encode = self._encoders[cls] = spec_for_class(cls).encode
        # Encoding outside the lock lets threads serialise in parallel with a write-out.
        line = encode(event, _now() if ts is None else float(ts), self.node)
        size = len(line)
        with self._lock:
            if self._closed:
                raise TracerClosedError(
                    f"trace event {cls.__name__} emitted after the tracer for node "
                    f"{self.node} in {self.directory} was closed"
                )
            if self._file_bytes and self._file_bytes + size > self.max_file_bytes:
                self._write_out()
                self._rotate()
            self._buffer.append(line)
            self._buffered_bytes += size
            self._file_bytes += size
            if self._buffered_bytes > self.buffer_bytes:
                self._write_out()

    def flush(self) -> None:
        """Hand every buffered line to the operating system (no fsync)."""
        with self._lock:
            if not self._closed:
                self._write_out()

    def close(self) -> None:
        """Flush and close the file; later ``emit`` raises :class:`TracerClosedError`."""
        self._stop_flusher.set()
        with self._lock:
            if self._closed:
                return
            try:
                self._write_out()
            finally:
                self._closed = True
                self.enabled = False
                if self._file is not None:
                    self._file.close()
                    self._file = None
        atexit.unregister(self._flush_at_exit)

    def __enter__(self) -> JsonLinesTracer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _flush_periodically(self) -> None:
        assert self.flush_interval is not None
        # Event.wait paces the write-outs and returns at once when close() stops them.
        while not self._stop_flusher.wait(self.flush_interval):
            self.flush()

    def _flush_at_exit(self) -> None:
        # Flush, not close: exit handlers registered before the tracer run after this one
        # and may still emit; closing here would turn their events into errors.
        self.flush()

    def _write_out(self) -> None:
        if not self._buffer:
            return
        data = "".join(self._buffer).encode("ascii")
        # Dropped before writing: if the disk is full the error surfaces once, and the
        # same lines are not retried (and duplicated) on every later emit.
        self._buffer.clear()
        self._buffered_bytes = 0
        if self._file is None:
            self._file = self.current_path.open("ab")
        self._file.write(data)
        self._file.flush()

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._seq += 1
        self._file_bytes = 0
