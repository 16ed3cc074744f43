"""Lab 1: write the FrameDecoder (seed 000, the network layer; the Network chapter).

TCP delivers a stream of bytes, not messages: one ``recv`` may hold half a request, or
three requests and the start of a fourth (the "sticky packet" problem). Kafka frames
every request with a 4-byte big-endian size. The decoder below is handed whatever the
socket gave (:meth:`feed`) and hands back whole frames, without their size prefix,
as soon as they are complete (:meth:`next_frame`).

Check it with ``make lab 1``: minikafka's own tests run with your class in place of
minikafka's, in the broker processes they start too.

What the checks expect (read the Network chapter first, not minikafka's _framing.py):

- any way of cutting a stream into ``feed`` calls yields the same frames, in order;
  ``next_frame`` returns None until the whole frame is here;
- a frame declaring more than ``max_frame_bytes`` is refused with FrameTooLarge as soon
  as its 4-byte prefix is here, before any of its body is buffered; when those 4 bytes
  are a TLS or HTTP start (``foreign_protocol``), with ForeignProtocol; a negative size
  with InvalidFrameSize;
- ``next_frame_size`` is the size the next frame declares once its prefix is here (None
  before), takes nothing out, and refuses a size as ``next_frame`` does;
- ``buffered`` is how many bytes were fed and not yet returned in a frame;
- bytes already returned are not kept forever: after 100,000 frames one decoder holds
  less than 512 KiB (a long-lived connection must not grow).
"""

from __future__ import annotations

import attrs

from minikafka.labs import ExerciseNotDone
from minikafka.net._framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ForeignProtocol,
    FrameTooLarge,
    InvalidFrameSize,
    foreign_protocol,
)

FILE = "labs/01-framing/framing.py"

# What you may need; SIZE_PREFIX is struct.Struct(">i").
__all__ = [
    "SIZE_PREFIX",
    "ForeignProtocol",
    "FrameDecoder",
    "FrameTooLarge",
    "InvalidFrameSize",
    "foreign_protocol",
]


@attrs.define(eq=False)
class FrameDecoder:
    """Turns an arbitrarily split byte stream into whole frames."""

    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    # Add the state you need as attrs fields with init=False, for example
    # _buffer: bytearray = attrs.field(init=False, factory=bytearray)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Keep ``data``, the next bytes of the stream."""
        raise ExerciseNotDone("FrameDecoder.feed", "append to a buffer", FILE)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        raise ExerciseNotDone("FrameDecoder.buffered", file=FILE)

    def next_frame_size(self) -> int | None:
        """The size the next frame declares, once its 4-byte prefix is here (None
        before); a size the decoder refuses raises, as in :meth:`next_frame`."""
        raise ExerciseNotDone(
            "FrameDecoder.next_frame_size", "SIZE_PREFIX.unpack_from", FILE
        )

    def next_frame(self) -> bytes | None:
        """The next whole frame without its prefix, or None until all of it is here."""
        raise ExerciseNotDone(
            "FrameDecoder.next_frame", "prefix, then the body, then forget both", FILE
        )

    def frames(self) -> list[bytes]:
        """Every complete frame buffered now (given: it only calls next_frame)."""
        out: list[bytes] = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out
