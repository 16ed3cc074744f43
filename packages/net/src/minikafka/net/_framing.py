"""Framing: Kafka's 4-byte size prefix, decoded sans-IO.

Seed 000 ("Kafka Selector"): every request and response on the wire is a 4-byte
big-endian size followed by that many bytes. TCP is a byte stream, not a message
stream: one ``recv`` may return half a frame, or the end of one frame glued to the
start of the next (the "sticky packet" problem the seed names). Kafka's
``NetworkReceive`` solves it by reading the size first and then exactly that many
bytes. :class:`FrameDecoder` is the same state machine with no socket: feed it
whatever bytes arrived, take out the complete frames.

A size prefix above ``socket.request.max.bytes`` is refused before any of its body is
buffered. Two of those are worth naming, because they are not attacks but mistakes: a
client speaking TLS to a PLAINTEXT listener (a TLS record header ``16 03 01 ..`` read as
a size is about 369 MB) and an HTTP request (``GET `` read as a size is about 1.2 GB).
:class:`ForeignProtocol` says which, so the log line can tell the operator.

Bytes that belong to frames not yet taken out stay buffered here. On the broker they
are the pipelined requests a client sent ahead, and the Processor takes out only one
at a time (see ``_connection.py``): the decoder is our ``stagedReceives``.
"""

from __future__ import annotations

import re
import struct
from typing import NoReturn

SIZE_PREFIX = struct.Struct(">i")
"""The frame header: a signed 32-bit big-endian byte count."""

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
"""Kafka's default for ``socket.request.max.bytes`` (100 MiB)."""


class FrameError(Exception):
    """The byte stream cannot be framed; the connection must be closed."""


class FrameTooLarge(FrameError):
    """A size prefix above the limit (Kafka's ``InvalidReceiveException``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"frame of {size} bytes exceeds socket.request.max.bytes={limit}"
        )
        self.size = size
        self.limit = limit


class ForeignProtocol(FrameTooLarge):
    """An oversized "frame" whose first bytes are another protocol's (TLS or HTTP)."""

    def __init__(self, protocol: str, size: int, limit: int) -> None:
        FrameError.__init__(
            self,
            f"{protocol} from a client on a plaintext Kafka listener "
            f"(its first bytes read as a frame of {size} bytes)",
        )
        self.protocol = protocol
        self.size = size
        self.limit = limit


# A TLS record header: content type 22 (handshake), then the record version 3.0-3.4
# (SSL 3.0, TLS 1.0-1.3 ClientHellos all use 3.x here).
_TLS_HANDSHAKE = re.compile(rb"\x16\x03[\x00-\x04]")
_HTTP_METHODS = (
    b"GET ",
    b"POST",
    b"PUT ",
    b"HEAD",
    b"DELE",
    b"OPTI",
    b"PATC",
    b"CONN",
    b"PRI ",
)


def foreign_protocol(prefix: bytes) -> str | None:
    """Which protocol ``prefix`` (a frame's first 4 bytes) belongs to, if not Kafka."""
    if _TLS_HANDSHAKE.match(prefix):
        return "TLS"
    if prefix[:4] in _HTTP_METHODS:
        return "HTTP"
    return None


class InvalidFrameSize(FrameError):
    """A negative size prefix: the peer is not speaking the Kafka protocol."""


def encode_frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its size."""
    return SIZE_PREFIX.pack(len(payload)) + payload


class FrameDecoder:
    """Turns an arbitrarily split byte stream into whole frames.

    ``feed`` appends bytes; ``next_frame`` returns one complete frame (without its
    size prefix) or ``None`` when more bytes are needed. The size limit is checked as
    soon as the 4-byte prefix is known, before any of the body is buffered, so a
    hostile 2 GB prefix costs nothing.
    """

    # A plain class, not attrs: the optional mypyc build (README) compiles it to a
    # native class, and mypyc cannot compile an attrs field's default.
    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._start = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        return len(self._buffer) - self._start

    def next_frame_size(self) -> int | None:
        """The size the next frame declares, once its prefix is here; checked as in
        :meth:`next_frame` (the Processor reserves memory for it before reading the
        body)."""
        if len(self._buffer) - self._start < SIZE_PREFIX.size:
            return None
        (size,) = SIZE_PREFIX.unpack_from(self._buffer, self._start)
        if not 0 <= size <= self.max_frame_bytes:
            self._refuse(size)
        return size  # type: ignore[no-any-return]

    def _refuse(self, size: int) -> NoReturn:
        if size < 0:
            raise InvalidFrameSize(f"negative frame size {size}")
        prefix = bytes(self._buffer[self._start : self._start + SIZE_PREFIX.size])
        protocol = foreign_protocol(prefix)
        if protocol is not None:
            raise ForeignProtocol(protocol, size, self.max_frame_bytes)
        raise FrameTooLarge(size, self.max_frame_bytes)

    def next_frame(self) -> bytes | None:
        # next_frame_size inlined: this runs once per request.
        if len(self._buffer) - self._start < SIZE_PREFIX.size:
            return None
        (size,) = SIZE_PREFIX.unpack_from(self._buffer, self._start)
        if not 0 <= size <= self.max_frame_bytes:
            self._refuse(size)
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
