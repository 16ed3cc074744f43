"""Wrong on purpose: an oversized frame is refused only once its whole body is here."""

from __future__ import annotations

from minikafka.net._framing import SIZE_PREFIX
from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    def next_frame(self) -> bytes | None:
        if self.buffered < SIZE_PREFIX.size:
            return None
        (size,) = SIZE_PREFIX.unpack_from(self._buffer, self._start)
        if size > self.max_frame_bytes and self.buffered < SIZE_PREFIX.size + size:
            return None  # waits for (and buffers) the body before looking at the size
        return super().next_frame()
