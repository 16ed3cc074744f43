"""Wrong on purpose: once the prefix is here, what there is of the body is a frame."""

from __future__ import annotations

from minikafka.net._framing import SIZE_PREFIX
from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    def next_frame(self) -> bytes | None:
        frame = super().next_frame()
        if frame is None and self.buffered > SIZE_PREFIX.size:
            frame = bytes(self._buffer[self._start + SIZE_PREFIX.size :])
            self._buffer.clear()
            self._start = 0
        return frame
