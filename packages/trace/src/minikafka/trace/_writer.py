"""The JSON Lines tracer: one buffered, size-rotated writer per process (ARCHITECTURE.md, "Traces
and labs").

Tracing is meant to stay on in cluster runs, so ``emit`` neither encodes nor writes: it
stamps the event and queues it, and the tracer's own thread, every ``flush_interval``
seconds, encodes what is queued (with each class's generated encoder, ``_encode``: no
dict, no generic JSON walk) in arrival order and writes it out. This is log4j's
AsyncAppender, which Kafka's request logger can sit behind: the request path pays an
append, and a busy writer thread is backpressure, not loss (a queue of ``max_pending``
events is encoded by the emitter itself). The lines also go out on ``flush()``, on
``close()`` and at interpreter exit; a node killed with SIGKILL runs no exit handler, and
the fault labs read what a killed node did last, so a trace loses at most that interval's
events. Without the thread (``flush_interval=None``) ``emit`` encodes at once and the
encoded lines go out when they outgrow ``buffer_bytes``. Each line is

    {"ts":1718000000.123,"node":1,"component":"net","event":"request","api_key":18,...}
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from threading import Event, Lock, Thread
from types import TracebackType
from typing import Any, BinaryIO

import attrs

from ._encode import Encoder, FieldsEncoder
from ._event import TraceEvent, spec_for_class
from ._files import next_seq, trace_file_name
from ._tracer import TracerClosedError

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_BUFFER_BYTES = 64 * 1024
DEFAULT_FLUSH_INTERVAL = 0.2
"""Seconds a buffered line may wait for its write-out (what a SIGKILL can lose)."""
DEFAULT_MAX_PENDING = 16_384
"""Events queued for the writer thread before ``emit`` encodes them itself: at most a few
MiB of events, and 0.8 s of the busiest broker's two lines per request."""
_CHUNK = 256
"""Events the writer thread encodes at a time before it lets the request path run: about
1 ms of encoding that a request arriving meanwhile waits for. One run with 64 had the
writer at 9.4 µs per small Produce against 8.1 (bench/tracing_cpu.py, a loaded machine)."""

_now = time.time
_Pending = tuple[Callable[[Any, float, int], str], object, float]
"""A queued event: its encoder, the event (or its field values, for the encoder taking
them) and its time."""
log = logging.getLogger("minikafka.trace")


def encode_line(event: TraceEvent, ts: float, node: int) -> str:
    """One trace line, newline included: the envelope, then the event's own fields.

    Written by the event class's generated encoder (``_encode``); byte for byte the same
    as :func:`reference_line`.
    """
    return spec_for_class(type(event)).encode(event, ts, node)


