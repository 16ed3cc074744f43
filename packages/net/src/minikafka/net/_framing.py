"""Framing: Kafka's 4-byte size prefix, decoded sans-IO.

Seed 000 ("Kafka Selector"): every request and response on the wire is a 4-byte
big-endian size followed by that many bytes. TCP is a byte stream, not a message
stream: one ``recv`` may return half a frame, or the end of one frame glued to the
start of the next (the "sticky packet" problem the seed names). Kafka's
``NetworkReceive`` solves it by reading the size first and then exactly that many
bytes. :class:`FrameDecoder` is the same state machine with no socket: feed it
whatever bytes arrived, take out the complete frames.

Bytes that belong to frames not yet taken out stay buffered here. On the broker they
are the pipelined requests a client sent ahead, and the Processor takes out only one
at a time (see ``_connection.py``): the decoder is our ``stagedReceives``.
"""

from __future__ import annotations

import struct

import attrs

SIZE_PREFIX = struct.Struct(">i")
"""The frame header: a signed 32-bit big-endian byte count."""

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
"""Kafka's default for ``socket.request.max.bytes`` (100 MiB)."""


class FrameError(Exception):
    """The byte stream cannot be framed; the connection must be closed."""


class FrameTooLarge(FrameError):
    """A size prefix above the limit (Kafka's ``InvalidReceiveException``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds socket.request.max.bytes={limit}")
        self.size = size
        self.limit = limit


class InvalidFrameSize(FrameError):
    """A negative size prefix: the peer is not speaking the Kafka protocol."""


def encode_frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its size."""
    return SIZE_PREFIX.pack(len(payload)) + payload


@attrs.define(eq=False)
class FrameDecoder:
    """Turns an arbitrarily split byte stream into whole frames.

    ``feed`` appends bytes; ``next_frame`` returns one complete frame (without its
    size prefix) or ``None`` when more bytes are needed. The size limit is checked as
    soon as the 4-byte prefix is known, before any of the body is buffered, so a
    hostile 2 GB prefix costs nothing.
    """

    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    _buffer: bytearray = attrs.field(init=False, factory=bytearray)
    _start: int = attrs.field(init=False, default=0)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        return len(self._buffer) - self._start

    def next_frame(self) -> bytes | None:
        available = len(self._buffer) - self._start
        if available < SIZE_PREFIX.size:
            return None
        (size,) = SIZE_PREFIX.unpack_from(self._buffer, self._start)
        if size < 0:
            raise InvalidFrameSize(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLarge(size, self.max_frame_bytes)
        end = self._start + SIZE_PREFIX.size + size
        if len(self._buffer) < end:
            return None
        # One copy, straight from the buffer (a bytearray slice would be a second).
        with memoryview(self._buffer) as view:
            frame = bytes(view[self._start + SIZE_PREFIX.size : end])
        self._start = end
        self._compact()
        return frame

    def frames(self) -> list[bytes]:
        """Every complete frame buffered now."""
        out: list[bytes] = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out

    def _compact(self) -> None:
        # Dropping consumed bytes from the front of a bytearray is a memmove; doing it
        # only once the consumed part dominates keeps pipelined small frames cheap.
        if self._start == len(self._buffer):
            self._buffer.clear()
            self._start = 0
        elif self._start > 65536 and self._start * 2 > len(self._buffer):
            del self._buffer[: self._start]
            self._start = 0
