"""Wrong on purpose: of two whole frames buffered together, the second comes out first."""

from __future__ import annotations

from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    _held: bytes | None = None

    def next_frame(self) -> bytes | None:
        if self._held is not None:
            frame, self._held = self._held, None
            return frame
        first = super().next_frame()
        if first is None:
            return None
        second = super().next_frame()
        if second is None:
            return first
        self._held = first
        return second