def encode_fields_line(
    event_type: type[TraceEvent], fields: tuple[object, ...], ts: float, node: int
) -> str:
    """The same line for an event given as its field values (``Tracer.emit_fields``)."""
    return spec_for_class(event_type).encode_fields(fields, ts, node)


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
    # Each event class's generated line encoder (_encode), looked up once per tracer;
    # None for a kind this tracer does not write.
    _encoders: dict[type[TraceEvent], Encoder | None] = attrs.field(
        init=False, factory=dict
    )
    _fields_encoders: dict[type[TraceEvent], FieldsEncoder | None] = attrs.field(
        init=False, factory=dict
    )
    events: frozenset[str] | None = attrs.field(default=None, kw_only=True)
    """The kinds written, as ``"component.event"`` (``"net.request"``); None: every kind."""
    flush_interval: float | None = attrs.field(default=None, kw_only=True)
    max_pending: int = attrs.field(default=DEFAULT_MAX_PENDING, kw_only=True)
    _stop_flusher: Event = attrs.field(init=False, factory=Event)
    # Emitted, not yet encoded: (encoder, event or fields, ts), oldest first. A deque,
    # because its append (any emitting thread) and popleft (under the lock) are atomic.
    _pending: deque[_Pending] = attrs.field(init=False, factory=deque)
    # A plain attribute, not a property: every traced call site reads it.
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
        max_pending: int = DEFAULT_MAX_PENDING,
        events: Iterable[str] | None = None,
    ) -> JsonLinesTracer:
        """A tracer writing ``trace-node<node>-<pid>-<seq>.jsonl`` files in ``directory``.

        The directory is created if missing; files appear on the first write-out. Rotation
        starts a new file when the next line would take the current one past
        ``max_file_bytes`` (a single longer line gets a file to itself). A thread
        encodes and writes out what was emitted every ``flush_interval`` seconds (None:
        no thread; ``emit`` encodes, and the buffer goes out when full, on ``flush()``
        and at exit only); ``emit`` encodes the queue itself when it holds
        ``max_pending`` events. ``events`` names the kinds to write
        (``"component.event"``); an event of any other kind is dropped by ``emit``, and
        :meth:`wants` tells a hot path not to build it. None: every kind.
        """
        if max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be positive, got {max_file_bytes}")
        if buffer_bytes < 0:
            raise ValueError(f"buffer_bytes must not be negative, got {buffer_bytes}")
        if flush_interval is not None and flush_interval <= 0:
            raise ValueError(f"flush_interval must be positive, got {flush_interval}")
        if max_pending < 1:
            raise ValueError(f"max_pending must be positive, got {max_pending}")
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
            # Without the writer thread nothing would encode the queue: encode at once.
            flush_interval=flush_interval,
            max_pending=max_pending if flush_interval is not None else 1,
            events=None if events is None else frozenset(events),
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

    def wants(self, event_type: type[TraceEvent]) -> bool:
        try:
            encode = self._encoders[event_type]
        except KeyError:
            encode = self._encoder_for(event_type)
        return encode is not None and self.enabled

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        if self._closed:
            raise TracerClosedError(
                f"trace event {type(event).__name__} emitted after the tracer for node "
                f"{self.node} in {self.directory} was closed"
            )
        try:
            encode = self._encoders[type(event)]
        except KeyError:
            encode = self._encoder_for(type(event))
        if encode is None:
            return  # a kind this tracer does not write
        pending = self._pending
        pending.append((encode, event, _now() if ts is None else float(ts)))
        if len(pending) >= self.max_pending:
            # No writer thread, or it has fallen behind: the emitter encodes the queue.
            with self._lock:
                self._encode_pending(len(pending))

    def emit_fields(
        self,
        event_type: type[TraceEvent],
        fields: tuple[object, ...],
        ts: float | None = None,
    ) -> None:
        if self._closed:
            raise TracerClosedError(
                f"trace event {event_type.__name__} emitted after the tracer for node "
                f"{self.node} in {self.directory} was closed"
            )
        try:
            encode = self._fields_encoders[event_type]
        except KeyError:
            wanted = self._encoder_for(event_type) is not None
            encode = self._fields_encoders[event_type] = (
                spec_for_class(event_type).encode_fields if wanted else None
            )
        if encode is None:
            return  # a kind this tracer does not write
        pending = self._pending
        pending.append((encode, fields, _now() if ts is None else float(ts)))
        if len(pending) >= self.max_pending:
            with self._lock:
                self._encode_pending(len(pending))

    def _encoder_for(self, event_type: type[TraceEvent]) -> Encoder | None:
        # First event of this class here: its generated encoder (None: a kind not
        # written), or the TypeError naming the missing @register_event (here, not in
        # the writer thread).
        spec = spec_for_class(event_type)
        wanted = self.events is None or f"{spec.component}.{spec.event}" in self.events
        encode = self._encoders[event_type] = spec.encode if wanted else None
        return encode

    def flush(self) -> None:
        """Encode every emitted event and hand the lines to the operating system (no
        fsync)."""
        with self._lock:
            if not self._closed:
                self._encode_pending(len(self._pending))
                self._write_out()

    def close(self) -> None:
        """Flush and close the file; later ``emit`` raises :class:`TracerClosedError`."""
        self._stop_flusher.set()
        with self._lock:
            if self._closed:
                return
            self.enabled = False
            try:
                self._encode_pending(len(self._pending))
                self._write_out()
            finally:
                self._closed = True
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
            try:
                self._write_pending()
            except OSError:
                # A full disk must not stop the writer: those lines are lost (the
                # buffer is dropped before the write), the next interval tries again.
                log.exception("trace writer for node %d", self.node)

    def _write_pending(self) -> None:
        # In chunks, letting go of the GIL between them (sleep(0)), so a request waits
        # for at most one chunk's encoding, not for the whole interval's.
        while len(self._pending) > _CHUNK:
            with self._lock:
                if self._closed:
                    return
                # An emitter may have encoded the queue since (it was full).
                self._encode_pending(min(_CHUNK, len(self._pending)))
            time.sleep(0)
        self.flush()

    def _flush_at_exit(self) -> None:
        # Flush, not close: exit handlers registered before the tracer run after this one
        # and may still emit; closing here would turn their events into errors.
        self.flush()

    def _encode_pending(self, count: int) -> None:
        """Encode the ``count`` oldest emitted events into the buffer (the lock held):
        the file rotates before a line that would take it past ``max_file_bytes``, and
        the buffer goes out when it outgrows ``buffer_bytes``.

        The lines are encoded first and joined into one string, so the bookkeeping
        (sizes, rotation, the buffer's bound) is per chunk, not per line, unless the
        chunk would take the file past ``max_file_bytes``.
        """
        # Bound once: this loop runs once per event, the rest of the method per chunk.
        popleft, node = self._pending.popleft, self.node
        lines: list[str] = []
        add = lines.append
        for _ in range(count):
            encode, event, ts = popleft()
            try:
                add(encode(event, ts, node))
            except (TypeError, ValueError):
                # A value JSON cannot hold (a type the annotation does not allow, a
                # field tuple of the wrong length): that event is lost, loudly, and the
                # trace goes on.
                log.exception("trace event %r cannot be encoded; dropped", event)
        if not lines:
            return  # nothing to write: no empty string in the buffer, no empty file
        chunk = "".join(lines)
        size = len(chunk)
        if self._file_bytes + size > self.max_file_bytes and (
            self._file_bytes or len(lines) > 1
        ):
            self._buffer_each(lines)  # the file rotates inside this chunk
            return
        self._buffer.append(chunk)
        self._buffered_bytes += size
        self._file_bytes += size
        if self._buffered_bytes > self.buffer_bytes:
            self._write_out()

    def _buffer_each(self, lines: list[str]) -> None:
        for line in lines:
            size = len(line)
            if self._file_bytes and self._file_bytes + size > self.max_file_bytes:
                self._write_out()
                self._rotate()
            self._buffer.append(line)
            self._buffered_bytes += size
            self._file_bytes += size
            if self._buffered_bytes > self.buffer_bytes:
                self._write_out()

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
